"""Every option either acts or is refused before any work: in ``replay`` (job and sharing runs),
``sweep`` (pack and replay grids) and ``serve``. Sharing runs account energy and carbon."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from schedlab.cli import main

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,16000,65536,2,T4\n"
# a and b share one T4 (bestfit fills the half-used GPU): a 0–100 s, b 50–150 s.
PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "a,1000,1024,1,500,,LS,Running,0,100,0\n"
    "b,1000,1024,1,500,,LS,Running,50,150,50\n"
)
JOBS = "job_id,submit_time,num_gpus,duration\nj0,0,1,60\nj1,10,2,30\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"nodes": tmp_path / "nodes.csv", "pods": tmp_path / "pods.csv"}
    paths["jobs"] = tmp_path / "jobs.csv"
    paths["nodes"].write_text(NODES)
    paths["pods"].write_text(PODS)
    paths["jobs"].write_text(JOBS)
    return paths


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _sharing(files: dict[str, Path], out: Path, *extra: str) -> int:
    argv = ["replay", "--sharing", "--cluster", str(files["nodes"]), "--trace", str(files["pods"])]
    return main([*argv, "--placement", "bestfit", "--out", str(out), *extra])


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], out: Path, message: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not out.exists()


# ---------------------------------------------------------------- energy in sharing runs


@pytest.mark.parametrize(
    ("model", "gpu_joules"),
    [
        # binary: the shared T4 at 70 W for 150 s, the other idle at 10 W
        ("binary", 80 * 150),
        # linear: the shared T4 at 10 + 60·½ = 40 W, 70 W while both are on it, the other 10 W
        ("linear", 50 * 50 + 80 * 50 + 50 * 50),
    ],
)
def test_sharing_run_accounts_energy_and_carbon_by_hand(
    files: dict[str, Path], tmp_path: Path, model: str, gpu_joules: float
) -> None:
    out = tmp_path / "run"
    assert _sharing(files, out, "--power-model", model, "--ci", "const:500") == 0
    energy = json.loads((out / "summary.json").read_text())["energy"]
    cpu_joules = 165 * 150  # one Xeon-8163 socket (PWR's T4 nodes) busy while any pod runs
    assert energy["power_model"] == model
    assert energy["window_start"] == 0 and energy["window_end"] == 150
    assert energy["gpu_energy_kwh"] == pytest.approx(gpu_joules / 3.6e6)
    assert energy["cpu_energy_kwh"] == pytest.approx(cpu_joules / 3.6e6)
    total = (gpu_joules + cpu_joules) / 3.6e6
    assert energy["energy_kwh"] == pytest.approx(total)
    assert energy["carbon_kg"] == pytest.approx(total * 500 / 1000)
    pods = {r["pod"]: r for r in _rows(out / "pods.csv")}
    for pod in ("a", "b"):  # half a T4 at TDP for 100 s each (pods.csv keeps 6 decimals)
        kwh = 0.5 * 70 * 100 / 3.6e6
        assert float(pods[pod]["energy_kwh"]) == pytest.approx(kwh, abs=1e-6)
        assert float(pods[pod]["carbon_kg"]) == pytest.approx(kwh * 0.5, abs=1e-6)
    series = _rows(out / "timeseries.csv")
    assert [float(r["ci"]) for r in series] == [500.0] * len(series)
    assert 'power_model = "' + model + '"' in (out / "config.toml").read_text()


def test_sharing_run_without_energy_options_is_unchanged(
    files: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    assert _sharing(files, out) == 0
    assert "energy" not in json.loads((out / "summary.json").read_text())
    assert "energy_kwh" not in (out / "pods.csv").read_text().splitlines()[0]
    assert "power_w" not in (out / "timeseries.csv").read_text().splitlines()[0]


#: (run, options, the refusal): "sharing" is ``replay --sharing``, "job" a job replay.
REFUSALS = [
    ("sharing", ["--topology", "leafspine:leaves=1,spines=1,hosts_per_leaf=1,g=2"], "no network"),
    ("sharing", ["--net-sharing", "maxmin"], "'--net-sharing' does not apply to 'replay"),
    ("sharing", ["--policy", "fifo"], "'--policy' does not apply to 'replay --sharing'"),
    ("sharing", ["--backfill"], "'--backfill' does not apply"),
    ("sharing", ["--speed", "T4=0.5"], "'--speed' does not apply to 'replay --sharing'"),
    ("sharing", ["--grace", "30"], "'--grace' does not apply"),
    ("sharing", ["--trace-format", "generic"], "'--trace-format' does not apply"),
    ("sharing", ["--mode", "pack", "--power-model", "binary"], "'--power-model' needs time"),
    ("sharing", ["--power-model", "measured"], "'--power-model measured' needs each job's model"),
    ("sharing", ["--pue", "1.3"], "'--pue' needs '--power-model' or '--ci'"),
    ("job", ["--window", "0:100"], "'--window' applies to 'replay --sharing' only"),
    ("job", ["--overcommit", "1.5"], "'--overcommit' applies to 'replay --sharing' only"),
    ("job", ["--keep-unscheduled"], "'--keep-unscheduled' applies to 'replay --sharing' only"),
    ("job", ["--net-sharing", "maxmin"], "'--net-sharing' needs '--topology'"),
    ("job", ["--net-routing", "spray"], "'--net-routing' needs '--topology'"),
    ("job", ["--pue", "1.2"], "'--pue' needs '--power-model' or '--ci'"),
    ("job", ["--gpu-power", "T4=1/2"], "'--gpu-power' needs '--power-model' or '--ci'"),
    ("job", ["--power-model", "binary", "--ci-start", "2020-01-01T00:00:00"], "needs '--ci'"),
]  # fmt: skip


@pytest.mark.parametrize(("run", "extra", "message"), REFUSALS)
def test_replay_refuses_options_the_run_would_ignore(
    files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    run: str,
    extra: list[str],
    message: str,
) -> None:
    out = tmp_path / "run"
    if run == "sharing":
        argv = ["replay", "--sharing", "--cluster", str(files["nodes"])]
        argv += ["--trace", str(files["pods"])]
    else:
        argv = ["replay", "--cluster", "1x2:T4", "--trace", str(files["jobs"]), "--policy", "fifo"]
    _refused(capsys, [*argv, "--out", str(out), *extra], out, message)


# ---------------------------------------------------------------- sweeps and serve


def test_pack_grid_refuses_replay_options(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "grid"
    argv = ["sweep", "--nodes", str(files["nodes"]), "--pods", str(files["pods"])]
    for extra, message in (
        (["--load", "0.5"], "'--load' applies to replay grids (--cluster) only"),
        (["--restart-overhead", "30"], "'--restart-overhead' applies to replay grids"),
        (["--placements", "fgd"], "'--placements' applies to replay grids"),
    ):
        _refused(capsys, [*argv, "--out", str(out), *extra], out, message)


def test_replay_grid_refuses_pack_options(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "grid"
    argv = ["sweep", "--cluster", "1x2:T4", "--traces", str(files["jobs"]), "--out", str(out)]
    _refused(capsys, [*argv, "--inflate", "1.1"], out, "'--inflate' applies to pack grids")
    _refused(capsys, [*argv, "--no-figures"], out, "'--no-figures' applies to pack grids")


def test_serve_refuses_journal_rotation_it_would_ignore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "slurm", "--policy", "fifo", "--state-dir", str(tmp_path)]
    assert main([*argv, "--journal-max-mib", "5"]) == 2
    assert "'--journal-max-mib' needs '--journal'" in capsys.readouterr().err
    journal = str(tmp_path / "j.jsonl")
    assert main([*argv, "--journal", journal, "--journal-keep", "3"]) == 2
    assert "'--journal-keep' needs '--journal-max-mib'" in capsys.readouterr().err
    assert not (tmp_path / "j.jsonl").exists()


def test_ray_sweep_refuses_a_worker_count_it_would_ignore(
    files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import schedlab.experiments.ray_engine as ray_engine

    monkeypatch.setattr(ray_engine, "require_ray", lambda: None)  # as if Ray were installed
    out = tmp_path / "grid"
    argv = ["sweep", "--cluster", "1x2:T4", "--traces", str(files["jobs"]), "--out", str(out)]
    _refused(capsys, [*argv, "--engine", "ray", "--workers", "3"], out, "'--workers' is for")
