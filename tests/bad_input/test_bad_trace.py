"""A trace's communication columns (read by ``replay --topology``) outside what a job can be —
one line naming file, line and column, exit 2, nothing written — and the jobs a reader's filters
drop, which a replay counts in summary.json and says so instead of leaving them out silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bad_input_helpers import refused, replay_argv, write

from schedlab.cli import main

TOPOLOGY = "leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=4,m=1,nic_gbps=100"
HEADER = "job_id,submit_time,num_gpus,duration,{column}\n"


@pytest.mark.parametrize(
    ("column", "value", "needle"),
    [
        ("compute_time", "0", "compute_time must be > 0"),
        ("compute_time", "-1", "'compute_time' must be ≥ 0"),
        ("compute_time", "1e9", "at most 86400 seconds per iteration"),
        ("compute_time", "inf", "'compute_time' must be a number (got 'inf')"),
        ("compute_time", "nan", "'compute_time' must be a number (got 'nan')"),
        ("gradient_bytes", "1e30", "gradient_bytes must be at most 1e+15"),
        ("gradient_bytes", "-8", "'gradient_bytes' must be ≥ 0"),
        ("overlap", "2", "overlap must be between 0 and 1"),
        ("net_priority", "1.5", "net_priority must be a whole number"),
        ("net_priority", "1e300", "net_priority must be a whole number in 0..1000000"),
        ("collective", "tree", "unknown collective 'tree'"),
    ],
)
def test_communication_columns_outside_a_job_are_refused(
    column: str, value: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = HEADER.format(column=column) + f"a,0,2,100,\nb,10,8,50,{value}\n"
    argv = replay_argv(tmp_path, "--topology", TOPOLOGY, "--trace-format", "generic", trace=trace)
    refused(argv, capsys, "jobs.csv:3", f"column '{column}'", needle, out=tmp_path / "out")


def test_the_same_columns_within_bounds_run(tmp_path: Path) -> None:
    trace = (
        "job_id,submit_time,num_gpus,duration,compute_time,gradient_bytes,net_priority\n"
        "a,0,2,100,0.2,4e8,1\nb,10,8,50,0.1,1e9,2\n"
    )
    assert main(replay_argv(tmp_path, "--topology", TOPOLOGY, trace=trace)) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["completed"] == 2


DROPPING = "job_id,submit_time,num_gpus,duration\na,0,2,100\nidle,5,0,50\nnothing,8,1,0\nd,9,1,10\n"


def test_a_replay_counts_the_jobs_the_reader_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = replay_argv(tmp_path, "--cluster", "1x4:V100", trace=DROPPING)
    assert main(argv) == 0
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if "warning" in ln]
    trace = tmp_path / "jobs.csv"
    assert warnings == [
        f"schedlab: warning: 2 of 4 jobs of {trace} were dropped by the reader's filters "
        "(zero gpus 1, zero duration 1); summary.json counts them under 'dropped_jobs'"
    ]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["jobs"] == 2
    assert summary["dropped_jobs"] == {"zero_gpus": 1, "zero_duration": 1}
    rows = (tmp_path / "out" / "jobs.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == ["a", "d"]


def test_nothing_dropped_adds_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(replay_argv(tmp_path, "--cluster", "1x4:V100")) == 0
    assert "warning" not in capsys.readouterr().err
    assert "dropped_jobs" not in json.loads((tmp_path / "out" / "summary.json").read_text())


def test_a_sweep_says_once_what_the_reader_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(tmp_path, "dropping.csv", DROPPING)
    argv = ["sweep", "--cluster", "1x4:V100", "--traces", str(trace), "--policies", "fifo", "sjf"]
    assert main([*argv, "--workers", "1", "--out", str(tmp_path / "grid")]) == 0
    err = capsys.readouterr().err
    assert err.count("were dropped by the reader's filters (zero gpus 1, zero duration 1)") == 1
    for run in (tmp_path / "grid").glob("runs/*/*/summary.json"):
        assert json.loads(run.read_text())["dropped_jobs"] == {"zero_gpus": 1, "zero_duration": 1}
    assert len(list((tmp_path / "grid").glob("runs/*/*/summary.json"))) == 2
