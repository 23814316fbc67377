"""The pending jobs of each leaf queue, in the ordering's rank, bucketed by GPU count.

A decision looks for a leaf's best job that asks fewer GPUs than the smallest job of that
leaf that could not start in the same decision (a bigger one could not start either), so each
leaf keeps one sorted list per GPU count: the head under a cap is the best of the buckets'
heads below it, found in as many steps as there are distinct job sizes, whatever the length of
the queue. Static orderings (a job's key never changes while it waits) keep the lists from one
decision to the next; the others are re-ranked at every decision, as the plain scheduler does.
"""

from __future__ import annotations

from bisect import insort

import numpy as np
from sortedcontainers import SortedList

Item = tuple  # (key, submit, job) or (rank, job): comparable, job last
NONE = 1 << 30  # the smallest size of a leaf with no waiting job


class LeafQueues:
    """Pending jobs by leaf and size; see the module docstring."""

    def __init__(self, nodes: int, resources: int) -> None:
        self.buckets: list[dict[int, SortedList]] = [{} for _ in range(nodes)]
        self.sizes: list[list[int]] = [[] for _ in range(nodes)]
        self.where: dict[int, tuple[int, int, Item]] = {}  # job → (leaf, size, item)
        self.pending = np.zeros((nodes, resources))  # demand waiting at each leaf
        self.count = np.zeros(nodes, dtype=np.int64)
        self.small = np.full(nodes, NONE, dtype=np.int64)  # each leaf's smallest waiting job

    def __contains__(self, job: int) -> bool:
        return job in self.where

    def __len__(self) -> int:
        return len(self.where)

    def add(self, job: int, leaf: int, size: int, item: Item, demand: np.ndarray) -> None:
        bucket = self.buckets[leaf].get(size)
        if bucket is None:
            bucket = self.buckets[leaf][size] = SortedList()
            insort(self.sizes[leaf], size)
        bucket.add(item)
        self.where[job] = (leaf, size, item)
        self.pending[leaf] += demand
        self.count[leaf] += 1
        if size < self.small[leaf]:
            self.small[leaf] = size

    def remove(self, job: int, demand: np.ndarray) -> None:
        leaf, size, item = self.where.pop(job)
        bucket = self.buckets[leaf][size]
        bucket.remove(item)
        self.pending[leaf] -= demand
        self.count[leaf] -= 1
        if not bucket and size == self.small[leaf]:
            buckets = self.buckets[leaf]
            self.small[leaf] = next((n for n in self.sizes[leaf] if buckets[n]), NONE)

    def head(self, leaf: int, cap: int) -> Item | None:
        """The best pending job of ``leaf`` asking fewer than ``cap`` GPUs (None: none)."""
        best = None
        buckets = self.buckets[leaf]
        for size in self.sizes[leaf]:
            if size >= cap:
                break
            bucket = buckets[size]
            if bucket and (best is None or bucket[0] < best):
                best = bucket[0]
        return best

    def jobs(self) -> list[int]:
        return list(self.where)

    def smallest(self) -> np.ndarray:
        """Each leaf's smallest waiting job in GPUs (a very large number where none waits);
        kept as jobs come and go (read only)."""
        return self.small
