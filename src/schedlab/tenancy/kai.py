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

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from schedlab.tenancy.config import parse_duration
from schedlab.tenancy.kai_division import divide_tree
from schedlab.tenancy.policy import DESERVED, FAIR_SHARE, SharePolicy
from schedlab.tenancy.state import TenantState
from schedlab.tenancy.tree import QueueTree
from schedlab.tenancy.usage import MODES, WINDOW_TYPES, UsageLedger, UsageSettings

EPS = 1e-9


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
        if isinstance(k, bool) or not isinstance(k, int | float):
            raise self.setting_error("k_value", k, "must be a number")
        self.k = max(0.0, float(k))  # KAI: values ≤ 0 become 0
        m = options["reclaimer_saturation_multiplier"]
        if isinstance(m, bool) or not isinstance(m, int | float) or m < 1:
            raise self.setting_error("reclaimer_saturation_multiplier", m, "must be a number ≥ 1")
        self.multiplier = float(m)
        self.usage_settings = self._usage(options["usage"])
        self.time_based = self.usage_settings is not None  # type: ignore[misc]
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
        return divide_tree(st.tree, st.capacity, st.request, st.usage, self.k)

    def allocatable(self, st: TenantState, fair: np.ndarray, node: int) -> np.ndarray:
        """``max(deserved, F)`` capped by the limit (deserved -1: the fair share)."""
        d = st.tree.deserved[node]
        d = np.where(d < 0, fair[node], d)
        return np.minimum(np.maximum(d, fair[node]), st.tree.limit[node])

    def node_key(self, st: TenantState, fair: np.ndarray, node: int, req: np.ndarray) -> tuple:
        tree = st.tree
        a = st.alloc[node]
        share = self.allocatable(st, fair, node)
        deserved = np.where(tree.deserved[node] < 0, np.inf, tree.deserved[node])
        over = bool((a > fair[node] + EPS).all())
        within = bool((a + req <= deserved + EPS).all())
        needs_none = bool(((req > 0) & (share <= 0)).any())
        with np.errstate(divide="ignore", invalid="ignore"):
            pos = share > 0
            with_job = np.where(pos, (a + req) / np.where(pos, share, 1), a * 1000.0)
            without = np.where(pos, a / np.where(pos, share, 1), a * 1000.0)
        return (
            over,
            not within,
            -float(tree.priority[node]),
            needs_none,
            float(with_job.max()),
            float(without.max()),
            tuple(share.tolist()),
            node,
        )

    # -- reclaim ---------------------------------------------------------------------------
    def reclaimer(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> bool:
        req = st.demand[job]
        if not (st.alloc[leaf] + req <= fair[leaf] + EPS).all():
            return False
        if st.non_preemptible is not None and st.non_preemptible[job]:
            d = np.where(st.tree.deserved[leaf] < 0, np.inf, st.tree.deserved[leaf])
            return bool((st.alloc_np[leaf] + req <= d + EPS).all())
        return True

    def victim_candidates(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int
    ) -> list[int]:
        rows = []
        for other, jobs in st.running.items():
            if other == leaf or not jobs:
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                f = fair[other]
                ratio = np.where(f > 0, st.alloc[other] / np.where(f > 0, f, 1), np.inf)
            load = float(ratio[st.alloc[other] > 0].max()) if (st.alloc[other] > 0).any() else 0.0
            began = st.run_began
            for v in jobs:
                start = float(began[v]) if began is not None else 0.0
                rows.append((-load, st.priority_of(v), -start, v))
        rows.sort()
        return [r[3] for r in rows]

    def allow_victim(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int
    ) -> bool:
        tree = st.tree
        vleaf = int(st.leaf_of[victim])
        qr, qv = tree.lca_children(leaf, vleaf)
        remaining = st.alloc[qv]
        req = st.demand[job]
        allowed = bool((remaining > self.allocatable(st, fair, qv) + EPS).any())
        if not allowed:
            dr = np.where(tree.deserved[qr] < 0, np.inf, tree.deserved[qr])
            dv = np.where(tree.deserved[qv] < 0, np.inf, tree.deserved[qv])
            allowed = bool((st.alloc[qr] + req <= dr + EPS).all()) and bool(
                (remaining > dv + EPS).any()
            )
        if not allowed:
            return False
        # The saturation check on the set with this victim taken.
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
