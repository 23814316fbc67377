"""What Slurm does around a policy, for replay: time limits, job dependencies and array throttles
(the trace columns are described in :mod:`schedlab.traces.slurm_habits`).

The replay engine asks this gate at three moments and changes nothing else:

* a job arrives: it enters the queue the policy sees only if its dependency holds and its
  array is under its throttle (:meth:`JobGate.arrive`); otherwise it is held, as Slurm holds a
  job with reason ``Dependency`` or ``JobArrayTaskLimit``;
* a job starts (:meth:`started`): its run gets a kill time (start + time limit), and jobs
  waiting for it to start (``after``) may be released;
* a job ends (:meth:`ended`: completed, timed out, or rejected by the policy): jobs waiting for
  it may be released, or cancelled when their dependency can no longer hold, and the next
  held task of its array may go.

Released and cancelled jobs are handed back at the engine's next pass (:meth:`take_ready`,
:meth:`take_cancelled`), at the same simulated time; kills come due as events like completions
(:meth:`next_time`, :meth:`due_kills`). A job released later than its arrival keeps its submit
time, so its queue delay and JCT include the time it was held (as ``sacct`` reports them from
``Submit``); :attr:`eligible_at` says when it entered the queue.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from schedlab.model.jobs import JobTable
from schedlab.traces.slurm_habits import ANY, parse_dependency

INF = math.inf

#: What a clause can be: it holds, it may still hold, or it never will.
HOLDS, WAITS, NEVER = 1, 0, -1


class JobGate:
    """Dependencies, array throttles and time limits of one replay (jobs in engine order)."""

    def __init__(self, jobs: JobTable, default_limit: float | None = None) -> None:
        n = len(jobs)
        limit = jobs.time_limit.astype(np.float64)
        if default_limit is not None:
            limit = np.where(np.isnan(limit), default_limit, limit)
        self.limit = limit.tolist()
        self.ids = jobs.job_id.tolist()
        index = {job_id: k for k, job_id in enumerate(self.ids)}
        #: Per job: (any of the clauses instead of all, clauses of (type, job indices)).
        self.needs: list[tuple[bool, list[tuple[str, list[int]]]] | None] = [None] * n
        self.waiters: list[list[int]] = [[] for _ in range(n)]
        for k, text in enumerate(jobs.dependency.tolist()):
            dep = parse_dependency(text) if text else None
            if dep is None:
                continue
            clauses = [(kind, [index[i] for i in ids]) for kind, ids in dep.clauses]
            self.needs[k] = (dep.joiner == ANY, clauses)
            for other in {i for _, ids in clauses for i in ids}:
                self.waiters[other].append(k)
        self.group = jobs.array_job.tolist()
        self.throttle = jobs.array_throttle.tolist()
        self.active: dict[str, int] = {}  # per throttled array: tasks queued or running
        self.held_tasks: dict[str, list[int]] = {}  # per array: arrived tasks held by it
        self.arrived = [False] * n
        self.queued = [False] * n  # released into the queue (or cancelled): decided
        self.started_once = [False] * n
        self.outcome: list[bool | None] = [None] * n  # None: not ended; True: completed
        self.eligible_at = np.full(n, np.nan)
        self.timed_out = np.zeros(n, dtype=bool)
        self.runs = [0] * n
        self.kills: list[tuple[float, int, int]] = []  # (time, job, run)
        self.ready: list[int] = []
        self.cancelled: list[tuple[int, str]] = []
        self.now = 0.0

    # -- the engine's questions ----------------------------------------------------------------
    def arrive(self, job: int, now: float) -> bool:
        """``job`` arrives at ``now``: True if it joins the queue now (else it is held, and may
        come back through :meth:`take_ready` or :meth:`take_cancelled`)."""
        self.now = now
        self.arrived[job] = True
        return self._decide(job, immediate=True)

    def started(self, job: int, now: float) -> None:
        self.now = now
        self.runs[job] += 1
        limit = self.limit[job]
        if limit == limit:  # not NaN
            heapq.heappush(self.kills, (now + limit, job, self.runs[job]))
        if not self.started_once[job]:
            self.started_once[job] = True
            self._notify(self.waiters[job])

    def ended(self, job: int, ok: bool, now: float) -> None:
        """``job`` ended at ``now``: completed (``ok``), or timed out or rejected."""
        self.now = now
        self.outcome[job] = ok
        group = self.group[job]
        if group and self.throttle[job]:
            self.active[group] -= 1
            self._notify(self.held_tasks.get(group, []))
        self._notify(self.waiters[job])

    def time_out(self, job: int) -> None:
        self.timed_out[job] = True

    def next_time(self) -> float:
        """When the engine must pass next for the gate: now if jobs were released or
        cancelled, else the earliest kill (INF: none)."""
        if self.ready or self.cancelled:
            return self.now
        return self.kills[0][0] if self.kills else INF

    def due_kills(self, now: float) -> list[int]:
        """Jobs whose current run reaches its time limit by ``now`` (stale kills dropped)."""
        due = []
        while self.kills and self.kills[0][0] <= now:
            _, job, run = heapq.heappop(self.kills)
            if run == self.runs[job] and self.outcome[job] is None:
                due.append(job)
        return due

    def take_ready(self) -> list[int]:
        ready, self.ready = self.ready, []
        return ready

    def take_cancelled(self) -> list[tuple[int, str]]:
        cancelled, self.cancelled = self.cancelled, []
        return cancelled

    # -- deciding ------------------------------------------------------------------------------
    def _notify(self, jobs: list[int]) -> None:
        for job in list(jobs):
            if self.arrived[job] and not self.queued[job]:
                self._decide(job, immediate=False)

    def _decide(self, job: int, immediate: bool) -> bool:
        """Release, cancel or keep holding an arrived job; True if released now and
        ``immediate`` (the caller queues it), else released jobs go to :attr:`ready`."""
        state, why = self._dependency(job)
        if state == NEVER:
            held = self.held_tasks.get(self.group[job], [])
            if job in held:
                held.remove(job)
            self.queued[job] = True
            self.cancelled.append((job, f"dependency never satisfied ({why})"))
            self.outcome[job] = False
            self._notify(self.waiters[job])  # those waiting on it may now never run either
            return False
        if state == WAITS:
            return False
        group = self.group[job]
        if group and self.throttle[job]:
            held = self.held_tasks.setdefault(group, [])
            if self.active.get(group, 0) >= self.throttle[job]:
                if job not in held:
                    held.append(job)
                return False
            if job in held:
                held.remove(job)
            self.active[group] = self.active.get(group, 0) + 1
        self.queued[job] = True
        self.eligible_at[job] = self.now
        if not immediate:
            self.ready.append(job)
        return True

    def _dependency(self, job: int) -> tuple[int, str]:
        """Whether ``job``'s dependency holds, may hold, or never will (and why not)."""
        needs = self.needs[job]
        if needs is None:
            return HOLDS, ""
        any_of, clauses = needs
        states = [(self._clause(kind, ids), kind, ids) for kind, ids in clauses]
        values = [s for s, _, _ in states]
        if any_of:
            result = (
                HOLDS if HOLDS in values else (NEVER if all(v == NEVER for v in values) else WAITS)
            )
        else:
            result = (
                NEVER if NEVER in values else (HOLDS if all(v == HOLDS for v in values) else WAITS)
            )
        why = ""
        if result == NEVER:
            kind, ids = next((k, i) for s, k, i in states if s == NEVER)
            other = next(i for i in ids if self.outcome[i] is (kind == "afternotok"))
            ended = "completed" if self.outcome[other] else "did not complete"
            why = f"{kind}: job {self.ids[other]} {ended}"
        return result, why

    def _clause(self, kind: str, ids: list[int]) -> int:
        outcome = self.outcome
        if kind == "after":
            return (
                HOLDS if all(self.started_once[i] or outcome[i] is not None for i in ids) else WAITS
            )
        if kind == "afterany":
            return HOLDS if all(outcome[i] is not None for i in ids) else WAITS
        wanted = kind == "afterok"
        if any(outcome[i] is (not wanted) for i in ids):
            return NEVER
        return HOLDS if all(outcome[i] is wanted for i in ids) else WAITS
