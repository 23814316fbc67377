"""A small NSGA-II for integer allocation matrices (the optimiser inside Pollux's scheduler).

Individuals are (jobs × nodes) replica counts; the problem supplies the objectives (to
minimise), the mutation, the crossover and the repair. One generation: binary tournaments on
(Pareto rank, crowding distance) pick parents, single-point crossover and mutation make
children, repair makes them feasible, duplicates are dropped, and the best ``size`` of parents
and children by rank then crowding survive (Deb et al., 2002). Everything random comes from
one seeded generator, so a seed repeats a run.

Children are made in batches until ``size`` new ones are found (pymoo's mating loop does the
same, a batch per missing child count): each batch is sized by the share of the last batch that
was new, so one batch mostly suffices. Every child of a generation is drawn alike (the two of
a pair share their parents and cut), so the first ``size`` new ones of one larger batch are
children of the same search as those of several smaller ones; the random stream differs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def non_dominated_fronts(f: np.ndarray, limit: int | None = None) -> list[np.ndarray]:
    """Indices of each Pareto front (objectives minimised), best front first; with ``limit``,
    only the first fronts that hold at least ``limit`` points (survivor selection needs no
    more)."""
    n = len(f)
    # One n × n comparison per objective, combined in place: the same booleans as reducing an
    # n × n × m comparison over its last axis, without the reduction's per-call overhead, which
    # dominated Pollux's search (m is 2 or 3, n a few hundred).
    le = np.ones((n, n), dtype=bool)
    lt = np.zeros((n, n), dtype=bool)
    for k in range(f.shape[1]):
        column = f[:, k]
        le &= column[:, None] <= column[None, :]
        lt |= column[:, None] < column[None, :]
    dominates = le & lt  # [i, j]: i dominates j
    count = dominates.sum(axis=0)  # how many dominate j
    fronts = []
    remaining = np.ones(n, dtype=bool)
    current = np.flatnonzero(count == 0)
    placed = 0
    while len(current):
        fronts.append(current)
        placed += len(current)
        if limit is not None and placed >= limit:
            break
        remaining[current] = False
        count = count - dominates[current].sum(axis=0)
        current = np.flatnonzero(remaining & (count == 0))
    return fronts


def crowding_distance(f: np.ndarray) -> np.ndarray:
    """Crowding distance of the members of one front (∞ at the extremes)."""
    n, m = f.shape
    if n <= 2:
        return np.full(n, np.inf)
    dist = np.zeros(n)
    for k in range(m):
        order = np.argsort(f[:, k], kind="stable")
        span = f[order[-1], k] - f[order[0], k]
        dist[order[0]] = dist[order[-1]] = np.inf
        if span > 0:
            dist[order[1:-1]] += (f[order[2:], k] - f[order[:-2], k]) / span
    return dist


def rank_and_crowding(f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rank = np.empty(len(f), dtype=np.int64)
    crowd = np.empty(len(f))
    for r, front in enumerate(non_dominated_fronts(f)):
        rank[front] = r
        crowd[front] = crowding_distance(f[front])
    return rank, crowd


def select_survivors(f: np.ndarray, size: int) -> np.ndarray:
    """Indices of the ``size`` best by front, then by crowding distance."""
    return ranked_survivors(f, size)[0]


def ranked_survivors(f: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`select_survivors` with the survivors' Pareto rank and crowding distance among
    themselves — what :func:`rank_and_crowding` of ``f[keep]`` returns, without sorting again.

    The survivors are whole fronts and a part of the next one, and a point is dominated only by
    points of earlier fronts, so their fronts are the same; the part's members sit in ``keep``
    in the order a fresh sort would list them, so its crowding distances are recomputed on
    the same rows in the same order."""
    chosen: list[np.ndarray] = []
    crowds: list[np.ndarray] = []
    ranks: list[np.ndarray] = []
    count = 0
    for r, front in enumerate(non_dominated_fronts(f, limit=size)):
        crowd = crowding_distance(f[front])
        if count + len(front) > size:
            order = np.argsort(-crowd, kind="stable")
            front = front[order[: size - count]]
            crowd = crowding_distance(f[front])
        chosen.append(front)
        crowds.append(crowd)
        ranks.append(np.full(len(front), r, dtype=np.int64))
        count += len(front)
        if count >= size:
            break
    if not chosen:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    keep = np.concatenate(chosen).astype(np.int64, copy=False)
    return keep, np.concatenate(ranks), np.concatenate(crowds)


