"""Volcano's share policies: ``volcano-proportion``, ``drf`` and ``hdrf``.

``volcano-proportion`` (Volcano ``plugins/proportion/proportion.go``): each queue's deserved
vector grows in rounds by the remaining resources times its weight over the unmet queues'
weights, clamped to its real capability (``min(capability, total - Σ guarantees + own
guarantee)``) and its request, and raised to its guarantee; a queue is met when its request is
covered or its deserved stops changing; rounds end when nothing remains or changes. Queues are
ordered by priority, then ``max_r alloc/deserved``; a job is admitted only while its queue stays
within deserved; a queue within deserved with the job reclaims from queues above theirs, while
they stay above. The plugin is flat: leaf queues divide the cluster (a parent's limit caps
its leaves' capability; a parent's share is its leaves' sum).

``drf`` (Volcano ``plugins/drf``, Ghodsi et al. NSDI '11): a queue's share is its dominant
resource share ``max_r alloc/total`` over its weight; lower first; a job may take a running job
of another queue if its queue's share with the job stays ≤ the victim queue's share without the
victim (±1e-6).

``hdrf`` (``enableHierarchy``, ``docs/design/hdrf.md``): a leaf is saturated when a resource it
asks for is fully granted (its demand is met) or exhausted cluster-wide; an inner node takes the
smallest dominant share ``m`` of its unsaturated, non-empty children, sums saturated children as
they are and unsaturated ones scaled by ``m/share``, and takes the dominant share of the sum; it
is saturated when all its children are. Order walks the two paths from the root: unsaturated
first, then the smaller share over weight (weights below 1 count as 1), ties go down a level.
Reclaim recomputes with the job moved and takes the victim if the reclaimer then goes first;
moving a job changes what a queue holds, not what it demands (held + waiting before the move).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from schedlab.tenancy.policy import FAIR_SHARE, SharePolicy, goes_before
from schedlab.tenancy.state import TenantState, roll_up
from schedlab.tenancy.tree import ROOT, QueueTree

EPS = 1e-9
DRF_EPS = 1e-6


def proportion(
    total: np.ndarray,
    request: np.ndarray,
    weight: np.ndarray,
    guarantee: np.ndarray | None = None,
    capability: np.ndarray | None = None,
) -> np.ndarray:
    """Volcano's deserved vectors ``[queues, resources]`` for siblings sharing ``total``."""
    q, r = request.shape
    guarantee = np.zeros((q, r)) if guarantee is None else guarantee
    capability = np.full((q, r), np.inf) if capability is None else capability
    real_cap = np.minimum(capability, total[None, :] - guarantee.sum(axis=0) + guarantee)
    deserved = np.zeros((q, r))
    met = np.zeros(q, dtype=bool)
    remaining = total.astype(np.float64).copy()
    while True:
        unmet = ~met & (weight > 0)
        w_sum = float(weight[unmet].sum())
        if w_sum <= 0 or not (remaining > EPS).any():
            break
        before = deserved.copy()
        # Each unmet queue grows on this round's remainder alone: all at once.
        idx = np.flatnonzero(unmet)
        grown = deserved[idx] + remaining[None, :] * weight[idx, None] / w_sum
        grown = np.minimum(grown, real_cap[idx])
        grown = np.minimum(grown, request[idx])
        deserved[idx] = np.maximum(grown, guarantee[idx])
        covered = (request[idx] <= deserved[idx] + EPS).all(axis=1)
        met[idx] |= covered | _close_rows(deserved[idx], before[idx])
        remaining = total - deserved.sum(axis=0)
        if _close_rows(deserved, before).all():
            break
    return deserved


def _close_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.allclose`` of each row (its tolerances; infinities close only to themselves)."""
    with np.errstate(invalid="ignore"):
        near = np.abs(a - b) <= 1e-8 + 1e-5 * np.abs(b)
    near = np.where(np.isfinite(a) & np.isfinite(b), near, a == b)
    return near.all(axis=-1)


def dominant(alloc: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``max_r alloc/total`` along the last axis (resources the cluster lacks ignored)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total > 0, alloc / np.where(total > 0, total, 1), 0.0)
    return share.max(axis=-1) if share.shape[-1] else np.zeros(share.shape[:-1])


def dominant_of(alloc: list[float], total: list[float]) -> float:
    """:func:`dominant` of one row, in plain floats (the same divisions, without numpy's
    per-call cost on a row of a few resources)."""
    return max((a / t if t > 0 else 0.0 for a, t in zip(alloc, total, strict=True)), default=0.0)


def weighted_division(st: TenantState) -> np.ndarray:
    """Each level's demand divided by weight (:func:`proportion` without guarantees)."""
    tree = st.tree
    fair = np.zeros_like(st.alloc)
    fair[ROOT] = st.capacity
    for parent in tree.preorder():
        kids = tree.children[parent]
        if kids:
            fair[kids] = proportion(fair[parent], st.request[kids], tree.weight[kids])
    return fair


