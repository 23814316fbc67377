"""What a share policy decides on: per-queue allocation, pending demand and usage, and the
running jobs that could be reclaimed.

Per-resource arrays are ``[nodes, resources]`` over the whole tree, summed up from the leaves
(a parent holds what its subtree holds). The scheduler changes ``alloc`` and ``pending`` as it
decides (a start moves a job's demand from pending to alloc; a reclaim the other way), so a
policy always judges the state its earlier decisions of the same cycle left.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from schedlab.tenancy.tree import QueueTree


def roll_up(tree: QueueTree, leaf_values: np.ndarray) -> np.ndarray:
    """Per-node totals from values held at the nodes themselves (children into parents)."""
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
    #: Running jobs by leaf, and when each job's current run began.
    running: dict[int, list[int]] = field(default_factory=dict)
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
    #: ``alloc`` when the current reclaim attempt began (who lost resources since).
    reclaim_base: np.ndarray | None = None

    @property
    def request(self) -> np.ndarray:
        return self.alloc + self.pending

    def path(self, leaf: int) -> list[int]:
        return self.tree.ancestors[leaf]

    def take(self, job: int, amount: np.ndarray | None = None) -> None:
        """``job`` starts: its demand moves from pending to allocated along its path."""
        req = self.demand[job] if amount is None else amount
        nodes = self.tree.up[int(self.leaf_of[job])]
        self.alloc[nodes] += req
        self.pending[nodes] -= req
        if self.non_preemptible is not None and self.non_preemptible[job]:
            self.alloc_np[nodes] += req

    def give_back(self, job: int, amount: np.ndarray | None = None) -> None:
        """``job`` is reclaimed: its holding moves back to pending along its path."""
        req = self.demand[job] if amount is None else amount
        nodes = self.tree.up[int(self.leaf_of[job])]
        self.alloc[nodes] -= req
        self.pending[nodes] += req
        if self.non_preemptible is not None and self.non_preemptible[job]:
            self.alloc_np[nodes] -= req

    def priority_of(self, job: int) -> float:
        return 0.0 if self.job_priority is None else float(self.job_priority[job])
