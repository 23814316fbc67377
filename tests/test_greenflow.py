"""greenflow and powerflow: the slot allowance, the two passes, and power limits, by hand."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from schedlab.cli import main

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
pytestmark = pytest.mark.skipif(not (DATA / "power").is_dir(), reason="no ../shared/data")

TRACE = "job_id,submit_time,num_gpus,duration\na,0,1,600\nb,0,1,1200\n"


def replay(tmp_path: Path, policy: str, *extra: str, cluster: str = "1x4:V100") -> Path:
    trace = tmp_path / "t.csv"
    if not trace.exists():
        trace.write_text(TRACE)
    out = tmp_path / f"o{len(list(tmp_path.iterdir()))}"
    argv = ["replay", "--cluster", cluster, "--trace", str(trace), "--policy", policy]
    assert main([*argv, "--out", str(out), *extra]) == 0
    return out


def jobs(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "jobs.csv", newline="") as fh:
        return {r["job_id"]: r for r in csv.DictReader(fh)}


def ends(out: Path) -> dict[str, float]:
    return {j: float(r["end_time"]) for j, r in jobs(out).items()}


def test_unlimited_budget_hands_out_every_gpu_by_time_saved_per_gram(tmp_path: Path) -> None:
    # pass 1: a and b one GPU each; pass 2: b→2 (600 s saved per 0.5 g) then a→2 (300 s per
    # 0.5 g, beating b→4's 300 s per 1 g); a ends at 300, b grows to 4 and ends at 450
    out = replay(tmp_path, "greenflow", "--ci", "const:100")
    assert ends(out) == {"a": 300, "b": 450}


def test_a_budget_spreads_over_the_horizon(tmp_path: Path) -> None:
    # one GPU-slot (300 W, 60 s, 100 g/kWh) is 0.5 g; A = B_rem·60/86400 with B = 1440 g gives
    # 1.0 g in the first slot (both jobs on one GPU), then just under 1.0 g: only a fits and b
    # is suspended at 60; the unspent ≈0.5 g carries over, so from 120 both run again (≈1.5 g a
    # slot). a ends at 600; b, 540 s done, then takes 2 GPUs (1.0 g ≤ ≈1.49 g) and ends at 930
    out = replay(tmp_path, "greenflow", "--ci", "const:100", "--param", "budget_kg=1.44")
    assert ends(out) == {"a": 600, "b": 930}
    assert int(jobs(out)["b"]["preemptions"]) == 1
    total = sum(float(r["carbon_kg"]) for r in jobs(out).values())
    assert total == pytest.approx(300 * 1800 * 100 / 3.6e9, abs=2e-6)
    assert total <= 1.44


def test_a_zero_budget_runs_nothing(tmp_path: Path) -> None:
    out = replay(tmp_path, "greenflow", "--ci", "const:100", "--param", "budget_kg=0")
    assert all(r["status"] == "unfinished" for r in jobs(out).values())


def test_a_budget_too_small_for_any_slot_ends_the_run(tmp_path: Path) -> None:
    # 0.4 g cannot buy one GPU-slot (0.5 g) however long it is saved up
    out = replay(tmp_path, "greenflow", "--ci", "const:100", "--param", "budget_kg=0.0004")
    assert all(r["status"] == "unfinished" for r in jobs(out).values())


def test_a_tight_budget_lowers_the_power_limit(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("job_id,submit_time,num_gpus,duration\na,0,1,600\n")
    # V100, ResNet-50 curve: at 100 of 250 W a GPU draws 98.4/250·300 W = 0.197 g a slot at
    # 100 g/kWh, at 125 W 0.244 g; A ≈ 0.2 g allows only the lowest limit
    out = replay(
        tmp_path,
        "greenflow",
        "--ci",
        "const:100",
        "--power-model",
        "measured",
        "--param",
        "budget_kg=0.288",
        cluster="1x1:V100",
    )
    with open(out / "timeseries.csv", newline="") as fh:
        first = next(csv.DictReader(fh))
    lowest_w = 300 * 98.40 / 250
    assert float(first["power_w"]) == pytest.approx(lowest_w + 20, rel=1e-3)  # + idle socket
    (a,) = jobs(out).values()
    assert float(a["power_limit"]) == pytest.approx(0.4)
    assert float(a["end_time"]) > 600 * 6781.2 / 3515.0 * 0.99
    free = replay(
        tmp_path, "greenflow", "--ci", "const:100", "--power-model", "measured", cluster="1x1:V100"
    )
    (b,) = jobs(free).values()
    assert float(b["power_limit"]) == 1 and float(b["end_time"]) == 600


def test_powerflow_budget_is_energy(tmp_path: Path) -> None:
    # 1 GPU-slot is 300 W·60 s = 0.005 kWh; B = 14.4 kWh gives A = 0.01 kWh in the first slot,
    # the same run as greenflow's 1440 g at 100 g/kWh
    out = replay(tmp_path, "powerflow", "--power-model", "binary", "--param", "budget_kwh=14.4")
    assert ends(out) == {"a": 600, "b": 930}
    energy = sum(float(r["energy_kwh"]) for r in jobs(out).values())
    assert energy == pytest.approx(300 * 1800 / 3.6e6, abs=2e-6)
    assert math.isfinite(energy)
