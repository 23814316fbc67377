"""Who holds what on every GPU when pods of several QoS classes share GPUs, and what each sees.

Per GPU x the engine keeps ``t`` (share held by every pod), ``g`` (share held by guaranteed and
burstable pods, levels 2–3) and ``cnt`` (pods on it). Placement plugins are not changed: each is
shown an ordinary :class:`~schedlab.model.cluster.ClusterState` whose free share per GPU is what
the pod's class may use (spec A.3):

* levels 2–3: ``min(1000 − g, κ·1000 − t)``;
* levels 0–1: ``min(1000, κ·1000 − t)``;

and 0 on a GPU already holding ``split_cap`` pods. With κ = 1 both are ``1000 − t``, so one view
serves every class and, without a split cap, it is exactly the state ``pack`` builds.
CPU and memory are never overcommitted.
"""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import GPU_MILLI, Cluster, ClusterState, pod_class
from schedlab.model.shared_pods import LEVEL_BURSTABLE
from schedlab.policies.placement.base import PodRequest


class SharedCapacity:
    """The per-GPU holdings and the placement view(s) derived from them."""

    def __init__(self, cluster: Cluster, overcommit: float = 1.0, split_cap: int | None = None):
        if overcommit < 1:
            raise ValueError(f"overcommit must be ≥ 1 (got {overcommit})")
        self.cluster = cluster
        self.limit = round(overcommit * GPU_MILLI)
        self.split_cap = split_cap
        self.guaranteed = cluster.new_state()
        self.opportunistic = cluster.new_state() if self.limit > GPU_MILLI else self.guaranteed
        self._views: tuple[ClusterState, ...] = (
            (self.guaranteed,)
            if self.opportunistic is self.guaranteed
            else (self.guaranteed, self.opportunistic)
        )
        shape = self.guaranteed.gpu_free.shape
        self.t = np.zeros(shape, dtype=np.int64)
        self.g = np.zeros(shape, dtype=np.int64)
        self.cnt = np.zeros(shape, dtype=np.int64)
        self.exists = self.guaranteed.gpu_exists
        self.held_total = 0
        self.held_guaranteed = 0
        self.guaranteed_free_total = int(self.guaranteed.gpu_free.sum())

    @property
    def views(self) -> tuple[ClusterState, ...]:
        return self._views

    def view(self, level: int) -> ClusterState:
        """The state a pod of ``level`` is placed on."""
        return self.guaranteed if level >= LEVEL_BURSTABLE else self.opportunistic

    def usable(
        self, t: np.ndarray, g: np.ndarray, cnt: np.ndarray, exists: np.ndarray, level: int
    ) -> np.ndarray:
        """Free share per GPU for a pod of ``level`` given holdings ``t``, ``g``, ``cnt``."""
        if level >= LEVEL_BURSTABLE:
            free = np.minimum(GPU_MILLI - g, self.limit - t)
        else:
            free = np.minimum(GPU_MILLI, self.limit - t)
        free = np.clip(free, 0, GPU_MILLI)
        free[~exists] = 0
        if self.split_cap is not None:
            free[cnt >= self.split_cap] = 0
        return free

    def take(self, node: int, gpus: tuple[int, ...], pod: PodRequest, level: int) -> None:
        """Give a pod its resources; raises ValueError (changing nothing) if its class may not
        use them."""
        view = self.view(level)
        if len(gpus) != (pod.num_gpu if pod.gpu_milli > 0 else 0):
            raise ValueError(f"pod asks for {pod.num_gpu} GPU(s) but {len(gpus)} were chosen")
        if len(set(gpus)) != len(gpus):
            raise ValueError(f"GPU chosen twice on node {node}: {gpus}")
        if view.cpu_free[node] < pod.cpu_milli or view.mem_free[node] < pod.memory_mib:
            raise ValueError(f"node {node} lacks CPU or memory for the pod")
        row = view.gpu_free[node]
        for x in gpus:
            if not 0 <= x < len(row) or not self.exists[node, x] or row[x] < pod.gpu_milli:
                raise ValueError(f"GPU {x} of node {node} cannot take {pod.gpu_milli} milli")
        self._change(node, gpus, pod, level, +1)

    def give_back(self, node: int, gpus: tuple[int, ...], pod: PodRequest, level: int) -> None:
        """Return what :meth:`take` gave (the engine only releases pods it placed)."""
        self._change(node, gpus, pod, level, -1)

    def _change(
        self, node: int, gpus: tuple[int, ...], pod: PodRequest, level: int, sign: int
    ) -> None:
        share = sign * pod.gpu_milli
        guaranteed = level >= LEVEL_BURSTABLE
        for x in gpus:
            self.t[node, x] += share
            self.cnt[node, x] += sign
            if guaranteed:
                self.g[node, x] += share
        held = share * len(gpus)
        self.held_total += held
        if guaranteed:
            self.held_guaranteed += held
        cls = pod_class(pod.num_gpu, pod.gpu_milli)
        for view in self._views:
            view.cpu_free[node] -= sign * pod.cpu_milli
            view.mem_free[node] -= sign * pod.memory_mib
            view.class_counts[node, cls] += sign
        self.refresh(node, gpus)

    def refresh(self, node: int, gpus: tuple[int, ...]) -> None:
        """Recompute the free share of ``gpus`` of ``node`` in every view from the holdings.

        Plain Python on the few changed slots: numpy's per-call overhead would dominate.
        """
        t, g, cnt = self.t[node], self.g[node], self.cnt[node]
        cap, limit = self.split_cap, self.limit
        for view in self._views:
            guaranteed = view is self.guaranteed
            row = view.gpu_free[node]
            total, full = 0, 0
            for x in gpus:
                tx = int(t[x])
                if cap is not None and cnt[x] >= cap:
                    new = 0
                elif guaranteed:
                    new = min(GPU_MILLI - int(g[x]), limit - tx)
                else:
                    new = min(GPU_MILLI, limit - tx)
                new = max(0, min(GPU_MILLI, new))
                old = int(row[x])
                row[x] = new
                total += new - old
                full += (new == GPU_MILLI) - (old == GPU_MILLI)
            view.gpu_free_sum[node] += total
            view.gpu_full_count[node] += full
            if guaranteed:
                self.guaranteed_free_total += total
            view.touch(node)
