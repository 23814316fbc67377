"""Property tests of the replay engine under every ordering × placement × backfill.

Random small clusters and job lists; every decision a scheduler returns is recorded by a wrapping
policy and replayed here on a plain model of the cluster (which GPU holds which job), so that the
invariants are checked independently of the engine's own bookkeeping:

* no GPU is ever held by two jobs, and no job is put on a GPU its node does not have;
* the engine's time series agrees with the replayed occupancy, and never exceeds the cluster;
* no job starts before it arrives, and a job's GPU-model constraint is respected;
* every job is accounted for, and on a cluster where every job can run, every job completes;
* a completed job ran at least as long as its duration at full speed;
* the same seed gives identical per-job tables and time series.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.replay import ReplayConfig, ReplayEngine, ReplayRecord
from schedlab.experiments.replay_run import jobs_frame, timeseries_frame
from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import ANY_MODEL_MASK, model_index
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import (
    DONE,
    PENDING,
    REJECTED,
    RUNNING,
    Decision,
    Preempt,
    Reject,
    Resize,
    Snapshot,
    Start,
)
from schedlab.perf.models import TraceDuration
from schedlab.policies.placement.base import Placer, RunContext
from schedlab.policies.placement.gang import GangPlacer
from schedlab.policies.registry import ORDERINGS, make_placement, make_scheduler
from schedlab.policies.scheduler import ReplayContext, SchedulingPolicy
from schedlab.traces.cluster_spec import parse_cluster_spec

#: Every ordering by name, plus edf's preemptive variant as "edf-preemptive".
ORDERS = [*ORDERINGS, "edf-preemptive"]
PLACEMENTS = ("bestfit", "consolidate")
#: Preemptive orders never leave a blocked head, so backfill is refused for them.
PREEMPTIVE = {"srtf", "tiresias", "edf-preemptive"}
COMBOS = [
    (order, placement, backfill)
    for order, placement, backfill in itertools.product(ORDERS, PLACEMENTS, (False, True))
    if not (backfill and order in PREEMPTIVE)
]
MODELS = ("V100", "T4")
T4_SPEED = 0.5
SPEED = {model_index("T4"): T4_SPEED}
EPS = 1e-6


class Recording(SchedulingPolicy):
    """Delegates to a scheduler and keeps, per decision point, its time and decisions."""

    name = "recording"
    summary = "test wrapper"

    def __init__(self, inner: SchedulingPolicy) -> None:
        self.inner = inner
        self.calls: list[tuple[float, list[Decision]]] = []

    def reset(self, ctx: ReplayContext) -> None:
        self.calls = []
        self.inner.reset(ctx)

    def decide(self, snap: Snapshot) -> list[Decision]:
        decisions = self.inner.decide(snap)
        self.calls.append((snap.now, list(decisions)))
        return decisions

    def next_wakeup(self, snap: Snapshot) -> float:
        return self.inner.next_wakeup(snap)

    def describe(self) -> str:
        return self.inner.describe()


@dataclass(frozen=True)
class Case:
    spec: str
    jobs: JobTable
    restart_overhead: float
    seed: int


@st.composite
def cases(draw: st.DrawFn) -> Case:
    nodes = draw(
        st.lists(
            st.tuples(st.integers(1, 8), st.sampled_from(MODELS)),
            min_size=1,
            max_size=4,
        )
    )
    spec = "+".join(f"1x{g}:{m}" for g, m in nodes)
    total = sum(g for g, _ in nodes)
    present = sorted({m for _, m in nodes})
    n = draw(st.integers(0, 30))
    submit = draw(st.lists(st.integers(0, 2000), min_size=n, max_size=n))
    gpus = draw(st.lists(st.integers(1, min(8, total)), min_size=n, max_size=n))
    duration = draw(
        st.lists(
            st.one_of(st.integers(1, 1000).map(float), st.floats(1.0, 1000.0)),
            min_size=n,
            max_size=n,
        )
    )
    deadline = [
        s + draw(st.one_of(st.just(math.nan), st.integers(1, 5000).map(float))) for s in submit
    ]
    masks = [
        draw(st.sampled_from([ANY_MODEL_MASK, *(1 << model_index(m) for m in present)]))
        for _ in range(n)
    ]
    jobs = JobTable.from_columns(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=submit,
        num_gpus=gpus,
        duration=duration,
        deadline=deadline,
        gpu_model_mask=masks,
    )
    overhead = draw(st.sampled_from([0.0, 0.0, 5.0]))
    return Case(spec, jobs, overhead, draw(st.integers(0, 3)))


def runnable_alone(cluster: Cluster, jobs: JobTable) -> np.ndarray:
    """Whether each job can be placed on the empty cluster (feasibility does not depend on the
    placement policy: the gang placer's last resort takes any free GPUs of allowed models)."""
    rng = np.random.default_rng(0)
    placer = GangPlacer(
        Placer(make_placement("bestfit"), RunContext(cluster, None, rng), np.arange(cluster.size))  # type: ignore[arg-type]
    )
    empty = cluster.new_state()
    return np.array(
        [
            placer.place(int(jobs.num_gpus[i]), 0, 0, int(jobs.gpu_model_mask[i]), empty)
            is not None
            for i in range(len(jobs))
        ],
        dtype=bool,
    )


class Runaway(AssertionError):
    pass


def stop_runaways() -> Callable[[int, int], None]:
    """A progress callback that fails a replay past 4096 decision points (none of these small
    cases needs that many): the engine calls it every 4096 decision points and once at the end,
    so a second call means a runaway, and failing beats hanging the test run."""
    calls = 0

    def progress(arrived: int, total: int) -> None:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise Runaway(f"more than 4096 decision points ({arrived}/{total} jobs arrived)")

    return progress


def replay(
    case: Case, order: str, placement: str, backfill: bool
) -> tuple[ReplayRecord, Recording]:
    name, _, variant = order.partition("-")
    params = {"preemptive": "true"} if variant == "preemptive" else None
    policy, placement_policy = make_scheduler(name, placement, backfill, params)
    recording = Recording(policy)
    engine = ReplayEngine(
        parse_cluster_spec(case.spec),
        case.jobs,
        recording,
        placement_policy,
        TraceDuration(SPEED),
        ReplayConfig(seed=case.seed, restart_overhead=case.restart_overhead),
    )
    return engine.run(stop_runaways()), recording


def check_invariants(case: Case, record: ReplayRecord, recording: Recording, label: str) -> None:
    cluster = record.cluster
    jobs = record.jobs  # submit order: decisions index these
    n = len(jobs)
    total = cluster.total_gpus
    submit = jobs.submit_time
    node_bit = np.left_shift(1, cluster.model)

    # -- replay the decisions on a plain occupancy model ------------------------------------
    holder: dict[tuple[int, int], int] = {}  # (node, gpu) → job
    held: dict[int, list[tuple[int, int]]] = {}  # job → its GPUs
    state = np.zeros(n, dtype=np.int8)  # 0 future / 1 pending / 2 running / 3 done / 4 rejected
    ever_started = np.zeros(n, dtype=bool)

    def take(job: int, allocation: tuple, now: float) -> None:
        slots = [(int(node), int(g)) for node, gpus in allocation for g in gpus]
        assert len(slots) == len(set(slots)), f"{label}: job {job} got a GPU twice"
        for node, g in slots:
            assert 0 <= node < cluster.size and 0 <= g < cluster.num_gpus[node], (
                f"{label}: job {job} on a GPU that does not exist: {(node, g)}"
            )
            assert (node, g) not in holder, (
                f"{label}: at {now} job {job} put on GPU {(node, g)} held by {holder[(node, g)]}"
            )
            assert jobs.gpu_model_mask[job] & node_bit[node], (
                f"{label}: job {job} on a banned model"
            )
            holder[(node, g)] = job
        held[job] = slots

    def release(job: int) -> None:
        for slot in held.pop(job):
            del holder[slot]

    assert len(recording.calls) == len(record.ts_time) == record.decision_points, label
    for k, (now, decisions) in enumerate(recording.calls):
        assert record.ts_time[k] == now
        assert k == 0 or now > recording.calls[k - 1][0], f"{label}: time went back or stood still"
        for job in np.flatnonzero((state == 0) & (submit <= now)):
            state[job] = PENDING
        for job in [j for j in held if record.end_time[j] == now]:
            release(job)
            state[job] = DONE
        for d in decisions:
            if isinstance(d, Reject):
                assert state[d.job] == PENDING, label
                state[d.job] = REJECTED
            elif isinstance(d, Preempt):
                assert state[d.job] == RUNNING, label
                release(d.job)
                state[d.job] = PENDING
        for d in decisions:
            if isinstance(d, Resize):
                assert state[d.job] == RUNNING, label
                release(d.job)
                take(d.job, d.allocation, now)
        for d in decisions:
            if isinstance(d, Start):
                assert state[d.job] == PENDING, f"{label}: started job {d.job} not pending"
                assert now >= submit[d.job], f"{label}: job {d.job} started before it arrived"
                take(d.job, d.allocation, now)
                state[d.job] = RUNNING
                if not ever_started[d.job]:
                    assert record.first_start[d.job] == now, label
                    ever_started[d.job] = True
        busy = len(holder)
        assert busy <= total, f"{label}: {busy} GPUs busy of {total} at {now}"
        assert record.ts_busy[k] == busy, f"{label}: ts_busy {record.ts_busy[k]} != {busy}"
        assert record.ts_running[k] == len(held), label
        assert record.ts_queue[k] == int((state == PENDING).sum()), label

    # -- the record agrees with the replayed states -----------------------------------------
    assert np.all((record.ts_busy >= 0) & (record.ts_busy <= total)), label
    final = np.where(state == 0, PENDING, state)  # never-arrived cannot happen without `until`
    np.testing.assert_array_equal(record.status, final, err_msg=label)
    done = record.status == DONE
    rejected = record.status == REJECTED
    unfinished = (record.status == PENDING) | (record.status == RUNNING)
    assert int(done.sum() + rejected.sum() + unfinished.sum()) == n, label
    # Exactly the jobs that need more GPUs than the cluster has of their allowed models are
    # rejected (on arrival); no other job is ever rejected.
    allowed_gpus = np.array(
        [
            int(
                cluster.num_gpus[
                    (cluster.model >= 0) & (((1 << np.maximum(cluster.model, 0)) & m) != 0)
                ].sum()
            )
            for m in jobs.gpu_model_mask.tolist()
        ]
    )
    np.testing.assert_array_equal(rejected, jobs.num_gpus > allowed_gpus, err_msg=label)
    started = ~np.isnan(record.first_start)
    assert np.all(record.first_start[started] >= submit[started]), label
    assert np.all(ever_started == started), label

    # -- completion and run time -------------------------------------------------------------
    can_run = runnable_alone(cluster, jobs)
    if can_run.all():
        assert done.all(), f"{label}: unfinished {jobs.job_id[~done].tolist()}"
    assert not (done & ~can_run).any(), label
    ran = record.end_time[done] - record.first_start[done]
    dur = jobs.duration[done]
    assert np.all(ran >= dur * (1 - EPS)), f"{label}: a job ran shorter than its duration"
    # every completion happened at a decision point
    assert set(record.end_time[done].tolist()) <= set(record.ts_time.tolist()), label
    # GPU time held is at least the work at full speed on the requested GPUs.
    assert np.all(record.gpu_seconds[done] >= dur * jobs.num_gpus[done] * (1 - EPS)), label
    if case.restart_overhead == 0:
        # Without restart overheads, a job never preempted ran for duration/speed exactly on the
        # models it got, so at most duration / T4_SPEED.
        never = done & (record.preemptions == 0)
        span = record.end_time[never] - record.first_start[never]
        assert np.all(span <= jobs.duration[never] / T4_SPEED * (1 + EPS)), label


settings_ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@settings_
@given(case=cases())
def test_invariants_for_every_ordering_placement_and_backfill(case: Case) -> None:
    for order, placement, backfill in COMBOS:
        label = f"{order}/{placement}/{'backfill' if backfill else 'plain'} on {case.spec}"
        record, recording = replay(case, order, placement, backfill)
        check_invariants(case, record, recording, label)


@settings(max_examples=15, deadline=None)
@given(case=cases(), combo=st.sampled_from(COMBOS))
def test_same_seed_gives_identical_tables(case: Case, combo: tuple[str, str, bool]) -> None:
    first, _ = replay(case, *combo)
    second, _ = replay(case, *combo)
    pd.testing.assert_frame_equal(jobs_frame(first), jobs_frame(second), check_exact=True)
    pd.testing.assert_frame_equal(
        timeseries_frame(first), timeseries_frame(second), check_exact=True
    )
    a = jobs_frame(first).to_csv(index=False, float_format="%.6f")
    b = jobs_frame(second).to_csv(index=False, float_format="%.6f")
    assert a == b


def replay_direct(case: Case, order: str, placement: str, backfill: bool) -> ReplayRecord:
    """As :func:`replay`, the scheduler given to the engine itself (no wrapper), so that the
    engine may skip the calls it declares needless (``idle_without_queue``, ``never_wakes``)."""
    name, _, variant = order.partition("-")
    params = {"preemptive": "true"} if variant == "preemptive" else None
    policy, placement_policy = make_scheduler(name, placement, backfill, params)
    engine = ReplayEngine(
        parse_cluster_spec(case.spec),
        case.jobs,
        policy,
        placement_policy,
        TraceDuration(SPEED),
        ReplayConfig(seed=case.seed, restart_overhead=case.restart_overhead),
    )
    return engine.run(stop_runaways())


def test_the_plain_orderings_declare_what_the_engine_may_skip() -> None:
    fifo, _ = make_scheduler("fifo", "bestfit", False, None)
    tiresias, _ = make_scheduler("tiresias", "bestfit", False, None)
    assert fifo.idle_without_queue and fifo.never_wakes
    assert not tiresias.idle_without_queue and not tiresias.never_wakes  # it wakes at thresholds
    assert tiresias.quiet_without_queue  # but decides nothing with an empty queue
    assert not Recording(fifo).idle_without_queue  # a wrapper promises nothing
    assert not Recording(tiresias).quiet_without_queue


@settings(max_examples=30, deadline=None)
@given(case=cases(), combo=st.sampled_from(COMBOS))
def test_skipping_the_calls_a_policy_declares_needless_changes_nothing(
    case: Case, combo: tuple[str, str, bool]
) -> None:
    """The engine skips asking a plain ordering to decide at a point with an empty queue (and
    for its wake-up when it never wakes; Tiresias's still asked): the run is the same as one
    that asks every time (the wrapper)."""
    asked, recording = replay(case, *combo)
    assert len(recording.calls) == asked.decision_points  # the wrapper was asked at every one
    skipped = replay_direct(case, *combo)
    assert skipped.decision_points == asked.decision_points
    pd.testing.assert_frame_equal(jobs_frame(asked), jobs_frame(skipped), check_exact=True)
    pd.testing.assert_frame_equal(
        timeseries_frame(asked), timeseries_frame(skipped), check_exact=True
    )


@settings(max_examples=60, deadline=None)
@given(
    case=cases(),
    order=st.sampled_from(["fifo", "sjf", "edf"]),
    placement=st.sampled_from(["bestfit", "random", "consolidate"]),
    backfill=st.booleans(),
)
def test_a_lone_arrival_to_an_empty_queue_is_decided_as_the_queue_walk_decides(
    case: Case, order: str, placement: str, backfill: bool
) -> None:
    """The shortcut for one arrival to an empty queue gives the run the full walk gives, down to
    the random placement's draws (it places exactly as often)."""

    asked: dict[bool, list[int]] = {False: [], True: []}  # the jobs placed, in order

    def run(shortcut: bool) -> ReplayRecord:
        policy, placement_policy = make_scheduler(order, placement, backfill, None)
        if not shortcut:
            policy._lone_arrival = lambda snap, job: None  # type: ignore[attr-defined]
        place = policy._place  # type: ignore[attr-defined]

        def spy(job, state):  # type: ignore[no-untyped-def]
            asked[shortcut].append(job)
            return place(job, state)

        policy._place = spy  # type: ignore[attr-defined]
        engine = ReplayEngine(
            parse_cluster_spec(case.spec),
            case.jobs,
            policy,
            placement_policy,
            TraceDuration(SPEED),
            ReplayConfig(seed=case.seed, restart_overhead=case.restart_overhead),
        )
        return engine.run(stop_runaways())

    walked, short = run(False), run(True)
    assert asked[True] == asked[False]
    pd.testing.assert_frame_equal(jobs_frame(walked), jobs_frame(short), check_exact=True)
    pd.testing.assert_frame_equal(
        timeseries_frame(walked), timeseries_frame(short), check_exact=True
    )


@settings(max_examples=40, deadline=None)
@given(
    case=cases(),
    order=st.sampled_from(["tiresias", "srtf", "edf-preemptive"]),
    placement=st.sampled_from(["bestfit", "random", "consolidate"]),
)
def test_starts_without_victims_are_the_general_walks(
    case: Case, order: str, placement: str
) -> None:
    """A preemptive ordering with nothing to preempt places its wanted jobs on the live state
    until a second needs a copy: the same run, and the same placements asked, as planning them
    all on a copy from the start (the general walk)."""
    from schedlab.policies.ordering.queue_scheduler import copy_state, take

    asked: dict[bool, list[int]] = {False: [], True: []}

    def run(shortcut: bool) -> ReplayRecord:
        name, _, variant = order.partition("-")
        params = {"preemptive": "true"} if variant == "preemptive" else None
        policy, placement_policy = make_scheduler(name, placement, False, params)
        place = policy._place  # type: ignore[attr-defined]

        def spy(job, state):  # type: ignore[no-untyped-def]
            asked[shortcut].append(job)
            return place(job, state)

        policy._place = spy  # type: ignore[attr-defined]
        if not shortcut:

            def on_a_copy(snap, to_start):  # type: ignore[no-untyped-def]
                scratch, free, starts = copy_state(snap.state), snap.free_gpus, []
                for job in to_start:
                    need = policy._gpus[job]  # type: ignore[attr-defined]
                    alloc, plan = (
                        policy._place_planned(job, scratch)  # type: ignore[attr-defined]
                        if free >= need
                        else (None, None)
                    )
                    if alloc is not None:
                        cpu, mem = policy._cpu[job], policy._mem[job]  # type: ignore[attr-defined]
                        take(scratch, alloc, cpu, mem, job, plan)
                        free -= need
                        starts.append(Start(job, alloc, plan))
                return starts

            policy._start_in_rank = on_a_copy  # type: ignore[attr-defined]
        engine = ReplayEngine(
            parse_cluster_spec(case.spec),
            case.jobs,
            policy,
            placement_policy,
            TraceDuration(SPEED),
            ReplayConfig(seed=case.seed, restart_overhead=case.restart_overhead),
        )
        return engine.run(stop_runaways())

    general, short = run(False), run(True)
    assert asked[True] == asked[False]
    pd.testing.assert_frame_equal(jobs_frame(general), jobs_frame(short), check_exact=True)
    pd.testing.assert_frame_equal(
        timeseries_frame(general), timeseries_frame(short), check_exact=True
    )
