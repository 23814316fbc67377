"""GPU and node specifications the LLM performance model needs.

Vendor datasheet values: dense BF16/FP16 tensor peak, HBM capacity and bandwidth, NVLink
bandwidth per direction. Usable memory is ``M_gpu = 0.95·HBM − 2 GiB`` (fragmentation and the
NCCL/cuBLAS workspaces; a modelling choice). GB here is 10⁹ bytes.

A node is ``g`` GPUs and the sum of its NIC rates ``B_nic``; the default NIC rate per GPU is a
round figure of the usual server of that GPU generation (one 100/200/400 Gb/s NIC per GPU), which
``--nic-gbps`` or a topology replaces.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

from schedlab.errors import InputError

GIB = 2**30


@dataclass(frozen=True)
class GPUSpec:
    name: str
    peak_tflops: float  # dense BF16/FP16 tensor
    hbm_gb: float
    hbm_tb_per_s: float
    nvlink_gb_per_s: float  # per direction
    nic_gbps_per_gpu: float  # default NIC rate per GPU of a server of this GPU (ours)

    @property
    def peak_flops(self) -> float:
        return self.peak_tflops * 1e12

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.hbm_tb_per_s * 1e12

    @property
    def nvlink_bytes_per_s(self) -> float:
        return self.nvlink_gb_per_s * 1e9

    @property
    def usable_bytes(self) -> float:
        """``0.95·HBM − 2 GiB``."""
        return 0.95 * self.hbm_gb * 1e9 - 2 * GIB


GPUS: dict[str, GPUSpec] = {
    "A100": GPUSpec("A100", 312.0, 80.0, 2.039, 300.0, 200.0),
    "A800": GPUSpec("A800", 312.0, 80.0, 2.039, 200.0, 200.0),
    "H100": GPUSpec("H100", 989.0, 80.0, 3.35, 450.0, 400.0),
    "H200": GPUSpec("H200", 989.0, 141.0, 4.8, 450.0, 400.0),
    "V100": GPUSpec("V100", 125.0, 32.0, 0.9, 150.0, 100.0),
}

#: Other spellings, including the project's own GPU model names (``schedlab.model.gpu_models``).
ALIASES: dict[str, str] = {
    "A100-80G": "A100",
    "A100-80GB": "A100",
    "A100-SXM4-80GB": "A100",
    "H100-SXM": "H100",
    "H100SXM": "H100",
    "V100M32": "V100",
    "V100-32GB": "V100",
    "V100-SXM2-32GB": "V100",
}


def get_gpu(name: str) -> GPUSpec:
    key = name.strip().upper()
    key = ALIASES.get(key, key)
    if key in GPUS:
        return GPUS[key]
    known = [*GPUS, *ALIASES]
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise InputError(
        f"the LLM planner has no specification for GPU model {name!r} "
        f"(known: {', '.join(GPUS)}){hint}"
    )


def has_gpu(name: str) -> bool:
    key = name.strip().upper()
    return ALIASES.get(key, key) in GPUS


@dataclass(frozen=True)
class NodeNet:
    """A node's network: its NICs together (bytes/s) and the per-message latencies."""

    nic_bytes_per_s: float

    @classmethod
    def default(cls, gpu: GPUSpec, gpus_per_node: int) -> NodeNet:
        return cls(gpu.nic_gbps_per_gpu * gpus_per_node * 1e9 / 8)

    @classmethod
    def from_gbps(cls, gbps: float, where: str = "'--nic-gbps'") -> NodeNet:
        """The node's NICs at ``gbps`` Gb/s together; InputError naming ``where`` (the option,
        or a file's point and field) unless the rate is finite, > 0 and ≤ :data:`MAX_NIC_GBPS`:
        a zero or infinite rate would make every inter-node transfer take forever or nothing."""
        check_nic_gbps(gbps, where)
        return cls(gbps * 1e9 / 8)


#: The fastest node network the planner takes, Gb/s for all of a node's NICs together (10⁶ =
#: 1 Pb/s): over a hundred times today's fastest servers (8 × 800 Gb/s); a larger figure is a
#: typo, and one like 1e300 would only hide every inter-node cost.
MAX_NIC_GBPS = 1e6


def check_nic_gbps(gbps: float, where: str = "'--nic-gbps'") -> None:
    """InputError naming ``where`` unless ``0 < gbps ≤ MAX_NIC_GBPS`` (finite)."""
    if not (math.isfinite(gbps) and 0 < gbps <= MAX_NIC_GBPS):
        raise InputError(
            f"{where} must be a finite rate > 0 and ≤ {MAX_NIC_GBPS:,.0f} Gb/s (a node's NICs "
            f"together; got {gbps:g})"
        )
