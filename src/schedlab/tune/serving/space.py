"""The serving configuration space: GPU type × GPU share × GPU memory × CPU cores × max batch.

3 · 4 · 4 · 3 · 5 = 720 configurations, numbered in lexicographic order of (type, share,
memory, cores, batch) — the order grid search walks. Features for the learned tuners: a one-hot
GPU type and the log2 of each numeric knob scaled to [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

GPU_TYPES = ("T4", "V100", "A100")
SHARES = (0.25, 0.5, 0.75, 1.0)
MEMORY_GB = (2.0, 4.0, 8.0, 16.0)
CORES = (1, 2, 4)
BATCHES = (1, 4, 8, 16, 32)
#: schedlab's GPU model names (for pod lists): the 16 GB V100 and the 40 GB A100.
SCHEDLAB_GPU = {"T4": "T4", "V100": "V100M16", "A100": "A100"}


@dataclass(frozen=True)
class Space:
    """Column arrays of the 720 configurations in grid order."""

    gpu: np.ndarray  # index into GPU_TYPES
    share: np.ndarray
    memory_gb: np.ndarray
    cores: np.ndarray
    batch: np.ndarray

    def __len__(self) -> int:
        return len(self.gpu)

    def config(self, i: int) -> dict[str, object]:
        return {
            "gpu": GPU_TYPES[int(self.gpu[i])],
            "share": float(self.share[i]),
            "memory_gb": float(self.memory_gb[i]),
            "cores": int(self.cores[i]),
            "batch": int(self.batch[i]),
        }

    def label(self, i: int) -> str:
        c = self.config(i)
        return (
            f"{c['gpu']} share {c['share']:g}, {c['memory_gb']:g} GB, {c['cores']} cores, "
            f"batch {c['batch']}"
        )

    @property
    def features(self) -> np.ndarray:
        return features(self)


@cache
def space() -> Space:
    grid = np.meshgrid(
        np.arange(len(GPU_TYPES)),
        np.asarray(SHARES),
        np.asarray(MEMORY_GB),
        np.asarray(CORES),
        np.asarray(BATCHES),
        indexing="ij",
    )
    gpu, share, memory, cores, batch = (g.ravel() for g in grid)
    return Space(
        gpu.astype(np.int64), share, memory, cores.astype(np.int64), batch.astype(np.int64)
    )


def _scaled_log(values: np.ndarray, choices: tuple[float, ...]) -> np.ndarray:
    lo, hi = np.log2(min(choices)), np.log2(max(choices))
    return (np.log2(values) - lo) / (hi - lo)


@cache
def _features() -> np.ndarray:
    s = space()
    onehot = np.eye(len(GPU_TYPES))[s.gpu]
    return np.column_stack(
        (
            onehot,
            _scaled_log(s.share, SHARES),
            _scaled_log(s.memory_gb, MEMORY_GB),
            _scaled_log(s.cores.astype(np.float64), tuple(float(c) for c in CORES)),
            _scaled_log(s.batch.astype(np.float64), tuple(float(b) for b in BATCHES)),
        )
    )


def features(_space: Space | None = None) -> np.ndarray:
    """(720, 7): one-hot GPU type, then log2 share, memory, cores and batch in [0, 1]."""
    return _features()
