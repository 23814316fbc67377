"""``kai``: NVIDIA KAI-Scheduler's proportion plugin — fair shares, queue order and reclaim.

Shares: :mod:`schedlab.tenancy.kai_division` (with time-decayed usage when ``usage`` is set:
KAI's time-based fair share). Queue order (KAI ``queue_order.go``), first difference wins: not
over its fair share (over = above it in every resource), the job fits in deserved quota, higher
priority, does not need a resource it may not hold, smaller ``max_r (alloc + job) /
allocatable``, the same without the job, smaller allocatable share, older queue. The comparison
is made between the two queues' ancestors just below their lowest common ancestor.

Reclaim (KAI ``reclaimable.go``, ``strategies.go``): a job may reclaim while its queue stays
within its fair share with the job; a running job of another queue may be taken if, just below
their common ancestor, the victim's side holds more than its allocatable share, or the
reclaimer's side stays within deserved and the victim's is above deserved; and no level from
the reclaimer's leaf up may be left saturated: ``ρ_r = (alloc + job)/F`` over 1 while a sibling
that lost resources keeps ``ρ_s ≤ m·ρ_r`` rejects the set. Candidates go by their queue's
``max alloc/F`` (highest first), then job priority (lowest first), latest start first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from schedlab.tenancy.config import parse_duration
from schedlab.tenancy.kai_division import TreeDivider
from schedlab.tenancy.policy import DESERVED, FAIR_SHARE, SharePolicy
from schedlab.tenancy.state import TenantState
from schedlab.tenancy.tree import QueueTree
from schedlab.tenancy.usage import MODES, WINDOW_TYPES, UsageLedger, UsageSettings

EPS = 1e-9
#: Generosity of the quick reclaim test against float rounding when demands do not sum exactly
#: (a relative margin; with exact sums it matches the victim rule to the bit).
SLACK = 1e-9


class KaiPolicy(SharePolicy):
    name = "kai"
    summary = "KAI-Scheduler: deserved quota, over-quota weight, priority, time-aware usage"
    settings: ClassVar[dict[str, Any]] = {
        "k_value": 1.0,
        "usage": None,
        "reclaimer_saturation_multiplier": 1.0,
    }

    def configure(self, options: Mapping[str, Any]) -> None:
        k = options["k_value"]
        if isinstance(k, bool) or not isinstance(k, int | float) or not math.isfinite(k):
            raise self.setting_error("k_value", k, "must be a finite number")
        self.k = max(0.0, float(k))  # KAI: values ≤ 0 become 0
        m = options["reclaimer_saturation_multiplier"]
        if isinstance(m, bool) or not isinstance(m, int | float) or not 1 <= m < math.inf:
            raise self.setting_error("reclaimer_saturation_multiplier", m, "must be a number ≥ 1")
        self.multiplier = float(m)
        self.usage_settings = self._usage(options["usage"])
        self.time_based = self.usage_settings is not None  # type: ignore[misc]
        self.repeatable = not self.time_based  # type: ignore[misc]
        self.ledger: UsageLedger | None = None

    def _usage(self, raw: object) -> UsageSettings | None:
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            raise self.setting_error("usage", raw, 'must be a table such as { window = "7d" }')
        allowed = {"window", "window_type", "half_life", "fetch_interval", "mode"}
        bad = set(raw) - allowed
        if bad:
            raise self.setting_error(
                "usage", sorted(bad)[0], f"has an unknown key (keys: {', '.join(sorted(allowed))})"
            )
        kind = raw.get("window_type", "sliding")
        if kind not in WINDOW_TYPES:
            raise self.setting_error("usage.window_type", kind, f"must be one of {WINDOW_TYPES}")
        mode = raw.get("mode", "integral")
        if mode not in MODES:
            raise self.setting_error("usage.mode", mode, f"must be one of {MODES}")
        at = f"{self.source or 'tenancy'}: [tenancy.kai] usage"
        tick = parse_duration(raw.get("fetch_interval", "60s"), f"{at}.fetch_interval")
        window = parse_duration(raw.get("window", "7d"), f"{at}.window")
        if not tick > 0 or not window > 0:
            raise self.setting_error("usage", dict(raw), "needs window and fetch_interval > 0")
        return UsageSettings(
            window=window,
            window_type=kind,
            half_life=parse_duration(raw.get("half_life", "0"), f"{at}.half_life"),
            tick=tick,
            mode=mode,
        )

    # -- life cycle ------------------------------------------------------------------------
    def reset(self, tree: QueueTree, capacity: np.ndarray) -> None:
        super().reset(tree, capacity)
        self._lists = (tree.deserved.tolist(), tree.limit.tolist(), tree.priority.tolist())
        self.divider = TreeDivider(tree, self.k)
        self._room_cache: tuple | None = None
        self._walk_cache: tuple | None = None
        self._candidates: tuple[tuple, list[int]] | None = None
        if self.usage_settings is not None:
            self.ledger = UsageLedger(
                self.usage_settings, (len(tree), len(tree.resources)), capacity
            )

    def observe(self, now: float, alloc: np.ndarray) -> None:
        if self.ledger is not None:
            self.ledger.observe(now, alloc)

    def usage(self, now: float) -> np.ndarray | None:
        return self.ledger.usage(now) if self.ledger is not None else None

    def next_tick(self, now: float) -> float:
        return self.ledger.next_tick(now) if self.ledger is not None else float("inf")

    def export_state(self) -> dict[str, Any]:
        return {"usage": self.ledger.export()} if self.ledger is not None else {}

    def import_state(self, state: Mapping[str, Any]) -> None:
        if self.ledger is not None and "usage" in state:
            self.ledger.restore(state["usage"])

    # -- shares and order ------------------------------------------------------------------
    def shares(self, st: TenantState) -> np.ndarray:
        # A queue never gets more than the cluster: requests are capped there, so a busy
        # cluster's shares repeat from one decision to the next and are kept.
        request = np.minimum(st.request, st.capacity[None, :])
        return self.divider.divide(st.capacity, request, st.usage)

    def _allocatable(self, fair: list[float], node: int) -> list[float]:
        """``max(deserved, F)`` capped by the limit (deserved -1: the fair share)."""
        d, lim, _ = self._lists
        return [
            min(max(f if dv < 0 else dv, f), lv)
            for f, dv, lv in zip(fair, d[node], lim[node], strict=True)
        ]

    def allocatable(self, st: TenantState, fair: np.ndarray, node: int) -> np.ndarray:
        return np.asarray(self._allocatable(fair[node].tolist(), node))

    def _within_deserved(self, alloc: list[float], req: list[float], node: int) -> bool:
        d = self._lists[0][node]
        return all(dv < 0 or a + r <= dv + EPS for a, r, dv in zip(alloc, req, d, strict=True))

    def node_key(self, st: TenantState, fair: np.ndarray, node: int, req: np.ndarray) -> tuple:
        a = st.alloc[node].tolist()
        f = fair[node].tolist()
        r = req.tolist()
        share = self._allocatable(f, node)
        over = all(x > y + EPS for x, y in zip(a, f, strict=True))
        needs_none = any(rv > 0 and s <= 0 for rv, s in zip(r, share, strict=True))
        with_job = max(
            (x + rv) / s if s > 0 else x * 1000.0 for x, rv, s in zip(a, r, share, strict=True)
        )
        without = max(x / s if s > 0 else x * 1000.0 for x, s in zip(a, share, strict=True))
        return (
            over,
            not self._within_deserved(a, r, node),
            -self._lists[2][node],
            needs_none,
            with_job,
            without,
            tuple(share),
            node,
        )

    # -- reclaim ---------------------------------------------------------------------------
    def reclaimer(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> bool:
        req = st.demand[job]
        within = zip(st.alloc[leaf].tolist(), req.tolist(), fair[leaf].tolist(), strict=True)
        if not all(a + r <= f + EPS for a, r, f in within):
            return False
        if st.non_preemptible is not None and st.non_preemptible[job]:
            d = np.where(st.tree.deserved[leaf] < 0, np.inf, st.tree.deserved[leaf])
            return bool((st.alloc_np[leaf] + req <= d + EPS).all())
        return True

    def may_reclaim_any(self, st: TenantState, fair: np.ndarray, smallest: np.ndarray) -> bool:
        """Some leaf stays within its GPU fair share with its smallest waiting job."""
        leaves = st.tree.leaves
        g = st.tree.resources.index("gpu")
        return bool((st.alloc[leaves, g] + smallest[leaves] <= fair[leaves, g] + EPS).any())

    def _may_lose(
        self, st: TenantState, fair: np.ndarray, leaf: int, req: list[float], victim_leaf: int
    ) -> bool:
        """The queue rule for a victim of ``victim_leaf`` (judged below the common ancestor)."""
        qr, qv = st.tree.lca_children(leaf, victim_leaf)
        remaining = st.alloc[qv].tolist()
        share = self._allocatable(fair[qv].tolist(), qv)
        if any(x > s + EPS for x, s in zip(remaining, share, strict=True)):
            return True
        dv = self._lists[0][qv]
        return self._within_deserved(st.alloc[qr].tolist(), req, qr) and any(
            d >= 0 and x > d + EPS for x, d in zip(remaining, dv, strict=True)
        )

    def cannot_make_room(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int, fits: object
    ) -> bool:
        """Whether even every job the flat victim rule could ever offer leaves no room for
        ``job`` of a reclaimer leaf (the placement's quick test, :meth:`_Fits.possible`, on a
        superset of the candidates): most reclaims on a busy cluster fail so, and this answers
        without ordering the running jobs.

        A queue above its share loses its running jobs latest run first while what it keeps
        stays above its share: walking its jobs from the latest run back, each is taken while
        the room left exceeds ``EPS``, so the walk is as long as what it could lose. Where
        demands do not sum exactly, a margin keeps float rounding on the generous side; the
        victims already taken in the decision are passed over. Only for a flat tree and equal
        job priorities."""
        index, possible = st.index, getattr(fits, "possible", None)
        if index is None or possible is None or not st.tree.flat:
            return False
        gone = getattr(fits, "gone", ())
        if st.job_priority is not None:
            return False
        within = self._within_deserved(st.alloc[leaf].tolist(), st.demand[job].tolist(), leaf)
        if gone:
            superset = self._walk(st, fair, within, index, leaf, gone)
        else:  # the walks of a state repeat over a decision and often the next ones
            key = (st.alloc.tobytes(), fair.tobytes(), within, index.changes)
            cached = self._walk_cache
            if cached is None or cached[0] != key:
                cached = self._walk_cache = (key, self._walks(st, fair, within, index))
            superset = [v for q, walk in cached[1] if q != leaf for v in walk]
        return not possible(superset)

    def _walks(self, st: TenantState, fair: np.ndarray, within: bool, index: Any) -> list:
        """``(leaf, jobs it could lose)`` of every leaf above its share, no victim yet taken."""
        return [
            (q, self._walk_one(st, index, q, left, ())) for q, left in self._rooms(st, fair, within)
        ]

    def _walk(
        self, st: TenantState, fair: np.ndarray, within: bool, index: Any, leaf: int, gone: Any
    ) -> list[int]:
        """The jobs every leaf but ``leaf`` could lose, passing over those already ``gone``."""
        superset: list[int] = []
        for q, left in self._rooms(st, fair, within):
            if q != leaf:
                superset += self._walk_one(st, index, q, left, gone)
        return superset

    def _walk_one(self, st: TenantState, index: Any, q: int, left: list, gone: Any) -> list[int]:
        """Queue ``q``'s running jobs from the latest run back, taken while the room left
        (``left`` per resource) exceeds ``EPS`` (with the float margin when sums are not exact)."""
        slack = 0.0 if index.exact else SLACK
        walk = index.oldest_first[q]
        i = len(walk) - 1
        out: list[int] = []
        if st.demand.shape[1] == 1:
            room = left[0]
            while i >= 0 and room > EPS - slack * (1.0 + abs(room)):
                v = -walk[i][1]
                i -= 1
                if v not in gone:
                    out.append(v)
                    room -= index.first[v]
            return out
        while i >= 0 and any(x > EPS - slack * (1.0 + abs(x)) for x in left):
            v = -walk[i][1]
            i -= 1
            if v not in gone:
                out.append(v)
                left = [x - d for x, d in zip(left, index.rows[v], strict=True)]
        return out

    def _rooms(self, st: TenantState, fair: np.ndarray, within: bool) -> list:
        """``(leaf, room per resource)`` of every leaf above its share by more than ``EPS``
        in some resource (the flat victim rule's ``room``), kept for the decision's state."""
        key = (st.alloc.tobytes(), fair.tobytes(), within)
        cached = self._room_cache
        if cached is not None and cached[0] == key:
            return cached[2]
        tree = st.tree
        d = tree.deserved
        room = st.alloc - np.minimum(np.maximum(np.where(d < 0, fair, d), fair), tree.limit)
        if within:
            room = np.where(d >= 0, np.maximum(room, st.alloc - d), room)
        over = np.flatnonzero((room > EPS).any(axis=1)).tolist()
        rows = room[over].tolist()
        out = list(zip(over, rows, strict=True))
        self._room_cache = (key, fair, out)
        return out

    def victim_candidates(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int
    ) -> list[int]:
        req = st.demand[job].tolist()
        if st.tree.flat:
            # Below the root a victim's queue is judged on its own, and the reclaimer enters
            # only through whether it stays within deserved: one list per decision state.
            within = self._within_deserved(st.alloc[leaf].tolist(), req, leaf)
            key = (st.serial, st.alloc.tobytes(), fair.tobytes(), within)
            if self._candidates is None or self._candidates[0] != key:
                self._candidates = (key, self._flat_candidates(st, fair, within))
            return [v for v in self._candidates[1] if int(st.leaf_of[v]) != leaf]
        rows = []
        for other, jobs in st.by_leaf().items():
            if other == leaf or not jobs or not self._may_lose(st, fair, leaf, req, other):
                continue
            rows += self._rows(st, fair, other, jobs)
        rows.sort()
        return [r[3] for r in rows]

    def _rows(self, st: TenantState, fair: np.ndarray, queue: int, jobs: list[int]) -> list:
        """Sort keys of a queue's running jobs: its load (highest first), job priority
        (lowest first), latest start first."""
        with np.errstate(divide="ignore", invalid="ignore"):
            f = fair[queue]
            ratio = np.where(f > 0, st.alloc[queue] / np.where(f > 0, f, 1), np.inf)
        held = st.alloc[queue] > 0
        load = float(ratio[held].max()) if held.any() else 0.0
        began = st.run_began
        return [
            (-load, st.priority_of(v), -(float(began[v]) if began is not None else 0.0), v)
            for v in jobs
        ]

    def _flat_candidates(self, st: TenantState, fair: np.ndarray, within: bool) -> list[int]:
        """Every queue's losable jobs in victim order, each queue cut where what it keeps
        would no longer be above its allocatable share (or its deserved quota, under the
        second rule): the first job that crosses is kept, later ones could never be taken.
        Vectorised over the running jobs (this runs at most decisions of a busy cluster)."""
        jobs = st.running_array()
        if jobs is None:
            jobs = np.asarray([v for vs in st.by_leaf().values() for v in vs], dtype=np.int64)
        if not len(jobs):
            return []
        tree = st.tree
        d = np.where(tree.deserved < 0, fair, tree.deserved)
        share = np.minimum(np.maximum(d, fair), tree.limit)
        room = st.alloc - share
        if within:
            room = np.maximum(room, np.where(tree.deserved >= 0, st.alloc - tree.deserved, -np.inf))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(fair > 0, st.alloc / np.where(fair > 0, fair, 1), np.inf)
        load = np.where(st.alloc > 0, ratio, -np.inf).max(axis=1)
        load = np.where(np.isfinite(load) | (load > 0), load, 0.0)
        leaf = st.leaf_of[jobs]
        losable = (room[leaf] > EPS).any(axis=1)
        jobs, leaf = jobs[losable], leaf[losable]
        if not len(jobs):
            return []
        prio = st.job_priority[jobs] if st.job_priority is not None else np.zeros(len(jobs))
        began = st.run_began[jobs] if st.run_began is not None else np.zeros(len(jobs))
        order = np.lexsort((jobs, -began, prio, -load[leaf]))
        jobs, leaf = jobs[order], leaf[order]
        # Per queue, in that order: what the queue keeps before each job is taken.
        by_queue = np.argsort(leaf, kind="stable")
        q_sorted = leaf[by_queue]
        dem = st.demand[jobs[by_queue]]
        cum = np.cumsum(dem, axis=0)
        starts = np.flatnonzero(np.r_[True, q_sorted[1:] != q_sorted[:-1]])
        base = np.repeat(cum[starts] - dem[starts], np.diff(np.r_[starts, len(q_sorted)]), axis=0)
        taken_before = cum - dem - base
        keep_sorted = ((room[q_sorted] - taken_before) > EPS).any(axis=1)
        keep = np.empty(len(jobs), dtype=bool)
        keep[by_queue] = keep_sorted
        return jobs[keep].tolist()

    def allow_victim(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int
    ) -> bool:
        req = st.demand[job]
        if not self._may_lose(st, fair, leaf, req.tolist(), int(st.leaf_of[victim])):
            return False
        # The saturation check on the set with this victim taken. At the reclaimer's own leaf
        # ρ_r ≤ 1 already (it may reclaim only within its fair share), so only levels above
        # can reject: a queue right under the root has none to check.
        if len(st.tree.ancestors[leaf]) == 1:
            return True
        st.give_back(victim)
        try:
            return self._not_saturated(st, fair, leaf, req)
        finally:
            st.take(victim)

    def _not_saturated(self, st: TenantState, fair: np.ndarray, leaf: int, req: np.ndarray) -> bool:
        tree = st.tree
        involved = req > 0
        before = st.reclaim_base if st.reclaim_base is not None else st.alloc
        for node in tree.ancestors[leaf]:
            f = fair[node]
            for r in np.flatnonzero(involved):
                if f[r] <= 0:
                    continue
                rho_r = (st.alloc[node, r] + req[r]) / f[r]
                if rho_r <= 1 + EPS:
                    continue
                for sib in tree.children[int(tree.parent[node])]:
                    if sib == node or fair[sib, r] <= 0:
                        continue
                    if st.alloc[sib, r] < before[sib, r] - EPS:  # it lost resources
                        rho_s = st.alloc[sib, r] / fair[sib, r]
                        if rho_r * self.multiplier >= rho_s - EPS:
                            return False
        return True

    def reason(self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int) -> str:
        d = np.where(st.tree.deserved[leaf] < 0, np.inf, st.tree.deserved[leaf])
        return DESERVED if (st.alloc[leaf] + st.demand[job] <= d + EPS).all() else FAIR_SHARE
