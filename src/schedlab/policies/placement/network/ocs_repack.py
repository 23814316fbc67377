"""Repacking running jobs' OCS circuits onto fewer spines to make room (``ocs-vclos``
``migrate=true``, §4.3 step 5).

A whole-leaf job over k spines needs k spines with r/k free ports each. Ports may be free in
total yet spread thinly over many spines; since the OCS can re-point any circuit's spine end,
moving some running jobs' circuits off the chosen spines frees them, at the price of the OCS
reconfiguration delay for each job moved. A job's GPUs and its circuits' leaf ends stay put.

The unit moved is all of one job's circuits to one spine, moved together to one other spine:
the job's circuit fabric keeps its shape (every leaf of it still reaches the spine that now
stands in for the old one with as many circuits), so its speed is unchanged.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from schedlab.network.plan import NetPlan

#: Per moved job, its new plan.
Moves = dict[int, NetPlan]


def repack(
    r: int,
    gpl: int,
    spine_ids: np.ndarray,
    spine_free: np.ndarray,
    spine_capacity: int,
    plans: dict[int, NetPlan],
) -> tuple[list[int], Moves] | None:
    """Spines (ranks into ``spine_ids``) for a whole-leaf job of ``r`` GPUs and the moves that
    free them, or None.

    For k = 1, 2, 4, … (k ≤ spines, k dividing ``gpl``, r/k ≤ the ports of a spine), first
    success wins: the k spines with the most free ports (ties: index) are the targets; each in
    index order is cleared until it has r/k free ports by moving units (a job's circuits to it),
    largest first (ties: job index), each to the spine with the fewest spare ports that hold it
    (ties: index): spare = free ports, less r/k on a target; a unit that fits nowhere stays.
    """
    if int(spine_free.sum()) < r:
        return None
    rank = {int(s): i for i, s in enumerate(spine_ids.tolist())}
    # (job, spine rank) → circuits of the job to that spine
    units: dict[tuple[int, int], int] = {}
    for job, plan in plans.items():
        for _, end in plan.circuits:
            if end in rank:
                key = (job, rank[end])
                units[key] = units.get(key, 0) + 1
    k = 1
    while k <= len(spine_ids) and gpl % k == 0:
        per = r // k
        if per <= spine_capacity:
            targets = sorted(np.lexsort((np.arange(len(spine_free)), -spine_free))[:k].tolist())
            moved = _clear(targets, per, spine_free, units)
            if moved is not None:
                return targets, _new_plans(moved, spine_ids, plans)
        k *= 2
    return None


def _clear(
    targets: list[int], per: int, spine_free: np.ndarray, units: dict[tuple[int, int], int]
) -> dict[tuple[int, int], int] | None:
    """Moves (job, from spine) → to spine leaving every target ``per`` free ports, or None."""
    free = spine_free.astype(np.int64).copy()
    keep = np.zeros(len(free), dtype=np.int64)
    keep[targets] = per  # a target may take circuits only from what it has beyond ``per``
    moved: dict[tuple[int, int], int] = {}
    for t in targets:
        on_t = sorted((u for u in units if u[1] == t), key=lambda u: (-units[u], u[0]))
        for unit in on_t:
            if free[t] >= per:
                break
            size = units[unit]
            spare = free - keep
            fits = [s for s in range(len(free)) if s != t and spare[s] >= size]
            if not fits:
                continue
            dest = min(fits, key=lambda s: (spare[s], s))
            free[dest] -= size
            free[t] += size
            moved[unit] = dest
        if free[t] < per:
            return None
    return moved


def _new_plans(
    moved: dict[tuple[int, int], int], spine_ids: np.ndarray, plans: dict[int, NetPlan]
) -> Moves:
    """Each moved job's plan with its moved circuits' spine ends re-pointed."""
    new_end = {(job, int(spine_ids[src])): int(spine_ids[dst]) for (job, src), dst in moved.items()}
    out: Moves = {}
    for job in sorted({job for job, _ in moved}):
        plan = plans[job]
        circuits = tuple((a, new_end.get((job, b), b)) for a, b in plan.circuits)
        out[job] = replace(plan, circuits=circuits)
    return out
