"""``vclos``: isolated placement on a leaf-spine fabric by reserving leaf × spine links (§4.2).

A job that spans leaves gets m leaves giving s GPUs each and s spines whose links to all m
leaves nobody else holds; it reserves those m × s links both ways and is routed over them only,
so no other job's traffic ever meets its own (the vClos idea: a virtual Clos per job). When no
such spine set exists the job waits, even if enough GPUs are free: the price of isolation.

First success wins, for r GPUs and gpl GPUs a leaf:

1. r a multiple of gpl: the r/gpl lowest-index empty leaves, with all their uplinks;
2. r ≤ gpl: the leaf with the fewest free GPUs ≥ r; no links;
3. s = gpl/2, gpl/4, …, 1 dividing r: m = r/s leaves with ≥ s free GPUs and s spines free to all
   of them. ``solver=milp`` (default) solves it exactly with SciPy's HiGHS (10 s limit),
   minimising the chosen leaves' free GPUs, then their indices; ``solver=greedy`` takes spines by
   how many candidate leaves they reach while enough common leaves remain (fast, may miss).

``check_conflict=true`` (default false) skips a choice whose halving-doubling rounds would cross
one link twice on the job's rails (:mod:`~schedlab.policies.placement.network.hd_conflict`) and
takes the next step or spine count instead.

Finding m leaves and s spines with every link between them free is a biclique search, hard in
general; before the MILP, leaves and spines that cannot take part are peeled off (a spine free to
fewer than m candidate leaves, a leaf free to fewer than s remaining spines), which settles most
cases, and results are cached per (size, free GPUs per leaf, free links).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from schedlab.errors import InputError
from schedlab.model.cluster import ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.network.plan import NetPlan
from schedlab.network.topology import LEAF, SPINE
from schedlab.policies.api import REPLAY, PolicyContext
from schedlab.policies.placement.job_placement import JobPlacementPolicy, JobRequest
from schedlab.policies.placement.network.hd_conflict import hd_conflict
from schedlab.policies.placement.network.leaves import LeafIndex, by_key

SOLVERS = ("milp", "greedy")
#: Seconds HiGHS may spend on one spine-set search.
MILP_TIME_LIMIT = 10.0
_CACHE_SIZE = 256

#: A choice: (leaf, GPUs from it) pairs and the spines reserved (empty: no links).
Choice = tuple[tuple[tuple[int, int], ...], tuple[int, ...]]


class LeafSpineLinks:
    """The fabric links of each (leaf, spine) pair of a two-tier leaf-spine topology."""

    def __init__(self, ctx: PolicyContext, name: str) -> None:
        topo = ctx.topology
        assert topo is not None
        level = topo.switch_level
        src, dst = topo.fabric_src, topo.fabric_dst
        ok = len(src) and set(level.tolist()) == {LEAF, SPINE}
        ok = ok and bool(((level[src] == LEAF) != (level[dst] == LEAF)).all())
        if not ok:
            raise InputError(
                f"placement '{name}' needs a two-tier leaf-spine topology (leaves joined to "
                f"spines only), not {topo.name!r}"
            )
        self.spines = np.flatnonzero(level == SPINE)
        spine_rank = np.full(topo.num_switches, -1, dtype=np.int64)
        spine_rank[self.spines] = np.arange(len(self.spines))
        leaf_end = np.where(level[src] == LEAF, src, dst)
        spine_end = np.where(level[src] == LEAF, dst, src)
        #: Per fabric link (by id − fabric_base): its (leaf, spine) pair as leaf·S + spine.
        self.pair = topo.leaf_rank[leaf_end] * len(self.spines) + spine_rank[spine_end]
        self.base = topo.fabric_base
        self.shape = (len(topo.leaves), len(self.spines))
        #: Parallel links between a leaf and a spine (the fewest any pair has).
        self.parallel = int(np.bincount(self.pair).min()) // 2 if len(self.pair) else 0
        missing = np.setdiff1d(np.arange(self.shape[0] * self.shape[1]), self.pair)
        if len(missing):
            leaf, spine = divmod(int(missing[0]), self.shape[1])
            raise InputError(
                f"placement '{name}' needs a link between every leaf and every spine; leaf "
                f"#{leaf} has none to spine #{spine} in {topo.name!r}"
            )

    def free(self, state: ClusterState) -> np.ndarray:
        """Leaf × spine: True where no job holds a link of the pair."""
        free = np.ones(self.shape, dtype=bool)
        if state.net is not None and state.net.link_owner:
            held = np.fromiter(state.net.link_owner, dtype=np.int64) - self.base
            held = held[(held >= 0) & (held < len(self.pair))]
            free.ravel()[self.pair[held]] = False
        return free

    def links(self, leaves: list[int], spines: list[int]) -> frozenset[int]:
        """Every link (both ways, parallel ones too) between the leaves and the spines."""
        want = (np.asarray(leaves)[:, None] * self.shape[1] + np.asarray(spines)[None, :]).ravel()
        return frozenset((np.flatnonzero(np.isin(self.pair, want)) + self.base).tolist())


class VClosPlacement(JobPlacementPolicy):
    """vClos: a job crossing leaves runs on leaf × spine links it holds alone."""

    name = "vclos"
    summary = "isolated leaf × spine link reservations, else wait (vClos, arXiv 2308.05692)"
    engines = frozenset({REPLAY})
    makes_plans = True

    def __init__(self, solver: str = "milp", check_conflict: bool = False) -> None:
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {', '.join(SOLVERS)} (got {solver!r})")
        if not isinstance(check_conflict, bool):
            raise ValueError(f"check_conflict must be true or false (got {check_conflict!r})")
        self.solver = solver
        self.check_conflict = check_conflict

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        assert ctx.topology is not None
        self.leaves = LeafIndex(ctx.topology)
        self.fabric = LeafSpineLinks(ctx, self.name)
        caps = set(self.leaves.capacity.tolist())
        if len(caps) != 1:
            raise InputError(f"placement '{self.name}' needs leaves of equal GPU counts")
        self.gpl = caps.pop()
        self._cache: OrderedDict[tuple[object, ...], Choice | None] = OrderedDict()
        self.milp_calls = 0

    def place_job(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        host_free, leaf_free = self.leaves.free(state, request, self.model_bits)
        if int(leaf_free.sum()) < request.num_gpus:
            return None
        free_pairs = self.fabric.free(state)
        key = (request.num_gpus, leaf_free.tobytes(), np.packbits(free_pairs).tobytes())
        if key in self._cache:
            self._cache.move_to_end(key)
            choice = self._cache[key]
        else:
            choice = self.choose(request.num_gpus, leaf_free, free_pairs)
            self._cache[key] = choice
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        if choice is None:
            return None
        counts, spines = choice
        allocation = self.leaves.allocation(state, host_free, list(counts))
        links = self.fabric.links([leaf for leaf, _ in counts], list(spines)) if spines else None
        return self.planned(request.job, allocation, NetPlan(links=links or frozenset()))

    # -- the steps -------------------------------------------------------------------------
    def choose(self, r: int, leaf_free: np.ndarray, free_pairs: np.ndarray) -> Choice | None:
        """Leaves (with GPU counts) and spines for ``r`` GPUs, or None: the job waits."""
        gpl = self.gpl
        every_spine = tuple(range(free_pairs.shape[1]))
        if r % gpl == 0:
            empty = np.flatnonzero((leaf_free == gpl) & free_pairs.all(axis=1))
            k = r // gpl
            if len(empty) >= k and not self.conflicts([gpl] * k, len(every_spine)):
                chosen = tuple((int(leaf), gpl) for leaf in empty[:k])
                return chosen, (every_spine if k > 1 else ())
        if r <= gpl:
            fits = np.flatnonzero(leaf_free >= r)
            if len(fits):
                return ((int(by_key(leaf_free, fits)[0]), r),), ()
        s = gpl // 2
        while s >= 1:
            if r % s == 0 and s <= free_pairs.shape[1]:
                found = self.spine_set(r // s, s, leaf_free, free_pairs)
                if found is not None and not self.conflicts([s] * (r // s), s):
                    leaves, spines = found
                    return tuple((leaf, s) for leaf in leaves), tuple(spines)
            s //= 2
        return None

    def conflicts(self, counts: list[int], spines: int) -> bool:
        """With ``check_conflict``: the HD rounds of a job spread as ``counts`` GPUs a leaf over
        ``spines`` spines would cross a link twice."""
        return self.check_conflict and hd_conflict(counts, spines, self.fabric.parallel)

    def spine_set(
        self, m: int, s: int, leaf_free: np.ndarray, free_pairs: np.ndarray
    ) -> tuple[list[int], list[int]] | None:
        """m leaves with ≥ s free GPUs and s spines free to all of them, by the solver."""
        leaves = np.flatnonzero(leaf_free >= s)
        if len(leaves) < m:
            return None
        if self.solver == "greedy":
            return greedy_spine_set(m, s, leaves, leaf_free, free_pairs)
        leaves, spines = peel(m, s, leaves, np.arange(free_pairs.shape[1]), free_pairs)
        if len(leaves) < m or len(spines) < s:
            return None
        # The m cheapest remaining leaves (fewest free, then index) are optimal when they
        # share s free spines: no MILP needed.
        cheapest = by_key(leaf_free, leaves)[:m]
        common = spines[free_pairs[np.ix_(cheapest, spines)].all(axis=0)]
        if len(common) >= s:
            return sorted(cheapest.tolist()), common[:s].tolist()
        self.milp_calls += 1
        return milp_spine_set(m, s, leaves, spines, leaf_free, free_pairs)


def peel(
    m: int, s: int, leaves: np.ndarray, spines: np.ndarray, free_pairs: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Drop spines free to fewer than m of the leaves and leaves free to fewer than s of the
    spines until none is dropped: no m × s all-free block uses a dropped one."""
    while len(leaves) >= m and len(spines) >= s:
        sub = free_pairs[np.ix_(leaves, spines)]
        keep_s = sub.sum(axis=0) >= m
        keep_l = sub[:, keep_s].sum(axis=1) >= s
        if keep_s.all() and keep_l.all():
            break
        spines, leaves = spines[keep_s], leaves[keep_l]
    return leaves, spines


