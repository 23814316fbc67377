"""A network placement for tests: every job on nodes under one leaf switch, or it waits.

Loaded with ``--plugin leaf_placement:SameLeaf --placement test-same-leaf`` (``tests`` on the
import path), it stands in for the topology-aware placements (``locality`` and the like) in the
serve tests: it reads nothing but ``ctx.topology``, as they do.
"""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.policies.placement.job_placement import (
    JobPlacementPolicy,
    JobRequest,
    free_gpus_by_node,
    lowest_free_gpus,
)


class SameLeaf(JobPlacementPolicy):
    """Leaves in switch order; within one, the job's shape on its emptiest nodes."""

    name = "test-same-leaf"
    summary = "test policy: a job's nodes all under one leaf switch, else it waits"

    def place_job(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        topology = self.ctx.topology
        assert topology is not None and topology.num_hosts == state.cluster.size
        free = free_gpus_by_node(state, request, self.model_bits)
        if request.exclusive:
            free = np.where(free == state.cluster.num_gpus, free, 0)
        leaf = topology.host_leaf_index()
        for k in range(int(leaf.max()) + 1):
            hosts = sorted(np.flatnonzero(leaf == k), key=lambda h: (-free[h], h))
            chosen = self._fill(request, state, free, hosts)
            if chosen is not None:
                return chosen
        return None

    @staticmethod
    def _fill(
        request: JobRequest, state: ClusterState, free: np.ndarray, hosts: list[int]
    ) -> Allocation | None:
        if request.per_node:
            fits = [h for h in hosts if free[h] >= request.per_node]
            if len(fits) < max(request.nodes, 1):
                return None
            picked = sorted(fits[: max(request.nodes, 1)])
            return tuple((int(h), lowest_free_gpus(state, h, request.per_node)) for h in picked)
        chosen, left = [], request.num_gpus
        for h in hosts:
            take = min(int(free[h]), left)
            if take:
                chosen.append((int(h), lowest_free_gpus(state, h, take)))
                left -= take
            if left == 0:
                return tuple(sorted(chosen))
        return None
