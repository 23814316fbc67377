"""``fgd``: Fragmentation Gradient Descent (Weng et al., ATC '23).

Place the pod where it grows cluster fragmentation the least: the score of a node is
⌊100 · σ(Δ / 1000)⌋ with Δ = F_n(before) − F_n(after) in milli-GPU, F the fragmentation measure
of :mod:`schedlab.metrics.fragmentation` against the run's typical tasks. For a GPU-sharing pod
every GPU that fits is tried and the best (integer) score kept, lowest GPU index on ties.

Speed: a node's score for a pod shape changes only when that node changes, so scores are cached
per (CPU, GPU count, share) shape with the node versions they were computed at, and only nodes
that changed since are rescored, in one vectorised batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.metrics.fragmentation import TargetWorkload, node_fragmentation
from schedlab.model.cluster import ClusterState
from schedlab.policies.placement.base import PlacementPolicy, PodRequest, RunContext

NO_SCORE = -1


def fgd_score(delta_milli: np.ndarray) -> np.ndarray:
    """⌊100 · σ(Δ/1000)⌋ as an integer, the way a scheduler framework reports it."""
    return np.trunc(100.0 / (1.0 + np.exp(-delta_milli / 1000.0))).astype(np.int64)


@dataclass
class _ShapeCache:
    score: np.ndarray
    gpu: np.ndarray
    version: np.ndarray


class FgdPlacement(PlacementPolicy):
    name = "fgd"
    summary = "least growth of GPU fragmentation against the typical tasks (FGD, ATC '23)"

    def reset(self, ctx: RunContext) -> None:
        self.target: TargetWorkload = ctx.target
        self.model = ctx.cluster.model
        n = ctx.cluster.size
        self._shapes: dict[tuple[int, int, int], _ShapeCache] = {}
        self._frag = np.zeros(n)
        self._frag_version = np.full(n, -1, dtype=np.int64)
        self.rescored_states = 0

    def _node_frag(self, state: ClusterState, nodes: np.ndarray) -> np.ndarray:
        stale = nodes[self._frag_version[nodes] != state.version[nodes]]
        if len(stale):
            self._frag[stale] = node_fragmentation(
                state.cpu_free[stale], state.gpu_free[stale], self.model[stale], self.target
            )
            self._frag_version[stale] = state.version[stale]
        return self._frag[nodes]

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        key = (pod.cpu_milli, pod.num_gpu, pod.gpu_milli)
        cache = self._shapes.get(key)
        if cache is None:
            n = len(feasible)
            cache = _ShapeCache(
                np.full(n, NO_SCORE, dtype=np.int64),
                np.full(n, -1, dtype=np.int64),
                np.full(n, -1, dtype=np.int64),
            )
            self._shapes[key] = cache
        nodes = np.flatnonzero(feasible & (cache.version != state.version))
        if len(nodes):
            score, gpu = self._rescore(pod, state, nodes)
            cache.score[nodes] = score
            cache.gpu[nodes] = gpu
            cache.version[nodes] = state.version[nodes]
        self._last = cache
        return cache.score

    def _rescore(
        self, pod: PodRequest, state: ClusterState, nodes: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        before = self._node_frag(state, nodes)
        free = state.gpu_free[nodes]
        cpu_after = state.cpu_free[nodes] - pod.cpu_milli
        models = self.model[nodes]
        if pod.is_sharing:
            # One candidate state per (node, GPU that fits): that GPU loses the pod's share.
            k, width = free.shape
            fits = state.gpu_exists[nodes] & (free >= pod.gpu_milli)
            after = np.repeat(free[:, None, :], width, axis=1)  # (k, g_try, g)
            after[:, np.arange(width), np.arange(width)] -= pod.gpu_milli
            flat_fits = fits.ravel()
            frag_after = np.zeros(k * width)
            frag_after[flat_fits] = node_fragmentation(
                np.repeat(cpu_after, width)[flat_fits],
                after.reshape(k * width, width)[flat_fits],
                np.repeat(models, width)[flat_fits],
                self.target,
            )
            scores = np.where(
                fits, fgd_score(before[:, None] - frag_after.reshape(k, width)), NO_SCORE
            )
            self.rescored_states += int(flat_fits.sum())
            best = scores.argmax(axis=1)  # first maximum: lowest GPU index on ties
            return scores[np.arange(k), best], best
        if pod.needs_gpu:
            whole = state.gpu_exists[nodes] & (free >= pod.gpu_milli)
            take = whole & (np.cumsum(whole, axis=1) <= pod.num_gpu)
            free = free - take * pod.gpu_milli
        frag_after = node_fragmentation(cpu_after, free, models, self.target)
        self.rescored_states += len(nodes)
        return fgd_score(before - frag_after), np.full(len(nodes), -1, dtype=np.int64)

    def pick_gpus(self, pod: PodRequest, state: ClusterState, node: int) -> tuple[int, ...]:
        if pod.is_sharing:
            return (int(self._last.gpu[node]),)
        return super().pick_gpus(pod, state, node)
