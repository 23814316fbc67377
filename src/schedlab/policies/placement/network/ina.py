"""``ina``: put parameter-server jobs where switches can aggregate their gradients.

A ``ps`` or ``ina`` job gets two candidate placements: the ``locality`` rule over all leaves and
the same rule over the leaves whose ToR can aggregate (``ina_gbps > 0``). For each the job's
communication time D is predicted as GRID-style aggregation would route it (the aggregation
points chosen greedily, bottom-up, under the links' current duties; see
:mod:`schedlab.network.ina`), and the smaller wins (ties: the plain locality placement). Every
other job is placed by the locality rule. Without a live network (serve) the links count as idle.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import footprint
from schedlab.network.ina import predicted_comm
from schedlab.network.routing import Routing
from schedlab.policies.api import REPLAY, PolicyContext
from schedlab.policies.placement.job_placement import JobPlacementPolicy, JobRequest
from schedlab.policies.placement.network.leaves import LeafIndex
from schedlab.policies.placement.network.locality import leaf_counts

#: Collectives that send through a parameter server, where in-network aggregation can help.
PS_COLLECTIVES = ("ps", "ina")


def restricted_leaf_counts(
    need: int, leaf_free: np.ndarray, capacity: np.ndarray, allowed: np.ndarray
) -> list[tuple[int, int]] | None:
    """The ``locality`` rule's (leaf, GPUs) over the ``allowed`` leaves only (a boolean mask).

    The rule restricted to some leaves is the same rule on a fabric whose other leaves have no
    GPUs at all, so it is computed that way rather than as a second copy of the rule.
    """
    return leaf_counts(need, np.where(allowed, leaf_free, 0), np.where(allowed, capacity, 0))


class InaPlacement(JobPlacementPolicy):
    """INA-aware placement (GRID/GOAT/InArt's setting): the locality placement, or the same on
    aggregation-capable leaves when that predicts less communication for a parameter-server job."""

    name = "ina"
    summary = (
        "locality, or locality on ToRs with in-network aggregation when that predicts a shorter "
        "parameter-server exchange (GRID, ToN '23)"
    )
    engines: ClassVar[frozenset[str]] = frozenset({REPLAY})

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        topo = ctx.topology
        assert topo is not None
        self.leaves = LeafIndex(topo)
        capable = (
            topo.ina_gbps[topo.leaves] > 0
            if topo.ina_gbps is not None
            else np.zeros(len(topo.leaves), dtype=bool)
        )
        self.capable = capable

    def place_job(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        host_free, leaf_free = self.leaves.free(state, request, self.model_bits)
        need = request.num_gpus
        plain = leaf_counts(need, leaf_free, self.leaves.capacity)
        spec = self._spec(request)
        if spec is None or spec.collective not in PS_COLLECTIVES:
            return None if plain is None else self.leaves.allocation(state, host_free, plain)
        ina = restricted_leaf_counts(need, leaf_free, self.leaves.capacity, self.capable)
        allocations = [
            self.leaves.allocation(state, host_free, counts)
            for counts in (plain, ina)
            if counts is not None
        ]
        if not allocations:
            return None
        times = [self._predict(spec, a, request.job) for a in allocations]
        return allocations[int(np.argmin(times))]  # ties: the first (plain locality)

    def _spec(self, request: JobRequest) -> CommSpec | None:
        """The job's communication as replay's network sees it (None outside a replay network)."""
        net = self.ctx.network
        if net is None or request.job < 0:
            return None
        comm = net.m.comm
        j = request.job
        return CommSpec(
            collective=str(comm.collective[j]),
            gradient_bytes=float(comm.gradient_bytes[j]),
            compute=comm.compute(j, int(self.ctx.jobs.num_gpus[j]), request.num_gpus),
            overlap=float(comm.overlap[j]),
        )

    def _predict(self, spec: CommSpec, allocation: Allocation, job: int) -> float:
        """D of the job on ``allocation`` under the live links' duties (σ = 1 + duty)."""
        net = self.ctx.network
        background = np.asarray(net.util)
        routing = net.m.routing if net.m.routing.mode in ("ecmp", "spray") else Routing("spray")
        fp = footprint(spec, allocation, net.topo, routing, job, background)
        return predicted_comm(fp, background)
