"""A small NSGA-II for integer allocation matrices (the optimiser inside Pollux's scheduler).

Individuals are (jobs × nodes) replica counts; the problem supplies the objectives (to
minimise), the mutation, the crossover and the repair. One generation: binary tournaments on
(Pareto rank, crowding distance) pick parents, single-point crossover and mutation make
children, repair makes them feasible, duplicates are dropped, and the best ``size`` of parents
and children by rank then crowding survive (Deb et al., 2002). Everything random comes from
one seeded generator, so a seed repeats a run.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def non_dominated_fronts(f: np.ndarray) -> list[np.ndarray]:
    """Indices of each Pareto front (objectives minimised), best front first."""
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
    while len(current):
        fronts.append(current)
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
    chosen: list[int] = []
    for front in non_dominated_fronts(f):
        if len(chosen) + len(front) <= size:
            chosen.extend(front.tolist())
            continue
        crowd = crowding_distance(f[front])
        order = np.argsort(-crowd, kind="stable")
        chosen.extend(front[order[: size - len(chosen)]].tolist())
        break
    return np.asarray(chosen, dtype=np.int64)


def _unique(states: np.ndarray, seen: set[bytes]) -> np.ndarray:
    keep = []
    for i, s in enumerate(states):
        key = s.tobytes()
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return states[keep]


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
    pop = _unique(pop, set())
    f = evaluate(pop)
    n_jobs = pop.shape[1]
    for _ in range(generations):
        rank, crowd = rank_and_crowding(f)
        seen = {s.tobytes() for s in pop}
        children: list[np.ndarray] = []
        got = 0
        for _attempt in range(10):
            need = pop_size - got
            if need <= 0:
                break
            pairs = (need + 1) // 2
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
            kids = repair(mutate(np.concatenate([c1, c2])))
            kids = _unique(kids, seen)[:need]
            if len(kids):
                children.append(kids)
                got += len(kids)
        if not children:
            break
        kids = np.concatenate(children)
        merged = np.concatenate([pop, kids])
        fm = np.concatenate([f, evaluate(kids)])
        keep = select_survivors(fm, pop_size)
        pop, f = merged[keep], fm[keep]
    front = non_dominated_fronts(f)[0]
    return pop[front], f[front]
