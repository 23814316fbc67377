"""The replay engine: discrete-event simulation of a job trace on a cluster.

Time jumps from event to event — an arrival, a completion, the end of a restart overhead, or a
time the policy asked to be woken at — never by fixed ticks. At each distinct event time the
engine first applies every event due, then asks the policy once, then applies its decisions
(rejections and preemptions, then resizes, then starts). Progress is accounted piecewise: a job's
remaining work changes only when it starts, stops or changes size, and its completion event is
re-issued (older ones are ignored by a version check).

The engine knows nothing about any particular policy; every policy returns the same decision
types, and the engine validates them (a start on a busy GPU is a policy bug and raises).
"""

from __future__ import annotations

import math
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.engines.completions import CompletionQueue
from schedlab.engines.decision_check import DecisionCheck, shown, who
from schedlab.errors import InputError, PolicyError
from schedlab.model.cluster import GPU_MILLI, Cluster
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import (
    DONE,
    FUTURE,
    PENDING,
    REJECTED,
    RUNNING,
    Allocation,
    Decision,
    JobRuntime,
    Overhead,
    Overheads,
    Pace,
    Preempt,
    Reconfigure,
    Reject,
    Resize,
    Snapshot,
    Start,
    allocation_size,
)
from schedlab.perf.models import PerfModel, allocation_rate
from schedlab.policies.api import REPLAY
from schedlab.policies.placement.base import PlacementPolicy
from schedlab.policies.protection import hold_back_preemptions
from schedlab.policies.scheduler import SchedulingPolicy
from schedlab.policies.wiring import Policies, job_pods

if TYPE_CHECKING:  # the network is imported by the runs that have one
    from schedlab.network.plan import NetPlan
    from schedlab.network.replay_state import NetworkModel, NetworkRecord
    from schedlab.network.topology import Topology

__all__ = ["PolicyError", "ReplayConfig", "ReplayEngine", "ReplayRecord", "job_pods"]

INF = math.inf

#: Decision kinds in the order the engine applies them (-1: rejections and preemptions, taken
#: together in the policy's order; then reconfigurations, resizes, starts, paces, overheads).
_KINDS: tuple[tuple[type, int], ...] = (
    (Reject, -1),
    (Preempt, -1),
    (Reconfigure, 0),
    (Resize, 1),
    (Start, 2),
    (Pace, 3),
    (Overhead, 4),
    (Overheads, 4),
)
_KIND: dict[type, int] = dict(_KINDS)


def _kind_of(decision: object) -> int | None:
    """The kind of a decision whose class derives from one of the decision types (None: it is
    none of them, and the engine passes it by)."""
    for cls, kind in _KINDS:
        if isinstance(decision, cls):
            return kind
    return None


@dataclass(frozen=True)
class ReplayConfig:
    """Engine settings that are not the policy's business."""

    seed: int = 0
    #: Seconds a preempted job spends restoring its checkpoint before it makes progress again.
    restart_overhead: float = 0.0
    #: Seconds a resized job spends re-forming its workers before it makes progress again.
    resize_overhead: float = 0.0
    #: Stop simulating at this time (jobs still active are recorded as unfinished).
    until: float = INF
    #: Seconds a run lasts before the policy may preempt it, as ``serve slurm --min-runtime``
    #: (:mod:`schedlab.policies.protection`); 0: no minimum.
    min_runtime: float = 0.0
    #: Seconds between the first time the policy wants a job gone and its preemption, as
    #: ``serve slurm --grace`` (Slurm's GraceTime; the job runs on meanwhile); 0: none.
    grace: float = 0.0
    #: Ids of jobs to measure: the run stops once every one of them has completed or been
    #: rejected (others still active are recorded as unfinished), as a steady-state window of
    #: a generated trace is measured. Empty: run until every job is done.
    stop_after: frozenset[str] = frozenset()


@dataclass
class ReplayRecord:
    """Everything a replay leaves behind for metrics and reports."""

    jobs: JobTable
    cluster: Cluster
    status: np.ndarray
    first_start: np.ndarray
    end_time: np.ndarray
    preemptions: np.ndarray
    resizes: np.ndarray
    gpu_seconds: np.ndarray
    reference_seconds: np.ndarray  # oracle run time at the requested size
    reject_reason: dict[int, str]
    ts_time: np.ndarray
    ts_queue: np.ndarray
    ts_running: np.ndarray
    ts_busy: np.ndarray
    ts_efficiency: np.ndarray  # Σ running jobs' speed-up over one GPU ÷ cluster GPUs
    decision_points: int
    events: int
    wall_seconds: float
    network: NetworkRecord | None = None  # only with a network model
    observer: Any = None  # the engine's observer, with what it measured
    failures: Any = None  # what failures did (a FailureRecord), only with a failure model
    llm: Any = None  # the LLM planner perf model of a run with LLM jobs (its plan history)
    tenancy: Any = None  # what a tenancy layer recorded (set by the caller, not the engine)
    gate: Any = None  # the JobGate of time limits and dependencies, with what it recorded
    #: What the policy reports of its own run (:meth:`SchedulingPolicy.report`; empty: nothing).
    policy_report: dict[str, Any] = field(default_factory=dict)
    #: Each job's JCT under the fluid isolated fair share (finish-time fairness's reference;
    #: :func:`schedlab.metrics.ftf.isolated_jct`), set by the caller that knows the speeds.
    isolated_jct: np.ndarray | None = None


