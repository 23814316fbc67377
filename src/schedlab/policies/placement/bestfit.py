"""``bestfit``: the node left with the least CPU and GPU after placement."""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.policies.placement.base import PlacementPolicy, PodRequest
from schedlab.policies.placement.dotprod import CPU_SCALE, GPU_SCALE


class BestFitPlacement(PlacementPolicy):
    name = "bestfit"
    summary = "least leftover (half CPU, half GPU share, normalised) after placement"

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        leftover = (
            0.5 * (state.cpu_free - pod.cpu_milli) / CPU_SCALE
            + 0.5 * (state.gpu_free_total - pod.gpu_total_milli) / GPU_SCALE
        )
        # Integer scores, as a scheduler framework reports them: near-equal nodes tie, and the
        # seeded tie order decides. Min-max normalisation would not change the winner.
        return np.floor(100.0 * (1.0 - leftover)).astype(np.int64)
