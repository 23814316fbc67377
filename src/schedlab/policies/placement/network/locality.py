"""``locality``: fewest leaves, then fewest hosts (the vClos study's electrical baseline, §4.1).

A job that fits in one leaf goes to the fitting leaf with the fewest free GPUs (best fit keeps
whole leaves free for larger jobs). A larger job takes whole empty leaves (lowest index) while it
needs a whole leaf more, and the rest goes to the leaf with the fewest free GPUs that holds it,
else over leaves fullest first. A job that fits no single leaf although it is small spreads over
the leaves with the most free GPUs (fewest leaves). Inside a leaf, hosts by best fit, else
fullest first. Nothing is reserved: the job is routed like any other (ECMP by default) and shares
links by the run's sharing rule.
"""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.policies.api import REPLAY, SERVE, PolicyContext
from schedlab.policies.placement.job_placement import JobPlacementPolicy, JobRequest
from schedlab.policies.placement.network.leaves import LeafIndex, by_key


class LocalityPlacement(JobPlacementPolicy):
    """Fewest leaves, then fewest hosts; no reservation."""

    name = "locality"
    engines = frozenset({REPLAY, SERVE})
    summary = "fewest leaves, then hosts: vClos's electrical baseline (arXiv 2308.05692)"

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        assert ctx.topology is not None
        self.leaves = LeafIndex(ctx.topology)

    def place_job(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        host_free, leaf_free = self.leaves.free(state, request, self.model_bits)
        counts = leaf_counts(request.num_gpus, leaf_free, self.leaves.capacity)
        if counts is None:
            return None
        return self.leaves.allocation(state, host_free, counts)


def leaf_counts(
    need: int, leaf_free: np.ndarray, capacity: np.ndarray
) -> list[tuple[int, int]] | None:
    """(leaf, GPUs) the locality rule takes for ``need`` GPUs, or None when too few are free."""
    if int(leaf_free.sum()) < need:
        return None
    every = np.arange(len(leaf_free))
    fits = np.flatnonzero(leaf_free >= need)
    if len(fits):
        return [(int(by_key(leaf_free, fits)[0]), need)]
    if need <= int(capacity.max()):  # small, but no leaf holds it: the fewest leaves
        order = every[np.lexsort((every, -leaf_free))]
        return _spread(order, leaf_free, need)
    out: list[tuple[int, int]] = []
    left = need
    for leaf in np.flatnonzero((leaf_free == capacity) & (capacity > 0)).tolist():
        if capacity[leaf] <= left:
            out.append((leaf, int(capacity[leaf])))
            left -= int(capacity[leaf])
    if left == 0:
        return out
    used = np.zeros(len(leaf_free), dtype=bool)
    used[[leaf for leaf, _ in out]] = True
    rest = np.flatnonzero(~used & (leaf_free >= left))
    if len(rest):
        return [*out, (int(by_key(leaf_free, rest)[0]), left)]
    rest = np.flatnonzero(~used & (leaf_free > 0))
    return [*out, *_spread(by_key(leaf_free, rest), leaf_free, left)]


def _spread(order: np.ndarray, leaf_free: np.ndarray, need: int) -> list[tuple[int, int]]:
    out, left = [], need
    for leaf in order.tolist():
        take = min(int(leaf_free[leaf]), left)
        if take:
            out.append((leaf, take))
            left -= take
        if left == 0:
            break
    return out
