"""``gavel-wf``: Gavel's hierarchical max-min water-filling between entities (queues), per round.

Gavel (``scheduler/policies/max_min_fairness_water_filling.py``) gives each job ``i`` of ``s_i``
GPUs a time fraction ``x_i ≤ 1`` with ``Σ s_i x_i ≤ n`` and raises every unfrozen job's
``x_i · s_i / w_i`` together; a job that cannot grow (``x_i = 1``) is frozen, its entity's
weight is split again over the entity's unfrozen jobs (``fairness``: equally; ``fifo``: all to
the oldest), and the filling goes on until nothing freezes. On identical GPUs the level has a
closed form, used here: ``x_i = min(1, L·w_i/s_i)`` with ``L`` set by the capacity (the LP of
heterogeneous clusters is not used: GPU models are pooled).

A queue's fair share is ``Σ s_i x_i`` over its jobs (running and pending); shares are
recomputed and reclaim happens only at round boundaries (``round``, 360 s): a queue below its
share with the job may take jobs of queues above theirs, while those stay above.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from schedlab.tenancy.config import parse_duration
from schedlab.tenancy.policy import FAIR_SHARE, SharePolicy
from schedlab.tenancy.state import TenantState, roll_up
from schedlab.tenancy.tree import QueueTree

EPS = 1e-9
MODES = ("fairness", "fifo")


def water_fill(
    sizes: np.ndarray,
    entity: np.ndarray,
    entity_weight: np.ndarray,
    capacity: float,
    mode: str = "fairness",
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Each job's time fraction ``x`` (see the module docstring)."""
    n = len(sizes)
    x = np.zeros(n)
    frozen = np.zeros(n, dtype=bool)
    sizes = sizes.astype(np.float64)
    order = np.arange(n) if order is None else order
    while not frozen.all():
        w = np.zeros(n)
        for e in np.unique(entity[~frozen]):
            mine = np.flatnonzero((entity == e) & ~frozen)
            if mode == "fifo":
                first = mine[np.argmin(order[mine])]
                w[first] = entity_weight[e]
            else:
                w[mine] = entity_weight[e] / len(mine)
        active = ~frozen & (w > 0)
        if not active.any():
            break
        left = capacity - float((x[frozen] * sizes[frozen]).sum())
        # Σ_active min(1, L·w/s)·s = left: breakpoints at L = s/w.
        cut = sizes[active] / w[active]
        level = _level(cut, sizes[active], w[active], left)
        with np.errstate(invalid="ignore"):
            grown = np.where(w > 0, np.minimum(1.0, level * w / np.where(sizes > 0, sizes, 1)), 0)
        x[active] = grown[active]
        full = active & (x >= 1.0 - EPS)
        if not full.any():
            break
        frozen |= full
        x[full] = 1.0
    return x


def _level(cut: np.ndarray, sizes: np.ndarray, w: np.ndarray, left: float) -> float:
    """The water level ``L`` with ``Σ min(1, L·w/s)·s = left`` (∞ if all fit)."""
    if float(sizes.sum()) <= left + EPS:
        return float("inf")
    order = np.argsort(cut)
    filled = 0.0  # GPUs of the jobs already capped
    rate = float(w.sum())  # d(Σ)/dL of the uncapped ones
    for k in order:
        if filled + rate * cut[k] >= left:
            break
        filled += sizes[k]
        rate -= w[k]
    return (left - filled) / rate if rate > 0 else float("inf")


class GavelWaterFilling(SharePolicy):
    name = "gavel-wf"
    summary = "Gavel hierarchical max-min water-filling, per 360 s round"
    settings: ClassVar[dict[str, Any]] = {"round": "360s", "mode": "fairness"}

    def configure(self, options: Mapping[str, Any]) -> None:
        at = f"{self.source or 'tenancy'}: [tenancy.gavel-wf] round"
        self.round = parse_duration(options["round"], at)
        if not self.round > 0:
            raise self.setting_error("round", options["round"], "must be > 0")
        if options["mode"] not in MODES:
            raise self.setting_error("mode", options["mode"], f"must be one of {MODES}")
        self.mode = options["mode"]
        self.time_based = True  # type: ignore[misc]

    def reset(self, tree: QueueTree, capacity: np.ndarray) -> None:
        super().reset(tree, capacity)
        self.cached: np.ndarray | None = None
        self.cached_round = -1

    def observe(self, now: float, alloc: np.ndarray) -> None:
        self.now = now

    def next_tick(self, now: float) -> float:
        return (np.floor(now / self.round + EPS) + 1) * self.round

    def _round(self, now: float) -> int:
        return int(np.floor(now / self.round + EPS))

    def shares(self, st: TenantState) -> np.ndarray:
        r = self._round(st.now)
        if self.cached is not None and r == self.cached_round:
            return self.cached
        tree = st.tree
        jobs: list[int] = [j for js in st.running.values() for j in js]
        jobs += st.queued() if st.queued is not None else []
        fair = np.zeros_like(st.alloc)
        if jobs:
            idx = np.asarray(jobs, dtype=np.int64)
            leaves = st.leaf_of[idx]
            x = water_fill(
                st.demand[idx, 0],
                leaves,
                tree.weight,
                float(st.capacity[0]),
                self.mode,
                st.submit[idx] if st.submit is not None else None,
            )
            own = np.zeros((len(tree), 1))
            np.add.at(own[:, 0], leaves, x * st.demand[idx, 0])
            fair[:, :1] = roll_up(tree, own)
            fair[0, 0] = float(st.capacity[0])
        self.cached, self.cached_round = fair, r
        return fair

    def node_key(self, st: TenantState, fair: np.ndarray, node: int, req: np.ndarray) -> tuple:
        f = fair[node, 0]
        ratio = st.alloc[node, 0] / f if f > 0 else st.alloc[node, 0] * 1e3
        return (float(ratio), node)

    def reclaimer(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> bool:
        at_boundary = abs(st.now / self.round - round(st.now / self.round)) < 1e-9
        return at_boundary and bool(st.alloc[leaf, 0] + st.demand[job, 0] <= fair[leaf, 0] + EPS)

    def victim_candidates(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int
    ) -> list[int]:
        rows = []
        for other, jobs in st.running.items():
            if other == leaf or st.alloc[other, 0] <= fair[other, 0] + EPS:
                continue
            for v in jobs:
                began = float(st.run_began[v]) if st.run_began is not None else 0.0
                rows.append((-(st.alloc[other, 0] - fair[other, 0]), -began, v))
        return [v for *_, v in sorted(rows)]

    def allow_victim(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int
    ) -> bool:
        qv = st.tree.lca_children(leaf, int(st.leaf_of[victim]))[1]
        return bool(st.alloc[qv, 0] - st.demand[victim, 0] >= fair[qv, 0] - EPS)

    def reason(self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int) -> str:
        return FAIR_SHARE