class ReplayEngine:
    """Replays ``jobs`` on ``cluster`` under ``policy``; :meth:`run` returns the record."""

    def __init__(
        self,
        cluster: Cluster,
        jobs: JobTable,
        policy: SchedulingPolicy,
        placement_policy: PlacementPolicy,
        perf: PerfModel,
        config: ReplayConfig = ReplayConfig(),
        network: NetworkModel | None = None,
        observer: Any = None,
        topology: Topology | None = None,
        failures: Any = None,
        gate: Any = None,
    ) -> None:
        # ``observer`` (e.g. the energy meter) hears placed(now, job, allocation),
        # released(now, job, allocation), tick(now) at each decision point and finish(end).
        self.observer = observer
        #: Component failures and checkpointing (a schedlab.failures.runtime.FailureModel).
        self.failures = failures
        #: Slurm's habits around the policy (:class:`schedlab.engines.job_gate.JobGate`): jobs
        #: held until their dependency holds, runs killed at their time limit; None: none.
        self.gate = gate
        self.cluster = cluster
        #: Optional rate model of the network (see :mod:`schedlab.network.replay_state`).
        self.network = network
        #: The switches under the cluster when no rate model runs: network placements see them,
        #: and no link loads, as in serve (the replay of a live run).
        self.topology = topology
        self.jobs = jobs.sorted_by_submit()
        self.policy = policy
        self.perf = perf
        self.config = config
        self.policies = Policies(REPLAY, placement_policy, policy)
        j = self.jobs
        self.work = perf.work(j)
        bad = ~np.isfinite(self.work) | (self.work < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"job {j.job_id[i]!r} has no usable work (duration or iterations)")
        self.reference_rate = np.fromiter(
            (perf.reference_rate(j, i) for i in range(len(j))), dtype=np.float64, count=len(j)
        )

    def run(self, progress: Callable[[int, int], None] | None = None) -> ReplayRecord:
        return _Run(self).loop(progress)