class VolcanoProportion(SharePolicy):
    name = "volcano-proportion"
    repeatable = True  # no answer reads the time
    summary = "Volcano proportion: weighted deserved, guarantee, capability"

    def reset(self, tree: QueueTree, capacity: np.ndarray) -> None:
        super().reset(tree, capacity)
        leaves = tree.leaves
        g = np.where(tree.deserved[leaves] < 0, 0.0, tree.deserved[leaves])
        cap = np.stack([np.min(tree.limit[tree.ancestors[q]], axis=0) for q in leaves])
        self._limits = (g, cap)
        self._last: tuple[bytes, np.ndarray] | None = None
        self._priority = tree.priority.tolist()

    def _leaf_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """Each leaf's guarantee and capability (the smallest limit on its path)."""
        return self._limits

    def shares(self, st: TenantState) -> np.ndarray:
        """The plugin is flat: the leaf queues divide the cluster; a parent's share is its
        leaves' sum (inner queues group, their limits still cap). Only the requests move from
        one decision to the next: the last division is kept for the same requests."""
        tree = st.tree
        request = st.request[tree.leaves]
        key = request.tobytes() + st.capacity.tobytes()
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        g, cap = self._leaf_limits()
        own = np.zeros_like(st.alloc)
        own[tree.leaves] = proportion(st.capacity, request, tree.weight[tree.leaves], g, cap)
        fair = roll_up(tree, own)
        fair[ROOT] = st.capacity
        self._last = (key, fair)
        return fair

    def ceiling(self) -> np.ndarray:
        """Volcano's real capability: ``min(capability, total − Σ guarantees + own)``."""
        out = super().ceiling()
        g, _ = self._leaf_limits()
        leaves = self.tree.leaves
        out[leaves] = np.minimum(out[leaves], self.capacity - g.sum(axis=0) + g)
        return out

    def node_key(self, st: TenantState, fair: np.ndarray, node: int, req: np.ndarray) -> tuple:
        # max_r alloc/deserved (alloc × 1000 where nothing is deserved), in plain floats.
        ratio = max(
            (a / d if d > 0 else a * 1e3)
            for a, d in zip(st.alloc[node].tolist(), fair[node].tolist(), strict=True)
        )
        return (-self._priority[node], ratio, node)

    def _within(self, st: TenantState, fair: np.ndarray, leaf: int, req: np.ndarray) -> bool:
        asked = req.tolist()
        return all(
            a + r <= f + EPS
            for n in st.tree.ancestors[leaf]
            for a, r, f in zip(st.alloc[n].tolist(), asked, fair[n].tolist(), strict=True)
        )

    def admit(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> str | None:
        if self._within(st, fair, leaf, st.demand[job]):
            return super().admit(st, fair, leaf, job)
        return f"queue {st.tree.label(leaf)!r} would pass its deserved share"

    def quota_fits(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> bool:
        return self._within(st, fair, leaf, st.demand[job]) and super().quota_fits(
            st, fair, leaf, job
        )

    def reclaimer(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> bool:
        return self._within(st, fair, leaf, st.demand[job])

    def victim_candidates(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int
    ) -> list[int]:
        out = []
        for other, jobs in st.by_leaf().items():
            if other != leaf:
                out += [
                    (-float(st.run_began[v]) if st.run_began is not None else 0.0, v) for v in jobs
                ]
        return [v for _, v in sorted(out)]

    def allow_victim(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int
    ) -> bool:
        qv = st.tree.lca_children(leaf, int(st.leaf_of[victim]))[1]
        return not bool((st.alloc[qv] <= fair[qv] + EPS).all())

    def reason(self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int) -> str:
        return FAIR_SHARE


class Drf(SharePolicy):
    name = "drf"
    repeatable = True  # no answer reads the time
    summary = "dominant resource fairness between queues"

    def shares(self, st: TenantState) -> np.ndarray:
        """DRF keeps no fair share of its own: the weighted division of demand stands in for
        it in the figures."""
        return weighted_division(st)

    def _share(self, st: TenantState, node: int, alloc: np.ndarray) -> float:
        w = max(float(st.tree.weight[node]), EPS)
        return dominant_of(alloc.tolist(), st.capacity.tolist()) / w

    def node_key(self, st: TenantState, fair: np.ndarray, node: int, req: np.ndarray) -> tuple:
        return (self._share(st, node, st.alloc[node]), node)

    def _shares_now(self, st: TenantState) -> np.ndarray:
        """Every node's dominant share over weight (kept while the allocation is the same)."""
        key = (st.serial, st.alloc.tobytes())
        if getattr(self, "_memo_key", None) != key:
            w = np.maximum(st.tree.weight, EPS)
            self._memo_key = key
            self._memo = dominant(st.alloc, st.capacity) / w
        return self._memo

    def reclaimer(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> bool:
        """Only if some other queue holds a larger share than this one would with the job."""
        shares = self._shares_now(st)
        mine = self._share(st, leaf, st.alloc[leaf] + st.demand[job])
        others = [q for q in st.tree.leaves.tolist() if q != leaf]
        return bool(others) and mine <= float(shares[others].max()) + DRF_EPS

    def may_reclaim_any(self, st: TenantState, fair: np.ndarray, smallest: np.ndarray) -> bool:
        leaves = st.tree.leaves
        waiting = smallest[leaves] < (1 << 30)
        if not waiting.any():
            return False
        g = st.tree.resources.index("gpu")
        with_job = st.alloc[leaves].copy()
        with_job[:, g] += np.where(waiting, smallest[leaves], 0)
        w = np.maximum(st.tree.weight[leaves], EPS)
        mine = dominant(with_job, st.capacity) / w
        return bool((mine[waiting] <= self._shares_now(st)[leaves].max() + DRF_EPS).any())

    def _accepted(self, st: TenantState, leaf: int, job: int) -> set[int] | None:
        """On a flat tree, the running jobs of other queues the rule accepts now (None on a
        deeper tree). Taking victims only lowers their queues' shares and leaves the
        reclaimer's as it is, so a victim refused now is refused all along: the victims of
        any selection are among these."""
        if not st.tree.flat:
            return None
        key = (st.serial, st.version, leaf, job)
        if getattr(self, "_accepted_key", None) == key:
            return self._accepted_now
        jobs = np.asarray(
            [v for q, vs in st.by_leaf().items() if q != leaf for v in vs], dtype=np.int64
        )
        mine = self._share(st, leaf, st.alloc[leaf] + st.demand[job])
        queues = st.leaf_of[jobs]
        w = np.maximum(st.tree.weight[queues], EPS)
        theirs = dominant(st.alloc[queues] - st.demand[jobs], st.capacity) / w
        self._accepted_key = key
        self._accepted_now: set[int] | None = set(jobs[mine <= theirs + DRF_EPS].tolist())
        return self._accepted_now

    def cannot_make_room(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int, fits: object
    ) -> bool:
        """If the victims the rule accepts now (:meth:`_accepted`) could not make room
        together (``fits.possible``), no set can."""
        possible = getattr(fits, "possible", None)
        accepted = self._accepted(st, leaf, job)
        if possible is None or accepted is None:
            return False
        return not possible(sorted(accepted))

    def victim_candidates(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int
    ) -> list[int]:
        """Other queues' running jobs, the largest share first, then the latest run (only
        those the rule could ever accept, where that is known)."""
        accepted = self._accepted(st, leaf, job)
        rows = []
        for other, jobs in st.by_leaf().items():
            if other == leaf:
                continue
            share = self._share(st, other, st.alloc[other])
            for v in jobs:
                if accepted is not None and v not in accepted:
                    continue
                began = float(st.run_began[v]) if st.run_began is not None else 0.0
                rows.append((-share, -began, v))
        return [v for *_, v in sorted(rows)]

    def select_victims(
        self,
        st: TenantState,
        fair: np.ndarray,
        leaf: int,
        job: int,
        fits: Callable[[list[int]], bool],
    ) -> list[int] | None:
        """The default selection (:meth:`SharePolicy.select_victims`), with the victim rule
        worked out in plain floats on a flat tree: the reclaimer's share with the job does not
        move while victims are taken (they come from other queues), and a victim's queue
        holds what it held less the victims taken from it so far — the same subtractions, in
        the same order, as the allocation the rule would read, without asking it per
        candidate (most reclaims walk many candidates before one set makes room). Without
        limits nothing else reads the state, so when sums are exact (giving a victim back and
        taking it again leaves every figure as it was) the victims are not moved in it."""
        if not st.tree.flat:
            return super().select_victims(st, fair, leaf, job, fits)
        candidates = self.worth_trying(st, fair, leaf, job, fits)
        if candidates is None:
            return None
        total = st.capacity.tolist()
        mine = self._share(st, leaf, st.alloc[leaf] + st.demand[job])
        weight = st.tree.weight
        index = st.index
        moves = st.tree.has_limits or index is None or not index.exact
        held: dict[int, list[float]] = {}  # victim queue → what it holds with the victims gone
        chosen: list[int] = []
        found = False
        for v in candidates:
            q = int(st.leaf_of[v])
            row = held.get(q)
            if row is None:
                row = st.alloc[q].tolist()
            after = [a - d for a, d in zip(row, st.demand[v].tolist(), strict=True)]
            if not mine <= dominant_of(after, total) / max(float(weight[q]), EPS) + DRF_EPS:
                continue
            held[q] = after
            chosen.append(v)
            if moves:
                st.give_back(v)
            if self.quota_fits(st, fair, leaf, job) and fits(chosen):
                found = True
                break
        if moves:
            for v in chosen:
                st.take(v)
        return chosen if found else None

    def allow_victim(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int
    ) -> bool:
        qr, qv = st.tree.lca_children(leaf, int(st.leaf_of[victim]))
        mine = self._share(st, qr, st.alloc[qr] + st.demand[job])
        theirs = self._share(st, qv, st.alloc[qv] - st.demand[victim])
        return mine <= theirs + DRF_EPS

    def reason(self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int) -> str:
        return FAIR_SHARE


def hdrf_shares(
    tree: QueueTree, alloc: np.ndarray, demand: np.ndarray, total: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """HDRF's dominant share and saturation of every node, from the leaves' allocation and
    demand (``[nodes, resources]``, leaf rows used)."""
    n = len(tree)
    share = np.zeros(n)
    saturated = np.zeros(n, dtype=bool)
    vec = np.zeros_like(alloc, dtype=np.float64)
    exhausted = alloc[tree.leaves].sum(axis=0) >= total - EPS
    if tree.flat:  # every queue right under the root: no scaling, and the root is not compared
        leaves = tree.leaves
        asks = demand[leaves] > 0
        granted = alloc[leaves] >= demand[leaves] - EPS
        saturated[leaves] = (asks & (granted | exhausted[None, :])).any(axis=1) | ~asks.any(axis=1)
        share[leaves] = dominant(alloc[leaves], total)
        return share, saturated
    for node in reversed(tree.preorder()):
        kids = tree.children[node]
        if not kids:
            asks = demand[node] > 0
            granted = alloc[node] >= demand[node] - EPS
            saturated[node] = bool((asks & (granted | exhausted)).any()) or not asks.any()
            vec[node] = alloc[node]
            share[node] = float(dominant(alloc[node], total))
            continue
        open_kids = [c for c in kids if not saturated[c] and share[c] > 0]
        m = min((share[c] for c in open_kids), default=1.0)
        total_vec = np.zeros(alloc.shape[1])
        for c in kids:
            if saturated[c] or share[c] <= 0:
                total_vec += vec[c]
            else:
                total_vec += vec[c] * (m / share[c])
        vec[node] = total_vec
        share[node] = float(dominant(total_vec, total))
        saturated[node] = all(saturated[c] for c in kids)
    return share, saturated


class Hdrf(SharePolicy):
    name = "hdrf"
    repeatable = True  # no answer reads the time
    summary = "hierarchical DRF (Volcano's hierarchy)"
    local_keys = False  # saturation looks at the whole cluster

    def shares(self, st: TenantState) -> np.ndarray:
        return weighted_division(st)

    def _figures(self, st: TenantState, alloc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The figures with the leaves holding ``alloc``. A queue's demand is what it holds
        and waits for in ``st`` whatever ``alloc`` moves: a job moved in or out for a reclaim
        test still asks for what it asked (HDRF's leaf request), so moving it changes what
        is granted, never what is demanded."""
        own = np.zeros_like(alloc)
        own[st.tree.leaves] = alloc[st.tree.leaves]
        demand = np.zeros_like(alloc)
        demand[st.tree.leaves] = st.request[st.tree.leaves]
        return hdrf_shares(st.tree, own, demand, st.capacity)

    def _path(self, st: TenantState, leaf: int, figures: tuple[np.ndarray, np.ndarray]) -> list:
        share, saturated = figures
        w = np.maximum(st.tree.weight, 1.0)
        return [
            (n, (bool(saturated[n]), float(share[n] / w[n])))
            for n in reversed(st.tree.ancestors[leaf])
        ]

    def _now(self, st: TenantState) -> tuple[np.ndarray, np.ndarray]:
        key = (st.serial, st.alloc.tobytes())
        if getattr(self, "_cache_key", None) != key:
            self._cache_key = key
            self._cache = self._figures(st, st.alloc)
            self._behind: dict[tuple, list[int]] = {}
        return self._cache

    def queue_key(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> list:
        return self._path(st, leaf, self._now(st))

    def _passed(self, st: TenantState, leaf: int, job: int) -> list[int]:
        """The other leaves the job's queue would go before with the job added: the only
        queues it could take from (taking a job only lowers the victim's key)."""
        self._now(st)
        key = (leaf, st.demand[job].tobytes())
        if key not in self._behind:
            moved = st.alloc.copy()
            moved[st.tree.ancestors[leaf]] += st.demand[job]
            figures = self._figures(st, moved)
            mine = self._path(st, leaf, figures)
            self._behind[key] = [
                q
                for q in st.tree.leaves.tolist()
                if q != leaf and goes_before(mine, self._path(st, q, figures))
            ]
        return self._behind[key]

    def reclaimer(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> bool:
        by_leaf = st.by_leaf()
        return any(by_leaf.get(q) for q in self._passed(st, leaf, job))

    def victim_candidates(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int
    ) -> list[int]:
        share, _ = self._now(st)
        rows = []
        by_leaf = st.by_leaf()
        for other in self._passed(st, leaf, job):
            for v in by_leaf.get(other, []):
                began = float(st.run_began[v]) if st.run_began is not None else 0.0
                rows.append((-share[other], -began, v))
        return [v for *_, v in sorted(rows)]

    def allow_victim(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int
    ) -> bool:
        vleaf = int(st.leaf_of[victim])
        tree = st.tree
        if tree.flat:
            return self._allow_flat(st, leaf, job, victim, vleaf)
        moved = st.alloc.copy()
        moved[tree.ancestors[vleaf]] -= st.demand[victim]
        moved[tree.ancestors[leaf]] += st.demand[job]
        figures = self._figures(st, moved)
        return goes_before(self._path(st, leaf, figures), self._path(st, vleaf, figures))

    def _allow_flat(self, st: TenantState, leaf: int, job: int, victim: int, vleaf: int) -> bool:
        """:meth:`allow_victim` on a flat tree: the figures of the two queues that move (the
        same arithmetic as :func:`hdrf_shares`, the cluster's exhaustion from every leaf)."""
        tree = st.tree
        mine = st.alloc[leaf] + st.demand[job]
        theirs = st.alloc[vleaf] - st.demand[victim]
        own = st.alloc[tree.leaves]
        at = self._positions(tree)
        own[at[leaf]] = mine
        own[at[vleaf]] = theirs
        exhausted = (own.sum(axis=0) >= st.capacity - EPS).tolist()
        total = st.capacity.tolist()

        def key(q: int, held: np.ndarray) -> tuple[bool, float]:
            # In plain floats (a handful of resources: numpy's per-call cost would rule). The
            # demand is the queue's before the move (see :meth:`_figures`).
            own_q = held.tolist()
            demand = (st.alloc[q] + st.pending[q]).tolist()
            asks = [d > 0 for d in demand]
            granted = [h >= d - EPS for h, d in zip(own_q, demand, strict=True)]
            saturated = any(
                a and (g or x) for a, g, x in zip(asks, granted, exhausted, strict=True)
            ) or not any(asks)
            return saturated, dominant_of(own_q, total) / max(float(tree.weight[q]), 1.0)

        return key(leaf, mine) < key(vleaf, theirs)

    def _positions(self, tree: QueueTree) -> dict[int, int]:
        """Each leaf's row among ``tree.leaves``."""
        if getattr(self, "_positions_of", None) is not tree:
            self._positions_of = tree
            self._at = {q: i for i, q in enumerate(tree.leaves.tolist())}
        return self._at

    def reason(self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int) -> str:
        return FAIR_SHARE
