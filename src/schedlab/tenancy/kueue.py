"""``kueue-classic`` and ``kueue-fair``: Kueue's quota, borrowing, admission order and
preemption over a cohort tree (quota arithmetic in :mod:`schedlab.tenancy.kueue_quota`).

Admission gate: a job starts only if its request fits the queue's available quota (nominal +
what the cohort may lend it, within the borrowing limit). Order: ``kueue-classic`` tries queue
heads that fit under nominal first, then by priority, then by creation time;
``kueue-fair`` runs a tournament down the cohort tree: at each cohort the child that would not
borrow with the job goes first, then the lower DRS with the job added, then priority, then
creation time.

Preemption, per queue (``preemption`` in the queue file, else the policy's defaults, all
``Never`` as in Kueue): ``within_cluster_queue`` (same-queue victims of lower priority, or also
newer equal priority), ``reclaim_within_cohort`` (victims in queues that borrow a resource the
job needs, of lower priority or any), ``borrow_within_cohort`` (``kueue-classic`` only; with
``max_priority_threshold``). Candidates: other queues before the own one, lower priority, most
recently admitted, then job index. ``kueue-classic`` follows Kueue's ``getTargets`` (borrowing
allowed when every candidate is in the own queue; the cohort without borrowing while the queue
is under nominal; else the own queue with borrowing); ``kueue-fair`` its fair-sharing
strategies: S2-a (preempt if the job's side's DRS with it stays ≤ the victim side's DRS without
the victim), then S2-b (< the victim side's DRS with it), one victim per queue, sides taken
from the highest DRS down; a job within nominal on the resources it needs skips the test.

Job priorities are 0 unless the state carries them (traces have none).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from schedlab.tenancy.kueue_quota import KueueQuota
from schedlab.tenancy.policy import BORROW, PRIORITY, SharePolicy
from schedlab.tenancy.state import TenantState
from schedlab.tenancy.tree import PREEMPTION_KEYS, QueueTree

EPS = 1e-9
STRATEGIES = ("S2a", "S2b")


class _Kueue(SharePolicy):
    """What both Kueue policies share: quota, gate, candidates."""

    repeatable = True  # no answer reads the time (creation timestamps are the jobs' own)

    settings: ClassVar[dict[str, Any]] = {
        "within_cluster_queue": "Never",
        "reclaim_within_cohort": "Never",
        "borrow_within_cohort": "Never",
        "max_priority_threshold": None,
    }

    def configure(self, options: Mapping[str, Any]) -> None:
        for key, allowed in PREEMPTION_KEYS.items():
            if key in options and options[key] not in allowed:
                raise self.setting_error(key, options[key], f"must be one of {', '.join(allowed)}")
        self.defaults = {k: options[k] for k in PREEMPTION_KEYS if k in options}
        threshold = options.get("max_priority_threshold")
        if threshold is not None and (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or threshold != threshold
        ):
            raise self.setting_error("max_priority_threshold", threshold, "must be a number")
        self.defaults["max_priority_threshold"] = threshold
        self._borrow_ok = True

    def reset(self, tree: QueueTree, capacity: np.ndarray) -> None:
        super().reset(tree, capacity)
        self.quota = KueueQuota(tree, capacity)
        self._memo: dict[str, Any] = {}

    def ceiling(self) -> np.ndarray:
        """What each queue may hold with the rest of the cohort idle."""
        empty = np.zeros((len(self.tree), len(self.tree.resources)))
        return np.minimum(super().ceiling(), self.quota.avail(self.quota.usage(empty)))

    def rule(self, leaf: int, key: str) -> Any:
        return self.tree.preemption[leaf].get(key, self.defaults.get(key, "Never"))

    # -- figures ---------------------------------------------------------------------------
    def shares(self, st: TenantState) -> np.ndarray:
        """Kueue has no fair share: the nominal quota stands in for it in the figures."""
        return self.quota.nominal + 0.0

    def _usage(self, st: TenantState) -> np.ndarray:
        """Per-node usage (kept while the allocation is the same)."""
        key = (st.serial, st.alloc.tobytes())
        if self._memo.get("usage_key") != key:
            self._memo = {"usage_key": key, "usage": self.quota.usage(st.alloc)}
        return self._memo["usage"]

    def _avail(self, st: TenantState) -> np.ndarray:
        usage = self._usage(st)
        if "avail" not in self._memo:
            self._memo["avail"] = self.quota.avail(usage)
        return self._memo["avail"]

    def status(self, st: TenantState, fair: np.ndarray) -> dict[str, np.ndarray]:
        usage = self._usage(st)
        drs = np.array([self.quota.drs(n, usage) for n in range(len(st.tree))])
        return {"drs": np.ceil(drs), "avail_gpu": self.quota.avail(usage)[:, 0]}

    # -- gate ------------------------------------------------------------------------------
    def _fits(self, st: TenantState, leaf: int, req: np.ndarray, borrowing: bool) -> bool:
        usage = self._usage(st)
        avail = self._avail(st)
        if not (req <= avail[leaf] + EPS).all():
            return False
        return borrowing or bool((usage[leaf] + req <= self.quota.nominal[leaf] + EPS).all())

    def admit(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> str | None:
        if self._fits(st, leaf, st.demand[job], True):
            return None
        return f"queue {st.tree.label(leaf)!r} has no quota left for it (nominal + borrowable)"

    def quota_fits(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> bool:
        return self._fits(st, leaf, st.demand[job], self._borrow_ok)

    def borrows(self, st: TenantState, node: int, req: np.ndarray) -> bool:
        usage = self._usage(st)
        return bool((usage[node] + req > self.quota.subtree[node] + EPS).any())

    # -- candidates ------------------------------------------------------------------------
    def _newer(self, st: TenantState, a: int, b: int) -> bool:
        sub = st.submit
        return sub is not None and float(sub[a]) > float(sub[b])

    def candidates(self, st: TenantState, leaf: int, job: int, cohort: bool = True) -> list[int]:
        """Running jobs ``job`` may preempt under its queue's rules, in Kueue's order."""
        req = st.demand[job]
        needs = req > 0
        prio = st.priority_of(job)
        out = []
        within = self.rule(leaf, "within_cluster_queue")
        for v in st.by_leaf().get(leaf, []):
            pv = st.priority_of(v)
            if (within in ("LowerPriority", "LowerOrNewerEqualPriority") and pv < prio) or (
                within == "LowerOrNewerEqualPriority" and pv == prio and self._newer(st, v, job)
            ):
                out.append(v)
        reclaim = self.rule(leaf, "reclaim_within_cohort")
        if cohort and reclaim != "Never":
            usage = self._usage(st)
            for other, jobs in st.by_leaf().items():
                if other == leaf or not jobs:
                    continue
                if not self.quota.borrowing_now(other, usage, needs):
                    continue
                for v in jobs:
                    if reclaim == "Any" or st.priority_of(v) < prio:
                        out.append(v)
        began = st.run_began
        out.sort(
            key=lambda v: (
                int(st.leaf_of[v]) == leaf,
                st.priority_of(v),
                -(float(began[v]) if began is not None else 0.0),
                v,
            )
        )
        return out

    def reclaimer(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> bool:
        """Some victim is possible at all: the queue may preempt its own lower jobs and runs
        some, or may reclaim and another queue borrows."""
        if self.rule(leaf, "within_cluster_queue") != "Never" and st.by_leaf().get(leaf):
            return True
        if self.rule(leaf, "reclaim_within_cohort") == "Never":
            return False
        usage = self._usage(st)
        leaves = st.tree.leaves
        over = (usage[leaves] > self.quota.subtree[leaves] + EPS).any(axis=1)
        return bool((over & (leaves != leaf)).any())

    def reason(self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int) -> str:
        if int(st.leaf_of[victim]) == leaf:
            return PRIORITY
        return BORROW

    def _minimal(
        self,
        st: TenantState,
        leaf: int,
        job: int,
        cands: list[int],
        borrowing: bool,
        fits: Callable[[list[int]], bool],
        threshold: float | None = None,
    ) -> list[int] | None:
        """Kueue's ``minimalPreemptions``: candidates in order until the job fits (victims in
        other queues only while those still borrow what the job needs)."""
        needs = st.demand[job] > 0
        chosen: list[int] = []
        found = False
        for v in cands:
            other = int(st.leaf_of[v])
            if other != leaf:
                still = self.quota.borrowing_now(other, self._usage(st), needs)
                below = threshold is not None and st.priority_of(v) < threshold
                if not still and not below:
                    continue
            chosen.append(v)
            st.give_back(v)
            if self._fits(st, leaf, st.demand[job], borrowing) and fits(chosen):
                found = True
                break
        for v in chosen:
            st.take(v)
        if found:
            self._borrow_ok = borrowing
        return chosen if found else None

    def _under_nominal(self, st: TenantState, leaf: int, job: int) -> bool:
        req = st.demand[job]
        needs = req > 0
        usage = self._usage(st)
        return bool(
            (usage[leaf, needs] + req[needs] <= self.quota.nominal[leaf, needs] + EPS).all()
        )


class KueueClassic(_Kueue):
    name = "kueue-classic"
    summary = "Kueue: nominal quota, cohort borrowing and lending, classic preemption"

    def node_key(self, st: TenantState, fair: np.ndarray, node: int, req: np.ndarray) -> tuple:
        return (self.borrows(st, node, req), node)

    def queue_key(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> list:
        sub = float(st.submit[job]) if st.submit is not None else 0.0
        key = (self.borrows(st, leaf, st.demand[job]), -st.priority_of(job), sub, leaf)
        return [(leaf, key)]

    def select_victims(
        self,
        st: TenantState,
        fair: np.ndarray,
        leaf: int,
        job: int,
        fits: Callable[[list[int]], bool],
    ) -> list[int] | None:
        cands = self.candidates(st, leaf, job)
        if not cands:
            return None
        own = [v for v in cands if int(st.leaf_of[v]) == leaf]
        if len(own) == len(cands):
            return self._minimal(st, leaf, job, cands, True, fits)
        if self.rule(leaf, "borrow_within_cohort") == "LowerPriority":
            threshold = self.rule(leaf, "max_priority_threshold")
            limit = float(threshold) + 1 if threshold is not None else st.priority_of(job)
            if not self._under_nominal(st, leaf, job):
                cands = [
                    v for v in cands if int(st.leaf_of[v]) == leaf or st.priority_of(v) < limit
                ]
            return self._minimal(st, leaf, job, cands, True, fits, limit)
        if self._under_nominal(st, leaf, job):
            found = self._minimal(st, leaf, job, cands, False, fits)
            if found:
                return found
        return self._minimal(st, leaf, job, own, True, fits) if own else None


class KueueFair(_Kueue):
    name = "kueue-fair"
    summary = "Kueue fair sharing: dominant resource share, S2-a / S2-b preemption"
    settings: ClassVar[dict[str, Any]] = {
        **_Kueue.settings,
        "preemption_strategies": list(STRATEGIES),
        "prioritize_non_borrowing": True,
        "preempt_within_nominal": True,
    }

    def configure(self, options: Mapping[str, Any]) -> None:
        super().configure(options)
        strategies = options["preemption_strategies"]
        if (
            not isinstance(strategies, list)
            or not strategies
            or any(s not in STRATEGIES for s in strategies)
            or len(set(strategies)) != len(strategies)
        ):
            raise self.setting_error(
                "preemption_strategies", strategies, 'must be ["S2a"], ["S2b"] or both'
            )
        if self.defaults.get("borrow_within_cohort", "Never") != "Never":
            raise self.setting_error(
                "borrow_within_cohort",
                self.defaults["borrow_within_cohort"],
                "is not used with fair sharing (Kueue ignores it)",
            )
        self.strategies = list(strategies)
        for key in ("prioritize_non_borrowing", "preempt_within_nominal"):
            if not isinstance(options[key], bool):
                raise self.setting_error(key, options[key], "must be true or false")
        self.non_borrowing_first = options["prioritize_non_borrowing"]
        self.within_nominal = options["preempt_within_nominal"]

    def queue_key(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> list:
        req = st.demand[job]
        usage = self._usage(st)
        added = self.quota.usage_with(usage, leaf, req)
        sub = float(st.submit[job]) if st.submit is not None else 0.0
        out = []
        for node in reversed(st.tree.ancestors[leaf]):
            borrows = bool((added[node] > self.quota.subtree[node] + EPS).any())
            out.append(
                (
                    node,
                    (
                        borrows if self.non_borrowing_first else False,
                        self.quota.drs(node, added),
                        -st.priority_of(job),
                        sub,
                        node,
                    ),
                )
            )
        return out

    def select_victims(
        self,
        st: TenantState,
        fair: np.ndarray,
        leaf: int,
        job: int,
        fits: Callable[[list[int]], bool],
    ) -> list[int] | None:
        cands = self.candidates(st, leaf, job)
        if not cands:
            return None
        tree = st.tree
        req = st.demand[job]
        needs = req > 0
        skip_test = self.within_nominal and self._under_nominal(st, leaf, job)
        sides: dict[int, list[int]] = {}
        for v in cands:
            other = int(st.leaf_of[v])
            side = leaf if other == leaf else tree.lca_children(leaf, other)[1]
            sides.setdefault(side, []).append(v)
        chosen: list[int] = []
        retry: list[int] = []

        def done() -> bool:
            return self._fits(st, leaf, req, True) and fits(chosen)

        def drs_now(node: int) -> float:
            return self.quota.drs(node, self._usage(st))

        def preemptor_drs(victim: int) -> float:
            mine = tree.lca_children(leaf, int(st.leaf_of[victim]))[0]
            return self.quota.drs(mine, self.quota.usage_with(self._usage(st), leaf, req))

        first = self.strategies[0]
        found = False
        while sides and not found:
            side = max(sides, key=lambda s: (drs_now(s), -s))
            queue = sides.pop(side)
            if side == leaf:
                v = queue[0]
                chosen.append(v)
                st.give_back(v)
                found = done()
                if len(queue) > 1:
                    sides[side] = queue[1:]
                continue
            before = drs_now(side)
            for i, v in enumerate(queue):
                after = self.quota.drs(
                    side, self.quota.usage_with(self._usage(st), int(st.leaf_of[v]), -st.demand[v])
                )
                mine = preemptor_drs(v)
                if skip_test or _passes(first, mine, before, after):
                    chosen.append(v)
                    st.give_back(v)
                    found = done()
                    rest = queue[i + 1 :]
                    if rest and self.quota.borrowing_now(side, self._usage(st), needs):
                        sides[side] = rest
                    break
                retry.append(v)
        if not found and len(self.strategies) > 1:
            per_side: dict[int, int] = {}
            for v in retry:
                side = tree.lca_children(leaf, int(st.leaf_of[v]))[1]
                per_side.setdefault(side, v)
            while per_side and not found:
                side = max(per_side, key=lambda s: (drs_now(s), -s))
                v = per_side.pop(side)
                if _passes(self.strategies[1], preemptor_drs(v), drs_now(side), 0.0):
                    chosen.append(v)
                    st.give_back(v)
                    found = done()
        for v in chosen:
            st.take(v)
        if found:
            self._borrow_ok = True
        return chosen if found else None


def _passes(strategy: str, preemptor: float, before: float, after: float) -> bool:
    """S2-a: the job's side with it ≤ the victim's side without the victim; S2-b: < the
    victim's side with it."""
    if strategy == "S2a":
        return preemptor <= after + EPS
    return preemptor < before - EPS
