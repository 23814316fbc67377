"""``dotprod``: align the pod's demand against the node's free vector (Tetris-style)."""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.policies.placement.base import PlacementPolicy, PodRequest

#: Normalisers: the largest node of the FGD study (128 cores, 8 GPUs).
CPU_SCALE = 128_000
GPU_SCALE = 8_000


class DotProductPlacement(PlacementPolicy):
    name = "dotprod"
    summary = "smallest dot product of (free CPU, free GPU) and the pod's demand, both normalised"

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        dot = (state.cpu_free / CPU_SCALE) * (pod.cpu_milli / CPU_SCALE) + (
            state.gpu_free_total / GPU_SCALE
        ) * (pod.gpu_total_milli / GPU_SCALE)
        return np.trunc(100.0 * (1.0 - dot / 2.0)).astype(np.int64)
