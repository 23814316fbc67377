"""Crux as a network controller: paths and priority levels for every running job.

Crux (SIGCOMM '24) schedules communication so that GPUs idle least. Here it runs inside replay's
network (``--net-control crux``) and is asked for a plan whenever the set of running jobs
changes. A plan has three parts, each its own function so that each can be tested alone:

1. :func:`select_paths` — jobs by decreasing GPU intensity I_j = W_j / t_j (W_j ∝ N_j·C_j, t_j
   = the job's most loaded link's seconds per iteration) pick, per cross-leaf flow aggregate,
   the shortest path whose most loaded link is least loaded after adding the aggregate's rate;
   loads are the rates routed so far in this pass.
2. :func:`priorities` — P_j = k_j·I_j, with k_j from :func:`~schedlab.network.crux.
   priority_factors` against the job with the most bytes on links.
3. :func:`compress` — P is cut into at most K levels: a DAG with an edge j1 → j2 of weight
   I_{j1} where the jobs share a link and P_{j1} > P_{j2}; for m topological orders (the first
   by decreasing P, the others by Kahn's algorithm choosing uniformly among ready jobs) the max
   K-cut of the order (:func:`max_k_cut`, O(n²K)); the best order's blocks are the levels.

The ``priority`` sharing rule then serves higher levels first on every shared link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.sparse import csr_matrix

from schedlab.network.crux import LinkJob, priority_factors
from schedlab.network.routing import FlowKey
from schedlab.network.topology import Topology

#: Priority levels (the paper's simulator uses 8).
DEFAULT_LEVELS = 8
#: Topological orders tried by the compression.
DEFAULT_ORDERS = 10
#: A path: fabric link ids from the source leaf to the destination leaf.
Path = tuple[int, ...]


@dataclass(frozen=True)
class CruxJob:
    """What Crux knows of one running job.

    ``t`` is its current iteration time (rates are bytes / t); ``link_time`` t_j its most loaded
    link's seconds per iteration; ``links`` the links other jobs can use; ``flows`` its cross-
    leaf flow aggregates (src host, dst host, src NIC) with ``flow_bytes`` per iteration.
    """

    key: int
    gpus: int
    compute: float
    overlap: float
    t: float
    link_time: float
    link_bytes: float
    links: np.ndarray
    flows: tuple[FlowKey, ...] = ()
    flow_bytes: tuple[float, ...] = ()

    @property
    def intensity(self) -> float:
        """GPU intensity: compute work per iteration over its link time (∞ without a link)."""
        work = self.gpus * self.compute
        return work / self.link_time if self.link_time > 0 else float("inf")


@dataclass(frozen=True)
class CruxPlan:
    """Paths per job (flow key → path) and a priority level per job (higher = served first)."""

    paths: dict[int, dict[FlowKey, Path]]
    levels: dict[int, int]
    priority: dict[int, float]


def by_intensity(jobs: Sequence[CruxJob]) -> list[CruxJob]:
    """Decreasing GPU intensity; ties by job index."""
    return sorted(jobs, key=lambda j: (-j.intensity, j.key))


def leaf_paths(topo: Topology, a: int, b: int) -> list[Path]:
    """Every shortest fabric path from switch ``a`` to switch ``b``, ordered by their links'
    ids hop by hop (in the generators' Clos fabrics: by spine index, then parallel link)."""
    if a == b:
        return [()]
    out: list[Path] = []
    for link in sorted(topo.next_hops(a, b).tolist()):
        for rest in leaf_paths(topo, topo.link_far_end(link), b):
            out.append((link, *rest))
    return out


class PathCache:
    """:func:`leaf_paths` of one topology as arrays (paths × hops), computed once per leaf pair."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self._paths: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def candidates(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """(paths × hops link ids, their capacities in bytes/s)."""
        got = self._paths.get((a, b))
        if got is None:
            paths = np.array(leaf_paths(self.topo, a, b), dtype=np.int64)
            got = (paths, self.topo.link_bytes_per_s[paths])
            self._paths[(a, b)] = got
        return got


def select_paths(
    topo: Topology,
    jobs: Sequence[CruxJob],
    load: np.ndarray | None = None,
    cache: PathCache | None = None,
) -> dict[int, dict[FlowKey, Path]]:
    """Crux's path selection: jobs by decreasing intensity, each flow aggregate on the candidate
    minimising max_l (u_l + rate)/c_l; u starts at ``load`` (bytes/s per link, default 0) and
    gains each choice. Ties: the first candidate of :func:`leaf_paths`."""
    cache = cache if cache is not None and cache.topo is topo else PathCache(topo)
    u = np.zeros(topo.num_links) if load is None else np.array(load, dtype=np.float64)
    leaf = topo.host_leaf.tolist()
    out: dict[int, dict[FlowKey, Path]] = {}
    for job in by_intensity(jobs):
        chosen: dict[FlowKey, Path] = {}
        for flow, nbytes in zip(job.flows, job.flow_bytes, strict=True):
            rate = nbytes / job.t if job.t > 0 else 0.0
            cands, cap = cache.candidates(leaf[flow[0]], leaf[flow[1]])
            best = cands[((u[cands] + rate) / cap).max(axis=1).argmin()]
            u[best] += rate
            chosen[flow] = tuple(best.tolist())
        out[job.key] = chosen
    return out


@lru_cache(maxsize=65536)
def _factor(reference: LinkJob, job: LinkJob) -> float:
    return priority_factors([reference, job], 0)[1]


def priorities(jobs: Sequence[CruxJob]) -> dict[int, float]:
    """P_j = k_j·I_j; the reference is the job with the most bytes on links (ties: index)."""
    if not jobs:
        return {}
    ref = min(jobs, key=lambda j: (-j.link_bytes, j.key))

    def as_link(j: CruxJob) -> LinkJob:
        return LinkJob(compute=j.compute, send=j.link_time, overlap=j.overlap, gpus=j.gpus)

    out = {}
    for j in jobs:
        k = 1.0 if j.key == ref.key else _factor(as_link(ref), as_link(j))
        out[j.key] = k * j.intensity
    return out


def sharing_pairs(jobs: Sequence[CruxJob]) -> np.ndarray:
    """n × n booleans: jobs i and j (i ≠ j) have a link in common."""
    n = len(jobs)
    if n == 0:
        return np.zeros((0, 0), dtype=bool)
    rows = np.repeat(np.arange(n), [len(j.links) for j in jobs])
    cols = np.concatenate([np.asarray(j.links, dtype=np.int64) for j in jobs])
    width = int(cols.max()) + 1 if len(cols) else 1
    inc = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, width))
    both = (inc @ inc.T).toarray() > 0
    np.fill_diagonal(both, False)
    return both


def priority_dag(prio: np.ndarray, intensity: np.ndarray, share: np.ndarray) -> np.ndarray:
    """Edge weights w[a, b] = I_a where a and b share a link and P_a > P_b (else 0)."""
    higher = prio[:, None] > prio[None, :]
    return np.where(share & higher, intensity[:, None], 0.0)


def topological_orders(
    weights: np.ndarray, prio: np.ndarray, count: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """``count`` topological orders of the DAG (an edge wherever ``weights`` > 0): the first by
    decreasing P (ties: index), the others by Kahn's algorithm with a uniform choice among the
    ready jobs."""
    n = len(prio)
    first = np.array(sorted(range(n), key=lambda i: (-prio[i], i)), dtype=np.int64)
    orders = [first]
    edges = weights > 0
    for _ in range(count - 1):
        indeg = edges.sum(axis=0).astype(np.int64)
        done = np.zeros(n, dtype=bool)
        order = np.empty(n, dtype=np.int64)
        for pos in range(n):
            ready = np.flatnonzero((indeg == 0) & ~done)
            pick = int(ready[rng.integers(len(ready))])
            order[pos] = pick
            done[pick] = True
            indeg -= edges[pick]
        orders.append(order)
    return orders


def max_k_cut(weights: np.ndarray, levels: int) -> tuple[float, np.ndarray]:
    """Split a sequence into at most ``levels`` consecutive blocks maximising the weight of the
    edges that go from an earlier block into a later one.

    ``weights[p, q]`` is the edge weight from position p to position q of the sequence (only
    p < q counts). Returns (cut weight, block of each position, 0 = first block). Dynamic
    programme f(i, k) = max_{k−1 ≤ j < i} f(j, k−1) + C(j, i), C(j, i) = weight from positions
    < j into [j, i); O(n²K) with each step a numpy operation over j.
    """
    n = len(weights)
    if n == 0:
        return 0.0, np.zeros(0, dtype=np.int64)
    w = np.triu(np.asarray(weights, dtype=np.float64), 1)
    # below[j, q] = Σ_{p<j} w[p, q]; gain[j, i] = Σ_{j ≤ q < i} below[j, q] = C(j, i).
    below = np.vstack([np.zeros(n), np.cumsum(w, axis=0)])
    run = np.hstack([np.zeros((n + 1, 1)), np.cumsum(below, axis=1)])
    gain = run - np.diag(run)[:, None]
    valid = np.arange(n + 1)[:, None] < np.arange(n + 1)[None, :]  # j < i
    k_max = min(levels, n)
    f = np.full((k_max + 1, n + 1), -np.inf)
    f[0, 0] = 0.0
    back = np.zeros((k_max + 1, n + 1), dtype=np.int64)
    for k in range(1, k_max + 1):
        cand = np.where(valid, f[k - 1][:, None] + gain, -np.inf)
        back[k] = np.argmax(cand, axis=0)
        f[k] = cand[back[k], np.arange(n + 1)]
    best_k = int(np.argmax(f[1:, n])) + 1
    blocks = np.zeros(n, dtype=np.int64)
    i = n
    for k in range(best_k, 0, -1):
        j = int(back[k, i])
        blocks[j:i] = k - 1
        i = j
    return float(f[best_k, n]), blocks


def compress(
    prio: np.ndarray,
    intensity: np.ndarray,
    share: np.ndarray,
    levels: int,
    orders: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Level per job (0 … levels−1, higher = served first) by the best max K-cut over
    ``orders`` topological orders of the priority DAG (ties: the earlier order)."""
    n = len(prio)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    finite = np.where(np.isfinite(intensity), intensity, np.finfo(np.float64).max / (4 * n))
    weights = priority_dag(prio, finite, share)
    best_value, best = -1.0, np.zeros(n, dtype=np.int64)
    for order in topological_orders(weights, prio, orders, rng):
        value, blocks = max_k_cut(weights[np.ix_(order, order)], levels)
        if value > best_value:
            best_value = value
            best = np.empty(n, dtype=np.int64)
            best[order] = blocks
    return int(best.max()) - best


class CruxController:
    """Plans for a replay's running jobs; the generator is the run's (seeded), so the same seed
    gives the same plans."""

    def __init__(
        self,
        topo: Topology,
        rng: np.random.Generator,
        levels: int = DEFAULT_LEVELS,
        orders: int = DEFAULT_ORDERS,
    ) -> None:
        if levels < 1 or orders < 1:
            raise ValueError("Crux needs at least one level and one order")
        self.topo = topo
        self.rng = rng
        self.levels = levels
        self.orders = orders
        self.plans = 0
        self.cache = PathCache(topo)

    def plan(self, jobs: Sequence[CruxJob]) -> CruxPlan:
        """Paths, priorities and levels for ``jobs`` (those with links other jobs can use)."""
        self.plans += 1
        jobs = sorted(jobs, key=lambda j: j.key)
        if self.cache.topo is not self.topo:
            self.cache = PathCache(self.topo)
        paths = select_paths(self.topo, jobs, cache=self.cache)
        prio = priorities(jobs)
        p = np.array([prio[j.key] for j in jobs])
        intensity = np.array([j.intensity for j in jobs])
        lv = compress(p, intensity, sharing_pairs(jobs), self.levels, self.orders, self.rng)
        levels = {j.key: int(v) for j, v in zip(jobs, lv.tolist(), strict=True)}
        return CruxPlan(paths, levels, prio)
