"""Round-based scheduling (``--slot``): decisions only at multiples of the slot length."""

from __future__ import annotations

import json

import pytest

from schedlab.cli import main
from schedlab.engines.replay import ReplayEngine
from schedlab.errors import InputError
from schedlab.model.jobs import JobTable
from schedlab.perf.models import TraceDuration
from schedlab.policies.registry import make_scheduler
from schedlab.traces.cluster_spec import parse_cluster_spec


def _run(order: str, slot: float | None, rows: list[tuple[str, float, int, float]]):
    jobs = JobTable.from_columns(
        job_id=[r[0] for r in rows],
        submit_time=[r[1] for r in rows],
        num_gpus=[r[2] for r in rows],
        duration=[r[3] for r in rows],
    )
    policy, placement = make_scheduler(order, slot=slot)
    return ReplayEngine(
        parse_cluster_spec("1x1:V100"), jobs, policy, placement, TraceDuration()
    ).run()


def test_jobs_start_only_at_round_boundaries() -> None:
    # One GPU, 60 s rounds. a arrives at 10 and starts at the first boundary, 60; it runs 100 s
    # and ends at 160. b arrives at 20, waits for a; the first boundary after 160 is 180, so b
    # runs 180 → 190. Without rounds: a 10 → 110, b 110 → 120.
    rows = [("a", 10, 1, 100), ("b", 20, 1, 10)]
    rec = _run("fifo", 60.0, rows)
    assert rec.first_start.tolist() == [60.0, 180.0]
    assert rec.end_time.tolist() == [160.0, 190.0]
    plain = _run("fifo", None, rows)
    assert plain.first_start.tolist() == [10.0, 110.0]
    assert plain.end_time.tolist() == [110.0, 120.0]


def test_a_job_arriving_on_a_boundary_starts_at_once() -> None:
    rec = _run("sjf", 60.0, [("a", 120, 1, 5)])
    assert rec.first_start.tolist() == [120.0] and rec.end_time.tolist() == [125.0]


def test_preemptive_orders_preempt_only_at_boundaries() -> None:
    # srtf, 50 s rounds: long (200 s) starts at 0; short (10 s) arrives at 30 and preempts long at
    # the next boundary, 50: short 50 → 60; long resumes at the boundary 100 with 150 s left
    # (it ran 0 → 50), so it ends at 250.
    rec = _run("srtf", 50.0, [("long", 0, 1, 200), ("short", 30, 1, 10)])
    assert rec.first_start.tolist() == [0.0, 50.0]
    assert rec.end_time.tolist() == [250.0, 60.0]
    assert rec.preemptions.tolist() == [1, 0]


@pytest.mark.parametrize("slot", [0.0, -5.0])
def test_slot_must_be_positive(slot: float) -> None:
    with pytest.raises(InputError, match="'--slot' must be > 0"):
        make_scheduler("fifo", slot=slot)


def test_cli_slot_is_recorded(tmp_path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,10,1,100\nb,20,1,10\n")
    out = tmp_path / "run"
    code = main(
        [
            "replay",
            "--cluster",
            "1x1",
            "--trace",
            str(trace),
            "--trace-format",
            "generic",
            "--policy",
            "fifo",
            "--slot",
            "60",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["makespan"] == 180.0  # b ends at 190; first submit 10
    assert "slot = 60.0" in (out / "config.toml").read_text()
    assert (
        main(
            [
                "replay",
                "--cluster",
                "1x1",
                "--trace",
                str(trace),
                "--policy",
                "fifo",
                "--slot",
                "0",
                "--out",
                str(tmp_path / "bad"),
            ]
        )
        == 2
    )
    assert not (tmp_path / "bad").exists()
