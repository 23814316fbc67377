"""Gang placement of whole-GPU jobs: one node when the job fits in one, whole nodes otherwise.

A job that fits in a single node always gets a single node (the policy's choice among those that
fit): splitting an all-reduce job across nodes for want of room is what fragments a cluster, and
schedulers usually refuse it. A job larger than any node takes the fewest nodes: fully free nodes
first, grouped by rack so it spans as few racks as possible, then a remainder placed by the policy.

A job with a fixed geometry (``gpus_per_node`` on each of ``num_nodes`` nodes, Slurm's ``-N`` with
``--gpus-per-node`` or ``--gres=gpu:G``) gets exactly that: the policy chooses each node in turn
among those with that many GPUs free (all of them free for an exclusive job), never one twice.
"""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.network.plan import NetPlan
from schedlab.policies.placement.base import Placer, PodRequest, feasible_nodes
from schedlab.policies.placement.job_placement import JobPlacementPolicy, JobRequest


class GangPlacer:
    """Places gang jobs with a single-node placement plugin."""

    def __init__(self, placer: Placer) -> None:
        self.placer = placer
        cluster = placer.ctx.cluster
        self.model_bits = placer.model_bits
        self.max_per_node = int(cluster.num_gpus.max()) if cluster.size else 0
        self.rack = cluster.rack
        self._largest: dict[int, int] = {}  # model mask → most GPUs on one node of those models
        # Requests by (CPU, memory, GPUs, model mask): a request is immutable, and a trace has
        # few distinct shapes, so each is built once.
        self._requests: dict[tuple[int, int, int, int], PodRequest] = {}
        # A whole-job placement decides every GPU job itself (the network needs the whole job).
        policy = placer.policy
        self.whole_job = policy if isinstance(policy, JobPlacementPolicy) else None
        # A performance model that gives some jobs 0 progress on some GPU models at some counts
        # (a throughput matrix): those GPUs are never offered to the job at that count.
        perf, jobs = placer.ctx.perf, placer.ctx.jobs
        restricts = perf is not None and jobs is not None and perf.restricts_counts
        self._runnable = (lambda j, n: perf.runnable_models(jobs, j, n)) if restricts else None

    def plan_for(self, job: int, allocation: Allocation) -> NetPlan | None:
        """The links and circuits the whole-job placement reserved with ``allocation``, the
        allocation it just gave ``job`` (None: nothing reserved)."""
        if self.whole_job is None:
            return None
        return self.whole_job.plan_for(job, allocation)

    def place(
        self,
        num_gpus: int,
        cpu_milli: int,
        memory_mib: int,
        model_mask: int,
        state: ClusterState,
        per_node: int = 0,
        nodes: int = 0,
        exclusive: bool = False,
        job: int = -1,
    ) -> Allocation | None:
        if self._runnable is not None and job >= 0 and num_gpus > 0:
            runs_on = self._runnable(job, num_gpus)
            if runs_on is not None:
                model_mask &= runs_on
                if not model_mask:
                    return None
        if self.whole_job is not None and num_gpus > 0:
            request = JobRequest(
                job, num_gpus, cpu_milli, memory_mib, model_mask, per_node, nodes, exclusive
            )
            return self.whole_job.place_whole(request, state)
        if per_node > 0 or exclusive:
            return self._place_shaped(
                num_gpus, cpu_milli, memory_mib, model_mask, state, per_node, nodes, exclusive
            )
        pod = self._request(cpu_milli, memory_mib, max(num_gpus, 0), model_mask)
        if num_gpus <= 0:
            p = self.placer.place(pod, state)
            return None if p is None else ((p.node, ()),)
        if num_gpus <= self._largest_node(model_mask):
            entry = self.placer.entry(pod, state)
            return None if entry is None else (entry,)
        return self._place_multi_node(pod, state)

    def _request(
        self, cpu_milli: int, memory_mib: int, num_gpus: int, model_mask: int
    ) -> PodRequest:
        """A request for ``num_gpus`` whole GPUs (none: a CPU-only request) on one node."""
        key = (cpu_milli, memory_mib, num_gpus, model_mask)
        pod = self._requests.get(key)
        if pod is None:
            share = GPU_MILLI if num_gpus else 0
            pod = self._requests[key] = PodRequest(
                cpu_milli, memory_mib, num_gpus, share, model_mask
            )
        return pod

    def _largest_node(self, model_mask: int) -> int:
        """Most GPUs on one node of a model the job accepts: a job larger than that spans nodes
        even if a node of another model could hold it whole."""
        largest = self._largest.get(model_mask)
        if largest is None:
            allowed = (self.model_bits & model_mask) != 0
            counts = self.placer.ctx.cluster.num_gpus[allowed]
            largest = self._largest[model_mask] = int(counts.max()) if counts.size else 0
        return largest

    def _place_shaped(
        self,
        num_gpus: int,
        cpu_milli: int,
        memory_mib: int,
        model_mask: int,
        state: ClusterState,
        per_node: int,
        nodes: int,
        exclusive: bool,
    ) -> Allocation | None:
        """``nodes`` nodes of ``per_node`` GPUs each (an exclusive job with no fixed split: the
        fewest whole free nodes its GPUs fill)."""
        count = max(nodes, 1)
        if per_node <= 0:  # exclusive, any split: whole nodes, filled in the policy's order
            per_node = min(num_gpus, self.max_per_node) if num_gpus > 0 else 0
            count = max(count, -(-num_gpus // per_node) if per_node else 1)
        busy = set()
        if exclusive:
            whole = state.gpu_free >= GPU_MILLI
            full = whole.sum(axis=1) == state.cluster.num_gpus
            busy = set(np.flatnonzero(~full).tolist())
        chosen: list[tuple[int, tuple[int, ...]]] = []
        left = num_gpus
        for _ in range(count):
            size = min(per_node, left) if nodes <= 0 else per_node
            pod = PodRequest(cpu_milli, memory_mib, size, GPU_MILLI if size else 0, model_mask)
            p = self.placer.place(pod, state, exclude=busy | {n for n, _ in chosen})
            if p is None:
                return None
            chosen.append((p.node, tuple(p.gpus)))
            left -= size
        return tuple(chosen)

    def _place_multi_node(self, pod: PodRequest, state: ClusterState) -> Allocation | None:
        # CPU and memory requests are per node taking part (a simplification traces allow: they
        # rarely give per-worker requests).
        one_gpu = PodRequest(pod.cpu_milli, pod.memory_mib, 1, GPU_MILLI, pod.model_mask)
        ok = feasible_nodes(one_gpu, state, self.model_bits)
        free = np.where(ok, (state.gpu_free >= GPU_MILLI).sum(axis=1), 0)
        if free.sum() < pod.num_gpu:
            return None
        whole = ok & (free == state.cluster.num_gpus) & (free > 0)
        # Racks with the most fully free GPUs first, then nodes in index order within a rack.
        rack_free = np.bincount(self.rack, weights=np.where(whole, free, 0))
        order = np.lexsort((np.arange(len(free)), -rack_free[self.rack]))
        order = order[whole[order]]
        chosen: list[tuple[int, tuple[int, ...]]] = []
        left = pod.num_gpu
        for node in order:
            n = int(free[node])
            if n > left:
                continue
            gpus = np.flatnonzero(state.gpu_free[node] >= GPU_MILLI)[:n]
            chosen.append((int(node), tuple(int(g) for g in gpus)))
            left -= n
            if left == 0:
                return tuple(chosen)
        if left <= self.max_per_node:
            # The remainder goes where the policy would put a job of that size, avoiding the
            # nodes already taken.
            used = {n for n, _ in chosen}
            rest = PodRequest(pod.cpu_milli, pod.memory_mib, left, GPU_MILLI, pod.model_mask)
            p = self.placer.place(rest, state, exclude=used)
            if p is not None:
                return (*chosen, (p.node, p.gpus))
        # No way with whole nodes: take partly free nodes, fullest first.
        chosen, left = [], pod.num_gpu
        for node in np.lexsort((np.arange(len(free)), -free)):
            if free[node] == 0 or left == 0:
                break
            n = min(int(free[node]), left)
            gpus = np.flatnonzero(state.gpu_free[node] >= GPU_MILLI)[:n]
            chosen.append((int(node), tuple(int(g) for g in gpus)))
            left -= n
        return tuple(chosen) if left == 0 else None
