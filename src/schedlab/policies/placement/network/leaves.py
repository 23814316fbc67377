"""Free GPUs per leaf and filling a leaf host by host: the pieces the leaf-level placements share.

A leaf-level placement decides how many GPUs each leaf gives a job; which hosts inside the leaf
give them is the same rule for all of them (§4.1 of the network spec): the host with the fewest
free GPUs that still holds the rest takes it, else the fullest host gives all it has and the rest
goes on.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.network.topology import Topology
from schedlab.policies.placement.job_placement import (
    JobRequest,
    free_gpus_by_node,
    lowest_free_gpus,
)

#: Which ``count`` free GPUs of ``node`` a job takes: ``pick(state, node, count)``.
GpuPicker = Callable[[ClusterState, int, int], tuple[int, ...]]


class LeafIndex:
    """The hosts of each leaf and each leaf's GPU count, fixed for a run's topology."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.host_leaf = topo.host_leaf_index()
        self.num_leaves = len(topo.leaves)
        order = np.argsort(self.host_leaf, kind="stable")
        bounds = np.searchsorted(self.host_leaf[order], np.arange(self.num_leaves + 1))
        self.hosts = [order[bounds[i] : bounds[i + 1]] for i in range(self.num_leaves)]
        self.capacity = np.bincount(
            self.host_leaf, weights=topo.host_gpus, minlength=self.num_leaves
        ).astype(np.int64)

    def free(
        self, state: ClusterState, request: JobRequest, model_bits: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(free GPUs per host usable by the request, their sum per leaf)."""
        host_free = free_gpus_by_node(state, request, model_bits).astype(np.int64)
        leaf_free = np.bincount(self.host_leaf, weights=host_free, minlength=self.num_leaves)
        return host_free, leaf_free.astype(np.int64)

    def fill(
        self,
        state: ClusterState,
        host_free: np.ndarray,
        leaf: int,
        count: int,
        pick: GpuPicker = lowest_free_gpus,
    ) -> list[tuple[int, tuple[int, ...]]]:
        """``count`` GPUs of ``leaf``: best-fit host for the rest, else fullest host first."""
        hosts = self.hosts[leaf].tolist()
        free = host_free[self.hosts[leaf]].tolist()
        taken: list[tuple[int, int]] = []
        left = count
        while left > 0:
            best = -1  # fewest free that hold the rest (ties: index), else the fullest host
            fullest = -1
            for i, f in enumerate(free):
                if f >= left and (best < 0 or f < free[best]):
                    best = i
                if f > 0 and (fullest < 0 or f < free[fullest]):
                    fullest = i
            i = best if best >= 0 else fullest
            if i < 0:
                raise ValueError(f"leaf {leaf} has fewer than {count} free GPUs")
            take = left if best >= 0 else free[i]
            taken.append((hosts[i], take))
            free[i] = 0
            left -= take
        return [(node, pick(state, node, take)) for node, take in taken]

    def allocation(
        self,
        state: ClusterState,
        host_free: np.ndarray,
        counts: list[tuple[int, int]],
        pick: GpuPicker = lowest_free_gpus,
    ) -> Allocation:
        """The GPUs of every (leaf, count) pair, leaf by leaf in the order given."""
        out: list[tuple[int, tuple[int, ...]]] = []
        for leaf, count in counts:
            out += self.fill(state, host_free, leaf, count, pick)
        return tuple(out)


def by_key(values: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """``candidates`` ordered by ``values`` ascending, ties by index."""
    return candidates[np.lexsort((candidates, values[candidates]))]
