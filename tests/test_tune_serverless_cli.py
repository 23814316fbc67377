"""``schedlab tune serverless`` end to end, as a user runs it, and its refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from schedlab.cli import main

LAYER = {
    "params_mb": 100,
    "act_mb_per_sample": 10,
    "out_mb_per_sample": 5,
    "fwd": [0, 0.1],
    "bwd": [0, 0.2],
}
PLATFORM = """name = "toy"
memory_mb = [1024, 2048]
speed = [0.5, 1.0]
bandwidth_mb_s = 100
latency_s = 0
price_gb_s = 1e-5
price_put = 5e-6
price_get = 4e-7
"""


@pytest.fixture
def toy(tmp_path: Path) -> tuple[Path, Path]:
    model = tmp_path / "toy.json"
    model.write_text(
        json.dumps({"name": "toy", "layers": [dict(LAYER, name=f"l{i}") for i in range(4)]})
    )
    platform = tmp_path / "toy.toml"
    platform.write_text(PLATFORM)
    return model, platform


def argv(model: Path, platform: Path, out: Path, *extra: str) -> list[str]:
    return [
        "tune", "serverless", "--model", str(model), "--platform", str(platform), "--batch", "32",
        "--optimizer", "sgd", "--max-d", "1", "--max-m", "16", "--max-stages", "4",
        "--out", str(out), *extra,
    ]  # fmt: skip


def test_the_f4_case_from_the_command_line(toy, tmp_path: Path, capsys) -> None:
    model, platform = toy
    out = tmp_path / "run"
    assert main(argv(model, platform, out)) == 0
    printed = capsys.readouterr().out
    assert "funcpipe" in printed and "11.400" in printed
    plan = json.loads((out / "plan.json").read_text())
    best = plan["funcpipe"]["plan"]
    assert [s["layers"] for s in best["stages"]] == [[0, 1], [1, 2], [2, 3], [3, 4]]
    assert {s["memory_mb"] for s in best["stages"]} == {2048.0}
    assert best["t_iter_s"] == pytest.approx(11.4, rel=1e-9)
    assert best["cost_usd"] == pytest.approx(1.4304e-3, rel=1e-9)
    assert plan["funcpipe"]["solver"] == "exhaustive"
    assert plan["baselines"]["dp-serverless"]["plan"] is None  # d ≤ 1: no baseline plan
    plans = pd.read_csv(out / "plans.csv")
    assert list(plans.columns) == [
        "planner", "t_iter_s", "cost_usd", "stages", "layers", "memory_mb", "d", "m", "best",
    ]  # fmt: skip
    front = plans[plans.planner == "funcpipe"]
    assert front.best.sum() == 1 and front.t_iter_s.is_monotonic_increasing
    assert front.cost_usd.is_monotonic_decreasing
    assert (out / "config.toml").read_text().startswith("# schedlab ")


def test_same_inputs_give_byte_identical_files_with_either_solver(toy, tmp_path: Path) -> None:
    model, platform = toy
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(argv(model, platform, a, "--objective", "cost")) == 0
    assert main(argv(model, platform, b, "--objective", "cost")) == 0
    for name in ("plan.json", "plans.csv"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    c = tmp_path / "c"
    assert main(argv(model, platform, c, "--objective", "cost", "--solver", "milp")) == 0
    pa = json.loads((a / "plan.json").read_text())["funcpipe"]["plan"]
    pc = json.loads((c / "plan.json").read_text())["funcpipe"]["plan"]
    assert pc["cost_usd"] == pytest.approx(pa["cost_usd"], rel=1e-9)
    assert pc["cost_usd"] == pytest.approx(9.504e-4, rel=1e-9)  # m = 8 is cheaper than 16


def test_json_on_stdout_is_clean_even_with_the_milp_solver(toy, tmp_path: Path) -> None:
    model, platform = toy
    cmd = [sys.executable, "-m", "schedlab", *argv(model, platform, tmp_path / "j"),
           "--solver", "milp", "--json"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # nothing but the JSON (HiGHS prints nothing there)
    assert data["funcpipe"]["solver"] == "milp"
    assert data["funcpipe"]["plan"]["t_iter_s"] == pytest.approx(11.4, rel=1e-9)


def test_a_built_in_model_on_the_aws_preset_beats_the_baseline(tmp_path: Path, capsys) -> None:
    out = tmp_path / "bert"
    code = main(["tune", "serverless", "--model", "bert-base", "--batch", "16", "--max-stages",
                 "4", "--max-d", "8", "--max-m", "4", "--baselines", "dp-serverless", "--out",
                 str(out)])  # fmt: skip
    assert code == 0
    data = json.loads((out / "plan.json").read_text())
    assert data["funcpipe"]["solver"] == "milp" and data["platform"] == "aws"
    vs = data["vs_baselines"]["dp-serverless"]
    assert vs["speedup"] >= 1.0  # the planner's space contains the baseline's one-stage plans


def test_profile_action_writes_a_profile_the_planner_reads(tmp_path: Path) -> None:
    target = tmp_path / "r50.json"
    assert (
        main(["tune", "serverless", "profile", "--model", "resnet-50", "--out", str(target)]) == 0
    )
    data = json.loads(target.read_text())
    assert data["name"] == "resnet-50" and 2 <= len(data["layers"]) <= 32
    from schedlab.tune.serverless.profile import read_profile

    assert len(read_profile(target)) == len(data["layers"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda m, p: m.write_text('{"layers": [{"params_mb": 1}]}'),
            "layer 0: missing 'act_mb_per_sample' at",
        ),
        (
            lambda m, p: m.write_text(
                '{"layers": [{"params_mb": -1, "act_mb_per_sample": 0, '
                '"out_mb_per_sample": 0, "fwd": [0, 0], "bwd": [0, 0]}]}'
            ),
            "layer 0: 'params_mb' must be ≥ 0 (got -1)",
        ),
        (lambda m, p: m.write_text('{"layers": []}'), "'layers' is empty"),
        (lambda m, p: m.write_text("{not json"), "not valid JSON"),
        (
            lambda m, p: p.write_text(PLATFORM.replace("bandwidth_mb_s = 100", "bandwidth = 100")),
            "unknown field 'bandwidth'",
        ),
        (
            lambda m, p: p.write_text(PLATFORM.replace("speed = [0.5, 1.0]", "speed = [0.5]")),
            "'speed' must list one speed per memory size",
        ),
        (
            lambda m, p: m.write_text(json.dumps({"layers": [dict(LAYER, params_mb=5000)]})),
            "layer 0 ('layer0') needs",
        ),
    ],
)
def test_bad_files_are_one_line_errors_naming_file_and_field(
    toy, tmp_path, capsys, change, message
):
    model, platform = toy
    change(model, platform)
    out = tmp_path / "never"
    assert main(argv(model, platform, out)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("schedlab: error: ") and len(err.splitlines()) == 1
    assert message in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--objective", "fastest"], "'--objective' must be time, cost or weighted:W"),
        (["--objective", "weighted:2"], "'--objective' must be time, cost or weighted:W"),
        (["--memory", "1024=fast"], "'--memory' must look like MB=SPEED"),
        (["--memory", "1024=inf"], "'--memory' must look like MB=SPEED"),
        (["--baselines", "gpu"], "'--baselines' takes"),
        (["--baselines", "uniform,uniform"], "'--baselines' names uniform twice"),
        (["--max-stages", "0"], "'--max-stages' must be ≥ 1"),
        (["--batch", "0"], "'--batch' must be ≥ 1"),
    ],
)
def test_bad_options_are_refused(toy, tmp_path, capsys, extra, message) -> None:
    model, platform = toy
    assert main(argv(model, platform, tmp_path / "never", *extra)) == 2
    assert message in capsys.readouterr().err


def test_no_plan_that_fits_is_said_in_one_line(toy, tmp_path, capsys) -> None:
    model, platform = toy
    assert main(argv(model, platform, tmp_path / "never", "--max-stages", "1")) == 2
    err = capsys.readouterr().err
    assert "no plan of toy fits toy at batch 32 with at most 1 stages" in err
    assert not (tmp_path / "never").exists()


def test_limits_beyond_the_batch_plan_as_the_batch_does(toy, tmp_path) -> None:
    """d and m each take at least one sample: limits past the batch (32) change nothing, and
    the search stops at the batch instead of counting to a million."""
    model, platform = toy
    runs = []
    for name, d, m in (("batch", "32", "32"), ("huge", "100000", "1000000")):
        out = tmp_path / name
        assert main([*argv(model, platform, out), "--max-d", d, "--max-m", m]) == 0
        runs.append(json.loads((out / "plan.json").read_text())["funcpipe"])
    assert runs[0] == runs[1]
