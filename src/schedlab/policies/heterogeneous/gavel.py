"""Gavel's round-based mechanism (OSDI '20): an allocation matrix realised round by round.

An allocation policy (:mod:`schedlab.policies.heterogeneous.allocation`,
:mod:`schedlab.policies.heterogeneous.gavel_lp`) says what share of time each job should get on
each GPU type; this mechanism turns the shares into rounds of ``slot`` seconds (360 s), as
Gavel's simulator does, quirks included, so that its published numbers can be matched job for
job:

1. **Reset and re-solve** at a round boundary iff something changed since the last solve (an
   arrival, a completion, a failed round) and ``reset_interval`` (1920 s) has passed since the
   last reset (or no reset has happened at a time > 0). A reset adds to each job's deficit what
   it should have received minus what it did, and restarts the time counters at ``slot/2``. A
   job that arrives between resets has no allocation and does not run until the next one.
2. **Priorities**: ``x_jk / f_jk`` with ``f_jk`` the job's share of the time type k has run
   jobs since the reset (``x_jk · 1e9`` while it is 0; 0 without allocation, share or speed).
3. **Picking**: types in the order fastest first (v100, p100, k80 for Gavel's matrix; shuffled
   every round for the heterogeneity-agnostic policies); per type, jobs by (priority, deficit,
   share) descending, appended type after type; taken in that order while the type has room,
   skipping jobs already taken, jobs at 0 steps/s there, and (FIFO policies) jobs of priority 0.
   Jobs without an allocation may be taken and then not placed: their GPUs idle this round.
4. **Placement**: per type, larger jobs first; a job keeps its exact GPUs from the last round
   if none is taken yet (a lease extension); the others take free GPUs walking the servers in
   order.
5. **Running**: a job does ``n = min(int(T·slot), remaining)`` steps and is done at
   ``now + n/T``; the round ends when the last of them is done. A multi-GPU job whose ``n`` is
   below its GPU count fails the round (nothing is credited); after 5 failures in a row it is
   dropped (rejected, so it has no completion time).

Arrivals join at round boundaries; when nothing runs, time jumps to the next arrival.

How it drives the replay engine: each round it returns the starts, moves (a resize to the same
number of other GPUs) and stops, and for every job it runs an overhead of the seconds it waits
after its ``n`` steps (all of them as one :class:`Overheads`), so the engine credits exactly
``n`` steps at the matrix speed
(the wait comes first instead of last, which no one can see: such a job does not finish in the
round). A job that finishes in the round gets an overhead of 0 and the engine completes it at
``now + remaining/T`` — the same expression the mechanism uses, so the round ends exactly at an
engine event. Remaining steps are always read from the engine. It asks to be woken at the round
end; events inside a round (arrivals, completions) change nothing until then.

Bookkeeping the engine does not have — time credited per job and type, utilisation as Gavel
counts it (a round's busy time runs from the end of the previous round that ran anything, so an
idle gap is counted as busy), lease extensions — is kept per round in :attr:`GavelRounds.log`.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from schedlab.model.gpu_models import GPU_MODELS
from schedlab.model.snapshot import (
    DONE,
    FUTURE,
    RUNNING,
    Allocation,
    Decision,
    Overheads,
    Preempt,
    Reject,
    Resize,
    Snapshot,
    Start,
)
from schedlab.policies.api import REPLAY_ONLY
from schedlab.policies.heterogeneous.allocation import AllocationPolicy, AllocationProblem
from schedlab.policies.scheduler import ReplayContext, SchedulingPolicy, check_slot

#: Gavel's round length and minimum time between allocation resets, in seconds.
DEFAULT_ROUND = 360.0
DEFAULT_RESET_INTERVAL = 1920.0
#: Consecutive failed rounds after which a job is dropped.
MAX_FAILED_ROUNDS = 5


@dataclass
class RoundRecord:
    """What one round did (for Gavel's utilisation and lease-extension figures)."""

    start: float
    end: float
    #: GPU-busy seconds credited (Gavel's accounting): ``busy_seconds[i]`` to worker
    #: ``busy_workers[i]`` (each worker at most once a round).
    busy_workers: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    busy_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0))
    lease_opportunities: int = 0
    lease_extensions: int = 0
    jobs: int = 0


