"""``random``: any feasible node, uniformly; the baseline every other policy must beat."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.policies.placement.base import PlacementPolicy, PodRequest, RunContext


class RandomPlacement(PlacementPolicy):
    name = "random"
    summary = "a feasible node uniformly at random; a random fitting GPU for sharing pods"
    #: Each choice advances the run's generator, so a choice depends on all the earlier ones.
    stateful = True

    def reset(self, ctx: RunContext) -> None:
        self.rng = ctx.rng

    def export_state(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def import_state(self, state: Mapping[str, Any]) -> None:
        if "rng" in state:
            self.rng.bit_generator.state = dict(state["rng"])

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        # Continuous draws: the maximum over feasible nodes is a uniform choice, and ties have
        # probability zero, so the seeded tie order plays no part.
        return self.rng.random(len(feasible))

    def pick_gpus(self, pod: PodRequest, state: ClusterState, node: int) -> tuple[int, ...]:
        if not pod.needs_gpu:
            return ()
        free, exists = state.gpu_free[node], state.gpu_exists[node]
        if pod.is_sharing:
            fitting = np.flatnonzero(exists & (free >= pod.gpu_milli))
            return (int(self.rng.choice(fitting)),)
        whole = np.flatnonzero(exists & (free >= pod.gpu_milli))
        return tuple(int(g) for g in whole[: pod.num_gpu])
