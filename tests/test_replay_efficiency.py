"""Cluster efficiency: Σ over running jobs of (rate ÷ rate on one GPU) ÷ cluster GPUs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedlab.engines.replay import ReplayEngine
from schedlab.experiments.replay_run import jobs_frame, timeseries_frame
from schedlab.metrics.replay_metrics import summarize
from schedlab.model.jobs import JobTable
from schedlab.perf.models import ThroughputTable, TraceDuration
from schedlab.policies.registry import make_scheduler
from schedlab.traces.cluster_spec import parse_cluster_spec


def _replay(perf, jobs: JobTable, cluster: str = "1x4:V100"):
    policy, placement = make_scheduler("fifo")
    return ReplayEngine(parse_cluster_spec(cluster), jobs, policy, placement, perf).run()


def test_sublinear_scaling_lowers_efficiency() -> None:
    # One 2-GPU job of model m (batch 64): 10 it/s on 1 GPU, 15 it/s on 2. 300 iterations take
    # 20 s. While it runs, efficiency = (15 / 10) / 4 GPUs = 0.375; busy share = 2 / 4 = 0.5.
    table = ThroughputTable({("m", 64): {1: 10.0, 2: 15.0}})
    jobs = JobTable.from_columns(
        job_id=["a"],
        submit_time=[0.0],
        num_gpus=[2],
        iterations=[300.0],
        model_name=["m"],
        batch_size=[64],
        duration=[np.nan],
    )
    rec = _replay(table, jobs)
    assert rec.end_time.tolist() == [20.0]
    assert rec.ts_time.tolist() == [0.0, 20.0]
    assert rec.ts_efficiency.tolist() == pytest.approx([0.375, 0.0])
    series = timeseries_frame(rec)
    summary = summarize(jobs_frame(rec), series)
    assert summary["cluster_efficiency"] == pytest.approx(0.375)
    assert summary["gpu_utilization"] == pytest.approx(0.5)


def test_linear_scaling_efficiency_equals_utilisation() -> None:
    # Trace durations scale linearly, so every GPU held is fully efficient.
    jobs = JobTable.from_columns(
        job_id=["a", "b"], submit_time=[0.0, 5.0], num_gpus=[1, 3], duration=[10.0, 10.0]
    )
    rec = _replay(TraceDuration(), jobs)
    busy = rec.ts_busy / 4
    assert rec.ts_efficiency.tolist() == pytest.approx(busy.tolist())
    summary = summarize(jobs_frame(rec), timeseries_frame(rec))
    assert summary["cluster_efficiency"] == pytest.approx(summary["gpu_utilization"])


def test_summary_without_efficiency_column_has_none() -> None:
    jobs = pd.DataFrame(
        {
            "job_id": ["a"],
            "user": [""],
            "submit_time": [0.0],
            "start_time": [0.0],
            "end_time": [10.0],
            "num_gpus": [1],
            "duration": [10.0],
            "deadline": [np.nan],
            "preemptions": [0],
            "resizes": [0],
            "gpu_seconds": [10.0],
            "status": ["completed"],
        }
    )
    series = pd.DataFrame(
        {
            "time": [0.0, 10.0],
            "queue_length": [0, 0],
            "running_jobs": [1, 0],
            "busy_gpus": [1, 0],
            "total_gpus": [4, 4],
        }
    )
    assert summarize(jobs, series)["cluster_efficiency"] is None
