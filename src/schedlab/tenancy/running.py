"""The running jobs as the tenant scheduler knows them, kept from one decision to the next.

Rebuilding per-queue holdings from every running job at every decision costs as much as the
rest of a decision; instead the scheduler tells this index what it started and preempted, and
the index finds the jobs that ended (fewer running than it holds) by their status. It keeps:

* the running jobs in the engine's order (the order starts were applied), and on demand as
  an array; each also holds a slot of a fixed array, so that the jobs that ended are found by
  one look at their status;
* what each leaf holds (its jobs' demand summed), added and taken off job by job. Sums in a
  different order can differ in the last bit, so this is done only when every demand is a
  multiple of 2^-20 small enough for every partial sum to be exact (GPUs, GiB of memory, most
  CPU requests); otherwise the holdings are summed afresh each time, as before;
* per leaf, its running jobs from the oldest run to the latest (``(run began, -job)``, the
  reverse of the order reclaim takes them in when priorities are equal): who a queue above
  its share could lose is a suffix of that list.
"""

from __future__ import annotations

from bisect import insort

import numpy as np

from schedlab.model.snapshot import RUNNING, Snapshot

#: Demands that are multiples of this are summed exactly in any order (below ``EXACT_TOTAL``).
QUANTUM = 2.0**-20
EXACT_TOTAL = 2.0**32


def sums_exactly(demand: np.ndarray) -> bool:
    """Whether every partial sum of these demands is exact (so their order does not matter)."""
    if not demand.size:
        return True
    scaled = demand * (1.0 / QUANTUM)
    return bool((scaled == np.floor(scaled)).all() and np.abs(demand).sum() < EXACT_TOTAL)


class RunningIndex:
    """See the module docstring."""

    def __init__(self, leaf_of: np.ndarray, demand: np.ndarray, nodes: int) -> None:
        self.leaf_of = leaf_of
        self.leaves: list[int] = leaf_of.tolist()
        self.demand = demand
        self.rows: list[list[float]] = demand.tolist()
        self.first: list[float] = demand[:, 0].tolist()  # the first resource (GPUs)
        self.exact = sums_exactly(demand)
        self.nodes = nodes
        self.jobs: dict[int, int] = {}  # job → its slot
        self.slots = np.full(64, -1, dtype=np.int64)  # job in each slot (-1: none)
        self.free_slots: list[int] = list(range(63, -1, -1))
        self.held = np.zeros((nodes, demand.shape[1]))
        self._array: np.ndarray | None = None
        self.began: dict[int, float] = {}
        self.oldest_first: list[list[tuple[float, int]]] = [[] for _ in range(nodes)]
        self.changes = 0  # counts every change to the running set

    # -- keeping in step -------------------------------------------------------------------
    def sync(self, snap: Snapshot, decided: list[int]) -> None:
        """Match the snapshot: the jobs the last decision started or preempted (``decided``)
        where they really are now, then the jobs that ended since."""
        running = snap.running_set
        jobs = self.jobs
        for j in decided:
            if j in running:
                if j not in jobs:
                    self._add(j, snap)
            elif j in jobs:
                self._remove(j)
        if len(running) == len(jobs):
            return
        if len(running) < len(jobs):
            slots = self.slots
            taken = slots[slots >= 0]
            for j in taken[snap.runtime.status[taken] != RUNNING].tolist():
                self._remove(j)
        if len(running) != len(jobs):
            self._rebuild(snap)  # a first look (serve), or a change the index did not see

    def _rebuild(self, snap: Snapshot) -> None:
        for j in list(self.jobs):
            self._remove(j)
        for j in snap.running_set:
            self._add(j, snap)

    def _add(self, job: int, snap: Snapshot) -> None:
        if not self.free_slots:
            size = len(self.slots)
            self.slots = np.concatenate([self.slots, np.full(size, -1, dtype=np.int64)])
            self.free_slots = list(range(2 * size - 1, size - 1, -1))
        slot = self.free_slots.pop()
        self.slots[slot] = job
        self.jobs[job] = slot
        self._array = None
        self.changes += 1
        leaf = self.leaves[job]
        if self.exact:
            self.held[leaf] += self.demand[job]
        began = float(snap.runtime.run_started[job])
        self.began[job] = began
        order = self.oldest_first[leaf]
        key = (began, -job)
        if not order or order[-1] < key:
            order.append(key)
        else:
            insort(order, key)

    def _remove(self, job: int) -> None:
        slot = self.jobs.pop(job)
        self.slots[slot] = -1
        self.free_slots.append(slot)
        self._array = None
        self.changes += 1
        leaf = self.leaves[job]
        if self.exact:
            self.held[leaf] -= self.demand[job]
        self.oldest_first[leaf].remove((self.began.pop(job), -job))

    # -- reading ---------------------------------------------------------------------------
    def array(self) -> np.ndarray:
        """The running jobs, in the engine's order."""
        if self._array is None:
            self._array = np.fromiter(self.jobs, dtype=np.int64, count=len(self.jobs))
        return self._array

    def holdings(self) -> np.ndarray:
        """What each node of the tree holds itself (leaves: their jobs' demand), ``[nodes,
        resources]``: a fresh array."""
        if self.exact:
            return self.held.copy()
        run = self.array()
        out = np.zeros_like(self.held)
        if len(run):
            leaves = self.leaf_of[run]
            for k in range(out.shape[1]):
                out[:, k] = np.bincount(leaves, self.demand[run, k], minlength=self.nodes)
        return out
