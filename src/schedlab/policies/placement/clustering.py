"""``gpu-clustering``: keep pods of the same GPU shape together on the same nodes."""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import ClusterState, pod_class
from schedlab.policies.placement.base import PlacementPolicy, PodRequest

BAND = 25
FULL_NODE_MILLI = 8_000


class GpuClusteringPlacement(PlacementPolicy):
    name = "gpu-clustering"
    summary = "prefer nodes holding only pods of the same GPU shape, then fuller nodes"

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        n = len(feasible)
        if not pod.needs_gpu:
            return np.zeros(n, dtype=np.int64)
        tag = pod_class(pod.num_gpu, pod.gpu_milli)
        held = state.class_counts[:, 1:] > 0  # GPU pod shapes present per node (CPU-only: no tag)
        n_tags = held.sum(axis=1)
        has_mine = held[:, tag - 1]
        band = np.where(
            has_mine & (n_tags == 1), 3, np.where(has_mine, 2, np.where(n_tags == 0, 1, 0))
        )
        fill = (BAND * (FULL_NODE_MILLI - state.gpu_free_total)) // FULL_NODE_MILLI
        return band * BAND + fill
