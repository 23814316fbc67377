"""The fixed-interval mechanism of Pollux's simulator, as a replay policy.

Pollux's simulator advances every job by one interval (60 s) under the current allocations,
then lets the scheduler decide for the jobs submitted by then, then applies the allocations
that changed (each costs the job a 30 s restart). Its Pollux, Optimus+Oracle and Tiresias
policies are subclasses that only decide allocations
(:meth:`IntervalPolicy.allocate`); this base does the rest so that their numbers match the
simulator's:

* decisions happen on the grid ``k · interval`` (the first at ``interval``), never between;
* at a boundary the allocations change, each job's :class:`GoodputJob` is told, and the job is
  advanced through the coming interval at once (nothing can change it before the next
  boundary): its progress, epoch, batch size and, if it finishes, the whole second it finishes
  at. The engine is then told each running job's pace (a :class:`Pace`: the interval's progress
  over its length, or the remaining progress over the seconds to its completion), so it
  completes jobs exactly when the simulator does and keeps its own books (starts, GPU time,
  preemptions) as for any policy;
* interference: a multi-node job on a node that hosts another multi-node job runs at
  ``1 − interference`` of its speed (0 by default);
* jobs without application tables progress at their performance model's rate (a trace without
  tables still runs; such jobs have linear speedup for Pollux);
* on GPU types with a ``--speed`` factor a job runs that much faster (a gang spanning types at
  its slowest GPUs' factor), whichever policy placed it; what a policy *believes* is its own
  affair (Pollux's agents fit the tables' own times, i.e. they do not see the types).

Allocations are lists of node indices (one entry per GPU), as in the simulator; GPUs within a
node are given lowest index first, and a job whose list is unchanged keeps its GPUs.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from schedlab.errors import InputError
from schedlab.model.gpu_models import GPU_MODELS
from schedlab.model.snapshot import (
    DONE,
    RUNNING,
    Allocation,
    Decision,
    Pace,
    Preempt,
    Reject,
    Resize,
    Snapshot,
    Start,
)
from schedlab.perf.goodput.job import RESTART_SECONDS, GoodputJob
from schedlab.perf.goodput.perf import GoodputPerf
from schedlab.perf.models import allocation_rate
from schedlab.policies.api import REPLAY_ONLY
from schedlab.policies.scheduler import ReplayContext, SchedulingPolicy, check_slot

#: Pollux's scheduling interval.
DEFAULT_INTERVAL = 60.0


@dataclass
class RateJob:
    """A job without application tables: it progresses at its perf model's rate."""

    submission: float
    remaining: float
    placement: tuple[int, ...] = ()
    rate: float = 0.0
    rescale_time: float = 0.0
    attained_service: float = 0.0
    num_restarts: int | None = None
    completion_time: float | None = None
    restart_seconds: float = RESTART_SECONDS

    def reallocate(self, placement: tuple[int, ...]) -> None:
        if placement:
            self.placement = tuple(placement)
            self.rescale_time = self.restart_seconds
            self.num_restarts = 0 if self.num_restarts is None else self.num_restarts + 1
        else:
            self.placement = ()

    def step(self, now: float, seconds: float, interference: float = 0.0) -> None:
        if not self.placement:
            return
        held = sum(self.placement)
        delay = min(self.rescale_time, seconds)
        self.rescale_time -= delay
        self.attained_service += delay * held
        left = seconds - delay
        speed = self.rate * (1.0 - interference)
        if speed > 0 and self.remaining <= speed * left:
            need = self.remaining / speed
            self.completion_time = now + delay + need
            self.attained_service += need * held
            self.remaining = 0.0
            return
        self.remaining -= speed * left
        self.attained_service += left * held


Job = GoodputJob | RateJob


