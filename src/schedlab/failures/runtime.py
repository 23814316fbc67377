"""Failures during a replay: the engine's failure events and what they do to jobs and nodes.

The replay engine asks a :class:`FailureRun` for the time of its next event (a component
failure, a repair, a job's software failure) beside arrivals and completions, and lets it
:meth:`~FailureRun.fire` the events due. A failure inside a running job's allocation stops all
its workers at that instant and rolls its progress back to its last counted checkpoint; the job
then restarts after ``R`` — where it is (a software failure; a failed node replaced by a spare;
the surviving nodes with ``shrink``) or, by default, back in the queue until the policy places it
again. The failed component leaves the pool for its repair. The engine tells the run when a job
starts, is resized and stops (:meth:`started`, :meth:`resized`, :meth:`stopped`), so each run
between two of those is one checkpoint *segment* with a known cycle.

Everything the engine does to its own state goes through its ``fail_*`` methods; this module
never touches the engine's arrays itself except to read them.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.errors import InputError
from schedlab.failures.checkpoint import Costs, Cycle, costs, cycle
from schedlab.failures.spec import CheckpointSpec, FailureSpec, Reaction, parse_checkpoint
from schedlab.failures.streams import (
    CLASS_CODE,
    ClassStream,
    SoftwareStream,
    draw_category,
    draw_repair,
)

if TYPE_CHECKING:
    from schedlab.failures.trace import RawEvent, TraceEvent
    from schedlab.model.snapshot import Allocation

INF = math.inf
#: Simulated seconds generated at a time per class stream.
WINDOW = 7 * 86400.0
NODE_CLASSES = ("node", "nic", "link", "switch")
#: A job interrupted this many times in a row without keeping any work can never progress (at
#: Llama 3's rates — M = 3.1 h, R = 180 s — one interruption in ~11 comes before any work is
#: kept, so 1,000 in a row never happens in a sensible model): the run is refused, not spun.
STUCK_INTERRUPTIONS = 1000
#: Failure events in a row while no job runs, none starts and none arrives: the failures keep
#: the cluster too broken for any queued job, for good. That is about 20 years of simulated
#: time at Llama 3's rates on a 2,080-node cluster (0.56 failures and repairs an hour), 3–6 h at
#: the 1 h MTBF floor on 16,384 GPUs; reaching it costs ~10 s of wall time.
IDLE_EVENT_LIMIT = 100_000


@dataclass(frozen=True)
class JobFailureInfo:
    """What the failure model needs to know of a job beyond the trace: its checkpoint size in
    bytes (None: unknown) and its step time (for ``steps:K``; None: not an LLM job)."""

    ckpt_bytes: float | None = None
    step_seconds: float | None = None
    policy: str = ""  # the job's own checkpoint policy ("" = the run's)
    restart: float = math.nan  # the job's own fixed restart overhead (NaN = the run's rule)


@dataclass
class FailureModel:
    """The run's failure configuration; :meth:`new_run` makes the state of one replay."""

    spec: FailureSpec
    checkpoint: CheckpointSpec = field(default_factory=CheckpointSpec)
    reaction: Reaction = field(default_factory=Reaction)
    #: ``--restart-overhead`` when given: R fixed; None: detect + launch + load.
    restart_fixed: float | None = None
    seed: int = 0
    #: (jobs, job, allocation) → its checkpoint size, step time, policy (LLM jobs); None: none.
    job_info: Callable[[Any, int, Allocation], JobFailureInfo] | None = None
    #: Trace events as read (``trace=FILE``), and the file (for errors).
    trace_events: list[RawEvent] = field(default_factory=list)
    trace_source: str = ""
    #: Shrink: (jobs, job, GPUs per surviving node) → how many of those nodes it can run on.
    shrink_to: Callable[[Any, int, list[int]], int] | None = None

    def new_run(self, run: Any) -> FailureRun:
        return FailureRun(self, run)


