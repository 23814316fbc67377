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
    repeatable = True  # no answer reads the time
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
        # In plain floats (a handful of resources: numpy's per-call cost would rule).
        asked = st.demand[job].tolist()
        g = st.tree.deserved[leaf].tolist()
        if not any(n > 0 and x > 0 for n, x in zip(asked, g, strict=True)):
            return False  # preemption needs a guarantee
        held, cap = st.alloc[leaf].tolist(), st.capacity.tolist()
        return any(
            n > 0 and a < (c if x < 0 else x) - EPS
            for n, a, x, c in zip(asked, held, g, cap, strict=True)
        )

    def _accepted(self, st: TenantState, leaf: int, job: int) -> set[int] | None:
        """On a flat tree, the running jobs of other queues :meth:`allow_victim` accepts now
        (None on a deeper tree): taking a victim only lowers its own queue's allocation, and
        the reclaimer's stays as it is, so one refused now is refused all along."""
        if not st.tree.flat:
            return None
        key = (st.serial, st.version, leaf, job)
        if getattr(self, "_accepted_key", None) == key:
            return self._accepted_now
        accepted: set[int] = set()
        if self.reclaimer(st, np.zeros(0), leaf, job):
            jobs = np.asarray(
                [v for q, vs in st.by_leaf().items() if q != leaf for v in vs], dtype=np.int64
            )
            queues = st.leaf_of[jobs]
            g = np.where(st.tree.deserved[queues] < 0, st.capacity, st.tree.deserved[queues])
            held = st.alloc[queues]
            over = (held > g + EPS).any(axis=1)
            keeps = ~((held - st.demand[jobs]) < g - EPS).any(axis=1)
            accepted = set(jobs[over & keeps].tolist())
        self._accepted_key, self._accepted_now = key, accepted
        return accepted

    def cannot_make_room(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int, fits: object
    ) -> bool:
        """If the victims :meth:`_accepted` could not make room together (``fits.possible``),
        no set can."""
        possible = getattr(fits, "possible", None)
        if possible is None or self._accepted(st, leaf, job) is None:
            return False
        return not possible(self.victim_candidates(st, fair, leaf, job))

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
        accepted = self._accepted(st, leaf, job)
        rows = []
        for other, jobs in st.by_leaf().items():
            if other == leaf or self._fenced(st, leaf, other):
                continue
            last = st.tree.preemption[other].get("allow_preemption") is False
            for v in jobs:
                if accepted is not None and v not in accepted:
                    continue  # never accepted in this selection
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
