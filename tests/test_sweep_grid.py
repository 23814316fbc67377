"""``schedlab sweep`` grids: every replay policy, ``--param`` variants, loads, generated workloads
that vary with the seed, resumable grid folders, and statistics over seeds checked by hand."""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.experiments.load_scaling import offered_load, scale_to_load
from schedlab.experiments.seed_stats import seed_stats
from schedlab.metrics.steady_state import steady_state
from schedlab.model.jobs import JobTable
from test_cli import NODES, _pods_csv

#: t(0.975, 2): the 97.5 % quantile of Student's t with 2 degrees of freedom (from tables).
T_975_DF2 = 4.302652729919


def _trace(path: Path) -> Path:
    rows = ["job_id,submit_time,num_gpus,duration"]
    rows += [f"j{i},{30 * i},{1 + i % 4},{600 + 97 * (i % 7)}" for i in range(24)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _sweep(out: Path, *extra: str) -> int:
    return main(["sweep", "--cluster", "2x8:V100", "--workers", "1", "--out", str(out), *extra])


def test_three_seed_ci_is_the_student_t_interval(tmp_path: Path) -> None:
    """A generated workload per seed: three different runs whose CI is computed here by hand."""
    out = tmp_path / "g"
    assert _sweep(out, "--synthetic", "60", "--policies", "fifo", "--seeds", "1-3") == 0
    runs = _rows(out / "results.csv")
    jct = [float(r["avg_jct"]) for r in runs]
    assert len(jct) == 3 and len(set(jct)) == 3  # the seed changes the workload itself
    mean = sum(jct) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in jct) / 2)
    half = T_975_DF2 * sd / math.sqrt(3)
    (agg,) = _rows(out / "aggregate.csv")
    assert agg["seeds"] == "3" and agg["load"] == "0.800000"
    assert float(agg["avg_jct_mean"]) == pytest.approx(mean, abs=1e-5)
    assert float(agg["avg_jct_sd"]) == pytest.approx(sd, abs=1e-5)
    assert float(agg["avg_jct_ci95"]) == pytest.approx(half, abs=1e-5)


def test_seed_stats_by_hand_and_one_seed_has_no_spread() -> None:
    table = pd.DataFrame(
        {"p": ["a", "a", "a", "b"], "x": [1.0, 2.0, 6.0, 5.0], "y": [1.0, np.nan, 3.0, 2.0]}
    )
    agg = seed_stats(table, ["p"], ["x", "y"]).set_index("p")
    assert agg.loc["a", "x_mean"] == 3.0
    assert agg.loc["a", "x_sd"] == pytest.approx(math.sqrt(7.0))  # ((4 + 1 + 9) / 2) ** .5
    assert agg.loc["a", "x_ci95"] == pytest.approx(T_975_DF2 * math.sqrt(7.0 / 3))
    assert agg.loc["a", "y_n"] == 2 and agg.loc["a", "y_mean"] == 2.0
    assert agg.loc["b", "seeds"] == 1 and agg.loc["b", "x_mean"] == 5.0
    assert math.isnan(agg.loc["b", "x_sd"]) and math.isnan(agg.loc["b", "x_ci95"])


