"""What a share policy decides on: per-queue allocation, pending demand and usage, and the
running jobs that could be reclaimed.

Per-resource arrays are ``[nodes, resources]`` over the whole tree, summed up from the leaves
(a parent holds what its subtree holds). The scheduler changes ``alloc`` and ``pending`` as it
decides (a start moves a job's demand from pending to alloc; a reclaim the other way), so a
policy always judges the state its earlier decisions of the same cycle left.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from schedlab.tenancy.tree import QueueTree

if TYPE_CHECKING:
    from schedlab.tenancy.running import RunningIndex


def roll_up(tree: QueueTree, leaf_values: np.ndarray) -> np.ndarray:
    """Per-node totals from values held at the nodes themselves (children into parents)."""
    if tree.below is not None:
        return tree.below @ leaf_values
    out = leaf_values.copy()
    for node in reversed(tree.preorder()[1:]):
        out[tree.parent[node]] += out[node]
    return out


@dataclass
class TenantState:
    """One decision's view (see the module docstring)."""

    tree: QueueTree
    now: float
    capacity: np.ndarray
    alloc: np.ndarray
    pending: np.ndarray
    #: Allocation of non-preemptible jobs (KAI's ``alloc_np``).
    alloc_np: np.ndarray
    #: Each job's demand ``[jobs, resources]`` and leaf.
    demand: np.ndarray
    leaf_of: np.ndarray
    #: Running jobs by leaf (built from ``running_jobs`` when first asked), and when each
    #: job's current run began.
    running: dict[int, list[int]] | None = None
    running_jobs: np.ndarray | None = None
    #: Where ``running_jobs`` comes from when first asked (most decisions never ask).
    running_of: Callable[[], np.ndarray] | None = None
    run_began: np.ndarray | None = None
    #: Jobs' submit times (Kueue's creation timestamps).
    submit: np.ndarray | None = None
    #: Jobs' priorities (higher first; 0 when the trace has none).
    job_priority: np.ndarray | None = None
    #: Time-decayed usage over capacity, per node and resource (time-based policies).
    usage: np.ndarray | None = None
    #: Jobs that may not be preempted (KAI checks their queue's deserved quota instead).
    non_preemptible: np.ndarray | None = None
    #: The pending jobs (a function: only some policies need the list).
    queued: Callable[[], list[int]] | None = None
    #: Which decision this is (caches keyed on it never outlive the decision).
    serial: int = 0
    #: ``alloc`` when the current reclaim attempt began (who lost resources since).
    reclaim_base: np.ndarray | None = None
    #: The running jobs per leaf from the oldest run (the scheduler's; None elsewhere).
    index: RunningIndex | None = None
    #: Counts the changes :meth:`take` and :meth:`give_back` made (caches key on it).
    version: int = 0

    def by_leaf(self) -> dict[int, list[int]]:
        """Running jobs by leaf (only policies that reclaim ask)."""
        if self.running is None:
            jobs = self.running_array()
            if jobs is None:
                jobs = np.zeros(0, int)
            leaves = self.leaf_of[jobs]
            order = np.argsort(leaves, kind="stable")
            jobs, leaves = jobs[order], leaves[order]
            cut = np.flatnonzero(np.diff(leaves)) + 1
            self.running = {
                int(group_leaves[0]): group.tolist()
                for group, group_leaves in zip(
                    np.split(jobs, cut), np.split(leaves, cut), strict=True
                )
                if len(group)
            }
        return self.running

    def running_array(self) -> np.ndarray | None:
        """The running jobs (None: only ``running`` was given)."""
        if self.running_jobs is None and self.running_of is not None:
            self.running_jobs = self.running_of()
        return self.running_jobs

    @property
    def request(self) -> np.ndarray:
        return self.alloc + self.pending

    def path(self, leaf: int) -> list[int]:
        return self.tree.ancestors[leaf]

    def take(self, job: int, amount: np.ndarray | None = None) -> None:
        """``job`` starts: its demand moves from pending to allocated along its path."""
        self._move(job, self.demand[job] if amount is None else amount)

    def give_back(self, job: int, amount: np.ndarray | None = None) -> None:
        """``job`` is reclaimed: its holding moves back to pending along its path."""
        self._move(job, -(self.demand[job] if amount is None else amount))

    def _move(self, job: int, req: np.ndarray) -> None:
        self.version += 1
        alloc, pending = self.alloc, self.pending
        held_np = self.non_preemptible is not None and bool(self.non_preemptible[job])
        for node in self.tree.up[int(self.leaf_of[job])]:  # a few rows: cheaper than fancy indexing
            alloc[node] += req
            pending[node] -= req
            if held_np:
                self.alloc_np[node] += req

    def priority_of(self, job: int) -> float:
        return 0.0 if self.job_priority is None else float(self.job_priority[job])
