"""``consolidate``: keep multi-GPU jobs on as few nodes and racks as possible.

A job that fits in one node goes to the node with the fewest free GPUs that still fits it (so
whole nodes stay free for the next large job), preferring a rack that is already the busiest;
jobs larger than a node are spread over the fewest nodes and racks by the gang placer.
"""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.policies.placement.base import PlacementPolicy, PodRequest


class ConsolidatePlacement(PlacementPolicy):
    name = "consolidate"
    summary = "fewest nodes, then fewest racks: the fullest node and rack that fit"

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        free_gpus = (state.gpu_free >= GPU_MILLI).sum(axis=1)
        rack = state.cluster.rack
        rack_free = np.bincount(rack, weights=free_gpus)[rack]
        # Fewer free GPUs on the node first; among equals, the rack with fewer free GPUs.
        return -(free_gpus * (rack_free.max() + 1) + rack_free)
