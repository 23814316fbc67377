"""``titan``: non-idle-machine-aware worker placement (Titan, ICNP '24), following its intent.

Titan's objective is lexicographic: use as few idle machines as possible, then as few machines
as possible, without exceeding the bandwidth between machines in any phase of the job's
halving-doubling all-reduce. Its submodular greedy is not specified closely enough to rebuild, so
this placement follows the three steps of ``docs/network.md``:

1. Candidates: every non-idle machine with free GPUs; if they hold fewer than N GPUs, the fewest
   idle machines that cover the rest (largest first, then lowest index).
2. Ranks in aligned power-of-two blocks (a block of 2^b consecutive ranks on one machine keeps
   HD stages 0…b−1 inside it): the candidate with the fewest free GPUs ≥ the block size takes
   it (ties: lowest index), else the block is split in halves, lower half first. N that is not a
   power of two is its binary decomposition, largest block first.
3. Bandwidth: in every phase, each link the job's transfers cross must have room for the job's
   bytes on it at the rate the phase runs alone at line rate (bytes / τ_t), against the residual
   capacity c_l·(1 − u_l) the running jobs leave (the live network's utilisation; the full
   capacity without one). On a violation the machine of the worst machine pair holding fewer of
   the job's ranks is dropped and the steps rerun; when nothing is left the job waits.

The residual capacity is the network as it stood at the last settled decision point: jobs started
earlier at the same decision point do not count yet.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.network.collectives import CommSpec
from schedlab.network.topology import Topology
from schedlab.policies.api import PolicyContext
from schedlab.policies.placement.job_placement import JobPlacementPolicy, JobRequest
from schedlab.policies.placement.network.machines import (
    Blocks,
    Machines,
    best_fit,
    machines,
    to_allocation,
)
from schedlab.policies.placement.network.titan_bandwidth import worst_machine


def titan_blocks(m: Machines, num_gpus: int, excluded: np.ndarray | None = None) -> Blocks | None:
    """Steps 1 and 2: the machines and rank blocks, in rank order, or None if the candidates
    cannot hold the job."""
    out = np.zeros(len(m.free), dtype=bool) if excluded is None else excluded
    free = np.where(m.busy & ~out, m.free, 0)
    need = num_gpus - int(free.sum())
    if need > 0:
        idle = np.flatnonzero(m.idle & ~out & (m.free > 0))
        for node in idle[np.lexsort((idle, -m.free[idle]))].tolist():
            free[node] = m.free[node]
            need -= int(m.free[node])
            if need <= 0:
                break
        if need > 0:
            return None
    blocks: Blocks = []

    def place(size: int) -> None:
        node = best_fit(free, free > 0, size)
        if node >= 0:
            blocks.append((node, size))
            free[node] -= size
            return
        place(size // 2)  # size ≥ 2 here: the candidates hold ≥ N GPUs, so one rank always fits
        place(size // 2)

    for bit in range(num_gpus.bit_length() - 1, -1, -1):
        if num_gpus >> bit & 1:
            place(1 << bit)
    return blocks


class Titan(JobPlacementPolicy):
    name = "titan"
    summary = (
        "fill non-idle machines in aligned power-of-two rank blocks under a per-phase "
        "bandwidth check (Titan, ICNP '24)"
    )

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        self.routes: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._routes_job: int | None = None
        self._routes_fabric: Topology | None = None

    def place_job(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        m = machines(state, request, self.model_bits)
        excluded = np.zeros(len(m.free), dtype=bool)
        # A job's ECMP paths depend on the job, its machine pair and NIC and the fabric alone:
        # they are kept while the same job is tried again (a blocked FIFO head is retried at
        # every decision point) on the same fabric.
        net = self.ctx.network
        fabric = net.topo if net is not None else None
        if request.job != self._routes_job or fabric is not self._routes_fabric:
            self._routes_job, self._routes_fabric = request.job, fabric
            self.routes = {}
        while True:
            blocks = titan_blocks(m, request.num_gpus, excluded)
            if blocks is None:
                return None
            allocation = to_allocation(blocks, state, request)
            drop = self.violation(request.job, allocation)
            if drop is None:
                return allocation
            excluded[drop] = True

    def violation(self, job: int, allocation: Allocation) -> int | None:
        """Step 3: the machine to drop from ``allocation``, or None if its phases fit in the
        capacity the running jobs leave (always so without a live network: a job alone never
        needs more than line rate)."""
        net = self.ctx.network
        if net is None or job < 0 or len({node for node, _ in allocation}) < 2:
            return None
        topo, comm = net.topo, net.m.comm
        spec = CommSpec(
            collective=str(comm.collective[job]), gradient_bytes=float(comm.gradient_bytes[job])
        )
        routing = net.m.routing
        if routing.mode == "source":  # reserved paths are chosen at the start: judge all paths
            routing = replace(routing, mode="spray")
        return worst_machine(topo, net.util, routing, job, spec, allocation, self.routes)
