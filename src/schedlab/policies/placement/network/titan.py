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

import bisect
from dataclasses import replace

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.network.collectives import CommSpec
from schedlab.network.replay_state import NetworkState
from schedlab.network.topology import TIER_INTRA, Topology
from schedlab.policies.api import PolicyContext
from schedlab.policies.placement.job_placement import JobPlacementPolicy, JobRequest
from schedlab.policies.placement.network.machines import (
    Blocks,
    Machines,
    machines,
    to_allocation,
)
from schedlab.policies.placement.network.titan_bandwidth import bandwidth_test

#: Verdicts kept for one job at most (a job blocked for long tries many allocations).
MAX_VERDICTS = 100_000


def titan_blocks(m: Machines, num_gpus: int, excluded: np.ndarray | None = None) -> Blocks | None:
    """Steps 1 and 2: the machines and rank blocks, in rank order, or None if the candidates
    cannot hold the job."""
    free = titan_candidates(m, num_gpus, excluded)
    return None if free is None else rank_blocks(free, num_gpus)


def titan_candidates(
    m: Machines, num_gpus: int, excluded: np.ndarray | None = None
) -> np.ndarray | None:
    """Step 1: the free GPUs the job may take per machine (0 off the candidates), or None if
    the candidates cannot hold it."""
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
    return free


def rank_blocks(free: np.ndarray, num_gpus: int) -> Blocks:
    """Step 2 on the candidates' ``free`` GPUs (which hold ≥ ``num_gpus``)."""
    # Best fit by buckets of machines with the same free GPUs, each in index order: the fewest
    # free GPUs ≥ the block is the first non-empty bucket from the block's size up, and its
    # first machine the lowest index (the rule of ``best_fit``, without an array scan per block).
    cand = np.flatnonzero(free > 0)
    counts = free[cand].tolist()
    buckets: list[list[int]] = [[] for _ in range(max(counts, default=0) + 1)]
    for node, count in zip(cand.tolist(), counts, strict=True):
        buckets[count].append(node)
    blocks: Blocks = []

    def place(size: int) -> None:
        for count in range(size, len(buckets)):
            if buckets[count]:
                node = buckets[count].pop(0)
                if count > size:
                    bisect.insort(buckets[count - size], node)
                blocks.append((node, size))
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
        self.memo = _Memo()

    def place_job(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        m = machines(state, request, self.model_bits)
        net = self.ctx.network
        memo = self.memo
        memo.check(request.job, net)
        # The same request on the same free GPUs and links as the last call: the same answer.
        inputs = (m.free, state.gpu_free, state.gpu_exists, memo.shared_util(net))
        last = memo.last
        if last is not None and last[0] == request and all(map(np.array_equal, inputs, last[1])):
            return last[2]
        excluded = np.zeros(len(m.free), dtype=bool)
        slots: dict[int, list[int]] = {}
        while True:
            blocks = titan_blocks(m, request.num_gpus, excluded)
            if blocks is None:
                allocation = None
                break
            allocation = to_allocation(blocks, state, request, slots)
            drop = self._drop(request.job, allocation)
            if drop is None:
                break
            excluded[drop] = True
        memo.last = (request, tuple(a.copy() for a in inputs), allocation)
        return allocation

    def violation(self, job: int, allocation: Allocation) -> int | None:
        """Step 3: the machine to drop from ``allocation``, or None if its phases fit in the
        capacity the running jobs leave (always so without a live network: a job alone never
        needs more than line rate)."""
        self.memo.check(job, self.ctx.network)
        return self._drop(job, allocation)

    def _drop(self, job: int, allocation: Allocation) -> int | None:
        """:meth:`violation` with the memo already brought up to date for ``job``."""
        net = self.ctx.network
        if net is None or job < 0 or len({node for node, _ in allocation}) < 2:
            return None
        memo = self.memo
        kept = memo.verdicts.get(allocation)
        if kept is not None and np.array_equal(net.util[kept[1]], kept[2]):
            return kept[0]
        topo, comm = net.topo, net.m.comm
        spec = CommSpec(
            collective=str(comm.collective[job]), gradient_bytes=float(comm.gradient_bytes[job])
        )
        routing = net.m.routing
        if routing.mode == "source":  # reserved paths are chosen at the start: judge all paths
            routing = replace(routing, mode="spray")
        drop, read = bandwidth_test(topo, net.util, routing, job, spec, allocation, memo.routes)
        if len(memo.verdicts) >= MAX_VERDICTS:
            memo.verdicts.clear()
        memo.verdicts[allocation] = (drop, read, net.util[read])
        return drop


class _Memo:
    """What Titan keeps about the job it is placing between tries and decision points.

    A job's ECMP paths depend on the job, its machine pair and NIC and the fabric alone; the
    verdict of the bandwidth test on an allocation depends besides only on the utilisation of
    the links it read. A blocked FIFO head is tried again at every decision point, mostly on the
    same candidates, and most decision points change few of those links: paths are kept until
    the job or the fabric changes, a verdict with the utilisation it read (and used only while
    that is unchanged).
    """

    def __init__(self) -> None:
        self.job = -1
        self.fabric: Topology | None = None
        self.routes: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]] = {}
        #: allocation → (machine to drop or None, links read, their utilisation then)
        self.verdicts: dict[Allocation, tuple[int | None, np.ndarray, np.ndarray]] = {}
        #: the last call: its request, its inputs (see Titan.place_job) and its answer
        self.last: tuple[JobRequest, tuple[np.ndarray, ...], Allocation | None] | None = None
        self.judged = np.zeros(0, dtype=np.int64)  # the fabric's links other than intra-host

    def check(self, job: int, net: NetworkState | None) -> None:
        """Forget what does not hold for ``job`` on ``net``'s fabric."""
        fabric = net.topo if net is not None else None
        if job != self.job or fabric is not self.fabric:
            self.job, self.fabric = job, fabric
            self.routes, self.verdicts, self.last = {}, {}, None
            if fabric is not None:
                self.judged = np.flatnonzero(fabric.link_tier != TIER_INTRA)

    def shared_util(self, net: NetworkState | None) -> np.ndarray:
        """The utilisation of every link the bandwidth test may read."""
        return net.util[self.judged] if net is not None else np.zeros(0)
