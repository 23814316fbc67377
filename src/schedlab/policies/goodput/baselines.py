"""The baselines of Pollux's simulator: Tiresias and Optimus+Oracle, at the workload's GPU counts
and batch sizes.

* **Tiresias** (2-queue discretised LAS): a job is demoted to the second queue once its executed
  seconds × GPUs reach 16 GPU-hours; queue 0 then queue 1, FIFO within each, a job runs iff its
  GPUs fit in what the jobs before it left (no backfilling past it is prevented: later smaller
  jobs may still fit); starvation handling is off. Executed and pending times are counted in
  whole seconds, as the simulator counts them.
* **Optimus+Oracle**: every job gets one GPU (in job order while GPUs last), then GPUs go one at
  a time to the job whose step time drops most × its remaining iterations (known exactly from
  the validation tables: the oracle), up to its batch ÷ the smallest micro-batch.

Both place a job that needs new GPUs on the node with the most free GPUs first (ties: the lowest
node), and leave a job whose GPU count is unchanged where it is.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import ClassVar

from schedlab.model.snapshot import Snapshot
from schedlab.perf.goodput.job import RESTART_SECONDS, GoodputJob
from schedlab.policies.goodput.interval import IntervalPolicy, RateJob

#: Tiresias's demotion threshold: GPU-seconds of service in the first queue.
DEFAULT_THRESHOLD = 16 * 3600


def most_free_first(
    total: dict[int, int],
    allocations: dict[int, list[int]],
    order: list[int],
    wanted: dict[int, int],
    allowed: dict[int, set[int]] | None = None,
) -> dict[int, list[int]]:
    """Nodes for every job of ``order`` that wants GPUs and has none: take from the node with
    the most free GPUs (ties: the earliest node) until it has what it wants. ``allowed``: the
    nodes a job may use (all when absent); a job that does not fit there waits."""
    free = Counter(total) - Counter(n for nodes in allocations.values() for n in nodes)
    for job in order:
        if wanted.get(job, 0) <= 0 or allocations.get(job):
            continue
        ok = allowed.get(job) if allowed is not None else None
        pool = free if ok is None else Counter({n: c for n, c in free.items() if n in ok})
        if sum(pool.values()) < wanted[job]:
            continue
        nodes: list[int] = []
        while len(nodes) < wanted[job]:
            node, count = pool.most_common(1)[0]
            take = min(count, wanted[job] - len(nodes))
            nodes.extend([node] * take)
            pool[node] -= take
            if pool is not free:
                free[node] -= take
        allocations[job] = nodes
    return allocations


class PolluxTiresias(IntervalPolicy):
    """Tiresias as Pollux's simulator runs it (see the module docstring)."""

    name = "pollux-sim-tiresias"
    summary = "Tiresias 2-queue LAS at the workload's GPU counts, as Pollux's simulator runs it"

    def __init__(
        self,
        slot: float | None = None,
        interference: float = 0.0,
        restart: float = RESTART_SECONDS,
        threshold: float = DEFAULT_THRESHOLD,
    ) -> None:
        super().__init__(slot, interference, restart)
        if not threshold > 0:
            raise ValueError(f"'threshold' must be > 0 GPU-seconds (got {threshold})")
        self.threshold = threshold

    def setup(self, ctx) -> None:
        self.queues: tuple[list[int], list[int]] = ([], [])
        self.status: dict[int, str] = {}
        self.last_check: Counter[int] = Counter()
        self.executed: Counter[int] = Counter()
        self.pending: Counter[int] = Counter()

    def allocate(
        self, snap: Snapshot, active: list[int], current: dict[int, list[int]]
    ) -> dict[int, list[int]]:
        now = int(snap.now)
        live = set(active)
        q0, q1 = ([j for j in q if j in live] for q in self.queues)
        self.status = {j: s for j, s in self.status.items() if j in live}
        allocations = {j: a for j, a in current.items() if j in live}
        gpus = {j: int(self.jobs.num_gpus[j]) for j in active}
        for job in active:
            if job not in self.status:
                self.status[job] = "PENDING"
                q0.append(job)
        for job in active:
            elapsed = int(now - self.last_check[job])
            self.last_check[job] = now
            if self.status[job] == "RUNNING":
                self.executed[job] = int(self.executed[job] + elapsed)
                if job in q0 and int(self.executed[job] * gpus[job]) >= self.threshold:
                    q0.remove(job)
                    q1.append(job)
            else:
                self.pending[job] = int(self.pending[job] + elapsed)
        left = sum(self.node_gpus.values())
        for queue in (q0, q1):
            for job in queue:
                if gpus[job] <= left:
                    self.status[job] = "RUNNING"
                    left -= gpus[job]
                else:
                    self.status[job] = "PENDING"
                    allocations.pop(job, None)
        self.queues = (q0, q1)
        wanted = {j: gpus[j] for j in active if self.status[j] == "RUNNING"}
        return most_free_first(self.node_gpus, allocations, q0 + q1, wanted, self.allowed(active))


