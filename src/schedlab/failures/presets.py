"""Failure presets computed from public reports (derivations in ``docs/failures.md``).

``llama3-405b``: Llama 3 paper (arXiv 2407.21783) Table 5, 419 unexpected interruptions in a
54-day snapshot of pre-training on 16,384 H100s in 2,048 servers. Each class's MTBF per instance
is (instances × 54 × 24 h) / (events of the class); every event draws its category with the
table's counts as weights. The table prints 30.1 % for faulty GPU although 148/419 = 35.3 % (all
other rows are count/419); the counts are used.

``opt-175b``: metaseq's OPT-175B logbook (projects/OPT/chronicles): about two machines down per
day on the ~124-node run → a per-node MTBF of 62 days (1,488 h); repair 24 h (ours).
"""

from __future__ import annotations

from dataclasses import dataclass

from schedlab.failures.spec import Process, Repair

LLAMA3_DAYS = 54
LLAMA3_GPUS = 16_384
LLAMA3_NODES = 2_048

#: Table 5 counts by class and category.
LLAMA3_TABLE5: dict[str, dict[str, int]] = {
    "gpu": {
        "faulty GPU": 148,
        "GPU HBM3 memory": 72,
        "GPU SRAM memory": 19,
        "GPU system processor": 17,
        "silent data corruption": 6,
        "GPU thermal interface and sensor": 6,
    },
    "node": {
        "host maintenance": 32,
        "network interface card": 7,
        "SSD": 3,
        "power supply": 3,
        "server chassis": 2,
        "IO expansion board": 2,
        "CPU": 2,
        "system memory": 2,
    },
    "link": {"network switch or cable": 35},
    "software": {"software bug": 54, "NCCL watchdog timeout": 7, "dependency": 2},
}


def llama3_mtbf_hours(cls: str) -> float:
    """Instances × 54 days ÷ events: per GPU (gpu, software) or per node (node, link)."""
    events = sum(LLAMA3_TABLE5[cls].values())
    instances = LLAMA3_GPUS if cls in ("gpu", "software") else LLAMA3_NODES
    return instances * LLAMA3_DAYS * 24.0 / events


@dataclass(frozen=True)
class Preset:
    processes: dict[str, Process]
    repairs: dict[str, Repair]
    categories: dict[str, dict[str, float]]
    source: str


PRESETS: dict[str, Preset] = {
    "llama3-405b": Preset(
        processes={cls: Process("exp", mtbf_h=llama3_mtbf_hours(cls)) for cls in LLAMA3_TABLE5},
        repairs={},
        categories={
            cls: {k: float(v) for k, v in counts.items()} for cls, counts in LLAMA3_TABLE5.items()
        },
        source="Llama 3 paper (arXiv 2407.21783) Table 5, via two agreeing secondary copies",
    ),
    "opt-175b": Preset(
        processes={"node": Process("exp", mtbf_h=62.0 * 24.0)},
        repairs={"node": Repair("fixed", 24.0)},
        categories={"node": {"machine down": 1.0}},
        source="facebookresearch/metaseq projects/OPT/chronicles: ~2 machines down a day of ~124",
    ),
}
