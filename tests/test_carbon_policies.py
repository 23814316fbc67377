"""lcs, suspend-resume and carbon-scaler on hand-made carbon series, computed by hand."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from schedlab.cli import main
from schedlab.energy.carbon import CarbonSeries
from schedlab.energy.shifting import cheapest_steps, lowest_carbon_start
from schedlab.policies.carbon.carbon_scaler import count_at, plan_counts
from schedlab.policies.carbon.suspend_resume import merge

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "power").is_dir(), reason="no ../shared/data")
H = 3600.0


def series(*steps: tuple[float, float], end: float, wrap: bool = False) -> CarbonSeries:
    return CarbonSeries(np.array([t for t, _ in steps]), np.array([v for _, v in steps]), end, wrap)


def replay(tmp_path: Path, trace: str, ci: str, policy: str, *extra: str) -> dict[str, dict]:
    (tmp_path / "t.csv").write_text(trace)
    (tmp_path / "ci.csv").write_text(ci)
    out = tmp_path / policy
    argv = ["replay", "--cluster", "1x4:V100", "--trace", str(tmp_path / "t.csv")]
    argv += ["--policy", policy, "--ci", str(tmp_path / "ci.csv"), "--no-ci-wrap"]
    assert main([*argv, "--out", str(out), *extra]) == 0
    with open(out / "jobs.csv", newline="") as fh:
        return {r["job_id"]: r for r in csv.DictReader(fh)}


# -- the planning rules ---------------------------------------------------------------------------
def test_lowest_carbon_start_by_hand() -> None:
    s = series((0, 300), (H, 100), (2 * H, 300), end=3 * H)
    assert lowest_carbon_start(s, 0, 1800, 2 * H) == H
    assert lowest_carbon_start(s, 0, 1800, 0) == 0  # no slack: start at arrival
    assert lowest_carbon_start(s, 4000, 1800, 2 * H) == 4000  # already in the clean hour
    # ties go to the earliest start: a flat series never waits
    assert lowest_carbon_start(CarbonSeries.constant(5), 10, 100, 1e6) == 10


def test_cheapest_steps_by_hand() -> None:
    s = series((0, 300), (H, 100), (2 * H, 50), (3 * H, 300), end=4 * H)
    # window [0, 1.5 h + 2 h]: the 50 step whole, then the first half of the 100 step
    assert cheapest_steps(s, 0, 1.5 * H, 2 * H) == [(H, 1.5 * H), (2 * H, 3 * H)]
    assert merge([(0, 1), (1, 2), (3, 4)]) == [(0, 2), (3, 4)]


def test_carbon_scaler_plan_by_hand() -> None:
    s = series((0, 200), (100, 100), end=1000)
    plan = plan_counts(s, 0, 200, 500, float, [1, 2, 4], 1.0)
    # the clean step is worth twice the dirty one per GPU: it goes to 4 (400 units), then the
    # dirty step gets one GPU for the last 100
    assert plan == [(0, 100, 1), (100, 200, 4)]
    assert count_at(plan, 50, 4) == 1 and count_at(plan, 150, 4) == 4
    assert count_at(plan, 250, 4) == 4  # past the window: the top level
    # a job the window cannot cover runs at the top level throughout
    assert plan_counts(s, 0, 200, 10_000, float, [1, 2, 4], 1.0) == [(0, 100, 4), (100, 200, 4)]


# -- end to end -----------------------------------------------------------------------------------
TRACE = "job_id,submit_time,num_gpus,duration\na,0,1,1800\nb,4000,1,1800\n"
CI = "time,ci_g_per_kwh\n0,300\n3600,100\n7200,300\n"


@needs_data
def test_lcs_holds_a_job_to_the_clean_hour(tmp_path: Path) -> None:
    jobs = replay(tmp_path, TRACE, CI, "lcs", "--param", "slack=7200")
    assert (float(jobs["a"]["start_time"]), float(jobs["a"]["end_time"])) == (3600, 5400)
    assert (float(jobs["b"]["start_time"]), float(jobs["b"]["end_time"])) == (4000, 5800)
    # 300 W for 1800 s at 100 g/kWh
    assert float(jobs["a"]["carbon_kg"]) == pytest.approx(300 * 1800 * 100 / 3.6e9, abs=1e-6)
    plain = replay(tmp_path, TRACE, CI, "fifo")
    assert float(plain["a"]["start_time"]) == 0
    assert float(plain["a"]["carbon_kg"]) > 2.9 * float(jobs["a"]["carbon_kg"])


@needs_data
def test_lcs_without_slack_is_fifo(tmp_path: Path) -> None:
    jobs = replay(tmp_path, TRACE, CI, "lcs", "--param", "slack=0")
    assert float(jobs["a"]["start_time"]) == 0


@needs_data
def test_suspend_resume_runs_in_the_cheapest_steps(tmp_path: Path) -> None:
    ci = "time,ci_g_per_kwh\n0,300\n3600,100\n7200,50\n10800,300\n"
    trace = "job_id,submit_time,num_gpus,duration\na,0,1,5400\n"
    jobs = replay(
        tmp_path, trace, ci, "suspend-resume", "--param", "slack=7200", "--restart-overhead", "60"
    )
    a = jobs["a"]
    # runs 3600→5400, suspended, resumes at 7200 paying 60 s, and finishes at 10860
    assert (float(a["start_time"]), float(a["end_time"])) == (3600, 10860)
    assert int(a["preemptions"]) == 1
    watts = 300
    carbon = watts * (1800 * 100 + 3600 * 50 + 60 * 300) / 3.6e9
    assert float(a["carbon_kg"]) == pytest.approx(carbon, abs=1e-6)


@needs_data
def test_carbon_scaler_waits_and_scales_up_in_the_clean_step(tmp_path: Path) -> None:
    ci = "time,ci_g_per_kwh\n0,200\n100,100\n"
    trace = "job_id,submit_time,num_gpus,duration\na,0,1,400\n"
    jobs = replay(tmp_path, trace, ci, "carbon-scaler", "--param", "slack=0")
    a = jobs["a"]
    # window [0, 400): the clean step [100, 400) at 2 GPUs covers the 400 units by 300
    assert (float(a["start_time"]), float(a["end_time"])) == (100, 300)
    assert float(a["gpu_seconds"]) == 400


@needs_data
@pytest.mark.parametrize("policy", ["lcs", "suspend-resume", "carbon-scaler"])
def test_without_carbon_variation_nobody_waits(policy: str, tmp_path: Path) -> None:
    ci = "time,ci_g_per_kwh\n0,100\n"
    jobs = replay(tmp_path, TRACE, ci, policy)
    assert float(jobs["a"]["start_time"]) == 0 and float(jobs["b"]["start_time"]) == 4000


def test_bad_slack_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.csv").write_text(TRACE)
    argv = ["replay", "--cluster", "1x4:V100", "--trace", str(tmp_path / "t.csv")]
    code = main([*argv, "--policy", "lcs", "--param", "slack=-1", "--out", str(tmp_path / "o")])
    assert code == 2
    assert "'slack' must be seconds ≥ 0" in capsys.readouterr().err
