"""Power of GPUs and CPU sockets, per node of one cluster (spec: PWR's constants and models).

``binary`` (PWR): a GPU draws its idle power when nothing is allocated on it, else its TDP.
``linear`` (ours): idle + (TDP − idle)·min(1, allocated milli / 1000), which only differs from
``binary`` on shared GPUs. ``measured``: a whole-GPU job at power-limit fraction p draws
power(p)·TDP from its Zeus curve (shared GPUs fall back to ``linear``). CPU power follows PWR's
socket model; facility power is PUE × IT power.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from schedlab.energy.data import CpuPower, GpuPower, cpu_power_table, data_dir, gpu_power_table
from schedlab.energy.spec import POWER_MODELS as POWER_MODELS  # declared with the options
from schedlab.errors import InputError
from schedlab.model.cluster import GPU_MILLI, Cluster
from schedlab.model.gpu_models import GPU_MODELS, is_known_model

#: Model names schedlab's cluster specs use for cards the PWR table names differently (ours).
GPU_ALIASES = {"V100": "V100M32", "A100-80G": "A100", "A800": "A100"}

#: The model name of GPUs a cluster spec or topology leaves unnamed.
UNNAMED_MODEL = "GPU"

#: vCPUs per physical core in PWR's socket model.
VCPU_PER_CORE = 2

#: Bounds of the power options (ours): real facilities run at a PUE of 1.1 to about 2.5, GPUs
#: draw up to about 1 kW and a node's other parts a few kW; far beyond those a value is a slip.
MAX_PUE = 5.0
MAX_NODE_BASE_W = 100_000.0
MAX_GPU_W = 5_000.0


@dataclass(frozen=True)
class EnergySettings:
    """What the command line says about power (``--power-model``, ``--pue`` …)."""

    model: str = "binary"
    pue: float = 1.0
    node_base_w: float = 0.0
    #: ``--gpu-power MODEL=IDLE/TDP`` overrides and additions, model name → watts.
    gpu_power: dict[str, GpuPower] = field(default_factory=dict)
    #: Power-limit fraction of the top limit every job runs at (``measured`` only).
    power_limit: float = 1.0
    energy_data: str | None = None

    def __post_init__(self) -> None:
        if self.model not in POWER_MODELS:
            raise InputError(
                f"unknown power model {self.model!r} (known: {', '.join(POWER_MODELS)})"
            )
        if not 1.0 <= self.pue <= MAX_PUE:
            raise InputError(f"'--pue' must be in 1..{MAX_PUE:g} (got {self.pue})")
        if not 0 <= self.node_base_w <= MAX_NODE_BASE_W:
            raise InputError(
                f"'--node-base-w' must be in 0..{MAX_NODE_BASE_W:g} watts (got {self.node_base_w})"
            )
        if not (0 < self.power_limit <= 1):
            raise InputError(f"'--power-limit' must be in (0, 1] (got {self.power_limit})")
        if self.power_limit < 1 and self.model != "measured":
            raise InputError("'--power-limit' needs '--power-model measured'")

    @property
    def root(self) -> Path:
        return data_dir(self.energy_data)


def parse_gpu_power(text: str) -> dict[str, GpuPower]:
    """``T4=10/70,H100=60/700`` → model → idle/TDP watts."""
    out: dict[str, GpuPower] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, watts = part.partition("=")
        idle, _, tdp = watts.partition("/")
        try:
            a, b = float(idle), float(tdp)
        except ValueError:
            raise InputError(f"'--gpu-power' entry must be MODEL=IDLE/TDP (got {part!r})") from None
        if not (0 <= a <= b <= MAX_GPU_W):
            raise InputError(f"'--gpu-power' needs 0 ≤ IDLE ≤ TDP ≤ {MAX_GPU_W:g} W (got {part!r})")
        key = name.strip().upper()
        if not is_known_model(key):
            raise InputError(
                f"'--gpu-power' names an unknown GPU model {name.strip()!r} "
                f"(known: {', '.join(GPU_MODELS)})"
            )
        if key in out:
            raise InputError(f"'--gpu-power' gives {key} twice (got {text!r})")
        out[key] = GpuPower(a, b)
    return out


def gpu_power_for(model: str, settings: EnergySettings) -> GpuPower:
    """Idle/TDP of a GPU model: an override, the table, or the table under an alias."""
    name = model.upper()
    if name in settings.gpu_power:
        return settings.gpu_power[name]
    table = gpu_power_table(settings.root)
    name = GPU_ALIASES.get(name, name)
    if name not in table:
        if name == UNNAMED_MODEL:
            raise InputError(
                f"the cluster's GPUs have no model name ({model!r}: a topology without "
                "model=, or a NODESxGPUS cluster without :MODEL), so their power is unknown: "
                "name the model, e.g. --topology leafspine:...,model=A100 or --cluster "
                f"32x8:A100 (the power table has: {', '.join(sorted(table))}), or give "
                f"--gpu-power {model}=IDLE/TDP"
            )
        raise InputError(
            f"no power figures for GPU model {model!r} (the table has: "
            f"{', '.join(sorted(table))}); give them with --gpu-power {model}=IDLE/TDP"
        )
    return table[name]


def cpu_power_for(gpu_model: str | None, settings: EnergySettings) -> CpuPower | None:
    """PWR's CPU model for a node by its GPU model (None: no CPU figures for such nodes)."""
    models, assigned = cpu_power_table(settings.root)
    key = "CPU-ONLY" if gpu_model is None else gpu_model.upper()
    key = GPU_ALIASES.get(key, key)
    name = assigned.get(key)
    return models[name] if name else None