def test_params_make_variants_only_for_the_policies_that_take_them(tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.csv")
    out = tmp_path / "g"
    argv = ["--traces", str(trace), "--policies", "tiresias", "fifo", "gandiva"]
    argv += ["--param", "thresholds=3600,36000", "--param", "thresholds=1800", "--seeds", "0"]
    assert _sweep(out, *argv) == 0
    cells = {(r["policy"], r["variant"]) for r in _rows(out / "results.csv")}
    assert cells == {
        ("tiresias", "thresholds=3600,36000"),
        ("tiresias", "thresholds=1800"),
        ("fifo", ""),
        ("gandiva", ""),
    }
    assert (out / "runs" / "t" / "tiresias-bestfit-thresholds=1800-s0" / "summary.json").is_file()


def test_a_param_no_policy_takes_is_refused(tmp_path: Path, capsys) -> None:
    trace = _trace(tmp_path / "t.csv")
    out = tmp_path / "g"
    assert _sweep(out, "--traces", str(trace), "--policies", "fifo", "--param", "nope=1") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'--param nope' is taken by none of the policies" in err
    assert not out.exists()


def test_load_grid_rescales_arrivals(tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.csv")
    out = tmp_path / "g"
    assert _sweep(out, "--traces", str(trace), "--policies", "fifo", "--load", "0.5,0.9") == 0
    rows = _rows(out / "results.csv")
    assert [float(r["load"]) for r in rows] == [0.5, 0.9]
    assert float(rows[1]["avg_queue_delay"]) >= float(rows[0]["avg_queue_delay"])
    jobs = pd.read_csv(out / "runs" / "t" / "fifo-bestfit-load0.9-s0" / "jobs.csv")
    demand = (jobs["num_gpus"] * jobs["duration"]).sum()
    span = jobs["submit_time"].max() - jobs["submit_time"].min()
    assert demand / (16 * span) == pytest.approx(0.9, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(
    gaps=st.lists(st.floats(0, 1000), min_size=2, max_size=20),
    load=st.floats(0.05, 3.0),
)
def test_scaling_reaches_the_load_and_keeps_order_and_slack(gaps: list[float], load: float) -> None:
    n = len(gaps)
    submit = np.cumsum(gaps)
    jobs = JobTable.from_columns(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=submit,
        num_gpus=np.full(n, 2),
        duration=np.full(n, 100.0),
        deadline=submit + 500.0,
    )
    current = offered_load(jobs, 8)
    if not (np.isfinite(current) and current > 0):  # no span (or one too small to divide by)
        with pytest.raises(InputError):
            scale_to_load(jobs, 8, load, "t.csv")
        return
    scaled = scale_to_load(jobs, 8, load, "t.csv")
    assert offered_load(scaled, 8) == pytest.approx(load, rel=1e-9)
    assert np.all(np.diff(scaled.submit_time) >= 0)
    assert np.allclose(scaled.deadline - scaled.submit_time, 500.0)


def test_steady_state_window_and_total_wait_by_hand() -> None:
    # 11 arrivals at t = 0..10; warm-up ends at the 2nd (10 % of the way), drain after t = 10.
    jobs = pd.DataFrame(
        {
            "submit_time": np.arange(11.0),
            "end_time": np.arange(11.0) + 5.0,
            "num_gpus": np.full(11, 2),
            "gpu_seconds": np.full(11, 6.0),  # 3 s running at 2 GPUs: 2 s waiting each
            "status": ["completed"] * 11,
        }
    )
    series = pd.DataFrame(
        {
            "time": [0.0, 1.0, 10.0],
            "queue_length": [0, 0, 0],
            "running_jobs": [1, 2, 0],
            "busy_gpus": [2, 4, 0],
            "total_gpus": [8, 8, 8],
        }
    )
    s = steady_state(jobs, series)
    assert (s["steady_window_start"], s["steady_window_end"]) == (1.0, 10.0)
    assert s["steady_gpu_utilization"] == pytest.approx(0.5)  # 4 of 8 GPUs over [1, 10]
    assert s["avg_total_wait"] == pytest.approx(2.0)


def _without_wall(path: Path) -> list[dict[str, str]]:
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in _rows(path)]


def test_a_replay_grid_resumes_and_refuses_another_grid(tmp_path: Path, capsys) -> None:
    trace = _trace(tmp_path / "t.csv")
    out = tmp_path / "g"
    argv = ["--traces", str(trace), "--policies", "fifo", "sjf", "--seeds", "0-1"]
    assert _sweep(out, *argv) == 0
    first = _without_wall(out / "results.csv")
    runs = out / "runs" / "t"
    kept = (runs / "fifo-bestfit-s0" / "summary.json").stat().st_mtime_ns
    lost = runs / "sjf-bestfit-s1"
    for f in lost.iterdir():
        f.unlink()
    lost.rmdir()
    (out / "results.csv").unlink()  # as a sweep killed before its end leaves it
    capsys.readouterr()
    assert _sweep(out, *argv) == 0
    assert "3 of 4 runs already done" in capsys.readouterr().err
    assert (runs / "fifo-bestfit-s0" / "summary.json").stat().st_mtime_ns == kept
    assert (lost / "summary.json").is_file()
    assert _without_wall(out / "results.csv") == first
    # another grid into the same folder: refused, named, nothing touched
    assert _sweep(out, *argv[:-1], "0-2") == 2
    err = capsys.readouterr().err
    assert "holds a different grid (seeds: was [0, 1], now [0, 1, 2])" in err
    assert err.count("\n") == 1
    assert _without_wall(out / "results.csv") == first
    assert _sweep(out, *argv[:-1], "0-2", "--force") == 0
    assert len(_rows(out / "results.csv")) == 6


def test_a_pack_grid_resumes(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.csv"
    header, *rows = NODES.strip().splitlines()  # 8 copies of the three nodes, renamed
    nodes.write_text("\n".join([header] + [f"c{k}{r}" for k in range(8) for r in rows]) + "\n")
    pods = tmp_path / "pods.csv"
    pods.write_text(_pods_csv(300))
    out = tmp_path / "g"
    argv = ["sweep", "--nodes", str(nodes), "--pods", str(pods), "--policies", "bestfit"]
    argv += ["random", "--seeds", "1-3", "--workers", "1", "--no-figures", "--out", str(out)]
    assert main(argv) == 0
    first = _without_wall(out / "results.csv")
    (out / "runs" / "pods" / "random-s2.json").unlink()
    assert main(argv) == 0
    assert _without_wall(out / "results.csv") == first
    (agg,) = [r for r in _rows(out / "aggregate.csv") if r["policy"] == "random"]
    values = [float(r["unallocated_gpu_pct_100"]) for r in first if r["policy"] == "random"]
    assert len(set(values)) > 1  # the seeds differ
    sd = float(np.std(values, ddof=1))
    half = T_975_DF2 * sd / math.sqrt(3)
    assert float(agg["unallocated_gpu_pct_100_ci95"]) == pytest.approx(half, abs=1e-5)
    assert agg["seeds"] == "3"


def test_engine_ray_without_ray_is_one_line_and_writes_nothing(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    trace = _trace(tmp_path / "t.csv")
    out = tmp_path / "g"
    assert _sweep(out, "--traces", str(trace), "--engine", "ray") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'ray>=2.9'" in err
    assert not out.exists()
    assert _sweep(out, "--traces", str(trace), "--address", "h:1") == 2
    assert "'--address' is for '--engine ray'" in capsys.readouterr().err