@dataclass
class _Round:
    """The jobs placed in the current round (ascending ids) and what each does in it."""

    jobs: list[int]
    types: list[int]
    workers: list[tuple[int, ...]]
    steps: np.ndarray
    finish: np.ndarray  # now + steps / T (Gavel's clock)
    failed: np.ndarray
    #: Indices in Gavel's crediting order: latest finish first, then job id.
    order: list[int]
    #: Each job's row in the frame the round was picked from.
    rows: np.ndarray
    #: The indices of ``order`` whose job did not fail, and each job's busy seconds as Gavel
    #: credits them (set when the round is credited).
    kept: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    busy: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass
class _Frame:
    """The active jobs, in arrival order, and their rows per type: received seconds since the
    reset, deficits, throughputs, allocated shares; and their GPU counts."""

    order: list[int]
    recv: np.ndarray
    deficit: np.ndarray
    T: np.ndarray
    x: np.ndarray
    scale: list[int]
    #: Each job's row.
    row: dict[int, int] = field(default_factory=dict)
    #: Every job asks one GPU (the picking pass then takes a type's best jobs at once).
    single: bool = True

    @staticmethod
    def empty(types: int) -> _Frame:
        blank = np.zeros((0, types))
        return _Frame([], blank, blank, blank, blank, [])