class OptimusOracle(IntervalPolicy):
    """Optimus with oracle knowledge of each job's remaining iterations (see the module
    docstring)."""

    name = "optimus-oracle"
    summary = "Optimus+Oracle: GPUs one by one to the largest step-time gain × remaining steps"
    elastic = True  # it sizes every job itself
    per_node: ClassVar[int] = 4

    def setup(self, ctx) -> None:
        self.per_node = max(self.node_gpus.values(), default=4)

    def max_replicas(self, job: int) -> int:
        state = self.state[job]
        if isinstance(state, GoodputJob) and state.target_batch_size:
            if state.app.name == "ncf":
                return 1
            return int(state.target_batch_size // state.app.min_local_bsz)
        return int(self.jobs.num_gpus[job])

    def remaining(self, job: int) -> float:
        state = self.state[job]
        if isinstance(state, RateJob):
            return state.remaining
        app = state.app
        batch = state.target_batch_size or float(app.init_batch_size)
        done_epoch = app.completion_epoch(batch)
        if done_epoch <= state.epoch:
            return 1
        return app.iteration(batch, done_epoch) - app.iteration(batch, state.epoch)

    def step_time(self, job: int, replicas: int) -> float:
        """Seconds per optimiser step on ``replicas`` GPUs packed onto nodes (the oracle's
        measured tables; for a job without tables, one work unit at its rate)."""
        state = self.state[job]
        if isinstance(state, RateJob):
            rate = self.perf.rate(self.jobs, job, replicas, -1)
            return 1.0 / rate if rate > 0 else math.inf
        app, batch = state.app, state.target_batch_size or float(state.app.init_batch_size)
        placement: tuple[int, ...] = ()
        while sum(placement) < replicas:
            placement = (*placement, min(replicas - sum(placement), self.per_node))
        local = math.ceil(batch / replicas - 1e-8)
        accum = math.ceil(local / app.max_local_bsz - 1e-8) - 1
        if replicas == 1:
            accum = max(1, accum)
        micro = math.ceil(local / (accum + 1) - 1e-8)
        count = replicas * (accum + 1)
        micro = min(micro, int(app.max_batch_size / count))
        step, sync = app.throughput(placement, micro)
        return step + (step - sync) * accum

    def _gain(self, job: int, replicas: int, free: int, remaining: float) -> float:
        if replicas + 1 > self.max_replicas(job) or free < 1:
            return 0.0
        return (self.step_time(job, replicas) - self.step_time(job, replicas + 1)) * remaining

    def allocate(
        self, snap: Snapshot, active: list[int], current: dict[int, list[int]]
    ) -> dict[int, list[int]]:
        allocations = {j: a for j, a in current.items() if j in set(active)}
        remaining = {j: self.remaining(j) for j in active}
        free = sum(self.node_gpus.values())
        replicas: dict[int, int] = {}
        gain: dict[int, float] = {}
        for job in active:
            if free < 1:
                replicas[job], gain[job] = 0, 0.0
                continue
            replicas[job] = 1
            free -= 1
            gain[job] = self._gain(job, 1, free, remaining[job])
        while free > 0 and gain and max(gain.values()) > 0:
            job = max(gain, key=lambda k: gain[k])
            replicas[job] += 1
            gain[job] = self._gain(job, replicas[job], free, remaining[job])
            free -= 1
        allocations = {j: a for j, a in allocations.items() if len(a) == replicas[j]}
        order = sorted(active, key=lambda j: replicas[j])
        return most_free_first(self.node_gpus, allocations, order, replicas, self.allowed(active))
