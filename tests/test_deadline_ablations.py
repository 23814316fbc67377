"""The ElasticFlow ablations (edf-ac, edf-elastic), the GPU-time hand-out and the deadline study."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.engines.replay import ReplayEngine
from schedlab.experiments.deadline_study import (
    ABLATION_WORKLOAD,
    LARGE_POLICIES,
    DeadlineRun,
    ablation_runs,
    jobs_for,
    large_runs,
    run_one,
    variant,
)
from schedlab.experiments.deadline_study import testbed_runs as make_testbed_runs
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import DONE, REJECTED
from schedlab.perf.models import ThroughputTable
from schedlab.policies.elastic.admission import PlanRequest
from schedlab.policies.elastic.handout import candidate_plan, plan_gpu_seconds
from schedlab.policies.elastic.planning import FreeTimeline
from schedlab.policies.registry import make_scheduler
from schedlab.traces.cluster_spec import parse_cluster_spec

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
A100 = SHARED / "traces" / "elasticflow-artifact" / "throughputs_A100"
TABLE = ThroughputTable({("m", 4): {1: 10.0, 2: 20.0, 4: 40.0}})


def _run(policy: str, rows, params=None):
    # 4 GPUs, slot 100; model m at batch 4: 10 it/s per GPU, linear up to 4.
    jobs = JobTable.from_columns(
        job_id=[r[0] for r in rows],
        submit_time=[r[1] for r in rows],
        num_gpus=[1] * len(rows),
        iterations=[r[2] for r in rows],
        model_name=["m"] * len(rows),
        batch_size=[4] * len(rows),
        deadline=[r[3] for r in rows],
        duration=[np.nan] * len(rows),
    )
    scheduler, placement = make_scheduler(policy, params=params, slot=100.0)
    return ReplayEngine(parse_cluster_spec("1x4:A100"), jobs, scheduler, placement, TABLE).run()


def test_edf_ac_sizes_admitted_jobs_greedily_in_deadline_order() -> None:
    # a (deadline 1000) and c (deadline 2000) both fit, so both are admitted; EDF gives a all
    # 4 GPUs (40 it/s: 4,000 iterations end at 100) and c nothing until the round at 100, then
    # all 4: c ends at 200. No per-round overhead (the artifact's EDF pays none).
    rec = _run("edf-ac", [("a", 0, 4_000, 1000), ("c", 0, 4_000, 2000)])
    assert rec.status.tolist() == [DONE, DONE]
    assert rec.first_start.tolist() == [0.0, 100.0]
    assert rec.end_time.tolist() == pytest.approx([100.0, 200.0])


def test_edf_ac_rejects_what_admission_control_rejects() -> None:
    # b wants 100,000 iterations by 300; 4 GPUs give 8,000 between its round (100) and 300.
    rec = _run("edf-ac", [("a", 0, 4_000, 1000), ("b", 50, 100_000, 300)])
    assert rec.status.tolist() == [DONE, REJECTED]


def test_edf_elastic_admits_everything_and_the_impossible_job_misses() -> None:
    # Without admission control b is admitted; planned first (earlier deadline) and infeasible,
    # it takes every GPU until done, so a misses too: what admission control prevents.
    rec = _run("edf-elastic", [("a", 0, 4_000, 1000), ("b", 50, 100_000, 300)])
    assert rec.status.tolist() == [DONE, DONE]
    assert rec.end_time[1] > 300 and rec.end_time[0] > 1000
    assert rec.end_time[0] > rec.end_time[1]


def test_candidate_plan_runs_the_next_level_until_the_timeline_changes() -> None:
    # 8 GPUs; another job holds 4 until 1200. The job (60,000 iterations, 10 it/s per GPU,
    # deadline 3000, slot 240) at 4 GPUs does 48,000 by the breakpoint at 1200; the other 12,000
    # are planned from 1200 as a minimum share: 1 GPU covers them before the deadline (1,800 s ×
    # 10 it/s), run forwards from 1200 it ends at 2400 (on the 240 s grid from 1200).
    timeline = FreeTimeline([0.0, 1200.0], [4, 8])
    rates = {1: 10.0, 2: 20.0, 4: 40.0}
    request = PlanRequest(7, 3000.0, 60_000.0, rates.__getitem__, [1, 2, 4])
    plan = candidate_plan(timeline, request, 4, 0.0, 240.0)
    assert plan.segments == [(0.0, 1200.0, 4), (1200.0, 2400.0, 1)]
    assert plan.real_end == 2400.0 and plan.end == 2400.0
    assert plan_gpu_seconds(plan) == 4 * 1200 + 1 * 1200
    assert timeline.key == [0.0, 1200.0] and timeline.count == [4, 8]  # a what-if only


def test_candidate_plan_that_ends_before_the_breakpoint_is_one_segment() -> None:
    timeline = FreeTimeline([0.0, 1200.0], [4, 8])
    rates = {1: 10.0, 2: 20.0, 4: 40.0}
    request = PlanRequest(7, 3000.0, 18_000.0, rates.__getitem__, [1, 2, 4])
    plan = candidate_plan(timeline, request, 2, 0.0, 240.0)
    # 18,000 at 20 it/s = 900 s; the plan holds its GPUs to the slot boundary 960.
    assert plan.segments == [(0.0, 960.0, 2)] and plan.real_end == 900.0


def test_ablation_workload_is_seeded_and_every_job_has_a_deadline() -> None:
    if not A100.is_dir():
        pytest.skip("../shared/traces/elasticflow-artifact not found: no throughput tables")
    run = DeadlineRun("ablation", "synthetic:3", "s", "8x8:A100", "edf-greedy", 240.0, str(A100))
    a, b = jobs_for(run), jobs_for(run)
    assert len(a) == ABLATION_WORKLOAD.jobs
    assert np.array_equal(a.submit_time, b.submit_time)
    assert np.array_equal(a.iterations, b.iterations)
    assert np.isfinite(a.deadline).all() and np.isfinite(a.iterations).all()
    gaps = np.diff(a.submit_time)
    assert gaps.mean() == pytest.approx(1_500, rel=0.15)


@pytest.mark.skipif(
    not (SHARED / "traces" / "elasticflow-itp").is_dir(),
    reason="../shared/traces/elasticflow-itp not found: the public trace is not beside this "
    "checkout",
)
def test_study_row_for_the_edf_baseline_on_the_testbed_trace() -> None:
    (run,) = [r for r in make_testbed_runs(SHARED) if r.policy == "edf-greedy"]
    row = run_one(run)
    assert row["met"] == 17 and row["deadline_jobs"] == 195 and row["gpus"] == 128
    assert row["dsr"] == pytest.approx(17 / 195)


def test_large_simulation_uses_the_papers_cluster_sizes() -> None:
    runs = large_runs(SHARED, ("elasticflow",))
    gpus = {r.label: parse_cluster_spec(r.cluster).total_gpus for r in runs}
    assert gpus["cluster05"] == 512 and gpus["cluster04"] == 1024
    assert gpus["cluster10"] == 256 and gpus["philly_103959"] == 256
    assert len(runs) == 11 and {r.slot for r in runs} == {60.0}
    assert set(LARGE_POLICIES) >= {"elasticflow", "edf-ac", "edf-elastic", "chronus", "themis"}


def test_policy_variants_carry_their_parameters() -> None:
    assert variant("elasticflow blame=new") == ("elasticflow", {"blame": "new"})
    (run,) = [
        r
        for r in ablation_runs(SHARED, (0,), ("elasticflow blame=new",))
        if r.cluster == "8x8:A100"
    ]
    assert run.policy == "elasticflow" and run.params == {"blame": "new"}
    assert run.name == "elasticflow blame=new"


def test_untuned_ablation_workload_is_the_tuned_one_at_the_traces_run_times() -> None:
    # The tuned workload halves the 195-job trace's run times; the untuned one keeps the trace's
    # median and mean, so the same seed draws the same jobs with exactly twice the run time.
    if not A100.is_dir():
        pytest.skip("../shared/traces/elasticflow-artifact not found: no throughput tables")
    half, full = (
        next(r for r in ablation_runs(SHARED, (4,), ("edf-greedy",), runtimes=scale))
        for scale in ("half", "trace")
    )
    assert (half.workload, full.workload) == ("synthetic:4::half", "synthetic:4::trace")
    a, b = jobs_for(half), jobs_for(full)
    assert np.array_equal(a.submit_time, b.submit_time)
    assert np.array_equal(a.num_gpus, b.num_gpus)
    assert np.allclose(b.duration, 2 * a.duration)
    assert np.median(b.duration) == pytest.approx(15_625, rel=0.1)
    with pytest.raises(ValueError, match="runtimes must be one of half, trace"):
        ablation_runs(SHARED, (0,), runtimes="double")