class GavelRounds(SchedulingPolicy):
    """Base of the Gavel policies: the round mechanism around one allocation policy.

    Parameters: ``slot`` (round seconds), ``reset_interval`` (minimum seconds between allocation
    resets), ``shuffle_seed`` (seed of the type order shuffle of the agnostic policies; default:
    drawn from the run's generator — Gavel uses its ``--seed`` + 5).
    """

    summary: ClassVar[str] = "Gavel's round-based mechanism"
    engines = REPLAY_ONLY
    uses_placement = False
    stateful = True
    preemptive = True

    def __init__(
        self,
        slot: float | None = None,
        reset_interval: float = DEFAULT_RESET_INTERVAL,
        shuffle_seed: int = -1,
    ) -> None:
        self.slot = check_slot(slot) or DEFAULT_ROUND
        if not reset_interval >= 0:
            raise ValueError(f"'reset_interval' must be ≥ 0 seconds (got {reset_interval})")
        self.reset_interval = float(reset_interval)
        self.shuffle_seed = shuffle_seed
        self.allocation = self.make_allocation()

    def make_allocation(self) -> AllocationPolicy:
        raise NotImplementedError

    def describe(self) -> str:
        return self.name

    # -- setup -----------------------------------------------------------------------------
    def reset(self, ctx: ReplayContext) -> None:
        assert ctx.jobs is not None and ctx.perf is not None
        cluster = ctx.cluster
        self.jobs, self.perf = ctx.jobs, ctx.perf
        present = sorted(
            {int(m) for m in cluster.model[cluster.num_gpus > 0].tolist()},
            key=lambda m: GPU_MODELS[m].lower(),
        )
        self.models = present
        self.types = tuple(GPU_MODELS[m].lower() for m in present)
        n = len(present)
        # Workers (GPUs) per type, grouped by server in node order; a worker is (node, gpu).
        self.workers: list[tuple[int, int]] = []
        self.servers: list[list[list[int]]] = [[] for _ in range(n)]
        for node in range(cluster.size):
            g = int(cluster.num_gpus[node])
            if g <= 0 or int(cluster.model[node]) not in present:
                continue
            k = present.index(int(cluster.model[node]))
            ids = []
            for gpu in range(g):
                ids.append(len(self.workers))
                self.workers.append((node, gpu))
            self.servers[k].append(ids)
        self.capacity = np.array([sum(len(s) for s in self.servers[k]) for k in range(n)])
        # Each type's workers in server order: the placement walk reads them front to back.
        self.flat: list[list[int]] = [[w for s in self.servers[k] for w in s] for k in range(n)]
        self.scale: list[int] = ctx.jobs.num_gpus.tolist()
        self.alloc_of: dict[tuple[int, ...], Allocation] = {}
        self.T: dict[int, np.ndarray] = {}
        self.pick_order = self._pick_order()
        seed = self.shuffle_seed
        if seed < 0:
            seed = int(ctx.rng.integers(0, 2**31 - 1))
        self.shuffler = random.Random(seed)
        self.allocation.reset(seed)
        half = self.slot / 2.0
        self.half = half
        self.active: dict[int, None] = {}
        # Received seconds since the reset and deficits per type of the jobs that arrived
        # since the frame was built; the frame holds every other active job's rows.
        self.recv: dict[int, np.ndarray] = {}
        self.deficit: dict[int, np.ndarray] = {}
        self.busy = np.zeros(n)
        self.x: dict[int, np.ndarray] = {}
        self.last_reset = 0.0
        self.need_update = False
        self.failures: dict[int, int] = {}
        self.assigned: dict[int, tuple[int, tuple[int, ...]]] = {}
        self.planned: _Round | None = None
        self.round_end: float | None = None
        self.credit_from: float | None = None  # end of the last round that ran anything
        self.log: list[RoundRecord] = []
        self.solves = 0
        self.dropped: set[int] = set()
        self.frame = _Frame.empty(n)
        self.frame_stale = True  # the active set changed since the frame was built
        self.shares_stale = True  # the allocation changed since then

    def _throughputs(self, job: int) -> np.ndarray:
        row = self.T.get(job)
        if row is None:
            s = int(self.jobs.num_gpus[job])
            mask = int(self.jobs.gpu_model_mask[job])
            row = np.array(
                [
                    self.perf.rate(self.jobs, job, s, m) if (mask >> m) & 1 else 0.0
                    for m in self.models
                ]
            )
            self.T[job] = row
        return row

    def _pick_order(self) -> list[int]:
        """Types fastest first: by mean steps/s over the trace's jobs relative to each job's
        fastest type (v100, p100, k80 for Gavel's matrix); ties by name."""
        jobs = self.jobs
        n = len(self.types)
        if n <= 1 or len(jobs) == 0:
            return list(range(n))
        sample = range(0, len(jobs), max(1, len(jobs) // 2000))
        rows = np.array([self._throughputs(j) for j in sample])
        best = rows.max(axis=1, keepdims=True)
        rel = np.divide(rows, best, out=np.zeros_like(rows), where=best > 0).mean(axis=0)
        return sorted(range(n), key=lambda k: (-rel[k], self.types[k]))

    # -- the engine's calls ------------------------------------------------------------------
    def next_wakeup(self, snap: Snapshot) -> float:
        return self.round_end if self.round_end is not None else math.inf

    def decide(self, snap: Snapshot) -> list[Decision]:
        now = snap.now
        if self.round_end is not None and now < self.round_end:
            return []  # inside a round: arrivals and completions wait for its end
        decisions: list[Decision] = []
        if self.round_end is not None:
            decisions += self._close_round(snap)
        decisions += self._admit(snap)
        decisions += self._schedule(snap, decisions)
        return decisions

    # -- round boundaries --------------------------------------------------------------------
    def _close_round(self, snap: Snapshot) -> list[Decision]:
        """Credit the round that just ended (in Gavel's order: latest finish first), retire the
        jobs the engine completed, count failures and drop the jobs that failed too often."""
        status = snap.runtime.status
        decisions: list[Decision] = []
        rnd = self.planned
        assert rnd is not None
        if rnd.failed.any():
            failed = rnd.failed.tolist()
            for i in rnd.order:
                job = rnd.jobs[i]
                if failed[i] and job in self.active:
                    self.failures[job] = self.failures.get(job, 0) + 1
                    self.need_update = True
                    if self.failures[job] >= MAX_FAILED_ROUNDS:
                        self._retire(job)
                        self.dropped.add(job)
                        if status.item(job) == RUNNING:
                            decisions.append(Preempt(job))
                        decisions.append(Reject(job, f"failed {MAX_FAILED_ROUNDS} rounds in a row"))
        if len(rnd.kept):
            # Each job's received time on its type and each type's busy time, added in the
            # crediting order (np.add.at adds one at a time, in order: the same sums).
            ids = [rnd.jobs[i] for i in rnd.kept.tolist()]
            types = np.asarray(rnd.types)[rnd.kept]
            seconds = rnd.busy[rnd.kept]
            # The round's jobs were picked from the frame, where their received time lives
            # (no frame is built between a round and its close).
            self.frame.recv[rnd.rows[rnd.kept], types] += seconds
            np.add.at(self.busy, types, seconds)
            if self.failures:
                for job in ids:
                    self.failures.pop(job, None)
            done = status[ids] == DONE
            if done.any():
                for job in np.asarray(ids)[done].tolist():
                    self._retire(job)
        self.planned = None
        self.round_end = None
        return decisions

    def _retire(self, job: int) -> None:
        del self.active[job]
        self.recv.pop(job, None)  # (still here only if it never made it into a frame)
        self.deficit.pop(job, None)
        self.need_update = True
        self.frame_stale = True

    def _admit(self, snap: Snapshot) -> list[Decision]:
        """Jobs that arrived since the last boundary join (in job-id order); a job no GPU type
        can ever hold (too many GPUs, or 0 steps/s everywhere it may run) is rejected."""
        rejected: list[Decision] = []
        for job in sorted(int(j) for j in snap.pending_set if j not in self.active):
            if job in self.dropped:
                continue
            why = self._never_runs(job)
            if why is not None:
                self.dropped.add(job)
                rejected.append(Reject(job, why))
                continue
            self.active[job] = None
            self.recv[job] = np.full(len(self.types), self.half)
            self.deficit[job] = np.zeros(len(self.types))
            self.need_update = True
            self.frame_stale = True
        return rejected

    def _never_runs(self, job: int) -> str | None:
        s = int(self.jobs.num_gpus[job])
        if s <= 0:
            return "requests no GPUs (this policy schedules GPU jobs only)"
        row = self._throughputs(job)
        if not (row > 0).any():
            return f"runs at 0 steps/s on every GPU type of the cluster at {s} GPUs"
        if not (self.capacity[row > 0] >= s).any():
            return f"needs {s} GPUs of one type; no type it runs on has that many"
        return None

    # -- allocation resets ---------------------------------------------------------------
    def _maybe_reset(self, snap: Snapshot) -> None:
        now = snap.now
        due = now - self.last_reset >= self.reset_interval or self.last_reset == 0
        if not (self.need_update and due):
            return
        elapsed = now - self.last_reset
        # Every active job at once (a job without an allocation has a zero row, so what it
        # should have received is 0): deficit += x·elapsed − (received − slot/2).
        f = self._frame()
        if f.order:
            f.deficit += f.x * elapsed - (f.recv - self.half)
            f.recv[:] = self.half
        busy = 0.0
        for _ in f.order:  # Gavel adds slot/2 once per active job
            busy += self.half
        self.busy[:] = busy
        self.last_reset = now
        self.x = self._solve(snap)
        self.solves += 1
        self.need_update = False
        self.shares_stale = True

    def _solve(self, snap: Snapshot) -> dict[int, np.ndarray]:
        jobs = np.array(sorted(self.active), dtype=np.int64)
        if len(jobs) == 0:
            return {}
        problem = self.problem(snap, jobs)
        x = np.clip(self.allocation.allocate(problem), 0.0, 1.0)
        return {int(j): x[r] for r, j in enumerate(jobs)}

    def problem(self, snap: Snapshot, jobs: np.ndarray) -> AllocationProblem:
        """The allocation problem over ``jobs`` now (agnostic policies flatten it themselves)."""
        j = self.jobs
        throughput = np.array([self._throughputs(int(i)) for i in jobs])
        return AllocationProblem(
            jobs=jobs,
            throughput=throughput,
            scale=j.num_gpus[jobs].astype(np.int64),
            weight=j.priority_weight[jobs].astype(np.float64),
            remaining=self.remaining(snap, jobs),
            age=snap.now - j.submit_time[jobs],
            capacity=self.capacity,
            types=self.types,
            now=snap.now,
            deadline=j.deadline[jobs],
            entity=j.user[jobs],
        )

    @staticmethod
    def remaining(snap: Snapshot, jobs: np.ndarray) -> np.ndarray:
        """Steps left, exactly as the engine will bank them now (the engine's own arithmetic,
        element by element)."""
        rt, now = snap.runtime, snap.now
        left = rt.remaining[jobs].astype(np.float64)
        running = rt.status[jobs] == RUNNING
        if not running.any():
            return left
        done = np.maximum(0.0, now - rt.progress_from[jobs]) * rt.rate[jobs]
        return np.where(running, np.maximum(0.0, left - done), left)

    # -- one round -----------------------------------------------------------------------
    def _frame(self) -> _Frame:
        """The active jobs' per-type rows as matrices (rebuilt when the active set or the
        allocation changed). The frame is where the received time and deficit of every job in
        it live: the rounds and resets update its rows in place, and a rebuild carries them
        over (a job that arrived since has its rows in :attr:`recv` and :attr:`deficit`)."""
        f = self.frame
        if self.frame_stale:
            order = list(self.active)
            n = len(self.types)
            old = self.frame
            f = _Frame.empty(n)
            f.order = order
            survivors = [j for j in order if j in old.row]
            fresh = [j for j in order if j not in old.row]
            if order[: len(survivors)] == survivors:
                # The usual change: jobs left and jobs arrived (active jobs keep arrival order,
                # so the arrivals come last): the old rows that remain, then the new ones.
                rows = [old.row[j] for j in survivors]
                f.recv = np.concatenate([old.recv[rows], self._rows(self.recv, fresh)])
                f.deficit = np.concatenate([old.deficit[rows], self._rows(self.deficit, fresh)])
                f.T = np.concatenate(
                    [old.T[rows], self._rows({j: self._throughputs(j) for j in fresh}, fresh)]
                )
            else:
                recv = [old.recv[old.row[j]] if j in old.row else self.recv[j] for j in order]
                deficit = [
                    old.deficit[old.row[j]] if j in old.row else self.deficit[j] for j in order
                ]
                f.recv, f.deficit = self._rows(recv, None), self._rows(deficit, None)
                f.T = self._rows([self._throughputs(j) for j in order], None)
            for job in fresh:  # their rows live in the frame from now on
                self.recv.pop(job, None)
                self.deficit.pop(job, None)
            f.scale = [self.scale[j] for j in order]
            f.row = {j: i for i, j in enumerate(order)}
            f.single = all(s == 1 for s in f.scale)
            self.frame = f
            self.frame_stale = False
            self.shares_stale = True
        if self.shares_stale:
            zero = np.zeros(len(self.types))
            rows = [self.x.get(j, zero) for j in f.order]
            f.x = np.array(rows) if rows else np.zeros((0, len(self.types)))
            self.shares_stale = False
        return f

    def _rows(self, arrays: Any, jobs: list[int] | None) -> np.ndarray:
        """Per-job rows as one (jobs × types) matrix: ``arrays`` in order, or ``arrays[j]``
        for each of ``jobs``."""
        rows = arrays if jobs is None else [arrays[j] for j in jobs]
        return np.array(rows) if rows else np.zeros((0, len(self.types)))

    def _pick(self) -> dict[int, list[int]]:
        """Jobs to run this round per type: Gavel's greedy pass over its priority queue.

        Types in picking order (shuffled every round for the agnostic policies); per type the
        jobs by (priority, deficit, share) descending, ties in arrival order; priority
        ``x_jk / f_jk`` with ``f_jk`` the job's share of the type's busy time since the reset
        (``x_jk · 1e9`` while that is 0; 0 without allocation, share or speed). Taken in that
        order while the type has room, skipping jobs already taken, jobs at 0 steps/s there and
        (FIFO policies) jobs of priority 0."""
        order = list(self.pick_order)
        if not self.allocation.perf_aware:
            self.shuffler.shuffle(order)
        f = self._frame()
        left = self.capacity.tolist()
        taken: set[int] = set()
        picked: dict[int, list[int]] = {k: [] for k in range(len(self.types))}
        if not f.order:
            return picked
        # Every type's priorities at once: x/f where the job has a share and a fraction,
        # x·1e9 where it has a share but no fraction yet, 0 without a share or speed.
        share, busy = f.x, self.busy
        nonzero = share != 0.0
        if busy.all():  # every type has run since the reset (the usual round)
            frac = f.recv / busy
        else:
            frac = np.divide(f.recv, busy, out=np.zeros_like(f.recv), where=busy != 0.0)
        use = nonzero & (frac > 0.0)
        priority = np.where(use, share / np.where(use, frac, 1.0), share * 1e9)
        priority[nonzero & (f.T == 0)] = 0.0
        valid = f.T > 0
        if self.allocation.fifo:
            valid &= priority > 0.0
        # Per type: (priority, deficit, share) descending, ties in arrival order.
        keys = (-share, -f.deficit, -priority)
        # One-GPU jobs: a type takes its best jobs not taken yet, as many as it has GPUs.
        taken_rows = np.zeros(len(f.order), dtype=bool) if f.single else None
        for k in order:
            if left[k] == 0:
                continue
            ranked = np.lexsort([key[:, k] for key in keys])
            room = left[k]
            if taken_rows is not None:
                rows = ranked[valid[ranked, k] & ~taken_rows[ranked]][:room]
                taken_rows[rows] = True
                picked[k] = [f.order[i] for i in rows.tolist()]
                left[k] = room - len(rows)
                continue
            for i in ranked[valid[ranked, k]].tolist():
                job = f.order[i]
                s = f.scale[i]
                if job in taken or s > room:
                    continue
                room -= s
                taken.add(job)
                picked[k].append(job)
                if room == 0:
                    break
            left[k] = room
        return picked

    def _place(self, picked: dict[int, list[int]]) -> dict[int, tuple[int, tuple[int, ...]]]:
        """GPUs for the picked jobs: lease extensions first, then a walk over the servers."""
        out: dict[int, tuple[int, tuple[int, ...]]] = {}
        scale, assigned, shares = self.scale, self.assigned, self.x
        for k, jobs in picked.items():
            if not jobs:
                continue
            # The jobs by size, largest first, each size's jobs in the picked order.
            by_size: dict[int, list[int]] = {}
            for job in jobs:
                group = by_size.get(scale[job])
                if group is None:
                    by_size[scale[job]] = [job]
                else:
                    group.append(job)
            flat = self.flat[k]
            taken: set[int] = set()
            ptr = 0
            for size in sorted(by_size, reverse=True):
                walkers = []  # jobs with a share whose GPUs of last round cannot be kept
                for job in by_size[size]:
                    prev = assigned.get(job)
                    if prev is not None and prev[0] == k and taken.isdisjoint(prev[1]):
                        out[job] = prev
                        taken.update(prev[1])
                    elif job in shares:
                        walkers.append(job)
                for job in walkers:
                    ids: list[int] = []
                    while len(ids) < size and ptr < len(flat):
                        w = flat[ptr]
                        ptr += 1
                        if w not in taken:
                            ids.append(w)
                            taken.add(w)
                    if len(ids) != size:
                        raise RuntimeError(f"Gavel placement could not seat job {job}")
                    out[job] = (k, tuple(ids))
        return out

    def _schedule(self, snap: Snapshot, earlier: list[Decision]) -> list[Decision]:
        now = snap.now
        self._maybe_reset(snap)
        placed = self._place(self._pick())
        if not placed and self.active and not self._arrivals_left(snap):
            # Nothing runs and nothing more arrives: allow a reset now (as Gavel does for a
            # finished trace), so jobs waiting for an allocation get one.
            self.last_reset = 0.0
            self.need_update = True
            self._maybe_reset(snap)
            placed = self._place(self._pick())
        record = RoundRecord(start=now, end=now)
        assigned = self.assigned
        record.lease_opportunities = len(assigned.keys() & self.active.keys())
        extensions = 0
        for j, (_, workers) in placed.items():
            prev = assigned.get(j)
            if prev is not None and (prev[1] == workers or set(prev[1]) == set(workers)):
                extensions += 1
        record.lease_extensions = extensions
        decisions = self._decisions(snap, placed, earlier, record)
        self.assigned = placed
        self.log.append(record)
        return decisions

    def _arrivals_left(self, snap: Snapshot) -> bool:
        return bool((snap.runtime.status == FUTURE).any())

    def _decisions(
        self,
        snap: Snapshot,
        placed: dict[int, tuple[int, tuple[int, ...]]],
        earlier: list[Decision],
        record: RoundRecord,
    ) -> list[Decision]:
        now, rt = snap.now, snap.runtime
        dropped = {d.job for d in earlier if isinstance(d, Reject)}
        decisions: list[Decision] = []
        for job in snap.running().tolist():
            if job not in dropped and job not in placed:
                decisions.append(Preempt(job))
        jobs = np.array(sorted(placed), dtype=np.int64)
        ids = jobs.tolist()
        left = self.remaining(snap, jobs)
        running = (rt.status[jobs] == RUNNING).tolist()
        starts: list[Decision] = []
        moving = np.zeros(len(ids), dtype=bool)
        types: list[int] = []
        workers: list[tuple[int, ...]] = []
        for i, job in enumerate(ids):
            k, held_by = placed[job]
            types.append(k)
            workers.append(held_by)
            alloc = self.alloc_of.get(held_by)
            if alloc is None:
                alloc = self.alloc_of[held_by] = self._allocation(held_by)
            if not running[i]:
                starts.append(Start(job, alloc))
                moving[i] = True
            else:
                held = rt.allocation[job]
                if held is not alloc and held != alloc:
                    starts.append(Resize(job, alloc))
                    moving[i] = True
        decisions += starts
        if not ids:
            return decisions
        # Element by element the arithmetic of Gavel's loop: n = min(int(T·slot), R) steps,
        # done at now + n/T; a multi-GPU job whose n is below its GPU count fails the round.
        row = self.frame.row
        rows = np.fromiter([row[j] for j in ids], np.int64, len(ids))
        t = self.frame.T[rows, types]
        whole = np.floor(t * self.slot)
        steps = np.where(left < whole, left, whole)
        scale = np.array([self.scale[j] for j in ids])
        failed = (steps <= 0) | ((scale > 1) & (steps < scale))
        finish = now + steps / t
        # A job that finishes in the round: the engine completes it at (start of progress) +
        # remaining / T.
        done = (steps == left) & ~failed
        begin = np.where(moving, now, np.maximum(now, rt.progress_from[jobs]))
        ends = np.where(done, begin + left / t, finish)
        end = float(ends.max())
        wait = np.where(failed, end - now, np.where(done, 0.0, end - finish))
        order = np.lexsort((jobs, -finish)).tolist()
        self.planned = _Round(ids, types, workers, steps, finish, failed, order, rows)
        decisions.append(Overheads(tuple(ids), tuple(wait.tolist())))
        self._credit(record, end)
        self.round_end = end
        return decisions

    def _credit(self, record: RoundRecord, end: float) -> None:
        """Gavel's busy time of the round: from the end of the last round that ran anything."""
        start = self.credit_from if self.credit_from is not None else 0.0
        rnd = self.planned
        assert rnd is not None
        record.end = end
        record.jobs = len(rnd.jobs)
        busy = rnd.finish - start
        if rnd.failed.any():
            failed = rnd.failed.tolist()
            kept = [i for i in rnd.order if not failed[i]]
        else:
            kept = rnd.order
        rnd.kept = np.asarray(kept, dtype=np.int64)
        rnd.busy = busy
        workers = [rnd.workers[i] for i in kept]
        record.busy_workers = np.fromiter(itertools.chain.from_iterable(workers), np.int64)
        seconds = busy[rnd.kept]
        if len(record.busy_workers) == len(kept):  # one GPU each (no job runs on none)
            record.busy_seconds = seconds
        else:
            record.busy_seconds = np.repeat(seconds, [len(w) for w in workers])
        self.credit_from = end

    def _allocation(self, workers: tuple[int, ...]) -> Allocation:
        by_node: dict[int, list[int]] = {}
        for w in workers:
            node, gpu = self.workers[w]
            by_node.setdefault(node, []).append(gpu)
        return tuple((node, tuple(sorted(g))) for node, g in sorted(by_node.items()))

    # -- figures -------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        """Rounds, solves, Gavel's utilisation and lease extensions to the end of the last
        round, dropped jobs, and every solver failure (a warning each: the round fell back to
        the isolated allocation)."""
        ran = [r for r in self.log if r.jobs]
        end = ran[-1].end if ran else 0.0
        fallbacks = list(getattr(self.allocation, "fallbacks", []))
        dropped_slos = list(getattr(self.allocation, "dropped_slos", []))
        warnings = [
            f"{self.name}: the allocation solver failed at t={t:.1f} s ({why}); that round used "
            "the isolated allocation"
            for t, why in fallbacks
        ]
        warnings += [
            f"{self.name}: the deadlines of jobs {self._names(jobs)} could not all be met at "
            f"t={t:.1f} s; that solve ignored every deadline"
            for t, jobs in dropped_slos
        ]
        return {
            "rounds": len(ran),
            "allocation_solves": self.solves,
            "solver_fallbacks": len(fallbacks),
            "gavel_utilization": self.utilisation(end) if end > 0 else 0.0,
            "lease_extension_percent": self.lease_extension_percent(end),
            "dropped_jobs": len(self.dropped),
            **({"warnings": warnings} if warnings else {}),
        }

    def _names(self, jobs: list[int]) -> str:
        shown = ", ".join(str(self.jobs.job_id[j]) for j in jobs[:5])
        return shown + (f" and {len(jobs) - 5} more" if len(jobs) > 5 else "")

    def utilisation(self, end: float) -> float:
        """Gavel's cluster utilisation at ``end``: mean over GPUs of credited busy seconds of
        the rounds that ended by then, over ``end``."""
        busy = np.zeros(len(self.workers))
        for record in self.log:
            if record.end <= end and record.jobs:
                busy[record.busy_workers] += record.busy_seconds  # each worker once a round
        return float(busy.mean() / end) if end > 0 and len(busy) else 0.0

    def lease_extension_percent(self, until: float) -> float:
        """Share of (job still active, ran last round) cases in which the job kept its GPUs,
        over the rounds scheduled by ``until``."""
        chances = sum(r.lease_opportunities for r in self.log if r.start <= until)
        kept = sum(r.lease_extensions for r in self.log if r.start <= until)
        return 100.0 * kept / chances if chances else 0.0

    def round_end_after(self, t: float) -> float:
        """The end of the first round that ends at or after ``t`` (Gavel's run stops there)."""
        ends = [r.end for r in self.log if r.jobs and r.end >= t]
        return min(ends) if ends else t
