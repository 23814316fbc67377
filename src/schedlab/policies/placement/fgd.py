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

from schedlab.metrics.fragmentation import TargetWorkload
from schedlab.model.cluster import ClusterState
from schedlab.policies.placement.base import PlacementPolicy, PodRequest, RunContext

NO_SCORE = -1


def fgd_score(delta_milli: np.ndarray) -> np.ndarray:
    """⌊100 · σ(Δ/1000)⌋ as an integer, the way a scheduler framework reports it (the value is
    positive, so the cast's truncation is the floor)."""
    return (100.0 / (1.0 + np.exp(-delta_milli / 1000.0))).astype(np.int64)


#: Shares whose slot-swap table (see ``FgdPlacement._swap``) is kept; pods of other shares
#: compute the swap directly. Twenty-odd shares cover the Alibaba traces.
SWAP_TABLES = 64


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
        # A run started without pods or jobs has no typical tasks; it never scores.
        tasks = len(self.target) if self.target is not None else 0
        self.tables = self.target.tables if self.target is not None else None
        self._shapes: dict[tuple[int, int, int], _ShapeCache] = {}
        self._frag = np.zeros(n)
        self._frag_version = np.full(n, -1, dtype=np.int64)
        # Per node, at the version of ``_frag_version``: packed slot sums against the typical
        # tasks (see FragmentationTables) and the idle share, from which every candidate state
        # of that node is derived by changing one or a few slots; and which tasks its GPU
        # model allows (fixed).
        self._packed = np.zeros((n, tasks), dtype=np.int64)
        self._idle = np.zeros(n, dtype=np.int64)
        self._allowed = (
            self.tables.allowed_for(self.model)
            if self.tables is not None
            else np.zeros((n, 0), dtype=bool)
        )
        self._swaps: dict[int, np.ndarray] = {}
        self.rescored_states = 0

    def _swap(self, share: int, r: np.ndarray) -> np.ndarray:
        """(len(r), M): change of a node's packed slot sums when a slot with ``r`` free (each
        ≥ ``share``) gives ``share`` to a pod."""
        table = self._swaps.get(share)
        if table is None:
            slot = self.tables.slot
            if len(self._swaps) >= SWAP_TABLES:
                return slot[r - share] - slot[r]
            table = np.zeros_like(slot)
            table[share:] = slot[: len(slot) - share] - slot[share:]
            self._swaps[share] = table
        return table[r]

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
        nodes = (feasible & (cache.version != state.version)).nonzero()[0]
        if len(nodes):
            score, gpu, version = self._rescore(pod, state, nodes)
            cache.score[nodes] = score
            cache.gpu[nodes] = gpu
            cache.version[nodes] = version
        self._last = cache
        return cache.score

    def _rescore(
        self, pod: PodRequest, state: ClusterState, nodes: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Scores of ``nodes`` for the pod, the GPU each would get (sharing pods; else -1) and
        the node versions they hold for.

        A node's own fragmentation ("before") is recomputed only when the node changed since
        it was last computed, whatever the shape. Each candidate "after" state is derived from
        the node's cached packed slot sums with the changed slots swapped. The per-task
        matrices of both come from one call, and each is multiplied by the task probabilities
        in its own batch, the stale nodes in one and the candidates in another, as always.
        """
        tables, allowed = self.tables, self._allowed
        free = state.gpu_free[nodes]
        cpu = state.cpu_free[nodes]
        version = state.version[nodes]
        stale = self._frag_version[nodes] != version
        n_stale = int(np.count_nonzero(stale))
        if n_stale:
            stale_nodes = nodes[stale]
            stale_free = free[stale]
            stale_packed = tables.slot_sums(stale_free)
            stale_idle = np.add.reduce(stale_free, axis=1)
            self._packed[stale_nodes] = stale_packed
            self._idle[stale_nodes] = stale_idle
            self._frag_version[stale_nodes] = version[stale]
        packed = self._packed[nodes]
        idle = self._idle[nodes]
        share = pod.gpu_milli
        sharing = pod.is_sharing
        if sharing:
            # One candidate state per (node, GPU that fits): that GPU loses the pod's share.
            row, gpu = (state.gpu_exists[nodes] & (free >= share)).nonzero()  # node by node
            r = free[row, gpu]
            cols = (
                cpu[row] - pod.cpu_milli,
                packed[row] + self._swap(share, r),
                idle[row] - share,
                allowed[nodes[row]],
            )
            self.rescored_states += len(row)
        else:
            if pod.needs_gpu:
                whole = state.gpu_exists[nodes] & (free >= share)
                take = whole & (np.cumsum(whole, axis=1) <= pod.num_gpu)
                after = free - take * share
                packed = tables.slot_sums(after)
                idle = np.add.reduce(after, axis=1)
            cols = (cpu - pod.cpu_milli, packed, idle, allowed[nodes])
            self.rescored_states += len(nodes)
        if n_stale:
            before_cols = (cpu[stale], stale_packed, stale_idle, allowed[stale_nodes])
            per_task = tables.per_task(
                *(np.concatenate(pair) for pair in zip(before_cols, cols, strict=True))
            )
            self._frag[stale_nodes] = per_task[:n_stale] @ self.target.prob
            frag_after = per_task[n_stale:] @ self.target.prob
        else:
            frag_after = tables.per_task(*cols) @ self.target.prob
        before = self._frag[nodes]
        if sharing:
            k, width = free.shape
            scores = np.full((k, width), NO_SCORE, dtype=np.int64)
            scores[row, gpu] = fgd_score(before[row] - frag_after)
            best = scores.argmax(axis=1)  # first maximum: lowest GPU index on ties
            return scores[np.arange(k), best], best, version
        return fgd_score(before - frag_after), np.full(len(nodes), -1, dtype=np.int64), version

    def pick_gpus(self, pod: PodRequest, state: ClusterState, node: int) -> tuple[int, ...]:
        if pod.is_sharing:
            return (int(self._last.gpu[node]),)
        return super().pick_gpus(pod, state, node)
