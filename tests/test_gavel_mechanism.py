"""Gavel's round mechanism on hand-computed cases, and the contract on random ones."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.replay import ReplayConfig, ReplayEngine
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import DONE, REJECTED
from schedlab.perf.throughput_matrix import MatrixPerf, read_throughput_matrix
from schedlab.policies.heterogeneous.gavel import GavelRounds
from schedlab.policies.heterogeneous.gavel_policies import GavelFifoPerf, GavelIsolated
from schedlab.policies.registry import make_placement
from schedlab.traces.cluster_spec import parse_compact

#: One job type A: 1 step/s on a K80, 2 on a V100; B needs two GPUs.
TOY = {
    "k80": {"('A', 1)": {"null": 1.0}, "('B', 2)": {"null": 1.0}},
    "v100": {"('A', 1)": {"null": 2.0}, "('B', 2)": {"null": 3.0}},
}


@pytest.fixture
def perf(tmp_path: Path) -> MatrixPerf:
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(TOY))
    return MatrixPerf(read_throughput_matrix(path))


def run(policy: GavelRounds, perf: MatrixPerf, submit, steps, cluster="1x1:V100+1x1:K80", **cols):
    n = len(submit)
    jobs = JobTable.from_columns(
        job_id=[str(i) for i in range(n)],
        submit_time=submit,
        num_gpus=cols.pop("num_gpus", [1] * n),
        iterations=steps,
        model_name=cols.pop("model_name", ["A"] * n),
    )
    engine = ReplayEngine(
        parse_compact(cluster), jobs, policy, make_placement("bestfit"), perf, ReplayConfig()
    )
    return engine.run()


def test_fifo_perf_hand_computed(perf: MatrixPerf) -> None:
    """t=0: job 0 takes the V100 (faster), job 1 the K80; round 1 ends at 360 (720 and 360
    steps). Job 2 arrives at 100, after the reset at 0: it has no allocation. At 360 the reset
    is allowed (the last one was at time 0), FIFO gives it nothing (both types are taken). Round
    2: job 0 finishes its 280 steps at 500, job 1 its 240 at 600. At 600 nothing may run (the
    reset interval has not passed) and no job is left to arrive, so a reset is allowed at once:
    job 2 takes the V100 and its 100 steps take 50 s."""
    policy = GavelFifoPerf()
    record = run(policy, perf, [0.0, 0.0, 100.0], [1000.0, 600.0, 100.0])
    np.testing.assert_allclose(record.end_time, [500.0, 600.0, 650.0])
    assert record.preemptions.tolist() == [0, 0, 0]
    assert [r.end for r in policy.log if r.jobs] == [360.0, 600.0, 650.0]
    assert policy.solves == 3  # at 0, at 360, and the forced one at 600


def test_isolated_time_shares_by_priority(perf: MatrixPerf) -> None:
    """Equal shares: round 1 job 0 (first in id order) gets the V100 and job 1 the K80; their
    priorities then swap (each has had more than its share of one type), so round 2 runs job 1
    on the V100 (240 steps, done at 480) and job 0 on the K80 (280 steps, done at 640)."""
    policy = GavelIsolated()
    record = run(policy, perf, [0.0, 0.0], [1000.0, 600.0])
    np.testing.assert_allclose(record.end_time, [640.0, 480.0])
    assert record.resizes.tolist() == [1, 1]  # both moved type once
    assert policy.lease_extension_percent(1e9) == 0.0


def test_multi_gpu_job_fails_rounds_then_is_dropped(perf: MatrixPerf) -> None:
    """A 2-GPU job with 1,081.5 steps at 3 steps/s: a round of 1,080 steps leaves 1.5, fewer
    than its GPUs, so each later round (0.5 s long) fails, nothing is credited, and after five
    failures it is dropped."""
    policy = GavelFifoPerf()
    record = run(
        policy,
        perf,
        [0.0],
        [1081.5],
        cluster="2x1:V100",
        num_gpus=[2],
        model_name=["B"],
    )
    assert record.status[0] == REJECTED
    assert "failed 5 rounds" in record.reject_reason[0]
    assert policy.dropped == {0}
    ends = [r.end for r in policy.log if r.jobs]
    assert ends[:1] == [360.0] and len(ends) == 6  # 1 round of work, then 5 failed (0.5 s)


def test_unrunnable_jobs_are_rejected_on_arrival(perf: MatrixPerf) -> None:
    record = run(
        GavelFifoPerf(),
        perf,
        [0.0, 0.0],
        [10.0, 10.0],
        cluster="1x1:V100+1x1:K80",
        num_gpus=[2, 1],
        model_name=["B", "A"],
    )
    assert record.status.tolist() == [REJECTED, DONE]
    assert "needs 2 GPUs of one type" in record.reject_reason[0]


def test_lease_extension_keeps_the_gpus(perf: MatrixPerf) -> None:
    policy = GavelFifoPerf()
    record = run(policy, perf, [0.0], [2000.0], cluster="2x1:V100")
    assert record.resizes[0] == 0 and record.preemptions[0] == 0
    assert record.end_time[0] == pytest.approx(1000.0)
    assert policy.lease_extension_percent(1e9) == 100.0


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.lists(
        st.tuples(
            st.floats(0, 3000, allow_nan=False),
            st.floats(1, 5000, allow_nan=False),
            st.sampled_from([("A", 1), ("B", 2)]),
        ),
        min_size=1,
        max_size=12,
    ),
    isolated=st.booleans(),
)
def test_every_job_is_accounted_for_and_runs_repeat(perf: MatrixPerf, data, isolated) -> None:
    submit = sorted(d[0] for d in data)
    steps = [d[1] for d in data]
    models = [d[2][0] for d in data]
    gpus = [d[2][1] for d in data]
    cls = GavelIsolated if isolated else GavelFifoPerf
    records = [
        run(
            cls(), perf, submit, steps, cluster="2x1:V100+1x2:K80", num_gpus=gpus, model_name=models
        )
        for _ in range(2)
    ]
    a, b = records
    assert set(a.status.tolist()) <= {DONE, REJECTED}
    np.testing.assert_array_equal(a.end_time, b.end_time)
    done = a.status == DONE
    assert np.all(a.end_time[done] >= np.asarray(submit)[done])
