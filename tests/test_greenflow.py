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


def test_unlimited_budget_hands_out_every_gpu_that_costs_nothing_per_unit_of_work(
    tmp_path: Path,
) -> None:
    # Trace durations scale linearly: a GPU more costs no energy per unit of work, so every
    # increment scores infinitely; pass 1 gives a and b one GPU each, pass 2 a→2 (index order),
    # then b→2 (a→4 does not fit); a ends at 300, then b grows to 4 and ends at 450.
    out = replay(tmp_path, "greenflow", "--ci", "const:100")
    assert ends(out) == {"a": 300, "b": 450}


def test_a_budget_that_covers_the_work_is_spent_as_fast_as_the_work_allows(
    tmp_path: Path,
) -> None:
    # The work is 1,800 GPU-seconds: 15 g at 300 W and 100 g/kWh (a GPU-slot of 60 s is 0.5 g).
    # The budget is spread to now + drain, drain = the GPU-seconds left over the 4 GPUs (450 s
    # at 0), so 15.3 g gives 15.3·60/450 = 2.04 g in the first slot — four GPU-slots — and, as
    # work and budget fall together, about as much in every slot after: the run is the
    # unlimited one. (Spread over the last arrival + 24 h it would be 0.01 g a slot.)
    out = replay(tmp_path, "greenflow", "--ci", "const:100", "--param", "budget_kg=0.0153")
    assert ends(out) == {"a": 300, "b": 450}
    total = sum(float(r["carbon_kg"]) for r in jobs(out).values())
    assert total == pytest.approx(300 * 1800 * 100 / 3.6e9, abs=2e-6)
    assert total <= 0.0153


def test_a_budget_below_the_work_leaves_jobs_unfinished_and_holds(tmp_path: Path) -> None:
    # 7.65 g for 15 g of work: 7.65·60/450 = 1.02 g buys a and b one GPU each in the first
    # slot; at 60 s, 6.65·60/420 + 0.02 = 0.97 g buys only a (fewest one-GPU seconds first).
    # The budget holds and the jobs it cannot pay for are reported unfinished.
    out = replay(tmp_path, "greenflow", "--ci", "const:100", "--param", "budget_kg=0.00765")
    with open(out / "timeseries.csv", newline="") as fh:
        busy = {float(r["time"]): int(float(r["busy_gpus"])) for r in csv.DictReader(fh)}
    assert busy[0.0] == 2 and busy[60.0] == 1
    rows = jobs(out)
    assert sum(float(r["carbon_kg"]) for r in rows.values()) <= 0.00765
    assert "unfinished" in {r["status"] for r in rows.values()}


def test_a_zero_budget_runs_nothing(tmp_path: Path) -> None:
    out = replay(tmp_path, "greenflow", "--ci", "const:100", "--param", "budget_kg=0")
    assert all(r["status"] == "unfinished" for r in jobs(out).values())


def test_a_budget_too_small_for_any_slot_ends_the_run(tmp_path: Path) -> None:
    # 0.4 g cannot buy one GPU-slot (0.5 g) however long it is saved up
    out = replay(tmp_path, "greenflow", "--ci", "const:100", "--param", "budget_kg=0.0004")
    assert all(r["status"] == "unfinished" for r in jobs(out).values())


@pytest.mark.parametrize(
    ("cluster", "limit", "watts"),
    [
        # V100, Zeus's V100 ResNet-50 curve: energy-optimal at 150 of 250 W (0.6), where a GPU
        # draws 144.6/250 of its 300 W TDP
        ("1x1:V100", 0.6, 300 * 144.6 / 250),
        # A100 on the A40 curve: optimal at 200 of 300 W, 732.3 kJ over 4,123.5 s = 177.6 W,
        # of the A100's 400 W TDP
        ("1x1:A100", 200 / 300, 400 * 732.3e3 / 4123.5 / 300),
    ],
)
def test_a_tight_budget_runs_at_the_energy_optimal_limit_not_the_lowest(
    tmp_path: Path, cluster: str, limit: float, watts: float
) -> None:
    """A budget that buys the cheapest configuration (energy per unit of work) and little
    more: the job starts at its curve's energy-optimal limit, never below it; with no budget
    it runs at the top limit in its trace's 600 s."""
    (tmp_path / "t.csv").write_text("job_id,submit_time,num_gpus,duration\na,0,1,600\n")
    measured = ("--ci", "const:100", "--power-model", "measured")
    free = replay(tmp_path, "greenflow", *measured, cluster=cluster)
    (b,) = jobs(free).values()
    assert float(b["power_limit"]) == 1 and float(b["end_time"]) == 600
    # just enough for the whole run at the optimal limit (its energy per unit of work), +2 %
    speed = {"1x1:V100": 3515.0 / 4148.7, "1x1:A100": 3847.5 / 4123.5}[cluster]
    kg = 1.02 * watts * 600 / speed * 100 / 3.6e9
    out = replay(tmp_path, "greenflow", *measured, "--param", f"budget_kg={kg}", cluster=cluster)
    with open(out / "timeseries.csv", newline="") as fh:
        first = next(csv.DictReader(fh))
    with open(free / "timeseries.csv", newline="") as fh:
        top = next(csv.DictReader(fh))
    tdp = {"1x1:V100": 300, "1x1:A100": 400}[cluster]
    # the node's other draw (CPU sockets) is the same in both runs
    assert float(first["power_w"]) - float(top["power_w"]) == pytest.approx(
        watts - tdp * {"1x1:V100": 220.3 / 250, "1x1:A100": 235.2 / 300}[cluster], rel=1e-3
    )
    (a,) = jobs(out).values()
    assert float(a["power_limit"]) >= limit - 1e-9
    assert float(a["carbon_kg"]) <= kg


def test_powerflow_budget_is_energy(tmp_path: Path) -> None:
    # 1 GPU-slot is 300 W·60 s = 0.005 kWh, the work 0.15 kWh; B = 0.153 kWh is the same run as
    # greenflow's 15.3 g at 100 g/kWh
    out = replay(tmp_path, "powerflow", "--power-model", "binary", "--param", "budget_kwh=0.153")
    assert ends(out) == {"a": 300, "b": 450}
    energy = sum(float(r["energy_kwh"]) for r in jobs(out).values())
    assert energy == pytest.approx(300 * 1800 / 3.6e6, abs=2e-6)
    assert math.isfinite(energy)
