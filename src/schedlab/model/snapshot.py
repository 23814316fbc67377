"""What a scheduling policy sees at a decision point, and what it may answer.

The snapshot is read-only by contract: a policy reads it and returns :class:`Decision` objects;
it never changes engine state. Live mode (Slurm) builds the same snapshot from the cluster's own
records, so one policy object serves simulation and production.

Per-job quantities that change with time (attained service, remaining work) are computed on demand
for the jobs a policy asks about, from the values at the job's last state change, so a decision
costs time in proportion to the jobs it looks at, not to the whole trace.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from schedlab.model.cluster import Cluster, ClusterState
from schedlab.model.jobs import JobTable

if TYPE_CHECKING:
    from schedlab.network.plan import NetPlan

# Job status codes.
FUTURE, PENDING, RUNNING, DONE, REJECTED = 0, 1, 2, 3, 4
STATUS_NAMES = ("future", "pending", "running", "completed", "rejected")

#: Where a job runs: ((node, (gpu, ...)), ...).
Allocation = tuple[tuple[int, tuple[int, ...]], ...]


def allocation_size(allocation: Allocation) -> int:
    return sum(len(gpus) for _, gpus in allocation)


@dataclass(frozen=True, slots=True)
class Start:
    """Start (or restart) a pending job on ``allocation``; ``net``: the links and circuits a
    network placement reserved for it (None: the job shares the fabric like any other)."""

    job: int
    allocation: Allocation
    net: NetPlan | None = None


@dataclass(frozen=True, slots=True)
class Preempt:
    """Stop a running job and put it back in the queue (its progress is kept)."""

    job: int


@dataclass(frozen=True, slots=True)
class Resize:
    """Move a running job to a new allocation (usually a different GPU count)."""

    job: int
    allocation: Allocation


@dataclass(frozen=True, slots=True)
class Reject:
    """Drop a pending job for good (e.g. admission control); ``reason`` goes to the record."""

    job: int
    reason: str


@dataclass(frozen=True, slots=True)
class Overhead:
    """A running job makes no progress for ``seconds`` from now (it keeps its GPUs): the cost a
    policy pays for reconfiguring jobs at a decision round, e.g. ElasticFlow's per-round
    re-formation of every job's workers. Simulation only; a live cluster pays it by itself."""

    job: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Overheads:
    """:class:`Overhead` for many jobs as one decision, applied as one ``Overhead`` per
    ``(jobs[i], seconds[i])`` in that order: what a round-based policy charges every job it runs
    at every round (Gavel's mechanism charges some fifty jobs a round, tens of thousands of
    rounds a run). Simulation only."""

    jobs: tuple[int, ...]
    seconds: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Pace:
    """A running job's speed changes with no change of GPUs: from now on it progresses at
    ``rate`` work units per second and has ``remaining`` units left. For policies that carry
    their own model of a job's progress (a goodput-aware job changes its batch size, its
    statistical efficiency changes from epoch to epoch, a restart pause is part of its
    trajectory): the engine banks the progress so far, takes the new pace (replacing any pause
    pending from earlier decisions) and re-issues the completion. Simulation only."""

    job: int
    rate: float
    remaining: float


@dataclass(frozen=True, slots=True)
class Reconfigure:
    """Re-wire the optical circuit switch to exactly ``circuits``: pairs (leaf switch id, spine or
    leaf switch id), one bidirectional circuit each. Every running job whose paths cross a circuit
    torn down or set up makes no progress for ``delay`` seconds (``None``: the topology's OCS
    delay); every job's speed is recomputed on the new fabric. Simulation only."""

    circuits: tuple[tuple[int, int], ...]
    delay: float | None = None


Decision = Start | Preempt | Resize | Reject | Overhead | Overheads | Pace | Reconfigure


def one_per_job(decisions: list[Decision]) -> list[Decision]:
    """``decisions`` with every :class:`Overheads` written out as one :class:`Overhead` per job,
    for code that takes decisions one job at a time (the live engines record each)."""
    if not any(type(d) is Overheads for d in decisions):
        return decisions
    out: list[Decision] = []
    for d in decisions:
        if isinstance(d, Overheads):
            out += [Overhead(j, s) for j, s in zip(d.jobs, d.seconds, strict=True)]
        else:
            out.append(d)
    return out


@dataclass
class JobRuntime:
    """Per-job dynamic state, as arrays (engines own it; snapshots read it)."""

    status: np.ndarray  # int8
    remaining: np.ndarray  # work units left at ``progress_from`` (or now, if not running)
    rate: np.ndarray  # work units per second while running
    progress_from: np.ndarray  # time progress (re)started (after any overhead)
    run_started: np.ndarray  # time the current run began
    attained: np.ndarray  # GPU-seconds held before the current run
    executed: np.ndarray  # seconds run before the current run
    queued_since: np.ndarray  # time the job last entered the queue
    alloc_n: np.ndarray  # GPUs held now
    preemptions: np.ndarray
    resizes: np.ndarray
    allocation: list[Allocation | None]
    #: Every job whose allocation the engine changed (took, gave up, resized, moved), in order,
    #: appended at each change: a policy that keeps values per running job (Tiresias's next
    #: threshold crossing) reads the entries since its last look (:class:`RunWatch`) instead of
    #: scanning every running job at every decision point. Empty in a runtime built from a live
    #: cluster's records, which every policy meets afresh.
    size_log: array = field(default_factory=lambda: array("q"))

    @classmethod
    def new(cls, n: int, work: np.ndarray) -> JobRuntime:
        return cls(
            status=np.zeros(n, dtype=np.int8),
            remaining=np.asarray(work, dtype=np.float64).copy(),
            rate=np.zeros(n),
            progress_from=np.zeros(n),
            run_started=np.zeros(n),
            attained=np.zeros(n),
            executed=np.zeros(n),
            queued_since=np.zeros(n),
            alloc_n=np.zeros(n, dtype=np.int64),
            preemptions=np.zeros(n, dtype=np.int64),
            resizes=np.zeros(n, dtype=np.int64),
            allocation=[None] * n,
        )