def _unique(states: np.ndarray, seen: set[bytes]) -> tuple[np.ndarray, list[bytes]]:
    """The states not in ``seen`` (first of equal ones), added to it; and their keys."""
    keep = []
    keys = []
    # each state's bytes in one call (a row of void items), not one tobytes() per state
    if states.size:
        rows = np.ascontiguousarray(states).reshape(len(states), -1)
        every = rows.view(np.dtype((np.void, rows.shape[1] * rows.itemsize))).ravel().tolist()
    else:  # no states, or empty ones (no jobs)
        every = [s.tobytes() for s in states]
    for i, key in enumerate(every):
        if key not in seen:
            seen.add(key)
            keep.append(i)
            keys.append(key)
    return states[keep], keys


def nsga2(
    initial: np.ndarray,
    evaluate: Callable[[np.ndarray], np.ndarray],
    mutate: Callable[[np.ndarray], np.ndarray],
    repair: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator,
    pop_size: int = 100,
    generations: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """Run NSGA-II from ``initial`` (k × jobs × nodes); return the final Pareto front's states
    and objectives."""
    pop = repair(initial.copy())
    pop, keys = _unique(pop, set())
    f = evaluate(pop)
    n_jobs = pop.shape[1]
    # After the first generation the survivors' ranks and crowding come from their selection.
    rank, crowd = rank_and_crowding(f)
    new_share = 1.0
    for _ in range(generations):
        seen = set(keys)
        children: list[np.ndarray] = []
        got = 0
        for _attempt in range(10):
            need = pop_size - got
            if need <= 0:
                break
            # As many pairs as should give the children still needed, from the share of the
            # last batch that was new (children repeat seen ones more as the search settles):
            # one batch mostly suffices, where one child per child needed took about five
            # rounds a generation, each paying numpy's per-call cost on small arrays.
            pairs = min(math.ceil(need * 1.2 / (2 * max(new_share, 0.1))), 5 * pop_size)
            a, b = rng.integers(len(pop), size=(2, 2 * pairs))
            better = (rank[a] < rank[b]) | ((rank[a] == rank[b]) & (crowd[a] > crowd[b]))
            tie = (rank[a] == rank[b]) & (crowd[a] == crowd[b])
            better = np.where(tie, rng.random(len(a)) < 0.5, better)
            parents = np.where(better, a, b).reshape(2, pairs)
            cut = rng.integers(n_jobs, size=pairs) if n_jobs else np.zeros(pairs, dtype=int)
            take_first = np.arange(n_jobs)[None, :] < cut[:, None]  # pairs × jobs
            p1, p2 = pop[parents[0]], pop[parents[1]]
            c1 = np.where(take_first[:, :, None], p1, p2)
            c2 = np.where(take_first[:, :, None], p2, p1)
            kids, kid_keys = _unique(repair(mutate(np.concatenate([c1, c2]))), seen)
            new_share = len(kids) / (2 * pairs)
            kids = kids[:need]
            if len(kids):
                children.append(kids)
                keys += kid_keys[:need]
                got += len(kids)
        if not children:
            break
        kids = np.concatenate(children)
        merged = np.concatenate([pop, kids])
        fm = np.concatenate([f, evaluate(kids)])
        keep, rank, crowd = ranked_survivors(fm, pop_size)
        pop, f = merged[keep], fm[keep]
        keys = [keys[i] for i in keep.tolist()]
    front = np.flatnonzero(rank == 0)
    return pop[front], f[front]