@dataclass
class _Segment:
    """One run of a job between two restarts or resizes: its cycle and where it began."""

    start: float  # when work began (after the restart overhead)
    remaining: float  # work left then (everything before is checkpointed)
    cycle: Cycle


@dataclass
class FailureRecord:
    """What failures did, for jobs.csv and summary.json."""

    failures: np.ndarray  # interruptions per job
    restarts: np.ndarray  # restarts after an interruption
    lost_units: np.ndarray  # work units rolled back
    lost_gpu_seconds: np.ndarray  # GPU-seconds of the work rolled back
    ckpt_seconds: np.ndarray  # seconds standing still in checkpoints
    restart_seconds: np.ndarray  # seconds of restart overhead paid
    wait_seconds: np.ndarray  # seconds queued between an interruption and the restart
    ettr: np.ndarray  # useful training time / wall time from first start to end
    useful_seconds: np.ndarray
    by_category: list[Counter]  # per job
    events: list[tuple[float, str, str, int, int]]  # (time, class, category, node, job or -1)
    interruptions: Counter  # category → interruptions of jobs
    by_class: Counter  # class → interruptions of jobs
    component_failures: Counter  # class → failures, hitting a job or not
    gpu_seconds_lost: dict[str, float]  # rollback, checkpoint, restart, repair wait, spares idle
    reaction: str
    spares: int


