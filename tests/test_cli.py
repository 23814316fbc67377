"""End-to-end runs of the ``schedlab`` command on small fixtures written by the tests."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from schedlab.cli import main

NODES = """sn,cpu_milli,memory_mib,gpu,model
n0,32000,131072,4,T4
n1,64000,262144,8,V100M16
n2,16000,65536,2,P100
"""


def _pods_csv(n: int = 40) -> str:
    rows = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec"]
    shapes = [
        (4000, 8192, 1, 250, ""),
        (8000, 16384, 1, 1000, ""),
        (2000, 4096, 0, 0, ""),
        (16000, 32768, 2, 1000, "V100M16|P100"),
        (4000, 8192, 1, 500, "T4"),
    ]
    for i in range(n):
        cpu, mem, k, share, spec = shapes[i % len(shapes)]
        rows.append(f"p{i:03d},{cpu},{mem},{k},{share},{spec}")
    return "\n".join(rows) + "\n"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    nodes = tmp_path / "nodes.csv"
    pods = tmp_path / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(_pods_csv())
    return nodes, pods


def _pack(nodes: Path, pods: Path, out: Path, *extra: str) -> int:
    return main(
        [
            "pack",
            "--nodes",
            str(nodes),
            "--pods",
            str(pods),
            "--policy",
            "fgd",
            "--seed",
            "7",
            "--inflate",
            "1.3",
            "--out",
            str(out),
            *extra,
        ]
    )


def test_pack_writes_summary_events_config_and_figures(files, tmp_path):
    nodes, pods = files
    out = tmp_path / "run"
    assert _pack(nodes, pods, out) == 0
    summary = json.loads((out / "summary.json").read_text())
    for key in (
        "policy",
        "seed",
        "inflate",
        "pods_total",
        "pods_failed",
        "wall_seconds",
        "unallocated_gpu_pct",
        "frag_amount_pct",
        "frag_ratio_pct",
    ):
        assert key in summary
    assert summary["policy"] == "fgd" and summary["seed"] == 7 and summary["inflate"] == 1.3
    # 14 GPUs; the stream is inflated until one more pod would pass 1.3 × 14 GPUs.
    assert summary["gpus"] == 14
    with open(out / "events.csv", newline="") as fh:
        events = list(csv.DictReader(fh))
    assert len(events) == summary["pods_total"]
    assert sum(1 for e in events if e["node"] == "") == summary["pods_failed"]
    assert float(events[-1]["arrived_pct"]) <= 130.0
    assert all(k.isdigit() for k in summary["unallocated_gpu_pct"])
    for name in ("unallocated_gpu", "fragmentation"):
        assert (out / "figures" / f"{name}.png").stat().st_size > 1000
        assert (out / "figures" / f"{name}.svg").read_text().lstrip().startswith("<?xml")


def test_pack_same_seed_gives_identical_files(files, tmp_path):
    nodes, pods = files
    a, b = tmp_path / "a", tmp_path / "b"
    assert _pack(nodes, pods, a, "--no-figures") == 0
    assert _pack(nodes, pods, b, "--no-figures") == 0
    assert (a / "events.csv").read_bytes() == (b / "events.csv").read_bytes()
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    sa.pop("wall_seconds")
    sb.pop("wall_seconds")
    assert sa == sb


def test_pack_config_file_repeats_the_run(files, tmp_path):
    nodes, pods = files
    first = tmp_path / "first"
    assert _pack(nodes, pods, first, "--no-figures") == 0
    again = tmp_path / "again"
    assert (
        main(["pack", "--config", str(first / "config.toml"), "--out", str(again), "--no-figures"])
        == 0
    )
    assert (first / "events.csv").read_bytes() == (again / "events.csv").read_bytes()


def test_pack_config_rejects_unknown_keys(files, tmp_path, capsys):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('policy = "fgd"\nseeed = 3\n')
    assert main(["pack", "--config", str(cfg), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'seeed'" in err and "bad.toml" in err


def test_bad_pod_file_names_file_row_column_and_writes_nothing(files, tmp_path, capsys):
    nodes, _ = files
    pods = tmp_path / "pods.csv"
    lines = _pods_csv(20).splitlines()
    lines[16] = "p015,4000,8192,1,1200,"  # editor line 17
    pods.write_text("\n".join(lines) + "\n")
    out = tmp_path / "run"
    assert _pack(nodes, pods, out) == 2
    err = capsys.readouterr().err
    assert "'gpu_milli' must be in 0..1000 (got 1200)" in err
    assert f"{pods}:17" in err and "column 'gpu_milli'" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_unknown_policy_suggests_a_name(files, tmp_path, capsys):
    nodes, pods = files
    code = main(
        [
            "pack",
            "--nodes",
            str(nodes),
            "--pods",
            str(pods),
            "--policy",
            "bestfti",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert code == 2
    assert "did you mean 'bestfit'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_missing_file_is_a_clear_error(tmp_path, capsys):
    code = main(
        [
            "pack",
            "--nodes",
            str(tmp_path / "nope.csv"),
            "--pods",
            str(tmp_path / "x.csv"),
            "--policy",
            "fgd",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert code == 2
    assert "file not found" in capsys.readouterr().err


def test_sweep_writes_results_and_figures(files, tmp_path):
    nodes, pods = files
    pods_b = tmp_path / "other.csv"
    pods_b.write_text(_pods_csv(25))
    out = tmp_path / "grid"
    code = main(
        [
            "sweep",
            "--nodes",
            str(nodes),
            "--pods",
            str(pods),
            str(pods_b),
            "--policies",
            "bestfit",
            "fgd",
            "--seeds",
            "1-3",
            "--inflate",
            "1.2",
            "--out",
            str(out),
            "--workers",
            "2",
        ]
    )
    assert code == 0
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 2 * 3
    assert {r["pods"] for r in rows} == {"pods", "other"}
    for col in (
        "pods",
        "policy",
        "seed",
        "unallocated_gpu_pct_100",
        "unallocated_gpu_pct_130",
        "frag_amount_pct_100",
        "pods_failed",
        "wall_seconds",
    ):
        assert col in rows[0]
    # Rows come in (pod list, policy order, seed) order whatever finished first.
    assert [(r["policy"], r["seed"]) for r in rows[:6]] == [
        ("bestfit", "1"),
        ("bestfit", "2"),
        ("bestfit", "3"),
        ("fgd", "1"),
        ("fgd", "2"),
        ("fgd", "3"),
    ]
    for label in ("pods", "other"):
        assert (out / "figures" / label / "unallocated_gpu.png").exists()
        assert (out / "figures" / label / "fragmentation.svg").exists()


def test_sweep_results_do_not_depend_on_worker_count(files, tmp_path):
    nodes, pods = files
    tables = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        assert (
            main(
                [
                    "sweep",
                    "--nodes",
                    str(nodes),
                    "--pods",
                    str(pods),
                    "--policies",
                    "random",
                    "fgd",
                    "--seeds",
                    "5,6",
                    "--out",
                    str(out),
                    "--workers",
                    str(workers),
                    "--no-figures",
                ]
            )
            == 0
        )
        with open(out / "results.csv", newline="") as fh:
            tables.append(
                [{k: v for k, v in r.items() if k != "wall_seconds"} for r in csv.DictReader(fh)]
            )
    assert tables[0] == tables[1]


@pytest.mark.parametrize("seeds", ["5-3", "x", "1-", ""])
def test_sweep_rejects_bad_seeds(files, tmp_path, capsys, seeds):
    nodes, pods = files
    code = main(
        [
            "sweep",
            "--nodes",
            str(nodes),
            "--pods",
            str(pods),
            "--seeds",
            seeds,
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert code == 2
    assert "'--seeds' must look like" in capsys.readouterr().err


def test_policies_lists_all_six(capsys):
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    for name in ("random", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd"):
        assert name in out


@pytest.mark.parametrize("command", ["demo", "pack", "sweep", "policies"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert "usage: schedlab" in capsys.readouterr().out


def test_demo_runs_without_files(tmp_path):
    """The installed console entry point, as a user runs it, on a small generated cluster."""
    out = tmp_path / "demo"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "schedlab",
            "demo",
            "--nodes",
            "60",
            "--seeds",
            "1",
            "--workers",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("random", "fgd", "bestfit"):
        assert name in proc.stdout
    with open(out / "results.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 6
    assert list((out / "figures").glob("*/unallocated_gpu.png"))
    # The deadline part: every ablation step, with the built-in scaling model (no files).
    with open(out / "deadlines" / "results.csv", newline="") as fh:
        rows = {r["policy"]: r for r in csv.DictReader(fh)}
    assert {"edf-greedy", "edf-ac", "edf-elastic", "elasticflow"} <= set(rows)
    assert all(0 <= float(r["dsr"]) <= 1 for r in rows.values())
    assert float(rows["elasticflow"]["dsr"]) > float(rows["edf-greedy"]["dsr"])


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "usage: schedlab" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["replay", "--seed", "x", "--out", "o"], "argument --seed: invalid int value: 'x'"),
        (["serve", "slurm", "--interval", "abc"], "argument --interval: invalid float value"),
        (["tune", "serving", "gen", "--n", "x", "--out", "s.csv"], "argument --n: invalid int"),
        (["nosuch"], "argument COMMAND: invalid choice: 'nosuch'"),
    ],
)
def test_argument_errors_are_one_line_with_the_way_to_help(argv, needle, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "--help')" in err, err
