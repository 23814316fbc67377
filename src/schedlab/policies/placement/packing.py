"""``gpu-packing``: fill partly used GPUs first, then partly used nodes, then small idle nodes."""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.policies.placement.base import PlacementPolicy, PodRequest


class GpuPackingPlacement(PlacementPolicy):
    name = "gpu-packing"
    summary = "shared GPUs first, then partly used nodes, then idle nodes (smaller first)"

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        n = len(feasible)
        if not pod.needs_gpu:
            return np.zeros(n, dtype=np.int64)
        free, exists = state.gpu_free, state.gpu_exists
        num_gpus = state.cluster.num_gpus
        partly_used = (exists & (free < GPU_MILLI)).any(axis=1)
        idle_node = np.maximum(33 - num_gpus, num_gpus)
        fresh_on_used = np.maximum(50 - pod.num_gpu, 33)
        score = np.where(partly_used, fresh_on_used, idle_node)
        if pod.is_sharing:
            # The GPU taken is the fitting one with the least free share; if it is already
            # shared, the score rewards how little would be left on it.
            fitting = exists & (free >= pod.gpu_milli)
            least = np.where(fitting, free, GPU_MILLI + 1).min(axis=1)
            on_shared = least < GPU_MILLI
            shared_score = np.maximum(100 - (least * 100 // GPU_MILLI) // 10, 50)
            score = np.where(on_shared, shared_score, score)
        return score.astype(np.int64)
