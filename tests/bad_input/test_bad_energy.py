"""Carbon and power inputs that make no sense, refused before the run with one line: carbon
series with steps too short to plan over or intensities no grid has, ``synth:`` specs out of
range, power figures beyond any hardware, and a measured power model whose table lacks a job's
workload. The energy tables are written here, so no case needs ../shared."""

from __future__ import annotations

from pathlib import Path

import pytest
from bad_input_helpers import refused, replay_argv, write

from schedlab.cli import main


@pytest.fixture
def energy_data(tmp_path: Path) -> Path:
    """A small energy-data folder: PWR-style power tables and one Zeus file (V100) that has
    BERT measurements only (no ResNet-50, the default workload)."""
    root = tmp_path / "energy"
    (root / "power").mkdir(parents=True)
    (root / "zeus-nsdi23").mkdir()
    (root / "carbon").mkdir()
    write(root / "power", "gpu_power.csv", "gpu_model,idle_w,tdp_w\nV100M32,30,300\n")
    write(
        root / "power",
        "cpu_power.csv",
        "cpu_model,idle_w_per_socket,full_w_per_socket,physical_cores_per_socket,"
        "assigned_to_openb_nodes\nXeon,20,165,24,V100M32|CPU-only\n",
    )
    rows = "".join(
        f"squad,bert_base_uncased,32,adamw,{w},{t},{p}\n"
        for w, t, p in ((150, 130.0, 140.0), (200, 110.0, 180.0), (250, 100.0, 220.0))
    )
    write(
        root / "zeus-nsdi23",
        "summary_power_v100.csv",
        "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n" + rows,
    )
    return root


def energy_argv(tmp_path: Path, root: Path, *extra: str) -> list[str]:
    return replay_argv(tmp_path, "--cluster", "1x4:V100", "--energy-data", str(root), *extra)


CI_FILES = [
    ("microsecond steps", "0,100\n0.000001,300\n0.000002,200\n", [":3", "at least 1 s apart"]),
    ("1e300 g/kWh", "0,100\n3600,1e300\n", [":3", "'ci_g_per_kwh'", "at most 2000"]),
    ("negative", "0,100\n3600,-5\n", [":3", "'ci_g_per_kwh' must be ≥ 0"]),
    ("nan", "0,100\n3600,nan\n", [":3", "'ci_g_per_kwh' must be a number"]),
    ("times in the far future", "0,100\n1e12,200\n", [":3", "more than a century"]),
    ("times going back", "0,100\n3600,200\n1800,300\n", [":4", "strictly increasing"]),
]


@pytest.mark.parametrize(
    ("rows", "needles"), [c[1:] for c in CI_FILES], ids=[c[0] for c in CI_FILES]
)
def test_a_carbon_series_file_out_of_bounds_is_refused(
    rows: str,
    needles: list[str],
    energy_data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ci = write(tmp_path, "ci.csv", "time,ci_g_per_kwh\n" + rows)
    argv = energy_argv(tmp_path, energy_data, "--ci", str(ci), "--policy", "lcs")
    refused(argv, capsys, str(ci), *needles, out=tmp_path / "out")


CI_SPECS = [
    ("const:1e300", ["'--ci const:'", "0..2000", "'1e300'"]),
    ("const:-1", ["'--ci const:'"]),
    ("const:inf", ["'--ci const:'"]),
    ("synth:gb2020,mu=-215", ["option 'mu'", "'-215'"]),
    ("synth:gb2020,mu=1e300", ["option 'mu'"]),
    ("synth:gb2020,days=10000000", ["option 'days'", "≤ 3660", "'10000000'"]),
    ("synth:gb2020,days=2.5", ["option 'days' must be a whole number"]),
    ("synth:gb2020,days=0", ["option 'days'"]),
    ("synth:gb2020,seed=-1", ["option 'seed'"]),
    ("synth:gb2020,rho=1", ["option 'rho'", "< 1"]),
    ("synth:gb2020,a=3", ["option 'a'"]),
    ("synth:gb2020,f=nan", ["option 'f'"]),
    ("synth:gb2020,s=10", ["gives intensities up to", "above 2000"]),
    ("synth:gb2020,days=2,days=3", ["option 'days' is given twice"]),
    ("synth:gb2020,wind=3", ["has no option 'wind'"]),
    ("synth:gb2021", ["unknown carbon-intensity preset 'gb2021'"]),
]


@pytest.mark.parametrize(("spec", "needles"), CI_SPECS, ids=[c[0] for c in CI_SPECS])
def test_a_carbon_spec_out_of_range_is_refused(
    spec: str,
    needles: list[str],
    energy_data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = energy_argv(tmp_path, energy_data, "--ci", spec)
    refused(argv, capsys, *needles, out=tmp_path / "out")


POWER_OPTIONS = [
    (["--pue", "1e300"], ["'--pue' must be in 1..5"]),
    (["--pue", "nan"], ["'--pue'"]),
    (["--node-base-w", "inf"], ["'--node-base-w' must be in 0..100000 watts"]),
    (["--gpu-power", "V100=30/1e300"], ["'--gpu-power' needs 0 ≤ IDLE ≤ TDP ≤ 5000 W"]),
    (["--gpu-power", "V100=300/30"], ["'--gpu-power' needs 0 ≤ IDLE ≤ TDP"]),
    (["--gpu-power", "Z99=30/300"], ["unknown GPU model 'Z99'"]),
    (["--gpu-power", "V100=30/300,v100=40/300"], ["gives V100 twice"]),
    (["--power-model", "measured", "--power-limit", "nan"], ["'--power-limit' must be in (0, 1]"]),
]


@pytest.mark.parametrize(
    ("extra", "needles"), POWER_OPTIONS, ids=[" ".join(c[0]) for c in POWER_OPTIONS]
)
def test_power_figures_beyond_any_hardware_are_refused(
    extra: list[str],
    needles: list[str],
    energy_data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = energy_argv(tmp_path, energy_data, "--ci", "const:100", *extra)
    refused(argv, capsys, *needles, out=tmp_path / "out")


def test_a_measured_power_model_lacking_the_jobs_workload_is_one_line(
    energy_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The trace names no model: its jobs run as ResNet-50, which the V100 file does not have.
    argv = energy_argv(tmp_path, energy_data, "--power-model", "measured")
    zeus = energy_data / "zeus-nsdi23" / "summary_power_v100.csv"
    needles = ["no measurements of imagenet/resnet50", str(zeus), "column 'network'"]
    refused(argv, capsys, *needles, out=tmp_path / "out")
    # A trace of BERT jobs is covered by the same file and runs.
    bert = "job_id,submit_time,num_gpus,duration,model_name,batch_size\na,0,2,100,bert,32\n"
    argv = energy_argv(tmp_path, energy_data, "--power-model", "measured")
    write(tmp_path, "bert.csv", bert)
    argv[argv.index("--trace") + 1] = str(tmp_path / "bert.csv")
    assert main(argv) == 0


def test_a_carbon_aware_policy_runs_on_a_series_at_the_shortest_step(
    energy_data: Path, tmp_path: Path
) -> None:
    """One-second steps are the finest accepted; lcs plans over them."""
    rows = "".join(f"{t},{100 + (t % 7) * 10}\n" for t in range(0, 120))
    ci = write(tmp_path, "ci.csv", "time,ci_g_per_kwh\n" + rows)
    argv = energy_argv(tmp_path, energy_data, "--ci", str(ci), "--policy", "lcs")
    assert main(argv) == 0
