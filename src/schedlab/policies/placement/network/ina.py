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
from schedlab.policies.api import REPLAY
from schedlab.policies.placement.job_placement import (
    JobPlacementPolicy,
    JobRequest,
    free_gpus_by_node,
    lowest_free_gpus,
)

#: Collectives that send through a parameter server, where in-network aggregation can help.
PS_COLLECTIVES = ("ps", "ina")


def _best_fit_hosts(free: np.ndarray, nodes: np.ndarray, count: int) -> list[tuple[int, int]]:
    """(node, GPUs) inside one leaf: the node with the fewest free GPUs ≥ what is left if any,
    else the fullest node with free GPUs first (ties: index)."""
    left = count
    avail = {int(n): int(free[n]) for n in nodes if free[n] > 0}
    out: list[tuple[int, int]] = []
    while left > 0 and avail:
        fits = [n for n, f in avail.items() if f >= left]
        node = (
            min(fits, key=lambda n: (avail[n], n))
            if fits
            else min(avail, key=lambda n: (avail[n], n))
        )
        take = min(left, avail.pop(node))
        out.append((node, take))
        left -= take
    return out if left == 0 else []


def _locality_placement(
    free: np.ndarray, leaf_of: np.ndarray, leaf_gpus: np.ndarray, count: int, leaves: np.ndarray
) -> list[tuple[int, int]] | None:
    """The ``locality`` rule (fewest leaves, then fewest hosts) over the allowed ``leaves``.

    ``free`` is free GPUs per node, ``leaf_of`` each node's leaf (0-based), ``leaf_gpus`` the
    GPUs per leaf. A job that fits in a leaf goes to the fitting leaf with the fewest free GPUs
    (ties: index), hosts by best fit. A larger job takes ⌊count / GPUs per leaf⌋ whole empty
    leaves (lowest index) and places the rest as a job of its own size over the other leaves;
    it waits (None) when there are not enough empty leaves or the rest fits nowhere. A job no
    single leaf can take now but that fits in one leaf's size spans the leaves with the most
    free GPUs first (fewest leaves), hosts by best fit in each.
    """
    per_leaf = np.bincount(leaf_of, weights=free, minlength=len(leaf_gpus)).astype(np.int64)
    allowed = [int(x) for x in leaves]
    nodes_of = {x: np.flatnonzero(leaf_of == x) for x in allowed}

    def one_leaf(n: int, among: list[int]) -> list[tuple[int, int]] | None:
        fits = [x for x in among if per_leaf[x] >= n]
        if fits:
            best = min(fits, key=lambda x: (per_leaf[x], x))
            return _best_fit_hosts(free, nodes_of[best], n)
        if sum(int(per_leaf[x]) for x in among) < n:
            return None
        out, left = [], n
        for x in sorted(among, key=lambda x: (-per_leaf[x], x)):
            take = min(left, int(per_leaf[x]))
            if take:
                out += _best_fit_hosts(free, nodes_of[x], take)
                left -= take
            if left == 0:
                break
        return out

    size = int(min(leaf_gpus[x] for x in allowed)) if allowed else 0
    if not allowed or count <= 0:
        return None
    if count <= size:
        return one_leaf(count, allowed)
    whole, rest = divmod(count, size)
    empty = [x for x in allowed if per_leaf[x] == leaf_gpus[x]]
    if len(empty) < whole:
        return None
    taken = empty[:whole]
    out = [(int(n), int(free[n])) for x in taken for n in nodes_of[x] if free[n] > 0]
    if rest:
        tail = one_leaf(rest, [x for x in allowed if x not in taken])
        if tail is None:
            return None
        out += tail
    return out


class InaPlacement(JobPlacementPolicy):
    """INA-aware placement (GRID/GOAT/InArt's setting): the locality placement, or the same on
    aggregation-capable leaves when that predicts less communication for a parameter-server job."""

    name = "ina"
    summary = (
        "locality, or locality on ToRs with in-network aggregation when that predicts a shorter "
        "parameter-server exchange (GRID, ToN '23)"
    )
    engines: ClassVar[frozenset[str]] = frozenset({REPLAY})

    def place_job(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        topo = self.ctx.topology
        assert topo is not None
        free = free_gpus_by_node(state, request, self.model_bits)
        leaf_of = topo.host_leaf_index()
        leaf_gpus = np.bincount(leaf_of, weights=topo.host_gpus).astype(np.int64)
        every = np.arange(len(leaf_gpus))
        plain = _locality_placement(free, leaf_of, leaf_gpus, request.num_gpus, every)
        spec = self._spec(request)
        if spec is None or spec.collective not in PS_COLLECTIVES:
            return self._allocation(plain, state)
        assert topo.ina_gbps is not None
        capable = every[topo.ina_gbps[topo.leaves] > 0]
        ina = _locality_placement(free, leaf_of, leaf_gpus, request.num_gpus, capable)
        options = [o for o in (plain, ina) if o]
        if not options:
            return None
        allocations = [self._allocation(o, state) for o in options]
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

    @staticmethod
    def _allocation(plan: list[tuple[int, int]] | None, state: ClusterState) -> Allocation | None:
        if not plan:
            return None
        return tuple((node, lowest_free_gpus(state, node, count)) for node, count in plan)