def socket_power(cpu: CpuPower | None, cpu_milli: int, free_milli: int) -> float:
    """PWR's socket model: cores = ⌈milli/2000⌉, working = cores − ⌊free/2000⌋, active sockets
    ⌈working/per_socket⌉ at full power, the others idle."""
    if cpu is None or cpu_milli <= 0:
        return 0.0
    per_core = VCPU_PER_CORE * 1000
    cores = -(-cpu_milli // per_core)
    working = max(0, cores - max(0, free_milli) // per_core)
    sockets = -(-cores // cpu.cores)
    active = min(sockets, -(-working // cpu.cores))
    return active * cpu.full_w + (sockets - active) * cpu.idle_w


def gpu_power(idle_w: float, tdp_w: float, milli: int, model: str) -> float:
    """One GPU with ``milli`` allocated under ``binary`` or ``linear``."""
    if model == "binary":
        return idle_w if milli <= 0 else tdp_w
    return idle_w + (tdp_w - idle_w) * min(1.0, max(0, milli) / GPU_MILLI)


@dataclass(frozen=True)
class ClusterPower:
    """Per-node figures of one cluster under one setting."""

    settings: EnergySettings
    idle_w: np.ndarray  # per node, per GPU
    tdp_w: np.ndarray  # per node, per GPU
    cpu: tuple[CpuPower | None, ...]

    @classmethod
    def build(cls, cluster: Cluster, settings: EnergySettings) -> ClusterPower:
        idle = np.zeros(cluster.size)
        tdp = np.zeros(cluster.size)
        cache: dict[int, GpuPower] = {}
        cpus: list[CpuPower | None] = []
        for i, m in enumerate(cluster.model.tolist()):
            if m >= 0 and int(cluster.num_gpus[i]) > 0:
                if m not in cache:
                    cache[m] = gpu_power_for(GPU_MODELS[m], settings)
                idle[i], tdp[i] = cache[m].idle_w, cache[m].tdp_w
                cpus.append(cpu_power_for(GPU_MODELS[m], settings))
            else:
                cpus.append(cpu_power_for(None, settings))
        return cls(settings, idle, tdp, tuple(cpus))

    def idle_gpu_w(self, cluster: Cluster) -> float:
        return float((self.idle_w * cluster.num_gpus).sum())

    def node_power(
        self, cluster: Cluster, node: int, gpu_milli: list[int], free_cpu_milli: int
    ) -> tuple[float, float]:
        """(GPU, CPU) watts of one node with ``gpu_milli`` allocated per GPU (binary/linear)."""
        model = "binary" if self.settings.model == "binary" else "linear"
        g = sum(gpu_power(self.idle_w[node], self.tdp_w[node], m, model) for m in gpu_milli)
        c = socket_power(self.cpu[node], int(cluster.cpu_milli[node]), free_cpu_milli)
        return g, c
