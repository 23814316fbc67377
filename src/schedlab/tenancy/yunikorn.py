"""``yunikorn``: Apache YuniKorn's fair queue sorting and preemption towards guarantees.

Children with pending demand are sorted by ``s_q = max_r alloc_r / g_r`` over the resources
they hold, ``g_r`` the guaranteed amount if set (a guarantee ≤ 0 counts as 1 when used), else
the nearest ``max`` (``limit``) of the queue or an ancestor (the cluster at the root); lower
first, higher priority first when priorities differ, ties to the queue with more pending
(YuniKorn ``objects/sorters.go``). A job's priority is the sum of its queue path's priority
offsets.

Preemption (``preemption.md``): only a job of a queue under its guarantee may preempt; victims
come from queues over their guarantee that stay at or above it without the victim, never of a
higher priority than the job, never across a fence (``preemption = { fence = true }`` on a
queue keeps its subtree's jobs from being taken by jobs outside it); jobs of queues with
``allow_preemption = false`` are taken last. A queue with no guarantee never preempts.
"""

from __future__ import annotations

import numpy as np

from schedlab.tenancy.policy import DESERVED, SharePolicy
from schedlab.tenancy.state import TenantState
from schedlab.tenancy.tree import ROOT

EPS = 1e-9


class YuniKorn(SharePolicy):
    name = "yunikorn"
    summary = "YuniKorn: guaranteed/max queues, preemption towards guarantees"

    def shares(self, st: TenantState) -> np.ndarray:
        """The guarantee, where set (YuniKorn has no dynamic fair share)."""
        return np.clip(st.tree.deserved, 0, None) + 0.0

    def fair_max(self, st: TenantState, node: int) -> np.ndarray:
        """The nearest ``max`` on the path up (the cluster at the root), per resource."""
        tree = st.tree
        out = np.full(len(tree.resources), np.inf)
        for n in tree.ancestors[node]:
            out = np.where(np.isinf(out), tree.limit[n], out)
        return np.where(np.isinf(out), st.capacity, out)

    def sort_value(self, st: TenantState, node: int) -> float:
        """``max_r alloc_r / g_r`` over the resources the queue holds."""
        alloc = st.alloc[node]
        held = alloc > 0
        if not held.any():
            return 0.0
        g = st.tree.deserved[node]
        base = np.where(g > 0, g, np.where(g < 0, st.capacity, np.nan))
        base = np.where(np.isnan(base), self.fair_max(st, node), base)
        base = np.where(base <= 0, 1.0, base)
        return float((alloc[held] / base[held]).max())

    def node_key(self, st: TenantState, fair: np.ndarray, node: int, req: np.ndarray) -> tuple:
        pending = float(st.pending[node].sum())
        return (-float(st.tree.priority[node]), self.sort_value(st, node), -pending, node)

    def job_priority(self, st: TenantState, job: int) -> float:
        tree = st.tree
        return float(sum(tree.priority[n] for n in tree.ancestors[int(st.leaf_of[job])]))

    def _guaranteed(self, st: TenantState, node: int) -> np.ndarray:
        g = st.tree.deserved[node]
        return np.where(g < 0, st.capacity, g)

    def reclaimer(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> bool:
        tree = st.tree
        needs = st.demand[job] > 0
        g = tree.deserved[leaf]
        if not (g[needs] > 0).any():
            return False  # preemption needs a guarantee
        return bool((st.alloc[leaf, needs] < self._guaranteed(st, leaf)[needs] - EPS).any())

    def _fenced(self, st: TenantState, leaf: int, victim_leaf: int) -> bool:
        """Is the victim inside a fenced queue the job is outside of?"""
        tree = st.tree
        mine = set(tree.ancestors[leaf])
        return any(
            tree.preemption[n].get("fence") is True and n not in mine
            for n in tree.ancestors[victim_leaf]
        )

    def victim_candidates(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int
    ) -> list[int]:
        prio = self.job_priority(st, job)
        rows = []
        for other, jobs in st.running.items():
            if other == leaf or self._fenced(st, leaf, other):
                continue
            last = st.tree.preemption[other].get("allow_preemption") is False
            for v in jobs:
                pv = self.job_priority(st, v)
                if pv > prio:
                    continue
                began = float(st.run_began[v]) if st.run_began is not None else 0.0
                rows.append((last, pv, -began, v))
        return [r[-1] for r in sorted(rows)]

    def allow_victim(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int
    ) -> bool:
        vleaf = int(st.leaf_of[victim])
        if not self.reclaimer(st, fair, leaf, job):
            return False  # the job's queue reached its guarantee
        for node in st.tree.ancestors[vleaf]:
            if node in st.tree.ancestors[leaf] or node == ROOT:
                break
            g = self._guaranteed(st, node)
            after = st.alloc[node] - st.demand[victim]
            over = st.alloc[node] > g + EPS
            if not over.any() or (after < g - EPS).any():
                return False
        return True

    def reason(self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int) -> str:
        return DESERVED
