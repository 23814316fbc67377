"""``schedlab plan`` end to end, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from schedlab.cli import main


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_prints_the_fastest_plan_and_the_rejections(capsys) -> None:
    code, out, _ = run(
        [
            "plan",
            "--model",
            "llama3-70b",
            "--cluster",
            "64x8:H100",
            "--batch-tokens",
            "4M",
            "--top",
            "3",
        ],
        capsys,
    )
    assert code == 0
    assert "fastest plans that fit (top 3)" in out
    assert "why the other plans do not" in out and "tp-node" in out
    assert "global batch 512 sequences (4,194,304 tokens)" in out


def test_plan_json_is_ranked_and_consistent(capsys) -> None:
    code, out, _ = run(
        ["plan", "--model", "internlm-7b", "--cluster", "8x8:A100", "--batch", "512",
         "--profile", "internevo-a100", "--nic-gbps", "400", "--json", "--top", "4"],
        capsys,
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["gpus"] == 64 and data["batch_sequences"] == 512
    steps = [p["step_s"] for p in data["plans"]]
    assert steps == sorted(steps) and len(steps) == 4
    best = data["plans"][0]
    assert best["tgs"] == pytest.approx(512 * 2048 / best["step_s"] / 64)
    assert best["memory_gb"] <= best["usable_gb"]
    assert {r["constraint"] for r in data["rejected"]} <= {
        "tp-node", "tp-heads", "stages", "cp-split", "batch", "zero-pp", "fixed", "memory"
    }  # fmt: skip


def test_fixed_plan_fields_are_respected(capsys) -> None:
    code, out, _ = run(
        ["plan", "--model", "gpt-sc21-18b", "--cluster", "32x8:A100", "--plan", "t=8,p=1,r=full",
         "--profile", "megatron-sc21-a100", "--nic-gbps", "1600", "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0
    plans = json.loads(out)["plans"]
    assert plans and all(p["plan"].startswith("t=8,p=1,") and ",r=full" in p["plan"] for p in plans)


H100 = ["--cluster", "4x8:H100", "--batch", "16"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--model", "llama3-405b", "--cluster", "2x8:H100", "--batch", "16"],
            "nearest miss needs",
        ),
        (["--model", "llama3-8b", *H100, "--plan", "t=16"], "tp-node"),
        (["--model", "llama3-8", *H100], "did you mean 'llama3-8b'"),
        (["--model", "llama3-8b", "--cluster", "4x8:B200", "--batch", "16"], "no specification"),
        (["--model", "llama3-8b", "--cluster", "4by8", "--batch", "16"], "NODESxGPUS:MODEL"),
        (["--model", "llama3-8b", "--cluster", "4x8:H100"], "has no published batch"),
        (["--model", "llama3-8b", *H100, "--plan", "t=x"], "t must be a whole number"),
        (["--model", "llama3-8b", *H100, "--profile", "nope"], "unknown profile"),
        (["--model", "llama3-8b", *H100, "--top", "0"], "'--top' must be ≥ 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str, capsys) -> None:
    code, out, err = run(["plan", *argv], capsys)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_inconsistent_model_file_is_refused(tmp_path, capsys) -> None:
    models = tmp_path / "m.toml"
    models.write_text(
        "[models.odd]\nlayers = 4\nhidden = 1000\nheads = 16\nvocab = 100\nseq_len = 64\n"
    )
    code, _, err = run(
        [
            "plan",
            "--models",
            str(models),
            "--model",
            "odd",
            "--cluster",
            "1x8:A100",
            "--batch",
            "8",
        ],
        capsys,
    )
    assert code == 2 and "hidden 1000 is not a multiple of heads 16" in err and "m.toml" in err


def test_plan_on_a_topology_reports_the_paths(capsys) -> None:
    code, out, _ = run(
        ["plan", "--model", "llama3-8b", "--topology",
         "leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=8,m=1,nic_gbps=400", "--gpu", "H100",
         "--batch", "64", "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["gpus"] == 32
    net = data["network"]
    assert net["dp_seconds"] >= 0 and net["cross_host_bytes"] >= 0


def test_calibrate_writes_a_profile_that_reads_back(tmp_path, capsys) -> None:
    points = tmp_path / "points.toml"
    points.write_text(
        'name = "mine"\nbase = "generic"\nfit = ["eta"]\n\n'
        '[[points]]\nlabel = "a"\nmodel = "internlm-7b"\ngpu = "A100"\nnodes = 1\n'
        'gpus_per_node = 8\nnic_gbps = 400\nplan = "t=1,p=1,d=8,z=1,zg=8,b=2,m=4,r=none"\n'
        'metric = "tgs"\nvalue = 4000\n'
    )
    out_file = tmp_path / "mine.toml"
    code, out, _ = run(
        ["plan", "calibrate", "--points", str(points), "--out", str(out_file)], capsys
    )
    assert code == 0 and "fitted eta" in out
    code, out, _ = run(
        ["plan", "--model", "internlm-7b", "--cluster", "1x8:A100", "--batch", "64", "--nic-gbps",
         "400", "--plan", "t=1,p=1,z=1,zg=8,b=2,m=4,r=none", "--profile", str(out_file), "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["plans"][0]["tgs"] == pytest.approx(4000, rel=1e-4)


def test_plan_imports_nothing_it_does_not_need() -> None:
    code = (
        "import sys; from schedlab.cli import main; "
        "main(['plan','--model','llama3-8b','--cluster','1x8:H100','--batch','8','--json']); "
        "bad = [m for m in ('scipy', 'pandas', 'schedlab.engines.replay') if m in sys.modules]; "
        "print(bad, file=sys.stderr); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
