"""``edf-greedy``: the ElasticFlow artifact's EDF baseline (deadline order, up to 64 GPUs each)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.engines.replay import ReplayEngine
from schedlab.errors import InputError
from schedlab.model.jobs import JobTable
from schedlab.perf.models import ThroughputTable, read_throughput_dir
from schedlab.policies.elastic.edf_greedy import level_at_most
from schedlab.policies.registry import make_scheduler
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.mark.parametrize(("x", "level"), [(0, 0), (1, 1), (3, 2), (8, 8), (100, 64)])
def test_level_at_most(x: int, level: int) -> None:
    assert level_at_most(x) == level


def _table() -> ThroughputTable:
    # Model m, batch 8: 1 it/s on 1 GPU, 2 on 2, 3 on 4, 3.5 on 8 (the curve flattens).
    return ThroughputTable({("m", 8): {1: 1.0, 2: 2.0, 4: 3.0, 8: 3.5}})


def _jobs(rows: list[tuple[str, float, float, float]]) -> JobTable:
    # (id, submit, iterations, deadline); every job asks for 1 GPU of model m at batch 8.
    return JobTable.from_columns(
        job_id=[r[0] for r in rows],
        submit_time=[r[1] for r in rows],
        num_gpus=[1] * len(rows),
        iterations=[r[2] for r in rows],
        model_name=["m"] * len(rows),
        batch_size=[8] * len(rows),
        deadline=[r[3] for r in rows],
        duration=[np.nan] * len(rows),
    )


def test_earliest_deadline_takes_the_most_gpus_by_hand() -> None:
    # 8 GPUs (1 node). a (deadline 100) and b (deadline 50) arrive at 0. b, earlier deadline, gets
    # min(64, batch 8, 8 GPUs) = 8 GPUs at 3.5 it/s: 35 iterations end at 10. a gets nothing until
    # then, then all 8 GPUs: 70 iterations at 3.5 it/s end at 10 + 20 = 30.
    policy, placement = make_scheduler("edf-greedy")
    jobs = _jobs([("a", 0, 70, 100), ("b", 0, 35, 50)])
    rec = ReplayEngine(parse_cluster_spec("1x8:A100"), jobs, policy, placement, _table()).run()
    assert rec.first_start.tolist() == [10.0, 0.0]
    assert rec.end_time.tolist() == pytest.approx([30.0, 10.0])


def test_peak_cap_shares_the_cluster() -> None:
    # With cap=peak each job stops at the count where throughput peaks (8 here: 3.5 > 3), so the
    # result is the same on one 8-GPU node; on 16 GPUs both run at once: b ends at 10, a at 20.
    policy, placement = make_scheduler("edf-greedy", params={"cap": "peak"})
    jobs = _jobs([("a", 0, 70, 100), ("b", 0, 35, 50)])
    rec = ReplayEngine(parse_cluster_spec("2x8:A100"), jobs, policy, placement, _table()).run()
    assert rec.end_time.tolist() == pytest.approx([20.0, 10.0])


def test_backfill_and_bad_cap_are_rejected() -> None:
    with pytest.raises(InputError, match="backfill does not apply"):
        make_scheduler("edf-greedy", backfill=True)
    with pytest.raises(InputError, match="'cap' must be 'table' or 'peak'"):
        make_scheduler("edf-greedy", params={"cap": "most"})


@pytest.mark.skipif(
    not (SHARED / "traces" / "elasticflow-itp").is_dir(),
    reason="../shared/traces/elasticflow-itp not found: the public trace is not "
    "beside this checkout",
)
def test_matches_the_artifact_on_the_195_job_trace() -> None:
    # 16 nodes × 8 A100, 240 s slot, A100 tables: the artifact's simulator meets 17 deadlines
    # (DSR 0.087).
    jobs = read_jobs(SHARED / "traces" / "elasticflow-itp" / "simulation" / "195job.csv").jobs
    perf = ThroughputTable(
        read_throughput_dir(SHARED / "traces" / "elasticflow-artifact" / "throughputs_A100")
    )
    policy, placement = make_scheduler("edf-greedy", slot=240.0)
    rec = ReplayEngine(parse_cluster_spec("16x8:A100"), jobs, policy, placement, perf).run()
    met = rec.end_time <= rec.jobs.deadline
    assert int(met.sum()) == 17
    assert np.isfinite(rec.end_time).all()
