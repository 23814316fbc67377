"""Zeus power-limit curves: how a job's speed and power scale with the GPU power limit.

For one measured workload group with top limit L, a limit PL is the fraction p = PL/L; the job
then progresses speed(p) = T(L)/T(PL) times as fast and draws power(p) = P_avg(PL)/L of the
limit's scale. On GPU model G both are applied to G's TDP, which keeps Zeus's ratios where the
card differs. Only measured limits are used (no interpolation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedlab.energy.data import ZeusRow, zeus_groups
from schedlab.errors import InputError

#: Which Zeus measurement stands for each GPU model (ours; others use the V100 curves).
CURVE_OF_GPU: dict[str, str] = {
    "V100M16": "v100",
    "V100M32": "v100",
    "V100": "v100",
    "P100": "p100",
    "T4": "rtx6000",
    "A10": "a40",
    "G2": "a40",
    "A100": "a40",
    "A100-80G": "a40",
    "G3": "a40",
}
DEFAULT_CURVE_GPU = "v100"

#: Job model name (substring, lower case) → Zeus (dataset, network); the rest run as ResNet-50.
NETWORK_OF_MODEL: tuple[tuple[str, tuple[str, str]], ...] = (
    ("resnet", ("imagenet", "resnet50")),
    ("vgg", ("imagenet", "resnet50")),
    ("inception", ("imagenet", "resnet50")),
    ("bert", ("squad", "bert_base_uncased")),
    ("gpt", ("squad", "bert_base_uncased")),
    ("deepspeech", ("librispeech", "deepspeech2")),
    ("ncf", ("movielens-1m", "ncf")),
    ("shufflenet", ("cifar100", "shufflenetv2")),
)
DEFAULT_NETWORK = ("imagenet", "resnet50")
#: Batch size assumed for a job whose trace gives none (ours: Zeus's ResNet-50 reference batch).
DEFAULT_BATCH = 256


@dataclass(frozen=True)
class PowerCurve:
    """Measured points of one workload on one GPU, as fractions of the top limit."""

    p: np.ndarray  # limit / top limit, increasing, last = 1
    speed: np.ndarray  # speed relative to the top limit
    power: np.ndarray  # average power / top limit
    top_w: float
    rows: tuple[ZeusRow, ...]

    @classmethod
    def from_rows(cls, rows: tuple[ZeusRow, ...]) -> PowerCurve:
        top = rows[-1]
        return cls(
            p=np.array([r.limit_w / top.limit_w for r in rows]),
            speed=np.array([top.time_per_epoch / r.time_per_epoch for r in rows]),
            power=np.array([r.average_power / top.limit_w for r in rows]),
            top_w=top.limit_w,
            rows=rows,
        )

    def index(self, p: float) -> int:
        """The largest measured fraction ≤ ``p`` (the smallest if ``p`` is below them all)."""
        i = int(np.searchsorted(self.p, p + 1e-9, side="right")) - 1
        return max(i, 0)

    def energy_per_epoch(self) -> np.ndarray:
        """Joules per epoch at each measured limit (time × average power)."""
        return np.array([r.time_per_epoch * r.average_power for r in self.rows])

    def energy_optimal(self) -> int:
        """Index of the limit with the least energy per epoch — per unit of work, whatever the
        GPU's TDP scales it by (ties: the lower limit)."""
        return int(np.argmin(self.energy_per_epoch()))

    def energy_per_work(self) -> np.ndarray:
        """Energy per unit of work at each limit relative to the top limit's (power / speed)."""
        return self.power / self.speed / (self.power[-1] / self.speed[-1])

    def zeus_cost_optimal(self, eta: float, max_power_w: float) -> int:
        """Index minimising Zeus's cost η·E + (1 − η)·MAXPOWER·T per epoch."""
        times = np.array([r.time_per_epoch for r in self.rows])
        cost = eta * self.energy_per_epoch() + (1.0 - eta) * max_power_w * times
        return int(np.argmin(cost))


def network_of(model_name: str) -> tuple[str, str]:
    name = str(model_name).lower()
    for needle, network in NETWORK_OF_MODEL:
        if needle in name:
            return network
    return DEFAULT_NETWORK


def curve_gpu(gpu_model: str) -> str:
    return CURVE_OF_GPU.get(gpu_model.upper(), DEFAULT_CURVE_GPU)


def pick_group(
    root: Path, gpu: str, network: tuple[str, str], batch: float
) -> tuple[str, str, int, str]:
    """The measured group for a workload: the network, the batch nearest in log scale (ties:
    larger), the first optimizer by name."""
    groups = [k for k in zeus_groups(root, gpu) if (k[0], k[1]) == network]
    if not groups:
        groups = [k for k in zeus_groups(root, gpu) if (k[0], k[1]) == DEFAULT_NETWORK]
    if not groups:
        raise InputError(
            f"'--power-model measured' finds no measurements of {'/'.join(network)} (nor of "
            f"the default {'/'.join(DEFAULT_NETWORK)}) in "
            f"{root / 'zeus-nsdi23' / f'summary_power_{gpu}.csv'}, column 'network'"
        )
    want = math.log(batch if batch and batch > 0 and math.isfinite(batch) else DEFAULT_BATCH)
    best = min(groups, key=lambda k: (abs(math.log(k[2]) - want), -k[2], k[3]))
    return best


def curve_for(root: Path, gpu: str, network: tuple[str, str], batch: float) -> PowerCurve:
    key = pick_group(root, gpu, network, batch)
    return PowerCurve.from_rows(zeus_groups(root, gpu)[key])