class _Run:
    """The mutable state of one replay (kept apart so an engine object can run twice)."""

    def __init__(self, engine: ReplayEngine) -> None:
        self.e = engine
        self.jobs = j = engine.jobs
        self.cluster = engine.cluster
        self.cfg = engine.config
        self.policy = engine.policy
        n = len(j)
        self.state = engine.cluster.new_state()
        self.rt = JobRuntime.new(n, engine.work)
        self.size_log = self.rt.size_log
        self.first_start = np.full(n, np.nan)
        self.end_time = np.full(n, np.nan)
        self.gpu_seconds = np.zeros(n)
        # Engine-private per-job values live in Python lists: the hot loop reads and writes them
        # one job at a time, where a numpy scalar access costs several times a list's.
        self.ever_ran = [False] * n
        self.run_began = [0.0] * n  # when each job's current run began (for --min-runtime)
        self.cpu_milli = j.cpu_milli.tolist()
        self.memory_mib = j.memory_mib.tolist()
        self.node_model = engine.cluster.model.tolist()
        self.signalled: dict[int, float] = {}  # job → when its grace began (for --grace)
        self.reject_reason: dict[int, str] = {}
        self.pending: dict[int, None] = {}
        self.running: dict[int, None] = {}
        self.completions = CompletionQueue(n)
        self.free_gpus = engine.cluster.total_gpus
        # Cluster efficiency: each running job contributes its rate over its rate on one GPU of
        # the same model (= its GPU count under linear scaling, less where scaling flattens).
        self.speedup = [0.0] * n
        self.alloc_rate = [0.0] * n  # each job's rate on its allocation, before the network
        self.speedup_sum = 0.0
        # The network (if any) is told of every allocation taken and given up; at each decision
        # point it returns the jobs whose speed changed (see settle_network).
        self.net = engine.network.new_state(j) if engine.network is not None else None
        if self.net is not None:  # links and circuit ports the running jobs hold
            from schedlab.network.plan import NetLedger, ocs_port_limits

            self.state.net = NetLedger(ocs_port_limits(self.net.topo))
        self.obs, self.now = engine.observer, 0.0
        self.withdrawn: list[int] = []  # jobs withdrawn since the policy last decided
        self.work = engine.work
        self.held_gpus = 0  # GPUs out of the pool (failed, under repair, or idle spares)
        self.held: dict[tuple[int, tuple[int, ...]], tuple[int, int]] = {}
        self.ckpt_factor: dict[int, float] = {}  # mean progress share under checkpointing
        self.requeued: list[int] = []  # jobs a failure put back in the queue, for the snapshot
        self.fail = engine.failures.new_run(self) if engine.failures is not None else None
        self.gate = engine.gate
        # Jobs the run waits for when it is told to stop after some (``stop_after``).
        watched = engine.config.stop_after
        self.watching = (
            {i for i, job_id in enumerate(j.job_id.tolist()) if str(job_id) in watched}
            if watched
            else set()
        )
        if watched and len(self.watching) != len(watched):
            missing = sorted(watched - {str(x) for x in j.job_id.tolist()})
            raise InputError(f"'stop_after' names jobs the trace does not have: {missing[:3]}")

    # -- job state changes -----------------------------------------------------------------
    def stop_progress(self, job: int, now: float) -> None:
        """Bank the progress and GPU time of a running job up to ``now``."""
        rt = self.rt
        start = rt.progress_from.item(job)
        progressed = max(0.0, now - start) * rt.rate.item(job)
        rt.remaining[job] = max(0.0, rt.remaining.item(job) - progressed)
        held = now - rt.run_started.item(job)
        gpu_time = rt.alloc_n.item(job) * held
        rt.attained[job] = rt.attained.item(job) + gpu_time
        rt.executed[job] = rt.executed.item(job) + held
        self.gpu_seconds[job] = self.gpu_seconds.item(job) + gpu_time
        rt.run_started[job] = now
        rt.progress_from[job] = max(now, start)

    def is_running(self, job: int) -> bool:
        return self.rt.status.item(job) == RUNNING

    def schedule_completion(self, job: int) -> None:
        """(Re)issue the job's completion event; older ones become stale."""
        rt = self.rt
        rate = rt.rate.item(job)
        if rt.status.item(job) != RUNNING or rate <= 0:
            self.completions.void(job)  # a job that makes no progress here never completes here
            return
        self.completions.issue(job, rt.progress_from.item(job) + rt.remaining.item(job) / rate)

    def rate_on(self, job: int, allocation: Allocation) -> float:
        shaped = self.e.perf.rate_for_allocation(self.jobs, job, allocation, self.now)
        if shaped is not None:  # the model needs the allocation's shape (LLM jobs)
            return shaped
        model = self.node_model
        if len(allocation) == 1:  # one node, one GPU model (allocation_rate's single case)
            node, gpus = allocation[0]
            return self.e.perf.rate(self.jobs, job, len(gpus), model[node])
        models = [model[node] for node, _ in allocation]
        return allocation_rate(self.e.perf, self.jobs, job, allocation_size(allocation), models)

    def set_rate(self, job: int, allocation: Allocation) -> None:
        """The job's rate on ``allocation``, and its share of the cluster's efficiency."""
        rate = self.rate_on(job, allocation)
        self.rt.rate[job] = rate
        self.alloc_rate[job] = rate
        model = self.node_model[allocation[0][0]] if allocation else -1
        one = self.e.perf.rate(self.jobs, job, 1, model)
        speedup = rate / one if one > 0 else 0.0
        self.speedup_sum += speedup - self.speedup[job]
        self.speedup[job] = speedup

    def occupy(self, job: int, allocation: Allocation, plan: NetPlan | None = None) -> None:
        c, m = self.cpu_milli[job], self.memory_mib[job]
        if plan is not None:
            if self.state.net is None:
                raise PolicyError(
                    f"{self.policy.describe()} reserved links or circuits for job {job}, but the "
                    "run has no network"
                )
            for other, _ in plan.moves:
                if not 0 <= other < len(self.rt.status) or self.rt.status[other] != RUNNING:
                    raise PolicyError(
                        f"{self.policy.describe()} moved the circuits of job {other}, which is "
                        "not running"
                    )
            why = self.state.net.conflict(job, plan)
            if why is not None:
                raise PolicyError(
                    f"{self.policy.describe()} reserved for job {job} what it cannot have: {why}"
                )
        allocate = self.state.allocate
        try:
            for node, gpus in allocation:
                allocate(node, gpus, c, m, GPU_MILLI if gpus else 0, len(gpus))
        except ValueError as exc:
            raise PolicyError(
                f"{who(self.policy)}: decide() placed job {job} where it does not fit "
                f"({shown(allocation)}): {exc}"
            ) from None
        if plan is not None:
            self.state.net.hold(job, plan)  # type: ignore[union-attr]
        size = sum([len(gpus) for _, gpus in allocation])
        if self.obs is not None:
            self.obs.placed(self.now, job, allocation)
        self.free_gpus -= size
        self.rt.allocation[job] = allocation
        self.rt.alloc_n[job] = size
        self.size_log.append(job)

    def vacate(self, job: int) -> None:
        rt = self.rt
        c, m = self.cpu_milli[job], self.memory_mib[job]
        if self.obs is not None and rt.allocation[job]:
            self.obs.released(self.now, job, rt.allocation[job])
        release = self.state.release
        for node, gpus in rt.allocation[job] or ():
            release(node, gpus, c, m, GPU_MILLI if gpus else 0, len(gpus))
        if self.state.net is not None:
            self.state.net.release(job)
        self.free_gpus += rt.alloc_n.item(job)
        rt.allocation[job] = None
        rt.alloc_n[job] = 0
        self.size_log.append(job)
        self.speedup_sum -= self.speedup[job]
        self.speedup[job] = 0.0

    def complete(self, job: int, now: float) -> None:
        self.end_run(job, now)
        self.rt.remaining[job] = 0.0
        if self.gate is not None:
            self.gate.ended(job, True, now)

    def end_run(self, job: int, now: float) -> None:
        """The job's run ends for good: progress banked, its GPUs (and links) given back."""
        if self.fail is not None:
            self.fail.stopped(job, now)
        self.stop_progress(job, now)
        self.vacate(job)
        if self.net is not None:
            self.net.stop(job, now)
        self.rt.status[job] = DONE
        self.end_time[job] = now
        del self.running[job]
        self.watching.discard(job)

    # -- the gate's part: kills at the time limit, jobs held and let go --------------------
    def time_out(self, job: int, now: float) -> None:
        """The job's run reached its time limit: killed, it ends without completing."""
        self.end_run(job, now)
        self.gate.time_out(job)
        self.gate.ended(job, False, now)

    def gate_pass(self, now: float, new_pending: list[int]) -> int:
        """Kill the runs at their limit, then queue the jobs the gate let go and record the ones
        it cancelled; returns the number of kills (events)."""
        gate, rt = self.gate, self.rt
        kills = [job for job in gate.due_kills(now) if rt.status[job] == RUNNING]
        for job in kills:
            self.time_out(job, now)
        for job in gate.take_ready():
            rt.status[job] = PENDING
            rt.queued_since[job] = now
            self.pending[job] = None
            new_pending.append(job)
        for job, reason in gate.take_cancelled():
            rt.status[job] = REJECTED
            self.reject_reason[job] = reason
        return len(kills)

    # -- decisions -------------------------------------------------------------------------
    def expect(self, job: int, wanted: int, verb: str) -> None:
        """``job`` is ``wanted`` (pending or running), or the policy erred."""
        if not 0 <= job < len(self.rt.status) or self.rt.status.item(job) != wanted:
            what = "pending" if wanted == PENDING else "running"
            raise PolicyError(f"{self.policy.describe()} {verb} job {job}, which is not {what}")

    def apply(self, decisions: list[Decision], now: float) -> None:
        if all([type(d) is Start for d in decisions]):  # the usual case: starts only
            for d in decisions:
                self.start(d, now)  # type: ignore[arg-type]
            return
        expect, rt = self.expect, self.rt
        # One pass sorts the decisions by kind (each kind keeps the policy's order); the kinds
        # are then applied in the engine's order.
        stops: list[Decision] = []  # rejections and preemptions, in their joint order
        kinds: tuple[list[Any], ...] = ([], [], [], [], [])
        reconfigures, resizes, starts, paces, overheads = kinds
        for d in decisions:
            kind = _KIND.get(type(d))
            if kind is None:
                kind = _kind_of(d)
                if kind is None:
                    continue
            if kind < 0:
                stops.append(d)
            else:
                kinds[kind].append(d)

        # Rejections and preemptions first: they free what the starts may use.
        for d in stops:
            if isinstance(d, Reject):
                expect(d.job, PENDING, "rejected")
                rt.status[d.job] = REJECTED
                self.reject_reason[d.job] = d.reason
                del self.pending[d.job]
                if self.gate is not None:
                    self.gate.ended(d.job, False, now)
                self.watching.discard(d.job)
            else:
                expect(d.job, RUNNING, "preempted")
                if self.fail is not None:
                    self.fail.stopped(d.job, now)
                self.stop_progress(d.job, now)
                if not self.jobs.checkpoint[d.job]:
                    # No checkpoint: the run's work is lost, and so is the service it attained.
                    rt.remaining[d.job] = self.e.work[d.job]
                    rt.attained[d.job] = 0.0
                    rt.executed[d.job] = 0.0
                self.vacate(d.job)
                if self.net is not None:
                    self.net.stop(d.job, now)
                rt.rate[d.job] = 0.0
                rt.status[d.job] = PENDING
                rt.queued_since[d.job] = now
                rt.preemptions[d.job] += 1
                del self.running[d.job]
                self.pending[d.job] = None
                self.schedule_completion(d.job)  # voids the pending completion
        for d in reconfigures:
            self.reconfigure(d, now)
        # Resizes are simultaneous: every resized job lets go first, then all take their new
        # allocations (one may grow into GPUs another gives up in the same decision).
        for d in resizes:
            expect(d.job, RUNNING, "resized")
            self.stop_progress(d.job, now)
            self.vacate(d.job)
            if self.net is not None:
                self.net.stop(d.job, now)
        for d in resizes:
            self.occupy(d.job, d.allocation)
            self.set_rate(d.job, d.allocation)
            if self.net is not None:
                self.net.start(d.job, d.allocation, now)
            overhead = self.e.perf.resize_seconds(
                self.jobs, d.job, d.allocation, self.cfg.resize_overhead
            )
            rt.progress_from[d.job] = now + overhead
            rt.resizes[d.job] += 1
            if self.fail is not None:
                self.fail.resized(d.job, now)
            self.schedule_completion(d.job)
        for d in starts:
            self.start(d, now)
        # Paces after the starts (a job started now may get its pace at once), before overheads.
        for d in paces:
            expect(d.job, RUNNING, "paced")
            if not (math.isfinite(d.rate) and d.rate >= 0):
                who = self.policy.describe()
                raise PolicyError(f"{who} paced job {d.job} at {d.rate} units/s")
            if not (math.isfinite(d.remaining) and d.remaining >= 0):
                who = self.policy.describe()
                raise PolicyError(f"{who} left job {d.job} {d.remaining} units of work")
            self.stop_progress(d.job, now)
            rt.remaining[d.job] = d.remaining
            rt.rate[d.job] = d.rate
            rt.progress_from[d.job] = now
            self.schedule_completion(d.job)
        # Overheads last, so a job started or resized now pays both its start-up and the round's.
        if overheads:
            self.charge(overheads, now)

    def charge(self, overheads: list[Overhead | Overheads], now: float) -> None:
        """Apply a decision's overheads: each job's progress is banked, its progress resumes
        ``seconds`` later and its completion is re-issued. A round-based policy charges every
        running job at every round, so the jobs are taken together, in numpy, with the same
        float operations as :meth:`stop_progress` and :meth:`schedule_completion` one by one
        (a job charged twice in one decision is taken one charge at a time)."""
        if len(overheads) == 1 and type(overheads[0]) is Overheads:  # a round's, as one
            ids = list(overheads[0].jobs)
            charges = overheads[0].seconds
        else:
            ids, charges = [], []
            for d in overheads:
                if type(d) is Overheads:
                    ids += d.jobs
                    charges += d.seconds
                else:
                    ids.append(d.job)
                    charges.append(d.seconds)
        seconds = np.fromiter(charges, np.float64, len(ids))
        rt = self.rt
        status = rt.status
        n_jobs = len(status)
        jobs = np.fromiter(ids, np.int64, len(ids))
        inside = (jobs >= 0) & (jobs < n_jobs)
        if (
            len(ids) < 8
            or not inside.all()
            or not (seconds >= 0).all()
            or (status[jobs] != RUNNING).any()
            or len(set(ids)) != len(ids)
        ):  # few, faulty (reported as one by one) or a job charged twice
            for job, s in zip(ids, seconds.tolist(), strict=True):
                self.charge_one(job, s, now)
            return
        # stop_progress for every job at once: Python's max(0.0, x) is x only where x > 0.0.
        start = rt.progress_from[jobs]
        rate = rt.rate[jobs]
        ran = now - start
        progressed = np.where(ran > 0.0, ran, 0.0) * rate
        left = rt.remaining[jobs] - progressed
        left = np.where(left > 0.0, left, 0.0)
        rt.remaining[jobs] = left
        held = now - rt.run_started[jobs]
        gpu_time = rt.alloc_n[jobs] * held
        rt.attained[jobs] = rt.attained[jobs] + gpu_time
        rt.executed[jobs] = rt.executed[jobs] + held
        self.gpu_seconds[jobs] = self.gpu_seconds[jobs] + gpu_time
        rt.run_started[jobs] = now
        resume = np.where(start > now, start, now) + seconds
        rt.progress_from[jobs] = resume
        # schedule_completion for every job, in the decisions' order (the heap's sequence).
        moving = rate > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            finish = (resume + left / rate).tolist()
        queue = self.completions
        if moving.all():
            queue.issue_all(ids, finish)
        else:
            for job, at, go in zip(ids, finish, moving.tolist(), strict=True):
                if go:
                    queue.issue(job, at)
                else:
                    queue.void(job)

    def charge_one(self, job: int, seconds: float, now: float) -> None:
        """One overhead: ``job`` makes no progress for ``seconds`` from now."""
        self.expect(job, RUNNING, "charged an overhead to")
        if not seconds >= 0:
            raise PolicyError(f"{self.policy.describe()} charged job {job} {seconds} s of overhead")
        self.stop_progress(job, now)
        self.rt.progress_from[job] += seconds
        self.schedule_completion(job)

    def start(self, d: Start, now: float) -> None:
        """Apply one start: the job takes its allocation (and plan), and its run begins."""
        rt = self.rt
        job, plan = d.job, d.net
        self.expect(job, PENDING, "started")
        self.occupy(job, d.allocation, plan)
        if plan is not None:
            for other, moved in plan.moves:
                self.move_circuits(other, moved, now)
        self.set_rate(job, d.allocation)
        if self.net is not None:
            self.start_network(job, d.allocation, now, plan)
        rt.run_started[job] = now
        self.run_began[job] = now
        ran = self.ever_ran[job]
        restart = self.cfg.restart_overhead if ran else 0.0
        if plan is not None:  # circuits set up for the job: it waits for the OCS
            restart += self.circuit_delay(plan)
        if self.fail is not None:
            restart = self.fail.started(job, now, restart)
        rt.progress_from[job] = now + restart
        rt.status[job] = RUNNING
        if not ran:
            self.first_start[job] = now
            self.ever_ran[job] = True
        del self.pending[job]
        self.running[job] = None
        self.schedule_completion(job)
        if self.gate is not None:
            self.gate.started(job, now)

    def start_network(
        self, job: int, allocation: Allocation, now: float, plan: NetPlan | None
    ) -> None:
        """Tell the network of a start, with the links and circuits reserved for it."""
        assert self.net is not None
        try:
            self.net.start(job, allocation, now, plan)
        except InputError as exc:
            raise PolicyError(
                f"{self.policy.describe()} reserved for job {job} a plan the network cannot "
                f"route: {exc}"
            ) from None

    def move_circuits(self, job: int, plan: NetPlan, now: float) -> None:
        """Running ``job`` keeps its GPUs but is re-wired onto the circuits of ``plan`` (already
        in the ledger): it makes no progress for the OCS delay; its new speed comes at settle."""
        assert self.net is not None
        self.stop_progress(job, now)
        try:
            self.net.move(job, plan, now)
        except InputError as exc:
            raise PolicyError(
                f"{self.policy.describe()} moved job {job} onto circuits the network cannot "
                f"route: {exc}"
            ) from None
        self.rt.progress_from[job] += self.circuit_delay(plan)
        self.schedule_completion(job)

    def circuit_delay(self, plan: NetPlan | None) -> float:
        """The OCS reconfiguration delay a start pays when circuits are set up for it."""
        if plan is None or not plan.circuits:
            return 0.0
        ocs = self.net.topo.ocs if self.net is not None else None
        if ocs is None:
            raise PolicyError(
                f"{self.policy.describe()} set OCS circuits, but the run's network has none"
            )
        return float(ocs.delay)

    def reconfigure(self, d: Reconfigure, now: float) -> None:
        """Re-wire the OCS (after preemptions, before resizes and starts, which take the new
        circuits): the jobs whose ports move pause for the delay; new speeds come at settle."""
        name = self.policy.describe()
        if self.net is None or self.net.topo.ocs is None:
            raise PolicyError(f"{name} reconfigured an OCS, but the run's network has none")
        delay = self.net.topo.ocs.delay if d.delay is None else d.delay
        if not delay >= 0:
            raise PolicyError(f"{name} asked for an OCS reconfiguration delay of {delay} s")
        rt = self.rt
        try:
            paused = self.net.reconfigure(list(d.circuits), now)
        except InputError as exc:
            raise PolicyError(f"{name} asked for circuits the OCS cannot make: {exc}") from None
        for job in paused:
            self.stop_progress(job, now)
            rt.progress_from[job] += delay
            self.schedule_completion(job)

    def settle_network(self, now: float) -> None:
        """Re-rate every job whose iteration time the network changed: bank its progress at the
        old rate, take the new one and re-issue its completion (the old one becomes stale)."""
        assert self.net is not None
        rt = self.rt
        for job, factor in self.net.settle(now):
            if rt.status[job] != RUNNING:
                continue
            self.stop_progress(job, now)
            rt.rate[job] = self.alloc_rate[job] * factor * self.ckpt_factor.get(job, 1.0)
            self.schedule_completion(job)

    def snapshot(self, now: float, new_pending: list[int]) -> Snapshot:
        e = self.e
        return Snapshot(  # positional, in the fields' order (the hot loop builds two a point)
            now,
            self.jobs,
            self.cluster,
            self.state,
            self.rt,
            e.work,
            e.reference_rate,
            self.pending,
            self.running,
            new_pending,
            self.free_gpus,
            self.withdrawn,
        )

    # -- failures (schedlab.failures.runtime calls these; nothing else does) ---------------------
    def fail_free_nodes(self, exclude: set[int], whole: bool = True) -> list[int]:
        """Nodes whose GPUs are all free (none held), ascending, less ``exclude``."""
        st, c = self.state, self.cluster
        free = np.flatnonzero((c.num_gpus > 0) & (st.gpu_full_count == c.num_gpus))
        return [int(n) for n in free if int(n) not in exclude]

    def fail_hold(self, node: int, gpus: tuple[int, ...]) -> None:
        """Take ``node`` (or its GPUs ``gpus``) out of the pool: it must be free there."""
        whole = not gpus
        slots = tuple(range(int(self.cluster.num_gpus[node]))) if whole else gpus
        cpu = int(self.state.cpu_free[node]) if whole else 0
        mem = int(self.state.mem_free[node]) if whole else 0
        self.state.allocate(node, slots, cpu, mem, GPU_MILLI, len(slots))
        self.held[(node, gpus)] = (cpu, mem)
        self.free_gpus -= len(slots)
        self.held_gpus += len(slots)

    def fail_unhold(self, node: int, gpus: tuple[int, ...]) -> None:
        cpu, mem = self.held.pop((node, gpus))
        slots = gpus or tuple(range(int(self.cluster.num_gpus[node])))
        self.state.release(node, slots, cpu, mem, GPU_MILLI, len(slots))
        self.free_gpus += len(slots)
        self.held_gpus -= len(slots)

    def fail_requeue(self, job: int, now: float, remaining: float) -> None:
        """``job`` stops at ``now`` (a failure), keeps ``remaining`` work and waits in the queue."""
        rt = self.rt
        self.stop_progress(job, now)
        self.vacate(job)
        if self.net is not None:
            self.net.stop(job, now)
        rt.remaining[job] = remaining
        rt.rate[job] = 0.0
        rt.status[job] = PENDING
        rt.queued_since[job] = now
        del self.running[job]
        self.pending[job] = None
        self.requeued.append(job)
        self.schedule_completion(job)

    def fail_move(
        self,
        job: int,
        now: float,
        allocation: Allocation,
        delay: float,
        remaining: float,
        released: Allocation = (),
        taken: Allocation = (),
    ) -> None:
        """``job`` restarts at once on ``allocation`` — its own, less the ``released`` nodes,
        plus the ``taken`` ones — with ``remaining`` work, making progress again after
        ``delay``. Only the nodes that change are released and taken."""
        rt = self.rt
        self.stop_progress(job, now)
        c, m = int(self.jobs.cpu_milli[job]), int(self.jobs.memory_mib[job])
        if self.obs is not None:
            self.obs.released(now, job, rt.allocation[job])
        for node, gpus in released:
            self.state.release(node, gpus, c, m, GPU_MILLI if gpus else 0, len(gpus))
        for node, gpus in taken:
            self.state.allocate(node, gpus, c, m, GPU_MILLI if gpus else 0, len(gpus))
        if self.obs is not None:
            self.obs.placed(now, job, allocation)
        change = allocation_size(taken) - allocation_size(released)
        self.free_gpus -= change
        rt.allocation[job] = allocation
        rt.alloc_n[job] += change
        self.size_log.append(job)
        if self.net is not None:
            self.net.stop(job, now)
            self.net.start(job, allocation, now)
        model = self.cluster.model
        if len(released) == len(taken) and all(
            len(a[1]) == len(b[1]) and model[a[0]] == model[b[0]]
            for a, b in zip(released, taken, strict=True)
        ):
            rt.rate[job] = self.alloc_rate[job]  # same size, same GPUs: the same speed
        else:
            self.set_rate(job, allocation)
        rt.remaining[job] = remaining
        rt.progress_from[job] = now + delay
        self.schedule_completion(job)

    def fail_scale_rate(self, job: int, factor: float) -> None:
        """The job's mean progress under its checkpoint cycle: ``factor`` of its full rate."""
        self.ckpt_factor[job] = factor
        self.rt.rate[job] = self.alloc_rate[job] * factor
        self.schedule_completion(job)

    # -- the event loop --------------------------------------------------------------------
    # One replay is ``begin``, then per event time ``next_time`` → ``advance`` → ``decide``, then
    # ``end``; :meth:`loop` strings them together. A federation of clusters
    # (:mod:`schedlab.federation`) runs one engine per site through the same steps in lock-step,
    # with arrivals given from outside (``external``) through :meth:`inject`.
    def begin(self, external: bool = False) -> None:
        """Start the run: the policies meet the cluster; with ``external`` the trace's submit
        times bring no arrivals (the caller injects them)."""
        self.started = time.perf_counter()
        j, e = self.jobs, self.e
        self.submit = j.submit_time.tolist()
        self.n_jobs = len(j)
        self.external = external
        net = self.net
        # Every run starts from the seed: the same seed gives the same run, however often.
        e.policies.start(
            self.cluster,
            np.random.default_rng(self.cfg.seed),
            jobs=j,
            perf=e.perf,
            topology=net.topo if net is not None else e.topology,
            network=net,
        )
        self.ts_time, self.ts_queue = array("d"), array("q")
        self.ts_running, self.ts_busy, self.ts_efficiency = array("q"), array("q"), array("d")
        self.check = DecisionCheck(self.policy, self.cluster, j)  # every answer of the policy
        self.total_gpus = self.cluster.total_gpus
        # What the policy declares it does not need asking (see SchedulingPolicy); protections
        # (--min-runtime, --grace) ask it at every point, as they hold back its answers.
        protects = self.cfg.min_runtime > 0 or self.cfg.grace > 0
        self.idle_skip = bool(getattr(self.policy, "idle_without_queue", False)) and not protects
        self.never_wakes = bool(getattr(self.policy, "never_wakes", False)) and not protects
        quiet = bool(getattr(self.policy, "quiet_without_queue", False)) and not protects
        self.quiet_skip = quiet or self.idle_skip
        self.next_arrival = len(j) if external else 0
        self.wakeup, self.decision_points, self.events = INF, 0, 0
        self.withdrawn = []

    def next_time(self) -> float:
        """When the next event of this run is due (INF: none)."""
        n = self.n_jobs
        # Completions voided by a preemption or resize are dropped here, so that they never
        # become decision points of their own.
        queue = self.completions
        heap = queue.heap
        if not heap:
            done = INF
        else:  # the head is usually live: looked at here, the queue is asked only otherwise
            done, _, job, v = heap[0]
            if v != queue.version[job] or self.rt.status.item(job) != RUNNING:
                done = queue.next_time(self.is_running)
        now = self.submit[self.next_arrival] if self.next_arrival < n else INF
        if done < now:
            now = done
        if self.wakeup < now:
            now = self.wakeup
        if self.gate is not None:
            now = min(now, self.gate.next_time())
        if self.fail is not None and (self.pending or self.running or self.next_arrival < n):
            now = min(now, self.fail.next_time())  # failures alone do not keep a run going
        return now

    def advance(self, now: float) -> list[int]:
        """Apply every event due at ``now`` (arrivals, completions, failures, the gate); returns
        the jobs that joined the queue."""
        self.now = now
        rt, submit, n = self.rt, self.submit, self.n_jobs
        new_pending: list[int] = []
        while self.next_arrival < n and submit[self.next_arrival] <= now:
            job = self.next_arrival
            self.next_arrival += 1
            if self.gate is not None and not self.gate.arrive(job, now):
                self.events += 1  # held: it joins the queue when the gate lets it go
                continue
            rt.status[job] = PENDING
            rt.queued_since[job] = submit[job]
            self.pending[job] = None
            new_pending.append(job)
            self.events += 1
        heap = self.completions.heap
        if heap and heap[0][0] <= now:  # (most events complete nothing)
            due, running = self.completions.pop_due, self.is_running
            while (job := due(now, running)) >= 0:
                self.complete(job, now)
                self.events += 1
        if self.fail is not None:
            self.events += self.fail.fire(now)
            new_pending += self.requeued  # back in the queue: the policy sees them anew
            self.requeued.clear()
        if self.gate is not None:
            self.events += self.gate_pass(now, new_pending)
        return new_pending

    def inject(self, job: int, now: float) -> None:
        """``job`` arrives in this run's queue at ``now`` (external arrivals only); pass it in
        the ``new_pending`` of the next :meth:`decide`."""
        self.rt.status[job] = PENDING
        self.rt.queued_since[job] = now
        self.pending[job] = None
        self.events += 1

    def withdraw(self, job: int) -> None:
        """A queued ``job`` leaves this run without running here (another copy of it won
        elsewhere): it is as if it had never arrived; the policy hears of it at its next call."""
        if self.rt.status[job] != PENDING:
            raise PolicyError(f"job {job} was withdrawn while not pending")
        del self.pending[job]
        self.rt.status[job] = FUTURE
        self.withdrawn.append(job)

    def evict(self, job: int, now: float) -> tuple[float, float, float]:
        """A running ``job`` leaves this run at ``now`` to go on elsewhere (a federation moves
        it): it stops as a preemption stops it — progress banked, or lost without a checkpoint
        — gives back its GPUs and is as if it had never arrived; the policy hears of it as
        withdrawn. Returns its remaining work, attained GPU-seconds and executed seconds."""
        rt = self.rt
        if rt.status[job] != RUNNING:
            raise PolicyError(f"job {job} was moved away while not running")
        self.now = now
        if self.fail is not None:
            self.fail.stopped(job, now)
        self.stop_progress(job, now)
        if not self.jobs.checkpoint[job]:
            rt.remaining[job] = self.e.work[job]
            rt.attained[job] = 0.0
            rt.executed[job] = 0.0
        self.vacate(job)
        if self.net is not None:
            self.net.stop(job, now)
        rt.rate[job] = 0.0
        rt.status[job] = FUTURE
        del self.running[job]
        self.withdrawn.append(job)
        self.schedule_completion(job)  # voids its completion here
        return float(rt.remaining[job]), float(rt.attained[job]), float(rt.executed[job])

    def inject_resumed(
        self, job: int, now: float, remaining: float, attained: float, executed: float
    ) -> None:
        """``job``, which ran elsewhere and was moved here, arrives in the queue at ``now`` with
        what it carries (:meth:`evict`'s values); its next start pays the restart overhead."""
        self.inject(job, now)
        rt = self.rt
        rt.remaining[job] = remaining
        rt.attained[job] = attained
        rt.executed[job] = executed
        self.ever_ran[job] = True

    def pause_progress(self, job: int) -> None:
        """A running ``job`` holds its GPUs but makes no progress until :meth:`resume_progress`
        (a federation stages its input data after admission)."""
        self.stop_progress(job, self.now)
        self.rt.progress_from[job] = INF
        self.schedule_completion(job)

    def resume_progress(self, job: int, now: float) -> None:
        self.rt.progress_from[job] = now
        self.schedule_completion(job)

    def decide(self, now: float, new_pending: list[int]) -> None:
        """Ask the policy once at ``now`` and apply its decisions; record the series."""
        self.now = now
        self.decision_points += 1
        if self.quiet_skip and not new_pending and not self.pending and not self.withdrawn:
            # The policy declared it has nothing to decide (nor, idle, to wake for).
            if self.net is not None:
                self.settle_network(now)
            self.wakeup = INF if self.idle_skip else self.ask_wakeup(now, INF)
        else:
            self.ask(now, new_pending)
        total_gpus = self.total_gpus
        self.ts_time.append(now)
        self.ts_queue.append(len(self.pending))
        self.ts_running.append(len(self.running))
        self.ts_busy.append(total_gpus - self.free_gpus - self.held_gpus)
        self.ts_efficiency.append(max(0.0, self.speedup_sum) / total_gpus if total_gpus else 0.0)
        if self.net is not None:
            self.net.record(now)
        if self.obs is not None:
            self.obs.tick(now)

    def ask(self, now: float, new_pending: list[int]) -> None:
        """The policy's decisions at ``now``, applied, and when it wants to be asked again."""
        cfg, rt = self.cfg, self.rt
        decisions = self.check.decide(self.snapshot(now, new_pending))
        self.withdrawn = []
        protected_until = INF
        if cfg.min_runtime > 0 or cfg.grace > 0:
            decisions, held = hold_back_preemptions(
                decisions,
                now,
                cfg.min_runtime,
                lambda job: float(self.run_began[job]),
                lambda job: rt.allocation[job],
                cfg.grace,
                self.signalled,
            )
            # Ask the policy again when the first protection ends.
            protected_until = min(held.values(), default=INF)
        if decisions:
            self.apply(decisions, now)
        if self.net is not None:
            self.settle_network(now)
        self.wakeup = self.ask_wakeup(now, protected_until)

    def ask_wakeup(self, now: float, protected_until: float) -> float:
        """When the policy wants to be asked again (inf: not unless something happens)."""
        if self.never_wakes:  # (never with protections: protected_until is inf here)
            return INF
        wakeup = min(self.check.next_wakeup(self.snapshot(now, [])), protected_until)
        return INF if wakeup <= now else wakeup  # a past wake-up would never let time go

    def loop(self, progress: Callable[[int, int], None] | None) -> ReplayRecord:
        self.begin()
        n, cfg = len(self.jobs), self.cfg
        now = 0.0
        watch = bool(cfg.stop_after)
        next_time, advance, decide, until = self.next_time, self.advance, self.decide, cfg.until
        while True:
            if watch and not self.watching:
                break  # every job the run was told to wait for is done
            now = next_time()
            if now == INF or now > until:
                break
            decide(now, advance(now))
            if progress is not None and (self.decision_points & 4095) == 0:
                progress(self.next_arrival, n)
        if progress is not None:
            progress(n, n)
        return self.end(now)

    def end(self, now: float) -> ReplayRecord:
        """Close the run at ``now`` (the time the loop stopped at) and return its record."""
        cfg, rt, e, j = self.cfg, self.rt, self.e, self.jobs
        end = cfg.until if now > cfg.until else now
        ts_time = self.ts_time
        last = ts_time[-1] if ts_time else 0.0
        if math.isfinite(end):
            for job in list(self.running):
                self.stop_progress(job, end)
            if self.obs is not None:
                self.obs.finish(end)
        failures = self.fail.finish(end if math.isfinite(end) else last) if self.fail else None
        with np.errstate(divide="ignore", invalid="ignore"):
            reference_seconds = np.where(e.reference_rate > 0, e.work / e.reference_rate, np.nan)
        return ReplayRecord(
            jobs=j,
            cluster=self.cluster,
            status=rt.status.copy(),
            first_start=self.first_start,
            end_time=self.end_time,
            preemptions=rt.preemptions,
            resizes=rt.resizes,
            gpu_seconds=self.gpu_seconds,
            reference_seconds=reference_seconds,
            reject_reason=self.reject_reason,
            ts_time=np.asarray(ts_time, dtype=np.float64),
            ts_queue=np.asarray(self.ts_queue, dtype=np.int64),
            ts_running=np.asarray(self.ts_running, dtype=np.int64),
            ts_busy=np.asarray(self.ts_busy, dtype=np.int64),
            ts_efficiency=np.asarray(self.ts_efficiency, dtype=np.float64),
            decision_points=self.decision_points,
            events=self.events,
            wall_seconds=time.perf_counter() - self.started,
            network=self.net.finish(end if math.isfinite(end) else last) if self.net else None,
            observer=e.observer,
            failures=failures,
            gate=self.gate,
            policy_report=self.policy.report(),
        )