def greedy_spine_set(
    m: int, s: int, leaves: np.ndarray, leaf_free: np.ndarray, free_pairs: np.ndarray
) -> tuple[list[int], list[int]] | None:
    """Spines by decreasing reach among the candidate leaves (ties: index), each kept while the
    leaves free to all kept spines stay ≥ m, up to s; then the m of those with fewest free GPUs."""
    reach = free_pairs[leaves].sum(axis=0)
    order = np.lexsort((np.arange(len(reach)), -reach))
    common = np.ones(len(leaves), dtype=bool)
    chosen: list[int] = []
    for spine in order.tolist():
        trial = common & free_pairs[leaves, spine]
        if int(trial.sum()) >= m:
            chosen.append(spine)
            common = trial
            if len(chosen) == s:
                picked = by_key(leaf_free, leaves[common])[:m]
                return sorted(picked.tolist()), sorted(chosen)
    return None


def milp_spine_set(
    m: int,
    s: int,
    leaves: np.ndarray,
    spines: np.ndarray,
    leaf_free: np.ndarray,
    free_pairs: np.ndarray,
) -> tuple[list[int], list[int]] | None:
    """The exact search: binaries x (leaves), y (spines); Σx = m, Σy = s, x_l + y_p ≤ 1 where
    the pair (l, p) is held; minimise Σ x_l·(free_l·L² + l) (fewest free GPUs, then lowest
    indices); then the lowest-index spines free to all chosen leaves."""
    nl, ns = len(leaves), len(spines)
    big = free_pairs.shape[0] ** 2
    cost = np.concatenate([leaf_free[leaves] * big + leaves, np.zeros(ns)]).astype(np.float64)
    held_l, held_s = np.nonzero(~free_pairs[np.ix_(leaves, spines)])
    pick_m = np.concatenate([np.ones(nl), np.zeros(ns)])  # Σx = m; its complement: Σy = s
    lo, hi = [m, s], [m, s]
    conflicts = np.zeros((len(held_l), nl + ns))
    conflicts[np.arange(len(held_l)), held_l] = 1.0
    conflicts[np.arange(len(held_l)), nl + held_s] = 1.0
    a = np.vstack([pick_m, 1.0 - pick_m, conflicts])
    lo += [0] * len(held_l)
    hi += [1] * len(held_l)
    result = milp(
        cost,
        constraints=LinearConstraint(a, lo, hi),
        integrality=np.ones(nl + ns),
        bounds=Bounds(0, 1),
        options={"time_limit": MILP_TIME_LIMIT, "mip_rel_gap": 0.0},
    )
    if result.x is None:
        return None  # infeasible, or no solution within the time limit: the job waits
    x = np.round(result.x).astype(bool)
    chosen = leaves[x[:nl]]
    common = spines[free_pairs[np.ix_(chosen, spines)].all(axis=0)]
    if len(chosen) != m or len(common) < s:
        return None
    return sorted(chosen.tolist()), common[:s].tolist()