class IntervalPolicy(SchedulingPolicy):
    """Base of the interval policies (see the module docstring). Parameters: ``slot`` (the
    interval, 60 s), ``interference`` (slowdown of colocated multi-node jobs), ``restart``
    (seconds without progress after each allocation change)."""

    summary: ClassVar[str] = "Pollux's fixed-interval mechanism"
    engines = REPLAY_ONLY
    uses_placement = False
    stateful = True
    preemptive = True
    #: The policy picks batch sizes itself (Pollux); the baselines keep the trace's.
    adaptive: ClassVar[bool] = False

    def __init__(
        self, slot: float | None = None, interference: float = 0.0, restart: float = RESTART_SECONDS
    ) -> None:
        self.interval = check_slot(slot) or DEFAULT_INTERVAL
        if not 0.0 <= interference < 1.0:
            raise ValueError(f"'interference' must be in [0, 1) (got {interference})")
        if not restart >= 0:
            raise ValueError(f"'restart' must be ≥ 0 seconds (got {restart})")
        self.interference = float(interference)
        self.restart = float(restart)

    # -- setup -----------------------------------------------------------------------------
    def reset(self, ctx: ReplayContext) -> None:
        assert ctx.jobs is not None and ctx.perf is not None
        self.jobs, self.perf, self.cluster = ctx.jobs, ctx.perf, ctx.cluster
        self.goodput = ctx.perf if isinstance(ctx.perf, GoodputPerf) else None
        nodes = np.flatnonzero(ctx.cluster.num_gpus > 0)
        self.nodes = [int(n) for n in nodes]
        self.node_gpus = {n: int(ctx.cluster.num_gpus[n]) for n in self.nodes}
        self.free = {n: list(range(self.node_gpus[n])) for n in self.nodes}
        self.state: dict[int, Job] = {}
        self.allocations: dict[int, list[int]] = {}
        self.gpus: dict[int, Allocation] = {}
        self.last_boundary = -math.inf
        #: Jobs already judged by :meth:`never_runs` (arrivals between boundaries are judged at
        #: the next one).
        self.judged: set[int] = set()
        self.rng = np.random.default_rng(int(ctx.rng.integers(0, 2**63 - 1)))
        self.setup(ctx)

    def setup(self, ctx: ReplayContext) -> None:
        """Subclass hook, called at the end of :meth:`reset`."""

    def job_state(self, job: int) -> Job:
        """The simulator state of ``job`` (made on first use)."""
        state = self.state.get(job)
        if state is None:
            j = self.jobs
            app = self.goodput.app_of(j, job) if self.goodput is not None else None
            if app is not None:
                batch = None if self.adaptive else float(j.batch_size[job]) or None
                state = GoodputJob(
                    app,
                    float(j.submit_time[job]),
                    target_batch_size=self.target_batch(job, batch),
                    restart_seconds=self.restart,
                    adaptive=self.adaptive,
                )
            else:
                state = RateJob(
                    float(j.submit_time[job]),
                    float(self.perf.work(j.take(np.array([job])))[0]),
                    restart_seconds=self.restart,
                )
            self.state[job] = state
        return state

    def target_batch(self, job: int, batch: float | None) -> float | None:
        """The batch a job keeps (None: it adapts); subclasses may fix some (e.g. NCF)."""
        return batch

    # -- the engine's calls ------------------------------------------------------------------
    def on_grid(self, now: float) -> bool:
        """A boundary is exactly k · interval (k ≥ 1): the engine wakes the policy there; an
        event a hair after one (a job paced to finish on it) is inside the next interval."""
        k = round(now / self.interval)
        return k >= 1 and now == k * self.interval

    def next_wakeup(self, snap: Snapshot) -> float:
        if not snap.pending_set and not snap.running_set:
            return math.inf
        k = math.floor(snap.now / self.interval + 1e-9) + 1
        return max(k, 1) * self.interval

    def decide(self, snap: Snapshot) -> list[Decision]:
        now = snap.now
        if not self.on_grid(now) or now == self.last_boundary:
            return []
        self.last_boundary = now
        for job in list(self.allocations):  # completed since the last boundary
            if snap.runtime.status[job] == DONE:
                self._release(job)
                del self.allocations[job]
        rejected: list[Decision] = []
        for job in sorted(int(j) for j in snap.pending_set if j not in self.judged):
            self.judged.add(job)
            why = self.never_runs(job)
            if why is not None:
                rejected.append(Reject(job, why))
        gone = {d.job for d in rejected}
        active = sorted(int(j) for j in (*snap.pending_set, *snap.running_set) if j not in gone)
        for job in active:
            self.job_state(job)
        new = self.allocate(snap, active, {j: a for j, a in self.allocations.items()})
        return rejected + self._apply(snap, active, new)

    def never_runs(self, job: int) -> str | None:
        """Why a job can never run here (rejected on arrival), or None. The base refuses jobs
        that ask for no GPUs, jobs whose GPU models the cluster lacks and jobs that ask for more
        GPUs than it has of those models."""
        if int(self.jobs.num_gpus[job]) <= 0:
            return "requests no GPUs (this policy schedules GPU jobs only)"
        allowed = self.allowed_nodes(job)
        if not allowed:
            return "asks for a GPU model the cluster does not have"
        gpus, room = int(self.jobs.num_gpus[job]), sum(self.node_gpus[n] for n in allowed)
        return f"needs {gpus} GPUs; the cluster has {room} it may use" if gpus > room else None

    def allowed_nodes(self, job: int) -> set[int]:
        """The nodes whose GPU model the job accepts."""
        mask = int(self.jobs.gpu_model_mask[job])
        return {n for n in self.nodes if (mask >> int(self.cluster.model[n])) & 1}

    def allowed(self, jobs: list[int]) -> dict[int, set[int]] | None:
        """Allowed nodes per job, or None when every job may use every node."""
        full = set(self.nodes)
        out = {j: self.allowed_nodes(j) for j in jobs}
        return None if all(v == full for v in out.values()) else out

    @abstractmethod
    def allocate(
        self, snap: Snapshot, active: list[int], current: dict[int, list[int]]
    ) -> dict[int, list[int]]:
        """Node index per GPU for each job that should run in the coming interval."""

    # -- turning allocations into engine decisions -------------------------------------------
    def _release(self, job: int) -> None:
        for node, gpus in self.gpus.pop(job, ()):
            self.free[node].extend(gpus)
            self.free[node].sort()

    def _take(self, nodes: list[int]) -> Allocation:
        per: dict[int, list[int]] = {}
        for node, count in Counter(nodes).items():
            if count > len(self.free[node]):
                raise RuntimeError(f"node {node} has {len(self.free[node])} free GPUs, not {count}")
            per[node] = self.free[node][:count]
            self.free[node] = self.free[node][count:]
        return tuple((n, tuple(per[n])) for n in sorted(per))

    def _apply(
        self, snap: Snapshot, active: list[int], new: dict[int, list[int]]
    ) -> list[Decision]:
        rt = snap.runtime
        old = self.allocations
        changed = [j for j in active if new.get(j) != old.get(j)]
        for job in changed:
            self._release(job)
        decisions: list[Decision] = []
        for job in changed:
            nodes = new.get(job, [])
            state = self.state[job]
            placement: list[int] = []
            for i, node in enumerate(nodes):
                if i == 0 or node != nodes[i - 1]:
                    placement.append(1)
                else:
                    placement[-1] += 1
            state.reallocate(tuple(placement))
            running = rt.status[job] == RUNNING
            if not nodes:
                if running:
                    decisions.append(Preempt(job))
                continue
            alloc = self._take(list(nodes))
            self.gpus[job] = alloc
            decisions.append(Resize(job, alloc) if running else Start(job, alloc))
        self.allocations = {j: list(a) for j, a in new.items() if a}
        decisions += self._advance(snap)
        return decisions

    def _interfered(self) -> set[int]:
        """Nodes hosting more than one multi-node job."""
        counts: Counter[int] = Counter()
        for nodes in self.allocations.values():
            spread = set(nodes)
            if len(spread) > 1:
                counts.update(spread)
        return {n for n, c in counts.items() if c > 1}

    def _advance(self, snap: Snapshot) -> list[Decision]:
        """Step every placed job through the coming interval and pace it in the engine."""
        now = snap.now
        hot = self._interfered() if self.interference > 0 else set()
        paces: list[Decision] = []
        for job in sorted(self.allocations):
            state = self.state[job]
            nodes = set(self.allocations[job])
            slow = self.interference if len(nodes) > 1 and nodes & hot else 0.0
            if isinstance(state, RateJob):
                models = [int(self.cluster.model[n]) for n, _ in self.gpus[job]]
                state.rate = allocation_rate(
                    self.perf, self.jobs, job, len(self.allocations[job]), models
                )
                before = state.remaining
                state.step(now, self.interval, slow)
                paces.append(self._pace(job, now, before, before - state.remaining, state))
            else:
                if self.goodput is not None:  # a gang runs at the pace of its slowest GPUs
                    state.speed = min(
                        self.goodput.factor(int(self.cluster.model[n])) for n in nodes
                    )
                total = state.app.total_progress
                before = total - state.progress
                state.step(now, self.interval, slow)
                paces.append(self._pace(job, now, before, before - (total - state.progress), state))
        return paces

    def _pace(self, job: int, now: float, left: float, done: float, state: Job) -> Pace:
        if state.completion_time is not None:
            seconds = state.completion_time - now
            if seconds <= 0:  # done on the boundary itself: no work left, it completes now
                return Pace(job, 1.0, 0.0)
            return Pace(job, left / seconds, left)
        return Pace(job, max(0.0, done) / self.interval, left)

    # -- views for subclasses ------------------------------------------------------------------
    def type_of_node(self, node: int) -> str:
        return GPU_MODELS[int(self.cluster.model[node])]

    def report(self) -> dict[str, Any]:
        restarts = [s.num_restarts or 0 for s in self.state.values()]
        return {"restarts": int(sum(restarts)), "jobs_seen": len(self.state)}


def check_apps(policy: str, perf: object) -> None:
    """A policy that needs goodput tables refuses a run without them."""
    if not isinstance(perf, GoodputPerf):
        raise InputError(f"'{policy}' needs application tables: pass --apps DIR")
