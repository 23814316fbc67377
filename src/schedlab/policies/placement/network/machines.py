"""What the machine-level placements (Titan and the placements it compares with) look at.

A *machine* is a host; it is *idle* when every one of its GPUs is free. These placements choose
how many of a job's ranks go to which machine, in rank order, as a list of blocks
``(machine, count)``; :func:`to_allocation` then picks the GPUs. Ranks are the GPUs in allocation
order, so the order of the blocks is the job's rank order and is kept as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.policies.placement.job_placement import (
    JobPlacementPolicy,
    JobRequest,
    free_gpus_by_node,
)

#: A job's ranks by machine, in rank order: (machine, consecutive ranks placed there).
Blocks = list[tuple[int, int]]


@dataclass(frozen=True)
class Machines:
    """Per machine: whole free GPUs the job may use (0 where its CPU, memory or GPU model rule
    the machine out), GPUs it has, whether it is idle, and its rack (leaf)."""

    free: np.ndarray
    size: np.ndarray
    idle: np.ndarray
    rack: np.ndarray

    @property
    def busy(self) -> np.ndarray:
        """Non-idle machines with room for the job: Titan's fragments."""
        return ~self.idle & (self.free > 0)


def machines(state: ClusterState, request: JobRequest, model_bits: np.ndarray) -> Machines:
    """The machine view of ``state`` for ``request``."""
    free = free_gpus_by_node(state, request, model_bits).astype(np.int64)
    size = state.cluster.num_gpus.astype(np.int64)
    idle = (free == size) & (size > 0)
    return Machines(free, size, idle, np.asarray(state.cluster.rack, dtype=np.int64))


def best_fit(free: np.ndarray, allowed: np.ndarray, need: int) -> int:
    """The allowed machine with the fewest free GPUs ≥ ``need`` (ties: lowest index), or -1."""
    ok = np.flatnonzero(allowed & (free >= need))
    if not len(ok):
        return -1
    return int(ok[np.argmin(free[ok])])  # argmin keeps the first (lowest index) of equals


def fragments_first_blocks(m: Machines, num_gpus: int) -> Blocks | None:
    """HiveD as Titan describes it: while GPUs remain, the non-idle machine with the fewest free
    GPUs ≥ the remainder if any, else fill the non-idle machine with the most free; idle
    machines last, by the same rule."""
    free = m.free.copy()
    left = num_gpus
    blocks: Blocks = []
    for pool in (~m.idle, m.idle):
        while left > 0:
            open_ = pool & (free > 0)
            if not open_.any():
                break
            node = best_fit(free, open_, left)
            if node < 0:
                cand = np.flatnonzero(open_)
                node = int(cand[np.argmax(free[cand])])
            take = min(left, int(free[node]))
            blocks.append((node, take))
            free[node] -= take
            left -= take
    return blocks if left == 0 else None


def consolidate_blocks(m: Machines, num_gpus: int) -> Blocks | None:
    """``consolidate`` for a whole job: one machine if any fits (the fewest free GPUs, then the
    rack with the fewest free GPUs, then index); else idle machines rack by rack (racks with the
    most idle GPUs first), the remainder on the best-fitting other machine, and failing that
    partly free machines, fullest first."""
    free = m.free
    rack_free = np.bincount(m.rack, weights=free, minlength=int(m.rack.max()) + 1)[m.rack]
    fits = np.flatnonzero(free >= num_gpus)
    if len(fits):
        order = np.lexsort((fits, rack_free[fits], free[fits]))
        return [(int(fits[order[0]]), num_gpus)]
    if free.sum() < num_gpus:
        return None
    whole = np.where(m.idle, free, 0)
    rack_whole = np.bincount(m.rack, weights=whole, minlength=int(m.rack.max()) + 1)[m.rack]
    order = np.lexsort((np.arange(len(free)), -rack_whole))
    blocks: Blocks = []
    left = num_gpus
    for node in order[m.idle[order]].tolist():
        if 0 < free[node] <= left:
            blocks.append((node, int(free[node])))
            left -= int(free[node])
        if left == 0:
            return blocks
    used = np.zeros(len(free), dtype=bool)
    used[[n for n, _ in blocks]] = True
    rest = np.flatnonzero(~used & (free >= left))
    if len(rest):
        pick = np.lexsort((rest, rack_free[rest], free[rest]))[0]
        return [*blocks, (int(rest[pick]), left)]
    blocks, left = [], num_gpus
    for node in np.lexsort((np.arange(len(free)), -free)).tolist():
        if free[node] == 0 or left == 0:
            break
        take = min(int(free[node]), left)
        blocks.append((node, take))
        left -= take
    return blocks if left == 0 else None


def to_allocation(
    blocks: Blocks,
    state: ClusterState,
    request: JobRequest,
    free_slots: dict[int, list[int]] | None = None,
) -> Allocation:
    """The allocation of ``blocks``: on each machine its lowest-index free GPUs, in block order.

    A machine given two separate blocks appears twice (rank order is what the collective sees).
    The engine charges a job's CPU and memory request once per allocation entry, so a job that
    asks for CPU or memory gets its entries merged per machine instead (at the first one's
    place). ``free_slots`` keeps each machine's free GPUs between calls on the same ``state``
    (a placement that tries several candidates).
    """
    slots_of = {} if free_slots is None else free_slots
    pools: dict[int, list[int]] = {}
    entries: list[tuple[int, list[int]]] = []
    merge = request.cpu_milli > 0 or request.memory_mib > 0
    first: dict[int, int] = {}
    for node, count in blocks:
        if node not in pools:
            if node not in slots_of:
                slots = state.gpu_exists[node] & (state.gpu_free[node] >= GPU_MILLI)
                slots_of[node] = np.flatnonzero(slots).tolist()
            pools[node] = slots_of[node]
        pool = pools[node]
        if len(pool) < count:
            raise ValueError(f"machine {node} has {len(pool)} free GPUs, {count} asked")
        gpus, pools[node] = pool[:count], pool[count:]
        if merge and node in first:
            entries[first[node]][1].extend(gpus)
            continue
        first[node] = len(entries)
        entries.append((node, gpus))
    return tuple((node, tuple(gpus)) for node, gpus in entries)


class BlockPlacement(JobPlacementPolicy):
    """A whole-job placement that decides on the machine view alone: subclasses give
    :meth:`blocks` (or a ``rule(machines, num_gpus)`` it calls); the GPUs follow from
    :func:`to_allocation`."""

    rule: ClassVar[Callable[[Machines, int], Blocks | None]]

    def blocks(self, m: Machines, request: JobRequest) -> Blocks | None:
        """The job's ranks by machine, in rank order, or None (the job waits)."""
        return type(self).rule(m, request.num_gpus)

    def place_job(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        blocks = self.blocks(machines(state, request, self.model_bits), request)
        return None if blocks is None else to_allocation(blocks, state, request)
