"""The replay engine itself: perf models, gang placement, model constraints, decision validation,
resizes, rejections and the time series, each on a case small enough to compute by hand."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from schedlab.engines.replay import PolicyError, ReplayConfig, ReplayEngine, ReplayRecord
from schedlab.experiments.replay_run import jobs_frame
from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import ANY_MODEL_MASK, model_index, spec_mask
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import (
    DONE,
    REJECTED,
    RUNNING,
    Allocation,
    Decision,
    Preempt,
    Reject,
    Resize,
    Snapshot,
    Start,
)
from schedlab.perf.models import (
    PerfModel,
    ThroughputTable,
    TraceDuration,
    interpolate,
    read_throughput_dir,
)
from schedlab.policies.registry import make_placement, make_scheduler
from schedlab.policies.scheduler import ReplayContext, SchedulingPolicy
from schedlab.traces.cluster_spec import parse_cluster_spec

INF = math.inf


def make_jobs(rows: Sequence[tuple], **extra: Sequence[object]) -> JobTable:
    """Jobs from ``(job_id, submit_time, num_gpus, duration)`` rows plus optional columns."""
    return JobTable.from_columns(
        job_id=[r[0] for r in rows],
        submit_time=[r[1] for r in rows],
        num_gpus=[r[2] for r in rows],
        duration=[r[3] for r in rows],
        **extra,  # type: ignore[arg-type]
    )


class Recording(SchedulingPolicy):
    """Delegates to another policy and keeps every (time, decision) it returns."""

    name = "recording"
    summary = "test wrapper"

    def __init__(self, inner: SchedulingPolicy) -> None:
        self.inner = inner
        self.log: list[tuple[float, Decision]] = []

    def reset(self, ctx: ReplayContext) -> None:
        self.inner.reset(ctx)

    def decide(self, snap: Snapshot) -> list[Decision]:
        decisions = self.inner.decide(snap)
        self.log += [(snap.now, d) for d in decisions]
        return decisions

    def next_wakeup(self, snap: Snapshot) -> float:
        return self.inner.next_wakeup(snap)

    def describe(self) -> str:
        return self.inner.describe()

    def starts(self) -> dict[int, list[tuple[float, Allocation]]]:
        out: dict[int, list[tuple[float, Allocation]]] = {}
        for t, d in self.log:
            if isinstance(d, Start):
                out.setdefault(d.job, []).append((t, d.allocation))
        return out


class Scripted(SchedulingPolicy):
    """Returns fixed decisions at fixed times (job indices are in submit order) and asks to be
    woken at each scripted time."""

    name = "scripted"
    summary = "test policy"
    elastic = True  # the scripts run jobs on other sizes than they ask for

    def __init__(self, script: Mapping[float, Sequence[Decision]]) -> None:
        self.script = {float(t): list(d) for t, d in script.items()}
        self.seen: list[float] = []

    def decide(self, snap: Snapshot) -> list[Decision]:
        self.seen.append(snap.now)
        return list(self.script.get(snap.now, []))

    def next_wakeup(self, snap: Snapshot) -> float:
        return min((t for t in self.script if t > snap.now), default=INF)


def run(
    cluster: Cluster | str,
    jobs: JobTable,
    policy: SchedulingPolicy,
    *,
    placement: str = "bestfit",
    perf: PerfModel | None = None,
    **config: float,
) -> ReplayRecord:
    if isinstance(cluster, str):
        cluster = parse_cluster_spec(cluster)
    engine = ReplayEngine(
        cluster,
        jobs,
        policy,
        make_placement(placement),
        perf if perf is not None else TraceDuration(),
        ReplayConfig(**config),  # type: ignore[arg-type]
    )
    return engine.run()


def queue(order: str = "fifo", placement: str = "bestfit", backfill: bool = False) -> Recording:
    policy, _ = make_scheduler(order, placement, backfill)
    return Recording(policy)


def by_id(record: ReplayRecord) -> dict[str, int]:
    return {str(j): i for i, j in enumerate(record.jobs.job_id)}


def on(node: int, *gpus: int) -> Allocation:
    return ((node, tuple(gpus)),)


# -- perf models -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("gpus", "end"), [(1, 200.0), (2, 100.0), (4, 50.0)])
def test_linear_scaling_on_another_gpu_count(gpus: int, end: float) -> None:
    # A 2-GPU job of 100 s: on 1 GPU it progresses at half speed (200 s), on 4 at double (50 s).
    jobs = make_jobs([("a", 0, 2, 100)])
    policy = Scripted({0: [Start(0, on(0, *range(gpus)))]})
    rec = run("1x4:V100", jobs, policy)
    assert rec.first_start[0] == 0
    assert rec.end_time[0] == pytest.approx(end)
    assert rec.gpu_seconds[0] == pytest.approx(gpus * end)
    # The oracle run time is at the requested size, whatever the policy did.
    assert rec.reference_seconds[0] == pytest.approx(100.0)


def test_speed_factor_stretches_run_time_exactly() -> None:
    # On a T4 at a quarter of the reference speed a 100 s job takes 400 s.
    t4 = model_index("T4")
    jobs = make_jobs([("a", 0, 1, 100), ("b", 10, 1, 30)])
    rec = run("1x1:T4", jobs, queue(), perf=TraceDuration({t4: 0.25}))
    assert rec.end_time.tolist() == pytest.approx([400.0, 520.0])
    assert rec.first_start.tolist() == [0.0, 400.0]
    # Oracle durations stay at the reference speed.
    assert rec.reference_seconds.tolist() == pytest.approx([100.0, 30.0])


def test_speed_factor_per_model_and_slowest_gpu_paces_a_gang() -> None:
    # One V100 and one T4 (half speed). "v" may only use the V100, "t" only the T4; both 100 s.
    # "g" (2 GPUs, 100 s) arrives later and must span both nodes: it runs at the pace of its
    # slowest GPU (T4: 0.5), so 200 s.
    # v 0 → 100, t 0 → 200 (half speed), g starts when both are free (200) → 400.
    t4, v100 = model_index("T4"), model_index("V100")
    jobs = make_jobs(
        [("v", 0, 1, 100), ("t", 0, 1, 100), ("g", 1, 2, 100)],
        gpu_model_mask=[1 << v100, 1 << t4, ANY_MODEL_MASK],
    )
    rec = run("1x1:V100+1x1:T4", jobs, queue(), perf=TraceDuration({t4: 0.5}))
    ix = by_id(rec)
    assert rec.first_start[ix["v"]] == 0 and rec.end_time[ix["v"]] == pytest.approx(100)
    assert rec.first_start[ix["t"]] == 0 and rec.end_time[ix["t"]] == pytest.approx(200)
    assert rec.first_start[ix["g"]] == 200 and rec.end_time[ix["g"]] == pytest.approx(400)


THROUGHPUT = {("resnet", 64): {1: 2.0, 2: 3.0, 4: 5.0}}


def test_throughput_table_jobs_with_iterations() -> None:
    # "it" runs 600 iterations at 3 it/s on its 2 GPUs: 200 s. "dur" has no iterations and falls
    # back to its trace duration (50 s on 1 GPU). Both start at 0 on a 4-GPU node.
    jobs = make_jobs(
        [("it", 0, 2, math.nan), ("dur", 0, 1, 50)],
        iterations=[600, math.nan],
        model_name=["resnet", ""],
        batch_size=[64, 0],
    )
    perf = ThroughputTable(THROUGHPUT)
    rec = run("1x4:V100", jobs, queue(), perf=perf)
    ix = by_id(rec)
    assert rec.end_time[ix["it"]] == pytest.approx(200.0)
    assert rec.end_time[ix["dur"]] == pytest.approx(50.0)
    assert rec.reference_seconds[ix["it"]] == pytest.approx(200.0)
    assert (rec.status == DONE).all()


@pytest.mark.parametrize(("gpus", "end"), [(1, 300.0), (3, 150.0), (4, 120.0)])
def test_throughput_table_on_another_gpu_count(gpus: int, end: float) -> None:
    # 600 iterations: 2 it/s on 1 GPU → 300 s; 3 GPUs interpolate between 2 (3 it/s) and 4
    # (5 it/s) → 4 it/s → 150 s; 4 GPUs → 5 it/s → 120 s.
    jobs = make_jobs(
        [("it", 0, 2, math.nan)], iterations=[600], model_name=["resnet"], batch_size=[64]
    )
    policy = Scripted({0: [Start(0, on(0, *range(gpus)))]})
    rec = run("1x4:V100", jobs, policy, perf=ThroughputTable(THROUGHPUT))
    assert rec.end_time[0] == pytest.approx(end)
    assert interpolate(THROUGHPUT[("resnet", 64)], 3) == pytest.approx(4.0)


def test_throughput_tables_read_from_a_folder(tmp_path: Path) -> None:
    (tmp_path / "resnet.csv").write_text("global_batch_size,1,2,4\n64,2.0,3.0,5.0\n128,1,,\n")
    table = read_throughput_dir(tmp_path)
    assert table == {("resnet", 64): {1: 2.0, 2: 3.0, 4: 5.0}, ("resnet", 128): {1: 1.0}}
    jobs = JobTable.from_columns(
        job_id=["a"],
        submit_time=[0],
        num_gpus=[2],
        iterations=[600],
        model_name=["resnet"],
        batch_size=[64],
    )
    rec = run("1x4:V100", jobs, queue(), perf=ThroughputTable(table))
    assert rec.end_time[0] == pytest.approx(200.0)


def test_job_without_usable_work_is_refused_up_front() -> None:
    # Iterations with no table entry and no duration: nothing to replay.
    jobs = JobTable.from_columns(
        job_id=["a"], submit_time=[0], num_gpus=[1], iterations=[10], model_name=["bert"]
    )
    with pytest.raises(ValueError, match="'a' has no usable work"):
        ReplayEngine(
            parse_cluster_spec("1x1:V100"),
            jobs,
            queue(),
            make_placement("bestfit"),
            TraceDuration(),
        )


# -- gang jobs and placement -----------------------------------------------------------------------
def test_gang_job_spanning_nodes_waits_until_both_are_free() -> None:
    # Two nodes of 8. a (8 GPUs, 100 s) fills one node; g (16 GPUs) needs both and waits for a,
    # even though a whole node is free: g 100 → 150 on all 16 GPUs of both nodes.
    jobs = make_jobs([("a", 0, 8, 100), ("g", 1, 16, 50)])
    policy = queue()
    rec = run("2x8:V100", jobs, policy)
    assert rec.first_start.tolist() == [0.0, 100.0]
    assert rec.end_time.tolist() == [100.0, 150.0]
    ((t, alloc),) = policy.starts()[1]
    assert t == 100.0
    assert sorted(node for node, _ in alloc) == [0, 1]
    assert all(sorted(gpus) == list(range(8)) for _, gpus in alloc)
    # While g ran, all 16 GPUs were busy.
    at = rec.ts_time.tolist().index(100.0)
    assert rec.ts_busy[at] == 16


def test_gang_job_larger_than_a_node_takes_a_whole_node_and_a_remainder() -> None:
    # 12 GPUs on 2×8: one whole node (8) and 4 on the other, all started together.
    jobs = make_jobs([("g", 0, 12, 10)])
    policy = queue()
    rec = run("2x8:V100", jobs, policy)
    ((_, alloc),) = policy.starts()[0]
    assert sorted(len(gpus) for _, gpus in alloc) == [4, 8]
    assert rec.end_time[0] == 10.0
    assert rec.gpu_seconds[0] == pytest.approx(120.0)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_consolidate_puts_a_small_job_on_the_fullest_node_that_fits(seed: int) -> None:
    # Three nodes of 8. a (6 GPUs) lands on some node A (2 free left); b (4 GPUs) does not fit
    # there and lands on B (4 free left). c (2 GPUs) fits on A (2 free), B (4) and C (8):
    # consolidate picks the fullest, A — whatever the seed's tie order.
    jobs = make_jobs([("a", 0, 6, 1000), ("b", 1, 4, 1000), ("c", 2, 2, 1000)])
    policy = queue(placement="consolidate")
    run("3x8:V100", jobs, policy, placement="consolidate", seed=seed)
    starts = policy.starts()
    node = {j: starts[j][0][1][0][0] for j in range(3)}
    assert node[1] != node[0]
    assert node[2] == node[0]


def test_job_larger_than_the_cluster_is_rejected_and_blocks_nothing() -> None:
    # 8 GPUs asked on a 4-GPU cluster: it can never run, so it is rejected on arrival (t=1) with
    # the reason, and c behind it starts on arrival even under strict fifo: c 2 → 12.
    jobs = make_jobs([("a", 0, 1, 10), ("big", 1, 8, 10), ("c", 2, 1, 10)])
    for backfill in (False, True):
        rec = run("1x4:V100", jobs, queue(backfill=backfill))
        ix = by_id(rec)
        assert rec.status[ix["a"]] == DONE and rec.status[ix["c"]] == DONE
        assert rec.status[ix["big"]] == REJECTED
        assert "needs 8 GPUs; the cluster has 4" in rec.reject_reason[ix["big"]]
        assert math.isnan(rec.first_start[ix["big"]]) and math.isnan(rec.end_time[ix["big"]])
        assert rec.first_start[ix["c"]] == 2 and rec.end_time[ix["c"]] == 12
        frame = jobs_frame(rec)
        assert frame.set_index("job_id")["status"].to_dict() == {
            "a": "completed",
            "big": "rejected",
            "c": "completed",
        }


def test_impossible_job_does_not_delay_jobs_arriving_with_it() -> None:
    # big and b arrive together at t=0; big is rejected and b still starts at 0 under every order.
    jobs = make_jobs([("big", 0, 8, 10), ("b", 0, 1, 10)])
    for order in ("fifo", "sjf", "srtf", "tiresias", "edf"):
        rec = run("1x4:V100", jobs, queue(order=order))
        ix = by_id(rec)
        assert rec.status[ix["big"]] == REJECTED
        assert rec.first_start[ix["b"]] == 0 and rec.end_time[ix["b"]] == 10


# -- model constraints -----------------------------------------------------------------------------
def test_gpu_model_mask_is_respected() -> None:
    # A V100 node and a T4 node, 2 GPUs each. a and b may only use T4s: b waits for a although
    # the V100 node is idle. Both run on node 1 (the T4 node). c (any model) ends up on whichever
    # node is free when it starts.
    t4 = model_index("T4")
    jobs = make_jobs(
        [("a", 0, 2, 100), ("b", 1, 2, 50)],
        gpu_model_mask=[1 << t4, spec_mask(["T4"])],
    )
    policy = queue()
    rec = run("1x2:V100+1x2:T4", jobs, policy)
    assert rec.first_start.tolist() == [0.0, 100.0]
    assert rec.end_time.tolist() == [100.0, 150.0]
    for j in (0, 1):
        ((_, alloc),) = policy.starts()[j]
        assert [node for node, _ in alloc] == [1]
    assert rec.cluster.model[1] == t4


def test_job_allowed_only_on_an_absent_model_is_rejected() -> None:
    jobs = make_jobs([("a", 0, 1, 10)], gpu_model_mask=[spec_mask(["A100"])])
    rec = run("2x4:V100", jobs, queue(backfill=True))
    assert rec.status[0] == REJECTED
    assert rec.reject_reason[0] == "asks for a GPU model the cluster does not have (it has: V100)"
    assert math.isnan(rec.first_start[0])


# -- invalid decisions -----------------------------------------------------------------------------
def test_starting_a_running_job_raises_policy_error() -> None:
    # Job 0 is started at 0 and again at 5 (the arrival of job 1): not pending any more.
    jobs = make_jobs([("a", 0, 1, 100), ("b", 5, 1, 10)])
    policy = Scripted({0: [Start(0, on(0, 0))], 5: [Start(0, on(0, 1))]})
    with pytest.raises(PolicyError, match="started job 0, which is not pending"):
        run("1x2:V100", jobs, policy)


def test_starting_on_a_busy_gpu_raises_policy_error() -> None:
    jobs = make_jobs([("a", 0, 1, 100), ("b", 5, 1, 10)])
    policy = Scripted({0: [Start(0, on(0, 0))], 5: [Start(1, on(0, 0))]})
    with pytest.raises(PolicyError, match="placed job 1 where it does not fit"):
        run("1x2:V100", jobs, policy)


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        (Preempt(1), "preempted job 1, which is not running"),
        (Resize(1, on(0, 1)), "resized job 1, which is not running"),
        (Reject(0, "no"), "rejected job 0, which is not pending"),
        (Start(7, on(0, 1)), "started job 7, which is not pending"),
        (Start(1, on(0, 5)), r"started job 1 on \(\(0, \(5,\)\),\), not nodes of the cluster"),
        (Start(1, on(3, 0)), r"started job 1 on \(\(3, \(0,\)\),\), not nodes of the cluster"),
    ],
)
def test_other_invalid_decisions_raise_policy_error(decision: Decision, message: str) -> None:
    # At 5, job 0 runs on GPU 0 and job 1 is pending.
    jobs = make_jobs([("a", 0, 1, 100), ("b", 5, 1, 10)])
    policy = Scripted({0: [Start(0, on(0, 0))], 5: [decision]})
    with pytest.raises(PolicyError, match=message):
        run("1x2:V100", jobs, policy)


# -- resizes, preemptions and rejections by a custom policy ----------------------------------------
@pytest.mark.parametrize(("overhead", "end"), [(0.0, 120.0), (5.0, 125.0)])
def test_resize_accounts_progress_piecewise_and_charges_the_overhead(
    overhead: float, end: float
) -> None:
    # a (2 GPUs, 100 s) starts on 1 GPU at half speed; by 40 it has done 20 s of its work.
    # Resized to 2 GPUs at 40: the remaining 80 s run at full speed after the overhead:
    # 40 + overhead + 80.
    jobs = make_jobs([("a", 0, 2, 100)])
    policy = Scripted({0: [Start(0, on(0, 0))], 40: [Resize(0, on(0, 0, 1))]})
    rec = run("1x2:V100", jobs, policy, resize_overhead=overhead)
    assert rec.end_time[0] == pytest.approx(end)
    assert rec.resizes[0] == 1
    assert rec.preemptions[0] == 0
    # 1 GPU × 40 s, then 2 GPUs until the end (the overhead included).
    assert rec.gpu_seconds[0] == pytest.approx(40 + 2 * (end - 40))
    # the restart overhead is not the resize overhead
    rec2 = run(
        "1x2:V100",
        jobs,
        Scripted({0: [Start(0, on(0, 0))], 40: [Resize(0, on(0, 0, 1))]}),
        restart_overhead=50.0,
    )
    assert rec2.end_time[0] == pytest.approx(120.0)


def test_resize_down_then_up() -> None:
    # a (2 GPUs, 100 s) on 2 GPUs: 0 → 30 does 30 s of work; on 1 GPU 30 → 70 does 20 more;
    # back on 2 GPUs at 70 with 50 left: ends at 120. resize_overhead 2 each time:
    # 30 → 72 (progress from 32: 40 s at half speed = 20), then 72 → 72 + 2 + 50 = 124.
    jobs = make_jobs([("a", 0, 2, 100)])
    script = {0: [Start(0, on(0, 0, 1))], 30: [Resize(0, on(0, 1))], 72: [Resize(0, on(0, 0, 1))]}
    rec = run("1x2:V100", jobs, Scripted(script), resize_overhead=2.0)
    assert rec.end_time[0] == pytest.approx(124.0)
    assert rec.resizes[0] == 2


def test_preempt_and_restart_by_a_custom_policy() -> None:
    # a (1 GPU, 100 s) runs 0 → 30, is preempted at 30, restarted at 50 on another GPU with a
    # 10 s restart overhead: progress resumes at 60 with 70 s left → 130.
    jobs = make_jobs([("a", 0, 1, 100)])
    script = {0: [Start(0, on(0, 0))], 30: [Preempt(0)], 50: [Start(0, on(0, 1))]}
    rec = run("1x2:V100", jobs, Scripted(script), restart_overhead=10.0)
    assert rec.first_start[0] == 0
    assert rec.end_time[0] == pytest.approx(130.0)
    assert rec.preemptions[0] == 1
    assert rec.gpu_seconds[0] == pytest.approx(30 + 80)


def test_reject_marks_jobs_rejected() -> None:
    # Job 1 is rejected on arrival; jobs 0 and 2 run.
    jobs = make_jobs([("a", 0, 1, 10), ("b", 1, 1, 10), ("c", 2, 1, 10)])
    script = {0: [Start(0, on(0, 0))], 1: [Reject(1, "too greedy")], 2: [Start(2, on(0, 1))]}
    rec = run("1x2:V100", jobs, Scripted(script))
    assert rec.status.tolist() == [DONE, REJECTED, DONE]
    assert rec.reject_reason == {1: "too greedy"}
    assert math.isnan(rec.first_start[1]) and math.isnan(rec.end_time[1])
    assert jobs_frame(rec)["status"].tolist() == ["completed", "rejected", "completed"]
    # A rejected job leaves the queue at once.
    assert rec.ts_queue[rec.ts_time.tolist().index(1.0)] == 0


def test_until_stops_the_replay_and_leaves_running_jobs_unfinished() -> None:
    jobs = make_jobs([("a", 0, 1, 10), ("b", 0, 1, 100)])
    rec = run("1x2:V100", jobs, queue(), until=50.0)
    assert rec.status.tolist() == [DONE, RUNNING]
    assert rec.end_time[0] == 10.0 and math.isnan(rec.end_time[1])
    assert rec.gpu_seconds[1] == pytest.approx(50.0)


# -- the time series -------------------------------------------------------------------------------
def test_time_series_values_for_a_hand_computed_case() -> None:
    # One node of 4 GPUs, FIFO. a (2 GPUs, 100 s) t=0; b (4 GPUs, 50 s) t=10; c (1 GPU, 10 s) t=20.
    # Decision points and the state right after each:
    #   t=0    a starts                     queue 0, running 1, busy 2
    #   t=10   b arrives, blocked           queue 1, running 1, busy 2
    #   t=20   c arrives, behind b          queue 2, running 1, busy 2
    #   t=100  a ends, b starts             queue 1, running 1, busy 4
    #   t=150  b ends, c starts             queue 0, running 1, busy 1
    #   t=160  c ends                       queue 0, running 0, busy 0
    jobs = make_jobs([("a", 0, 2, 100), ("b", 10, 4, 50), ("c", 20, 1, 10)])
    rec = run("1x4:V100", jobs, queue())
    assert rec.ts_time.tolist() == [0, 10, 20, 100, 150, 160]
    assert rec.ts_queue.tolist() == [0, 1, 2, 1, 0, 0]
    assert rec.ts_running.tolist() == [1, 1, 1, 1, 1, 0]
    assert rec.ts_busy.tolist() == [2, 2, 2, 4, 1, 0]
    assert rec.decision_points == 6
    assert rec.events == 6  # three arrivals, three completions


def test_simultaneous_events_make_one_decision_point() -> None:
    # One GPU. Two arrivals at 0 are one decision point; so are a's completion and c's arrival at
    # 10. a 0 → 10, b 10 → 20, c 20 → 25.
    jobs = make_jobs([("a", 0, 1, 10), ("b", 0, 1, 10), ("c", 10, 1, 5)])
    rec = run("1x1:V100", jobs, queue())
    assert rec.ts_time.tolist() == [0, 10, 20, 25]
    assert rec.ts_busy.tolist() == [1, 1, 1, 0]
    assert rec.ts_queue.tolist() == [1, 1, 0, 0]
    assert rec.first_start.tolist() == [0, 10, 20]


def test_an_engine_can_run_twice_with_the_same_result() -> None:
    jobs = make_jobs([("a", 0, 2, 100), ("b", 10, 4, 50), ("c", 20, 1, 10)])
    policy, placement = make_scheduler("srtf", "bestfit", False)
    engine = ReplayEngine(parse_cluster_spec("1x4:V100"), jobs, policy, placement, TraceDuration())
    first, second = engine.run(), engine.run()
    np.testing.assert_array_equal(first.end_time, second.end_time)
    np.testing.assert_array_equal(first.ts_busy, second.ts_busy)


def test_empty_trace() -> None:
    jobs = make_jobs([])
    rec = run("1x1:V100", jobs, queue())
    assert len(rec.ts_time) == 0
    assert rec.decision_points == 0


@pytest.mark.parametrize(("checkpoint", "end_a"), [(True, 110.0), (False, 160.0)])
def test_a_preempted_job_without_a_checkpoint_starts_again_from_nothing(
    checkpoint: bool, end_a: float
) -> None:
    """One GPU; A (100 s) from t=0, B (10 s) at t=50: srtf preempts A for B (50 s left > 10).
    B runs 50→60; A then resumes with 50 s left (ends at 110) or, without a checkpoint, starts
    its 100 s again (ends at 160)."""
    jobs = make_jobs([("a", 0, 1, 100.0), ("b", 50, 1, 10.0)], checkpoint=[checkpoint, True])
    record = run("1x1:V100", jobs, queue("srtf"))
    i = by_id(record)
    assert record.end_time[i["b"]] == 60.0
    assert record.end_time[i["a"]] == end_a
    assert record.preemptions[i["a"]] == 1