class FailureRun:
    """The failure state of one replay (see the module docstring)."""

    def __init__(self, model: FailureModel, run: Any) -> None:
        self.m, self.e = model, run
        cluster, jobs = run.cluster, run.jobs
        self.cluster, self.jobs = cluster, jobs
        n_jobs, n_nodes = len(jobs), cluster.size
        spares = model.reaction.spares
        if spares >= n_nodes:
            raise InputError(
                f"'--failure-reaction': spares:{spares} would hold back every node of the "
                f"{n_nodes}-node cluster, leaving none for jobs (give K < {n_nodes})"
            )
        self.seed = model.seed
        spec = model.spec
        self.gpu_base = np.concatenate([[0], np.cumsum(cluster.num_gpus)[:-1]]).astype(np.int64)
        self.streams: list[ClassStream] = []
        for cls, process in spec.processes.items():
            if cls == "software":
                continue
            count = int(cluster.num_gpus.sum()) if cls == "gpu" else n_nodes
            self.streams.append(ClassStream(cls, process, count, self.seed))
        soft = spec.processes.get("software")
        self.software = SoftwareStream(soft, self.seed) if soft is not None else None
        self.window_end = 0.0
        self.queue: list[tuple[float, int, int, str, int, int]] = []  # failures in the window
        self.repairs: list[tuple[float, int, int, int]] = []  # (time, seq, node, gpu or -1)
        self.soft_heap: list[tuple[float, int, int, int]] = []  # (time, seq, job, version)
        self.seq = 0
        if model.trace_events:
            from schedlab.failures.trace import resolve

            events = resolve(
                model.trace_events, cluster.names, cluster.num_gpus, jobs.job_id, model.trace_source
            )
            self.trace = sorted(events, key=lambda ev: (ev.time, ev.order))
        else:
            self.trace = []
        self.trace_pos = 0
        # node state
        self.down = np.zeros(n_nodes, dtype=bool)  # whole node out (repair)
        self.down_gpus: set[tuple[int, int]] = set()  # single GPUs out (gpu_scope=gpu)
        self.spare: dict[int, float] = {}  # node → since when it is an idle spare
        self.lemon = np.zeros(n_nodes, dtype=bool)
        self.node_failures: dict[int, list[float]] = defaultdict(list)
        # per job
        self.segment: dict[int, _Segment] = {}
        self.restart_due = np.zeros(n_jobs, dtype=bool)
        self.interrupted_at = np.full(n_jobs, np.nan)
        self.soft_acc = np.zeros(n_jobs)  # GPU-seconds held since the last software failure
        self.soft_from = np.zeros(n_jobs)  # when the current holding began
        self.soft_next = np.full(n_jobs, np.nan)  # GPU-seconds to the next software failure
        self.soft_version = np.zeros(n_jobs, dtype=np.int64)
        self.full_size: dict[int, int] = {}  # shrunk job → GPUs it had before
        # Where each running job is: node → its position in the job's allocation, and the jobs on
        # each node (kept up to date at every start, stop and move, so a failure costs O(1)).
        self.pos: dict[int, dict[int, int]] = {}
        self.node_jobs: dict[int, set[int]] = defaultdict(set)
        self.failures = np.zeros(n_jobs, dtype=np.int64)
        self.restarts = np.zeros(n_jobs, dtype=np.int64)
        self.lost_units = np.zeros(n_jobs)
        self.lost_gpu_s = np.zeros(n_jobs)
        self.ckpt_s = np.zeros(n_jobs)
        self.restart_s = np.zeros(n_jobs)
        self.wait_s = np.zeros(n_jobs)
        self.by_category: list[Counter] = [Counter() for _ in range(n_jobs)]
        self.events: list[tuple[float, str, str, int, int]] = []
        self.interruptions: Counter = Counter()
        self.by_class: Counter = Counter()
        self.component: Counter = Counter()
        self.spare_idle_gpu_s = 0.0
        self.wait_gpu_s = 0.0
        self.rates = {cls: p.rate_per_s for cls, p in spec.processes.items()}
        # Guards against runs that failures would keep going for ever (see next_time and
        # _interrupt): the least work each job has had left after a rollback, the interruptions
        # since it last kept any, and the events in a row with no job running.
        self.least_kept = np.asarray(run.work, dtype=float).copy()
        self.no_progress = np.zeros(n_jobs, dtype=np.int64)
        self.idle_events = 0
        self.arrivals_seen = -1
        self._fill_spares(0.0)

    # -- the engine's questions ------------------------------------------------------------------
    def next_time(self) -> float:
        """When the next failure event is due; INF when none of them can change the run.

        Failures alone do not keep a run going: when no job runs and none is still to arrive,
        a failure can only take capacity away, so only a pending repair can let a queued job
        start — and only a job that fits in the cluster with every repair done and the spares
        held back. Otherwise the run ends as it would without failures (queued jobs that never
        fit stay unfinished). Events skipped this way still fire, at their own times, if the
        run goes on for another reason (:meth:`fire`)."""
        if self._cannot_matter():
            return INF
        return self._next_event()

    def _cannot_matter(self) -> bool:
        e = self.e
        if e.running or not e.pending or getattr(e, "external", False):
            return False
        if e.next_arrival < e.n_jobs:
            return False
        if all(self.lemon[node] for _, _, node, _ in self.repairs):
            return True  # nothing will come back
        usable = self._usable_gpus()
        gpus = self.jobs.num_gpus
        return all(int(gpus[job]) > usable for job in e.pending)

    def _usable_gpus(self) -> int:
        """GPUs the queued jobs could have at best: every node repaired (lemons stay out), the
        spares held back (counted as the smallest nodes, so that no job is given up too
        early)."""
        gpus = np.sort(self.cluster.num_gpus[~self.lemon].astype(np.int64))
        held = int(gpus[: self.m.reaction.spares].sum())
        return int(gpus.sum()) - held

    def _next_event(self) -> float:
        while not self.queue and self.streams and self.window_end < INF:
            self._generate()
            if self.queue:
                break
            if self.window_end > 1e12:
                break
        t = self.queue[0][0] if self.queue else INF
        if self.repairs:
            t = min(t, self.repairs[0][0])
        while self.soft_heap and self.soft_heap[0][3] != self.soft_version[self.soft_heap[0][2]]:
            heapq.heappop(self.soft_heap)
        if self.soft_heap:
            t = min(t, self.soft_heap[0][0])
        if self.trace_pos < len(self.trace):
            t = min(t, self.trace[self.trace_pos].time)
        return t

    def fire(self, now: float) -> int:
        """Apply every event due by ``now``, in time order (at one time: repairs first), each
        at its own time; returns how many there were. Events are due before ``now`` only after
        a stretch in which they could not matter (:meth:`next_time`), when no job ran."""
        count = 0
        while True:
            t = self._next_event()
            if t > now:
                break
            count += 1
            self._count_idle()
            if self.repairs and self.repairs[0][0] <= t:
                _, _, node, gpu = heapq.heappop(self.repairs)
                self._repaired(node, gpu, t)
            elif self.soft_heap and self.soft_heap[0][0] <= t:
                _, _, job, _ = heapq.heappop(self.soft_heap)
                self._software(job, t)
            elif self.trace_pos < len(self.trace) and self.trace[self.trace_pos].time <= t:
                ev = self.trace[self.trace_pos]
                self.trace_pos += 1
                self._traced(ev, t)
            else:
                _, _, inst, cls, k, _ = heapq.heappop(self.queue)
                self._component(cls, inst, k, t)
        self._fill_spares(now)
        return count

    def _count_idle(self) -> None:
        """Count failure events in a row while no job runs, starts or arrives; too many of them
        mean the failures keep every queued job from ever running (a run that would not end)."""
        e = self.e
        if e.running or e.next_arrival != self.arrivals_seen:
            self.arrivals_seen = e.next_arrival
            self.idle_events = 0
            return
        self.idle_events += 1
        if self.idle_events >= IDLE_EVENT_LIMIT:
            raise InputError(
                f"'--failures': {IDLE_EVENT_LIMIT:,} failure events in a row with no job running "
                f"(simulated time {e.now:,.0f} s, {len(e.pending)} queued): failures this "
                "frequent leave the cluster too broken for any queued job; give longer MTBFs or "
                "shorter repairs"
            )

    def started(self, job: int, now: float, restart: float) -> float:
        """A job (re)starts at ``now``: the restart overhead it pays (``R`` after a failure)."""
        if self.restart_due[job]:
            self.restart_due[job] = False
            restart = self._restart_seconds(job)
            self.restarts[job] += 1
            self.restart_s[job] += restart
            waited = now - self.interrupted_at[job]
            self.wait_s[job] += waited
            self.wait_gpu_s += waited * int(self.jobs.num_gpus[job])
        self.idle_events = 0
        self._track(job)
        self._begin(job, now + restart)
        self._software_arm(job, now)
        return restart

    def resized(self, job: int, now: float) -> None:
        self._end_segment(job, now)
        self._untrack(job)
        self._track(job)
        self._begin(job, float(self.e.rt.progress_from[job]))
        self._software_pause(job, now)
        self._software_arm(job, now)

    def stopped(self, job: int, now: float) -> None:
        self._end_segment(job, now)
        self._software_pause(job, now)
        self._untrack(job)
        self.full_size.pop(job, None)

    def _track(self, job: int) -> None:
        allocation = self.e.rt.allocation[job] or ()
        self.pos[job] = {node: i for i, (node, _) in enumerate(allocation)}
        for node, _ in allocation:
            self.node_jobs[node].add(job)

    def _untrack(self, job: int) -> None:
        for node in self.pos.pop(job, {}):
            self.node_jobs[node].discard(job)

    def _victims(self, node: int, gpu: int) -> list[int]:
        """Running jobs with GPUs on ``node`` (on its GPU ``gpu`` when ≥ 0), in job order."""
        jobs = sorted(self.node_jobs.get(node, ()))
        if gpu < 0:
            return jobs
        rt = self.e.rt
        return [j for j in jobs if gpu in rt.allocation[j][self.pos[j][node]][1]]

    def held_gpus(self) -> int:
        return 0

    # -- component events --------------------------------------------------------------------------
    def _generate(self) -> None:
        start, end = self.window_end, self.window_end + WINDOW
        for stream in self.streams:
            times, insts, ks = stream.until(end)
            code = CLASS_CODE[stream.cls]
            for t, i, k in zip(times.tolist(), insts.tolist(), ks.tolist(), strict=True):
                heapq.heappush(self.queue, (t, code, i, stream.cls, k, 0))
        self.window_end = end
        del start

    def _node_of(self, cls: str, inst: int) -> tuple[int, int]:
        if cls == "gpu":
            node = int(np.searchsorted(self.gpu_base, inst, side="right") - 1)
            return node, inst - int(self.gpu_base[node])
        return inst, -1

    def _component(self, cls: str, inst: int, k: int, now: float) -> None:
        node, gpu = self._node_of(cls, inst)
        whole = cls != "gpu" or self.m.spec.gpu_scope == "node"
        if self.down[node] or (not whole and (node, gpu) in self.down_gpus):
            return  # already out: nothing more can fail there
        category = draw_category(self.seed, cls, inst, k, self.m.spec.categories.get(cls))
        repair = self.m.spec.repair(cls)
        seconds = draw_repair(self.seed, cls, inst, k, repair.kind, repair.hours)
        self._fail_node(cls, category, node, gpu if not whole else -1, now, seconds)

    def _traced(self, ev: TraceEvent, now: float) -> None:
        if ev.component == "software":
            job = ev.job
            if self.e.rt.status[job] == 2:  # running
                self._interrupt(job, now, ev.category, "software", None)
            return
        node, gpu = ev.node, ev.gpu
        whole = ev.component != "gpu" or self.m.spec.gpu_scope == "node"
        if self.down[node] or (not whole and (node, gpu) in self.down_gpus):
            return
        seconds = ev.repair
        if not math.isfinite(seconds):
            repair = self.m.spec.repair(ev.component)
            seconds = draw_repair(
                self.seed, ev.component, node, ev.order, repair.kind, repair.hours
            )
        self._fail_node(ev.component, ev.category, node, gpu if not whole else -1, now, seconds)

    def _fail_node(
        self, cls: str, category: str, node: int, gpu: int, now: float, repair: float
    ) -> None:
        """Node ``node`` (or its GPU ``gpu`` ≥ 0) fails at ``now`` for ``repair`` seconds."""
        self.component[cls] += 1
        victims = self._victims(node, gpu)
        self.events.append((now, cls, category, node, victims[0] if victims else -1))
        if node in self.spare:
            self.spare_idle_gpu_s += (now - self.spare.pop(node)) * int(self.cluster.num_gpus[node])
            self.e.fail_unhold(node, ())
        for job in victims:
            self._interrupt(job, now, category, cls, node)
        gpus = () if gpu < 0 else (gpu,)
        if gpu < 0:
            self.down[node] = True
        else:
            self.down_gpus.add((node, gpu))
        self.e.fail_hold(node, gpus)
        self.seq += 1
        heapq.heappush(self.repairs, (now + repair, self.seq, node, gpu))
        lemons = self.m.reaction
        if lemons.lemon_failures:
            times = self.node_failures[node]
            times.append(now)
            window = lemons.lemon_window_h * 3600.0
            if sum(1 for t in times if t > now - window) >= lemons.lemon_failures:
                self.lemon[node] = True

    def _repaired(self, node: int, gpu: int, now: float) -> None:
        if gpu < 0:
            if self.lemon[node]:
                return  # drained for good
            self.down[node] = False
            self.e.fail_unhold(node, ())
        else:
            self.down_gpus.discard((node, gpu))
            self.e.fail_unhold(node, (gpu,))
        self._grow_back(now)

    # -- jobs --------------------------------------------------------------------------------------
    def _software(self, job: int, now: float) -> None:
        k = self.software.advance(job) if self.software is not None else 0
        weights = self.m.spec.categories.get("software")
        category = draw_category(self.seed, "software", job, k, weights)
        self.component["software"] += 1
        self.events.append((now, "software", category, -1, job))
        self._software_pause(job, now)
        self.soft_acc[job] = 0.0  # the threshold is used up: the next one starts from here
        self.soft_next[job] = np.nan
        self._interrupt(job, now, category, "software", None)

    def _interrupt(self, job: int, now: float, category: str, cls: str, node: int | None) -> None:
        """All of ``job``'s workers stop at ``now``; roll back and react."""
        e = self.e
        e.stop_progress(job, now)
        seg = self.segment.get(job)
        remaining = float(e.rt.remaining[job])
        if not self.jobs.checkpoint[job]:
            keep = float(e.work[job])
        elif seg is None:
            keep = remaining
        elif seg.cycle.none:
            keep = float(e.work[job])
        elif seg.cycle.free:
            keep = remaining
        else:
            elapsed = now - seg.start
            done = seg.remaining - remaining
            counted = seg.cycle.completed(elapsed) * seg.cycle.length
            keep = seg.remaining - (done * counted / elapsed if elapsed > 0 else 0.0)
        self._check_progress(job, keep)
        lost = max(0.0, keep - remaining)
        rate = float(e.rt.rate[job])
        gpus = int(e.rt.alloc_n[job])
        self.lost_units[job] += lost
        if rate > 0:
            self.lost_gpu_s[job] += lost / rate * gpus
        self.failures[job] += 1
        self.by_category[job][category] += 1
        self.interruptions[category] += 1
        self.by_class[cls] += 1
        self._end_segment(job, now)
        self._software_pause(job, now)
        allocation: Allocation = e.rt.allocation[job]
        moved = self._replacement(job, allocation, node)
        if moved is not None:
            restart = self._restart_seconds(job)
            self.restarts[job] += 1
            self.restart_s[job] += restart
            self._move(job, now, moved, restart, keep)
            self._begin(job, now + restart)
            self._software_arm(job, now)
            return
        self._untrack(job)
        self.restart_due[job] = True
        self.interrupted_at[job] = now
        e.fail_requeue(job, now, keep)

    def _check_progress(self, job: int, keep: float) -> None:
        """Refuse a run in which failures keep ``job`` from ever progressing: it was interrupted
        :data:`STUCK_INTERRUPTIONS` times in a row without keeping any work (its MTBF on its
        allocation is far below its restart plus one checkpoint interval)."""
        if keep < self.least_kept[job]:
            self.least_kept[job] = keep
            self.no_progress[job] = 0
            return
        self.no_progress[job] += 1
        if self.no_progress[job] < STUCK_INTERRUPTIONS:
            return
        gpus = int(self.e.rt.alloc_n[job])
        raise InputError(
            f"'--failures': job {self.jobs.job_id[job]} was interrupted {STUCK_INTERRUPTIONS:,} "
            f"times in a row without keeping any work (its MTBF on {gpus} GPUs is "
            f"{self.job_mtbf(job):,.4g} s, its restart {self._restart_seconds(job):,.4g} s): "
            "failures this frequent let it never progress; give longer MTBFs, a shorter "
            "restart or checkpoints"
        )

    def _replacement(self, job: int, allocation: Allocation, node: int | None):
        """Where the job restarts at once — ``(allocation, released, taken)`` — or None (back
        to the queue)."""
        if node is None:
            return allocation, (), ()  # software: restart where it is
        at = self.pos[job][node]
        lost = allocation[at]
        if self.m.reaction.spares:
            for spare in sorted(self.spare):
                if int(self.cluster.num_gpus[spare]) >= len(lost[1]):
                    since = self.spare.pop(spare)
                    self.spare_idle_gpu_s += (self.e.now - since) * int(
                        self.cluster.num_gpus[spare]
                    )
                    self.e.fail_unhold(spare, ())
                    entry = (spare, tuple(range(len(lost[1]))))
                    return (*allocation[:at], entry, *allocation[at + 1 :]), (lost,), (entry,)
        if self.m.reaction.shrink and len(allocation) > 1:
            rest = allocation[:at] + allocation[at + 1 :]
            keep = self._shrink_nodes(job, [len(g) for _, g in rest])
            if keep > 0:
                self.full_size.setdefault(job, int(self.e.rt.alloc_n[job]))
                return rest[:keep], (lost, *rest[keep:]), ()
        return None

    def _move(self, job: int, now: float, moved: tuple, delay: float, remaining: float) -> None:
        """Restart ``job`` at once where :meth:`_replacement` said, keeping the index current."""
        allocation, released, taken = moved
        self.e.fail_move(job, now, allocation, delay, remaining, released, taken)
        if not released and not taken:
            return
        pos = self.pos[job]
        if len(released) == 1 and len(taken) == 1:  # a spare took the failed node's place
            old, new = released[0][0], taken[0][0]
            pos[new] = pos.pop(old)
            self.node_jobs[old].discard(job)
            self.node_jobs[new].add(job)
            return
        self._untrack(job)
        self._track(job)

    def _shrink_nodes(self, job: int, counts: list[int]) -> int:
        """Nodes (a prefix of ``counts``) the job keeps when it shrinks: the most that run."""
        if self.m.shrink_to is not None:
            return self.m.shrink_to(self.jobs, job, counts)
        return len(counts)

    def _grow_back(self, now: float) -> None:
        """Shrunk jobs take back whole free nodes, up to the size they had (a re-plan)."""
        if not self.full_size:
            return
        for job in sorted(self.full_size):
            e = self.e
            if e.rt.status[job] != 2:
                continue
            want = self.full_size[job]
            have = int(e.rt.alloc_n[job])
            allocation = e.rt.allocation[job]
            mine = {n for n, _ in allocation}
            free = e.fail_free_nodes(exclude=mine | set(self.spare))
            extra: list[tuple[int, tuple[int, ...]]] = []
            for node in free:
                if have >= want:
                    break
                take = min(int(self.cluster.num_gpus[node]), want - have)
                extra.append((node, tuple(range(take))))
                have += take
            if not extra:
                continue
            grown = tuple(sorted((*allocation, *extra)))
            counts = [len(g) for _, g in grown]
            keep = self._shrink_nodes(job, counts)
            if keep <= len(allocation):
                continue
            grown = grown[:keep]
            e.stop_progress(job, now)
            self._end_segment(job, now)
            self._software_pause(job, now)
            delay = self._resize_seconds(job)
            taken = tuple(entry for entry in grown if entry[0] not in mine)
            self._move(job, now, (grown, (), taken), delay, float(e.rt.remaining[job]))
            self._begin(job, now + delay)
            self._software_arm(job, now)
            if int(e.rt.alloc_n[job]) >= want:
                del self.full_size[job]

    def _fill_spares(self, now: float) -> None:
        want = self.m.reaction.spares
        if len(self.spare) >= want:
            return
        for node in self.e.fail_free_nodes(exclude=set(self.spare), whole=True)[::-1]:
            if len(self.spare) >= want:
                break
            if self.down[node] or self.lemon[node]:
                continue
            self.spare[node] = now
            self.e.fail_hold(node, ())

    # -- segments, costs ---------------------------------------------------------------------------
    def _info(self, job: int) -> JobFailureInfo:
        allocation = self.e.rt.allocation[job]
        if self.m.job_info is None or allocation is None:
            return JobFailureInfo()
        return self.m.job_info(self.jobs, job, allocation)

    def _costs(self, job: int) -> Costs | None:
        allocation = self.e.rt.allocation[job] or ()
        gpus = int(self.e.rt.alloc_n[job]) or int(self.jobs.num_gpus[job])
        info = self._info(job)
        return costs(self.m.checkpoint, info.ckpt_bytes, gpus, max(len(allocation), 1))

    def job_mtbf(self, job: int) -> float:
        """``1/Σλ`` over the components of the job's allocation and its software (seconds)."""
        gpus = int(self.e.rt.alloc_n[job])
        nodes = len(self.e.rt.allocation[job] or ())
        rate = 0.0
        for cls, r in self.rates.items():
            if cls in ("gpu", "software"):
                rate += r * gpus
            else:
                rate += r * nodes
        return 1.0 / rate if rate > 0 else INF

    def _begin(self, job: int, start: float) -> None:
        info = self._info(job)
        spec = self.m.checkpoint
        if info.policy:
            own = parse_checkpoint(f"policy={info.policy}")
            spec = replace(spec, policy=own.policy, interval=own.interval, steps=own.steps)
        cyc = cycle(spec, self._costs(job), self.job_mtbf(job), info.step_seconds)
        self.segment[job] = _Segment(start, float(self.e.rt.remaining[job]), cyc)
        self.e.fail_scale_rate(job, cyc.rate_factor)

    def _end_segment(self, job: int, now: float) -> None:
        seg = self.segment.pop(job, None)
        if seg is not None:
            self.ckpt_s[job] += seg.cycle.blocked(now - seg.start)

    def _restart_seconds(self, job: int) -> float:
        if self.m.restart_fixed is not None:
            return self.m.restart_fixed
        own = self._info(job).restart
        if math.isfinite(own):
            return own
        c = self._costs(job)
        load = c.load if c is not None else 0.0
        return self.m.checkpoint.detect + self.m.checkpoint.launch + load

    def _resize_seconds(self, job: int) -> float:
        """A re-plan: one checkpoint (unless one just finished) and one restart (§2.2)."""
        c = self._costs(job)
        ckpt = c.sync if c is not None and math.isfinite(c.sync) else 0.0
        return ckpt + self._restart_seconds(job)

    # -- software failures (per job, ∝ GPUs held) -------------------------------------------
    def _software_arm(self, job: int, now: float) -> None:
        if self.software is None:
            return
        gpus = int(self.e.rt.alloc_n[job])
        if gpus <= 0:
            return
        if np.isnan(self.soft_next[job]):
            self.soft_next[job] = self.software.threshold(job)
        self.soft_from[job] = now
        self.soft_version[job] += 1
        at = now + (self.soft_next[job] - self.soft_acc[job]) / gpus
        self.seq += 1
        heapq.heappush(self.soft_heap, (at, self.seq, job, int(self.soft_version[job])))

    def _software_pause(self, job: int, now: float) -> None:
        if self.software is None:
            return
        self.soft_acc[job] += (now - self.soft_from[job]) * int(self.e.rt.alloc_n[job])
        self.soft_from[job] = now
        self.soft_version[job] += 1

    # -- the end -----------------------------------------------------------------------------------
    def finish(self, end: float) -> FailureRecord:
        e = self.e
        for job in list(self.segment):
            self._end_segment(job, end)
        for node, since in self.spare.items():
            self.spare_idle_gpu_s += (end - since) * int(self.cluster.num_gpus[node])
        n = len(self.jobs)
        useful = np.zeros(n)
        ettr = np.full(n, np.nan)
        ref = e.e.reference_rate
        for job in range(n):
            first = e.first_start[job]
            if not np.isfinite(first) or ref[job] <= 0:
                continue
            done = float(e.work[job] - e.rt.remaining[job])
            useful[job] = done / ref[job]
            stop = e.end_time[job] if np.isfinite(e.end_time[job]) else end
            if stop > first:
                ettr[job] = useful[job] / (stop - first)
        ckpt_gpu = float((self.ckpt_s * self.jobs.num_gpus).sum())
        restart_gpu = float((self.restart_s * self.jobs.num_gpus).sum())
        return FailureRecord(
            failures=self.failures,
            restarts=self.restarts,
            lost_units=self.lost_units,
            lost_gpu_seconds=self.lost_gpu_s,
            ckpt_seconds=self.ckpt_s,
            restart_seconds=self.restart_s,
            wait_seconds=self.wait_s,
            ettr=ettr,
            useful_seconds=useful,
            by_category=self.by_category,
            events=self.events,
            interruptions=self.interruptions,
            by_class=self.by_class,
            component_failures=self.component,
            gpu_seconds_lost={
                "rollback": float(self.lost_gpu_s.sum()),
                "checkpoint": ckpt_gpu,
                "restart": restart_gpu,
                "repair_wait": self.wait_gpu_s,
                "spares_idle": self.spare_idle_gpu_s,
            },
            reaction=self.m.reaction.label,
            spares=self.m.reaction.spares,
        )
