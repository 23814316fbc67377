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


TOPOLOGY = "leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=8,m=1,nic_gbps=400"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # sizes past the planner's bounds: one line saying the bound, not an OverflowError
        (["--model", "llama3-8b", "--cluster", "2x8:H100", "--batch-tokens", "1e30"],
         "'--batch-tokens' 1e30 is 1.22e+26 sequences of 8,192 tokens; the planner takes at "
         "most 16,777,216"),
        (["--model", "llama3-8b", "--cluster", "2x8:H100", "--batch", "10" * 12],
         "'--batch' must be ≥ 1 and ≤ 16,777,216 sequences"),
        (["--model", "llama3-8b", "--cluster", "99999999999999999999x8:H100", "--batch", "8"],
         "'--cluster': 99999999999999999999x8 is 799,999,999,999,999,999,992 GPUs; the planner "
         "takes at most 1,048,576"),
        (["--model", "llama3-8b", "--cluster", "1x99999999999999999999:H100", "--batch", "8"],
         "the planner takes at most 1,048,576"),
        # --nic-gbps: 0 used to fall back to the default; inf and 1e300 were taken
        (["--model", "llama3-8b", *H100, "--nic-gbps", "0"],
         "'--nic-gbps' must be a finite rate > 0 and ≤ 1,000,000 Gb/s (a node's NICs together; "
         "got 0)"),
        (["--model", "llama3-8b", *H100, "--nic-gbps", "-5"], "'--nic-gbps' must be a finite"),
        (["--model", "llama3-8b", *H100, "--nic-gbps", "inf"], "got inf)"),
        (["--model", "llama3-8b", *H100, "--nic-gbps", "nan"], "got nan)"),
        (["--model", "llama3-8b", *H100, "--nic-gbps", "1e300"], "got 1e+300)"),
        # with a topology any --nic-gbps is a conflict, 0 included
        (["--model", "llama3-8b", "--topology", TOPOLOGY, "--gpu", "H100", "--batch", "64",
          "--nic-gbps", "0"], "'--nic-gbps' goes with --cluster"),
    ],
)  # fmt: skip
def test_out_of_range_sizes_and_rates_are_one_line(argv: list[str], message: str, capsys) -> None:
    code, out, err = run(["plan", *argv], capsys)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_binary_files_are_one_line_naming_the_file(tmp_path, capsys) -> None:
    binary = tmp_path / "blob.toml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00[models]\n")
    out_file = tmp_path / "never.toml"
    for argv in (
        ["plan", "--models", str(binary), "--model", "x", "--cluster", "1x8:H100", "--batch", "8"],
        ["plan", "calibrate", "--points", str(binary), "--out", str(out_file)],
        ["plan", "--model", "llama3-8b", "--cluster", "1x8:H100", "--batch", "8",
         "--profile", str(binary)],
    ):  # fmt: skip
        code, out, err = run(argv, capsys)
        assert code == 2 and out == ""
        assert err == f"schedlab: error: not a UTF-8 text file at {binary}\n"
    assert not out_file.exists()


def test_a_model_dimension_past_the_bound_names_file_model_and_field(tmp_path, capsys) -> None:
    models = tmp_path / "m.toml"
    models.write_text(
        "[models.huge]\nlayers = 4\nhidden = 1024\nheads = 16\nvocab = 100\n"
        "seq_len = 99999999999999999999999\n"
    )
    code, out, err = run(
        ["plan", "--models", str(models), "--model", "huge", "--cluster", "1x8:A100", "--batch",
         "8"],
        capsys,
    )  # fmt: skip
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "model 'huge': 'seq_len' must be ≤ 16,777,216" in err
    assert "got 99999999999999999999999" in err and str(models) in err


POINT = (
    '[[points]]\nlabel = "a"\nmodel = "internlm-7b"\ngpu = "A100"\nnodes = {nodes}\n'
    'gpus_per_node = 8\nnic_gbps = {nic}\nplan = "t=1,p=1,d=8,z=1,zg=8,b=2,m=4,r=none"\n'
    'metric = "tgs"\nvalue = {value}\n'
)


@pytest.mark.parametrize(
    ("top", "fields", "message"),
    [
        ("fit = []", {}, "'fit' is empty: it must name at least one field at {file}"),
        ("fit_on = []", {}, "'fit_on' is empty: it must name at least one point at {file}"),
        ('fit = "eta"', {}, "'fit' must be a list of fields (got 'eta') at {file}"),
        ('fit = ["eta", "eta"]', {}, "'fit' names 'eta' twice at {file}"),
        ("", {"value": "inf"}, "{file}: point 1 ('a'): 'value' must be a finite number > 0 "
                               "(got inf)"),
        ("", {"value": "nan"}, "{file}: point 1 ('a'): 'value' must be a finite number > 0"),
        ("", {"nic": "inf"}, "{file}: point 1 ('a'): 'nic_gbps' must be a finite rate > 0"),
        ("", {"nic": "0"}, "{file}: point 1 ('a'): 'nic_gbps' must be a finite rate > 0 and ≤ "
                           "1,000,000 Gb/s (a node's NICs together; got 0)"),
        ("", {"nodes": "0"}, "{file}: point 1 ('a'): 'nodes' must be ≥ 1 (got 0)"),
        ("", {"nodes": "99999999999999"}, "{file}: point 1 ('a'): 'nodes' × 'gpus_per_node': "
                                          "99999999999999x8 is"),
    ],
)  # fmt: skip
def test_calibrate_refuses_bad_points_naming_file_point_and_field(
    tmp_path, capsys, top: str, fields: dict[str, str], message: str
) -> None:
    points = tmp_path / "points.toml"
    values = {"nodes": "1", "nic": "400", "value": "4000", **fields}
    points.write_text(f'name = "mine"\n{top}\n\n' + POINT.format(**values))
    out_file = tmp_path / "mine.toml"
    code, out, err = run(
        ["plan", "calibrate", "--points", str(points), "--out", str(out_file)], capsys
    )
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert message.format(file=points) in err
    assert not out_file.exists()


def test_cross_node_pipeline_hops_pay_the_nic(capsys) -> None:
    """Llama 3 70B as t=4, p=16 on 8 × 8 H100: stages are 4 GPUs, two to a node, so every
    other stage boundary crosses nodes and the pipeline is paced by the NIC, not NVLink. By hand
    at 100 Gb/s a node: a rank's share is 100e9/8/8 = 1.5625e9 B/s, a hop's message
    2·b·s·h/t = 2·1·8192·8192/4 = 33,554,432 B, and each of the m + p − 1 = 271 micro-batch
    times carries a forward and a backward hop of 33,554,432/1.5625e9 + 10 µs (α_inter)."""

    def pp_seconds(nic: str) -> float:
        code, out, _ = run(
            ["plan", "--model", "llama3-70b", "--cluster", "8x8:H100", "--batch", "256",
             "--nic-gbps", nic, "--plan", "t=4,p=16,sp=megatron,d=1,z=0,b=1,r=none", "--json",
             "--top", "1"],
            capsys,
        )  # fmt: skip
        assert code == 0
        best = json.loads(out)["plans"][0]
        assert best["plan"].startswith("t=4,p=16,") and ",m=256," in best["plan"]
        return best["time"]["pp"]

    assert pp_seconds("100") == pytest.approx(271 * 2 * (33_554_432 / 1.5625e9 + 10e-6))
    assert pp_seconds("1") == pytest.approx(271 * 2 * (33_554_432 / 1.5625e7 + 10e-6))