@dataclass
class Snapshot:
    """The read-only view a policy decides on."""

    now: float
    jobs: JobTable
    cluster: Cluster
    state: ClusterState
    runtime: JobRuntime
    work: np.ndarray  # total work units per job
    reference_rate: np.ndarray  # work units/s at the requested size on the reference GPU
    pending_set: dict[int, None]
    running_set: dict[int, None]
    new_pending: list[int] = field(default_factory=list)
    free_gpus: int = 0
    #: Jobs that left the queue since the last call without running here (a federation's copy
    #: of a job that started at another site); schedulers that keep a queue of their own drop
    #: them.
    withdrawn: list[int] = field(default_factory=list)
    _pending: np.ndarray | None = None
    _running: np.ndarray | None = None

    def pending(self) -> np.ndarray:
        """Pending job indices in the order they (re)entered the queue."""
        if self._pending is None:
            self._pending = np.fromiter(
                self.pending_set, dtype=np.int64, count=len(self.pending_set)
            )
        return self._pending

    def running(self) -> np.ndarray:
        if self._running is None:
            self._running = np.fromiter(
                self.running_set, dtype=np.int64, count=len(self.running_set)
            )
        return self._running

    def running_after(self, decisions: list[Decision]) -> set[int]:
        """Jobs holding GPUs once ``decisions`` are applied: who pays a per-round overhead."""
        stopped = {d.job for d in decisions if isinstance(d, Preempt)}
        started = {d.job for d in decisions if isinstance(d, Start)}
        return (set(self.running_set) - stopped) | started

    # -- time-dependent per-job values ------------------------------------------------------
    def _run_time(self, idx: np.ndarray) -> np.ndarray:
        rt = self.runtime
        running = rt.status[idx] == RUNNING
        return np.where(running, self.now - rt.run_started[idx], 0.0)

    def attained(self, idx: np.ndarray) -> np.ndarray:
        """GPU-seconds each job has held so far (Tiresias's attained service)."""
        rt = self.runtime
        return rt.attained[idx] + rt.alloc_n[idx] * self._run_time(idx)

    def executed(self, idx: np.ndarray) -> np.ndarray:
        """Seconds each job has run so far."""
        return self.runtime.executed[idx] + self._run_time(idx)

    def remaining_work(self, idx: np.ndarray) -> np.ndarray:
        rt = self.runtime
        running = rt.status[idx] == RUNNING
        progressed = np.maximum(0.0, self.now - rt.progress_from[idx]) * rt.rate[idx]
        return np.maximum(0.0, rt.remaining[idx] - np.where(running, progressed, 0.0))

    def remaining_seconds(self, idx: np.ndarray) -> np.ndarray:
        """Oracle run time left at the requested size on the reference GPU.

        The same yardstick for running and waiting jobs: timing a running job at the pace of the
        slower GPUs it happens to hold would make it look longer than an identical waiting job
        and swap the two at every decision.
        """
        rate = self.reference_rate[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(rate > 0, self.remaining_work(idx) / rate, np.inf)

    def total_seconds(self, idx: np.ndarray) -> np.ndarray:
        """Oracle run time of the whole job at its requested size (SJF's key)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            r = self.reference_rate[idx]
            return np.where(r > 0, self.work[idx] / r, np.inf)

    def estimated_end(self, idx: np.ndarray) -> np.ndarray:
        """When running jobs would finish if nothing changes (backfill reservations)."""
        rt = self.runtime
        with np.errstate(divide="ignore", invalid="ignore"):
            left = np.where(rt.rate[idx] > 0, self.remaining_work(idx) / rt.rate[idx], np.inf)
        return np.maximum(self.now, rt.progress_from[idx]) + left


class RunWatch:
    """What changed among the running jobs since the last look, from a runtime's ``size_log``.

    :meth:`changed` returns None the first time it meets a runtime (or a new one: every serve
    cycle builds its own), when the caller must rebuild from the running jobs; afterwards, the
    jobs whose allocation changed since the previous call (a job may come more than once).
    """

    def __init__(self) -> None:
        self._log: array | None = None
        self._seen = 0

    def changed(self, runtime: JobRuntime) -> list[int] | None:
        log = runtime.size_log
        if log is not self._log:
            self._log, self._seen = log, len(log)
            return None
        seen, self._seen = self._seen, len(log)
        return log[seen:].tolist() if len(log) > seen else []
