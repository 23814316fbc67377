"""Energy and carbon accounting in replay: exact hand-computed cases under each power model,
constant and stepped carbon intensity, a job straddling a step, and plain runs left unchanged."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.energy.carbon import CarbonSeries, parse_ci
from schedlab.energy.data import CpuPower, data_dir
from schedlab.energy.meter import EnergyMeter
from schedlab.energy.power import ClusterPower, EnergySettings, gpu_power, socket_power
from schedlab.engines.replay import ReplayEngine
from schedlab.model.jobs import JobTable
from schedlab.perf.models import TraceDuration
from schedlab.policies.registry import make_scheduler
from schedlab.traces.cluster_spec import parse_cluster_spec

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
needs_data = pytest.mark.skipif(
    not (SHARED_DATA / "power").is_dir(), reason="../shared/data not beside this checkout"
)

# FIFO on one node of 4 V100 (30 W idle / 300 W busy; one Xeon-6326 socket of 16 cores, idle
# 20 W since the jobs ask for no CPU): a 0→100 on 2 GPUs, b 100→150 on 4, c 150→160 on 1,
# d 150→170 on 2.
TRACE = """job_id,submit_time,num_gpus,duration,user
a,0,2,100,alice
b,1,4,50,bob
c,2,1,10,alice
d,3,2,20,carol
"""
JOB_J = {"a": 2 * 300 * 100, "b": 4 * 300 * 50, "c": 1 * 300 * 10, "d": 2 * 300 * 20}
# GPU watts per interval: busy·300 + idle·30
GPU_J = (2 * 300 + 2 * 30) * 100 + 4 * 300 * 50 + (3 * 300 + 30) * 10 + (2 * 300 + 2 * 30) * 10
CPU_J = 20 * 170


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text(TRACE)
    return path


def run(trace: Path, out: Path, *extra: str) -> int:
    argv = ["replay", "--cluster", "1x4:V100", "--trace", str(trace), "--policy", "fifo"]
    return main([*argv, "--out", str(out), *extra])


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


# -- hand cases under each power model ------------------------------------------------------------
@needs_data
@pytest.mark.parametrize("model", ["binary", "linear"])
def test_energy_of_the_hand_trace(model: str, trace: Path, tmp_path: Path) -> None:
    assert run(trace, tmp_path / "o", "--power-model", model, "--pue", "1.5") == 0
    jobs = {r["job_id"]: r for r in rows(tmp_path / "o" / "jobs.csv")}
    for job, joules in JOB_J.items():
        assert float(jobs[job]["energy_kwh"]) == pytest.approx(1.5 * joules / 3.6e6, abs=1e-6)
        assert "carbon_kg" not in jobs[job]  # no --ci: no carbon
    energy = json.loads((tmp_path / "o" / "summary.json").read_text())["energy"]
    assert energy["gpu_energy_kwh"] == pytest.approx(GPU_J / 3.6e6, rel=1e-12)
    assert energy["cpu_energy_kwh"] == pytest.approx(CPU_J / 3.6e6, rel=1e-12)
    assert energy["energy_kwh"] == pytest.approx(1.5 * (GPU_J + CPU_J) / 3.6e6, rel=1e-12)
    assert energy["peak_power_kw"] == pytest.approx(1.5 * (1200 + 20) / 1000)
    assert energy["mean_power_kw"] == pytest.approx(1.5 * (GPU_J + CPU_J) / 170 / 1000)
    series = rows(tmp_path / "o" / "timeseries.csv")
    assert [float(r["power_w"]) for r in series] == pytest.approx(
        [1.5 * w for w in (680, 680, 680, 680, 1220, 950, 680, 140)]
    )


@needs_data
def test_measured_model_at_a_power_limit(trace: Path, tmp_path: Path) -> None:
    # V100 curve, ResNet-50/ImageNet batch 256 (the default workload): at 150 of 250 W (p = 0.6)
    # a job runs 3515.0/4148.7 as fast and draws 144.6/250 of the 300 W TDP per GPU.
    one = tmp_path / "one.csv"
    one.write_text("job_id,submit_time,num_gpus,duration\nx,0,2,100\n")
    assert run(one, tmp_path / "o", "--power-model", "measured", "--power-limit", "0.6") == 0
    (job,) = rows(tmp_path / "o" / "jobs.csv")
    stretch = 4148.7 / 3515.0
    assert float(job["end_time"]) == pytest.approx(100 * stretch, rel=1e-4)
    watts = 2 * 300 * 144.6 / 250
    # (the spec rounds Zeus's figures to 0.1: compare to that precision)
    assert float(job["energy_kwh"]) == pytest.approx(watts * 100 * stretch / 3.6e6, rel=5e-4)
    assert float(job["power_limit"]) == pytest.approx(0.6)
    # at the top limit the measured draw is 220.3/250 of TDP, the speed unchanged
    assert run(one, tmp_path / "top", "--power-model", "measured") == 0
    (top,) = rows(tmp_path / "top" / "jobs.csv")
    assert float(top["end_time"]) == 100
    assert float(top["energy_kwh"]) == pytest.approx(2 * 300 * 220.3 / 250 * 100 / 3.6e6, rel=5e-4)


def test_linear_and_binary_differ_only_on_shared_gpus() -> None:
    assert gpu_power(30, 300, 0, "binary") == gpu_power(30, 300, 0, "linear") == 30
    assert gpu_power(30, 300, 1000, "binary") == gpu_power(30, 300, 1000, "linear") == 300
    assert gpu_power(30, 300, 500, "binary") == 300
    assert gpu_power(30, 300, 500, "linear") == 30 + 270 * 0.5


def test_socket_model_by_hand() -> None:
    cpu = CpuPower(20, 185, 16)
    # 96 vCPU → 48 cores → 3 sockets; 40 vCPU free → 20 idle cores, 28 working → 2 active
    assert socket_power(cpu, 96_000, 40_000) == 2 * 185 + 20
    assert socket_power(cpu, 96_000, 96_000) == 3 * 20
    assert socket_power(cpu, 96_000, 0) == 3 * 185
    assert socket_power(None, 96_000, 0) == 0


# -- carbon ---------------------------------------------------------------------------------------
@needs_data
def test_carbon_under_a_constant(trace: Path, tmp_path: Path) -> None:
    assert run(trace, tmp_path / "o", "--ci", "const:400") == 0
    jobs = {r["job_id"]: r for r in rows(tmp_path / "o" / "jobs.csv")}
    for job, joules in JOB_J.items():
        assert float(jobs[job]["carbon_kg"]) == pytest.approx(joules / 3.6e6 * 0.4, abs=1e-6)
    energy = json.loads((tmp_path / "o" / "summary.json").read_text())["energy"]
    assert energy["carbon_kg"] == pytest.approx((GPU_J + CPU_J) / 3.6e6 * 0.4)


@needs_data
def test_carbon_under_two_steps_with_a_straddling_job(trace: Path, tmp_path: Path) -> None:
    ci = tmp_path / "ci.csv"
    ci.write_text("time,ci_g_per_kwh\n0,100\n50,300\n")  # 100 until 50, then 300 (no wrap)
    assert run(trace, tmp_path / "o", "--ci", str(ci), "--no-ci-wrap") == 0
    jobs = {r["job_id"]: r for r in rows(tmp_path / "o" / "jobs.csv")}
    # a (600 W) straddles the step at 50: 50 s at 100 and 50 s at 300
    assert float(jobs["a"]["carbon_kg"]) == pytest.approx(
        600 * (50 * 100 + 50 * 300) / 3.6e6 / 1000, abs=1e-6
    )
    assert float(jobs["b"]["carbon_kg"]) == pytest.approx(1200 * 50 * 300 / 3.6e9, abs=1e-6)
    series = rows(tmp_path / "o" / "timeseries.csv")
    assert [float(r["ci"]) for r in series] == [100, 100, 100, 100, 300, 300, 300, 300]


@needs_data
def test_the_meter_splits_a_straddling_job_exactly() -> None:
    cluster = parse_cluster_spec("1x4:V100")
    table = JobTable.from_columns(
        job_id=np.array(["a"], dtype=object),
        submit_time=np.array([0.0]),
        num_gpus=np.array([2]),
        duration=np.array([100.0]),
    )
    power = ClusterPower.build(cluster, EnergySettings(energy_data=str(SHARED_DATA)))
    ci = CarbonSeries(np.array([0.0, 50.0]), np.array([100.0, 300.0]), 3600.0, wrap=False)
    meter = EnergyMeter(cluster, table, power, ci)
    sched, place = make_scheduler("fifo")
    ReplayEngine(cluster, table, sched, place, TraceDuration(), observer=meter).run()
    assert meter.job_j[0] == 600 * 100
    assert meter.job_g[0] == 600 * (50 * 100 + 50 * 300) / 3.6e6
    cluster_w = 600 + 2 * 30 + 20  # two busy GPUs, two idle, one idle socket
    assert meter.carbon_g == pytest.approx(cluster_w * (50 * 100 + 50 * 300) / 3.6e6, rel=1e-15)


def test_series_integral_is_exact_across_steps_and_wraps() -> None:
    s = CarbonSeries(np.array([0.0, 10.0]), np.array([1.0, 3.0]), 20.0, wrap=True)
    assert s.integral(5, 15) == 5 * 1 + 5 * 3
    assert s.integral(15, 25) == 5 * 3 + 5 * 1  # wraps to the first step at 20
    assert s.integral(0, 60) == 3 * 40
    assert s.at(25) == 1 and s.at(35) == 3
    assert s.steps_between(5, 41) == [10, 20, 30, 40]
    held = CarbonSeries(np.array([0.0, 10.0]), np.array([1.0, 3.0]), 20.0, wrap=False)
    assert held.integral(15, 40) == 25 * 3 and held.at(100) == 3


@given(
    values=st.lists(st.floats(0, 1000), min_size=1, max_size=6),
    a=st.floats(-50, 200),
    cut=st.floats(0, 1),
    width=st.floats(0, 150),
)
def test_integral_is_additive(values: list[float], a: float, cut: float, width: float) -> None:
    times = np.arange(len(values)) * 10.0
    s = CarbonSeries(times, np.array(values), len(values) * 10.0)
    b = a + width
    m = a + cut * width
    assert s.integral(a, b) == pytest.approx(s.integral(a, m) + s.integral(m, b), abs=1e-6)
    assert s.integral(a, b) >= -1e-9


def test_synthetic_series_without_noise_is_the_cosine() -> None:
    s = parse_ci("synth:gb2020,s=0,days=2")
    mu, a = 215.0, 77 / 215
    assert s.at(18 * 3600) == pytest.approx(mu * (1 + a / 2))
    assert s.at(6 * 3600) == pytest.approx(mu * (1 - a / 2))
    assert s.at(42 * 3600) == pytest.approx(mu * (1 + a / 2))
    assert len(s.values) == 48
    again = parse_ci("synth:gb2020,seed=3")
    assert np.array_equal(again.values, parse_ci("synth:gb2020,seed=3").values)


# -- energy as an observer ------------------------------------------------------------------------
def _strip(line: str, k: int) -> str:
    return line if k == 0 else ",".join(line.split(",")[:-k])


@needs_data
def test_plain_runs_are_unchanged_and_energy_only_adds_columns(trace: Path, tmp_path: Path) -> None:
    assert run(trace, tmp_path / "plain") == 0
    assert run(trace, tmp_path / "energy", "--ci", "const:100") == 0
    for name, extra in (("jobs.csv", 3), ("timeseries.csv", 2)):
        plain = (tmp_path / "plain" / name).read_text().splitlines()
        energy = (tmp_path / "energy" / name).read_text().splitlines()
        assert [_strip(line, extra) for line in energy] == plain
    plain = json.loads((tmp_path / "plain" / "summary.json").read_text())
    energy = json.loads((tmp_path / "energy" / "summary.json").read_text())
    assert "energy" not in plain
    skip = {"energy", "wall_seconds", "jobs_per_second"}
    assert {k: v for k, v in energy.items() if k not in skip} == {
        k: v for k, v in plain.items() if k not in skip
    }
    assert "power_model" not in (tmp_path / "plain" / "config.toml").read_text()


@needs_data
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(0, 50), st.sampled_from([1, 2, 4]), st.integers(1, 60)),
        min_size=1,
        max_size=8,
    )
)
def test_gpu_energy_is_idle_plus_what_jobs_add(jobs: list[tuple[int, int, int]]) -> None:
    cluster = parse_cluster_spec("2x4:V100")
    table = JobTable.from_columns(
        job_id=np.array([f"j{i}" for i in range(len(jobs))], dtype=object),
        submit_time=np.array([float(j[0]) for j in jobs]),
        num_gpus=np.array([j[1] for j in jobs]),
        duration=np.array([float(j[2]) for j in jobs]),
    ).sorted_by_submit()
    power = ClusterPower.build(cluster, EnergySettings(energy_data=str(SHARED_DATA)))
    ci = CarbonSeries(np.array([0.0, 30.0]), np.array([100.0, 500.0]), 60.0)
    meter = EnergyMeter(cluster, table, power, ci)
    sched, place = make_scheduler("fifo")
    record = ReplayEngine(cluster, table, sched, place, TraceDuration(), observer=meter).run()
    meter.finish(meter.last)
    span = meter.last - meter.start
    busy = record.gpu_seconds.sum()
    assert meter.gpu_j == pytest.approx(8 * 30 * span + 270 * busy, rel=1e-9)
    assert meter.job_j.sum() == pytest.approx(300 * busy, rel=1e-9)
    # carbon per job is its power times ∫CI over where it ran; never above the 500 g/kWh ceiling
    assert np.all(meter.job_g <= meter.job_j / 3.6e6 * 500 + 1e-9)
    assert (
        math.isclose(
            meter.carbon_g,
            meter.carbon_g,  # finite
        )
        and meter.carbon_g >= 0
    )


# -- bad input ------------------------------------------------------------------------------------
def test_bad_ci_file_names_file_line_and_column(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ci = tmp_path / "ci.csv"
    ci.write_text("time,ci_g_per_kwh\n0,100\n50,300\n40,200\n")
    assert run(trace, tmp_path / "o", "--ci", str(ci)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("schedlab: error: ")
    assert f"{ci}:4" in err and "'time'" in err and "increasing" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "option",
    ["const:-1", "synth:nope", "country:XXX", "synth:gb2020,rho=2", "nosuch.csv"],
)
def test_bad_ci_specs_are_one_line_errors(
    option: str, trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if option.startswith("country") and not (SHARED_DATA / "carbon").is_dir():
        pytest.skip("no carbon tables")
    assert run(trace, tmp_path / "o", "--ci", option) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("schedlab: error: ")


def test_unknown_gpu_model_needs_figures(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not (SHARED_DATA / "power").is_dir():
        pytest.skip("no power tables")
    argv = ["replay", "--cluster", "1x4:H100", "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, "--out", str(tmp_path / "o"), "--ci", "const:1"]) == 2
    assert "--gpu-power H100=IDLE/TDP" in capsys.readouterr().err
    assert (
        main([*argv, "--out", str(tmp_path / "o"), "--gpu-power", "H100=60/700", "--ci", "const:1"])
        == 0
    )


def test_data_dir_is_found_beside_the_checkout() -> None:
    if not (SHARED_DATA / "power").is_dir():
        pytest.skip("no shared data")
    assert (data_dir() / "power" / "gpu_power.csv").is_file()


@needs_data
def test_config_toml_repeats_an_energy_run(trace: Path, tmp_path: Path) -> None:
    assert run(trace, tmp_path / "a", "--ci", "synth:gb2020,seed=2", "--pue", "1.2") == 0
    config = tmp_path / "a" / "config.toml"
    assert main(["replay", "--config", str(config), "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "a" / "jobs.csv").read_text() == (tmp_path / "b" / "jobs.csv").read_text()
    energy = json.loads((tmp_path / "b" / "summary.json").read_text())["energy"]
    assert energy["pue"] == 1.2 and energy["ci"] == "synth:gb2020,seed=2"
