"""Overheads charged to many jobs at once (a round-based policy's every round) are applied in
one numpy pass; the run must be exactly the run of the same overheads charged one by one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.replay import PolicyError, ReplayConfig, ReplayEngine, ReplayRecord, _Run
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import Decision, Overhead, Overheads, Snapshot, Start, one_per_job
from schedlab.perf.models import TraceDuration
from schedlab.policies.registry import make_placement, make_scheduler
from schedlab.policies.scheduler import ReplayContext, SchedulingPolicy
from schedlab.traces.cluster_spec import parse_cluster_spec


class Rounds(SchedulingPolicy):
    """fifo, asked every ``period`` seconds while anything runs, charging every running job an
    overhead (a share ``pauses`` of the period) at every call (``twice``: the first job twice)."""

    name = "rounds"
    summary = "test policy"

    def __init__(
        self, period: float, pauses: list[float], twice: bool = False, grouped: bool = False
    ) -> None:
        self.inner, _ = make_scheduler("fifo", "bestfit", False)
        self.period, self.pauses, self.twice = period, pauses, twice
        self.grouped = grouped  # the running jobs' charges as one Overheads
        self.calls = 0

    def reset(self, ctx: ReplayContext) -> None:
        self.inner.reset(ctx)
        self.calls = 0

    def decide(self, snap: Snapshot) -> list[Decision]:
        self.calls += 1
        running = snap.running().tolist()
        pauses = self.pauses
        charged: list[Decision] = [
            Overhead(job, self.period * pauses[(job + self.calls) % len(pauses)]) for job in running
        ]
        if self.grouped:
            charged = [Overheads(tuple(running), tuple(d.seconds for d in charged))]  # type: ignore[union-attr]
        if self.twice and running:
            charged.append(Overhead(running[0], self.period * pauses[self.calls % len(pauses)] / 4))
        return self.inner.decide(snap) + charged

    def next_wakeup(self, snap: Snapshot) -> float:
        return snap.now + self.period if len(snap.running_set) else float("inf")

    def describe(self) -> str:
        return "rounds"


def replay(jobs: JobTable, policy: Rounds, restart: float) -> ReplayRecord:
    engine = ReplayEngine(
        parse_cluster_spec("3x4:V100"),
        jobs,
        policy,
        make_placement("bestfit"),
        TraceDuration(),
        ReplayConfig(restart_overhead=restart, until=1e6),
    )
    return engine.run()


def one_by_one(self: _Run, overheads: list[Overhead], now: float) -> None:
    for d in overheads:
        self.charge_one(d.job, d.seconds, now)


FIELDS = ("status", "first_start", "end_time", "gpu_seconds", "ts_time", "ts_queue", "ts_busy")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(
            st.floats(0, 500, allow_nan=False),  # submit
            st.sampled_from([1, 1, 1, 2]),  # GPUs
            st.floats(1, 3000, allow_nan=False),  # duration
        ),
        min_size=10,
        max_size=30,
    ),
    pauses=st.lists(st.floats(0, 0.5, allow_nan=False), min_size=1, max_size=5),
    period=st.floats(10, 400, allow_nan=False),
    twice=st.booleans(),
)
def test_a_batch_of_overheads_is_the_same_run_as_the_overheads_one_by_one(
    rows: list[tuple[float, int, float]], pauses: list[float], period: float, twice: bool
) -> None:
    jobs = JobTable.from_columns(
        job_id=[f"j{i}" for i in range(len(rows))],
        submit_time=[r[0] for r in rows],
        num_gpus=[r[1] for r in rows],
        duration=[r[2] for r in rows],
        checkpoint=[True] * len(rows),
    )
    batched = replay(jobs, Rounds(period, pauses, twice), restart=5.0)
    grouped = replay(jobs, Rounds(period, pauses, twice, grouped=True), restart=5.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_Run, "charge", one_by_one)
        single = replay(jobs, Rounds(period, pauses, twice), restart=5.0)
    for run in (batched, grouped):
        for name in FIELDS:
            np.testing.assert_array_equal(getattr(run, name), getattr(single, name), err_msg=name)
        assert run.events == single.events
        assert run.decision_points == single.decision_points


@pytest.mark.parametrize("grouped", [False, True])
def test_nine_jobs_charged_in_one_batch_by_hand(grouped: bool) -> None:
    # Nine 1-GPU jobs of 100 s arrive at 0 on 12 GPUs; at t=0 each is charged 10 s, so each ends
    # at 110 s; one batch (nine charges, or one Overheads naming the nine) takes the numpy path.
    jobs = JobTable.from_columns(
        job_id=[f"j{i}" for i in range(9)],
        submit_time=[0.0] * 9,
        num_gpus=[1] * 9,
        duration=[100.0] * 9,
    )

    class Once(Rounds):
        def decide(self, snap: Snapshot) -> list[Decision]:
            starts = self.inner.decide(snap)
            if snap.now != 0:
                return starts
            if grouped:
                return [*starts, Overheads(tuple(d.job for d in starts), (10.0,) * len(starts))]
            return starts + [Overhead(d.job, 10.0) for d in starts]

    record = replay(jobs, Once(1e9, [0.0]), restart=0.0)
    assert record.end_time.tolist() == [110.0] * 9
    assert record.gpu_seconds.tolist() == [110.0] * 9


def test_an_overhead_on_a_job_that_is_not_running_is_refused_in_a_batch() -> None:
    jobs = JobTable.from_columns(
        job_id=[f"j{i}" for i in range(10)],
        submit_time=[0.0] * 9 + [50.0],
        num_gpus=[1] * 10,
        duration=[100.0] * 10,
    )

    class Wrong(Rounds):
        def decide(self, snap: Snapshot) -> list[Decision]:
            starts = self.inner.decide(snap)
            charged = [Overhead(job, 1.0) for job in range(9)] + [Overhead(9, 1.0)]
            return starts + charged if snap.now == 0 else starts

    with pytest.raises(PolicyError, match="charged an overhead to job 9, which is not running"):
        replay(jobs, Wrong(1e9, [0.0]), restart=0.0)


@pytest.mark.parametrize(
    ("charged", "message"),
    [
        (Overheads((0, 1), (1.0,)), "charged 2 job\\(s\\) 1 overhead\\(s\\) in one Overheads"),
        (Overheads((0, 1), (1.0, float("nan"))), "charged job 1 nan s of overhead"),
        (Overheads((0, 1), (1.0, -2.0)), "charged job 1 -2.0 s of overhead"),
        (Overheads((0, "b"), (1.0, 1.0)), "charged an overhead to 'b', not a job"),  # type: ignore[arg-type]
        (Overheads(5, 1.0), "its jobs and seconds must be sequences"),  # type: ignore[arg-type]
    ],
)
def test_a_wrong_overheads_decision_is_named(charged: Overheads, message: str) -> None:
    jobs = JobTable.from_columns(
        job_id=["a", "b"], submit_time=[0.0, 0.0], num_gpus=[1, 1], duration=[100.0, 100.0]
    )

    class Wrong(Rounds):
        def decide(self, snap: Snapshot) -> list[Decision]:
            starts = self.inner.decide(snap)
            return [*starts, charged] if snap.now == 0 else starts

    with pytest.raises(PolicyError, match=message):
        replay(jobs, Wrong(1e9, [0.0]), restart=0.0)


def test_the_live_engines_read_an_overheads_as_one_overhead_per_job() -> None:
    start = Start(3, ((0, (0,)),))
    decisions: list[Decision] = [start, Overheads((1, 2), (5.0, 0.0)), Overhead(4, 1.0)]
    assert one_per_job(decisions) == [
        start,
        Overhead(1, 5.0),
        Overhead(2, 0.0),
        Overhead(4, 1.0),
    ]
    plain: list[Decision] = [start, Overhead(4, 1.0)]
    assert one_per_job(plain) is plain
