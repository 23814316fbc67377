"""``spread``: the node with the most free GPU share, so load spreads across the cluster."""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.policies.placement.base import PlacementPolicy, PodRequest


class Spread(PlacementPolicy):
    name = "spread"
    summary = "the node with the most free GPU share (worst fit), to spread load"
    # Declared capabilities: it runs in pack, replay and serve (the default for placement) and
    # keeps nothing between decisions.
    stateful = False

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        # Higher wins; ties go to the run's seeded node order.
        return state.gpu_free_sum.astype(np.float64)
