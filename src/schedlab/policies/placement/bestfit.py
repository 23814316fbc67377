"""``bestfit``: the node left with the least CPU and GPU after placement."""

from __future__ import annotations

import math

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.policies.placement.base import PlacementPolicy, PodRequest
from schedlab.policies.placement.dotprod import CPU_SCALE, GPU_SCALE


class BestFitPlacement(PlacementPolicy):
    name = "bestfit"
    summary = "least leftover (half CPU, half GPU share, normalised) after placement"

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        # leftover = 0.5·(CPU left)/CPU_SCALE + 0.5·(GPU share left)/GPU_SCALE. Halving is exact
        # in binary, so x/(2·SCALE) is bit for bit 0.5·x/SCALE, in one operation instead of two.
        leftover = (state.cpu_free - pod.cpu_milli) / (2 * CPU_SCALE)
        leftover += (state.gpu_free_total - pod.gpu_total_milli) / (2 * GPU_SCALE)
        # Integer scores, as a scheduler framework reports them: near-equal nodes tie, and the
        # seeded tie order decides. Min-max normalisation would not change the winner.
        leftover = 1.0 - leftover
        leftover *= 100.0
        return np.floor(leftover, out=leftover).astype(np.int64)

    def score_nodes(self, pod: PodRequest, state: ClusterState, nodes: list[int]) -> list[int]:
        """:meth:`score` of a few nodes: the same operations on Python floats (IEEE doubles, as
        numpy's), so the same integers."""
        cpu_left = state.cpu_free.item
        gpu_left = state.gpu_free_total.item
        cpu, gpu = pod.cpu_milli, pod.gpu_total_milli
        return [
            math.floor(
                100.0
                * (
                    1.0
                    - (
                        (cpu_left(n) - cpu) / (2 * CPU_SCALE)
                        + (gpu_left(n) - gpu) / (2 * GPU_SCALE)
                    )
                )
            )
            for n in nodes
        ]
