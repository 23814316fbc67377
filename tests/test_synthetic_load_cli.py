"""``schedlab sweep --synthetic``: the generated workload delivers the load it names over its
arrival window, says so per run, and ranks policies (fifo and sjf differ at the default 0.8)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.cli import main


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _realised_load(jobs_csv: Path, total_gpus: int) -> float:
    """Σ GPUs × run time ÷ (cluster GPUs × arrival window), from the run's own jobs.csv."""
    jobs = pd.read_csv(jobs_csv)
    demand = (jobs["num_gpus"] * jobs["duration"]).sum()
    span = jobs["submit_time"].max() - jobs["submit_time"].min()
    return float(demand / (total_gpus * span))


def test_synthetic_sweep_delivers_its_load_and_separates_fifo_from_sjf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "grid"
    argv = ["sweep", "--cluster", "8x8:V100", "--synthetic", "1000", "--policies", "fifo", "sjf"]
    argv += ["--seeds", "0-1", "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    rows = _rows(out / "results.csv")
    assert len(rows) == 4
    for row in rows:
        assert float(row["load"]) == 0.8  # the default load of a generated workload
        realised = _realised_load(Path(row["run_dir"]) / "jobs.csv", 64)
        assert realised == pytest.approx(0.8, rel=0.05)
        assert float(row["offered_load"]) == pytest.approx(realised, rel=1e-6)
    jct = {
        p: np.mean([float(r["avg_jct"]) for r in rows if r["policy"] == p]) for p in ("fifo", "sjf")
    }
    # Queues form at this load: shortest-first cuts the mean completion time by far.
    assert jct["sjf"] < 0.8 * jct["fifo"]
    assert "offered" in printed
    assert f"{out}/results.csv, aggregate.csv and report-synthetic-1000.html" in printed.replace(
        "\n", ""
    )


def test_a_synthetic_workload_too_short_for_its_run_times_is_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "grid"
    argv = ["sweep", "--cluster", "8x8:V100", "--synthetic", "20", "--policies", "fifo"]
    assert main([*argv, "--workers", "1", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "schedlab: warning: 20 generated jobs at load 0.8 on 64 GPUs arrive over" in err
    assert "give more jobs" in err


def test_one_synthetic_job_has_no_arrival_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", "--cluster", "8x8:V100", "--synthetic", "1", "--out", str(tmp_path / "g")]
    assert main(argv) == 2
    assert "'--synthetic' must be ≥ 2 jobs" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()
