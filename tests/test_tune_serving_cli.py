"""``schedlab tune serving`` end to end, as a user runs it: tune a service, feed the pod list to
``replay --sharing``, and the refusals."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from schedlab.cli import main

# The unit cases' service: its optimum is M1 (T4, share 1, 4 GB, 2 cores, batch 16), J 867.2.
SERVICE = "alpha=5,beta=2.5,kappa=4,m0=1,m=0.05,slo=100"
NODES = """sn,cpu_milli,memory_mib,gpu,model
n0,16000,65536,2,T4
n1,16000,65536,2,T4
"""


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_grid_over_the_whole_space_finds_m1_and_replay_runs_its_pods(tmp_path, capsys) -> None:
    out = tmp_path / "svc"
    argv = ["tune", "serving", "--service", SERVICE, "--tuner", "grid", "--budget", "720"]
    assert main([*argv, "--load", "1000", "--duration", "600", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "867.2" in printed and "T4 share 1" in printed
    tuned = json.loads((out / "tuned.json").read_text())
    c = tuned["config"]
    # M1 and its siblings with 2, 8 or 16 GB tie (a whole T4 is billed whatever the memory)
    assert (c["gpu"], c["share"], c["cores"], c["batch"]) == ("T4", 1.0, 2, 16)
    assert c["objective"] == pytest.approx(867.2086720867209, rel=1e-9)
    assert tuned["regret"] == 0.0 and len(tuned["samples"]) == 720
    pods = rows(out / "pods.csv")
    # ceil(1000 / (0.8 · 355.56)) = 4 replicas of 2 cores, a whole T4 each
    assert len(pods) == 4
    assert {
        (p["cpu_milli"], p["memory_mib"], p["gpu_milli"], p["gpu_spec"], p["qos"]) for p in pods
    } == {("2000", "8192", "1000", "T4", "LS")}
    assert 'tuner = "grid"' in (out / "config.toml").read_text()
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(NODES)
    replay = tmp_path / "replay"
    argv = ["replay", "--sharing", "--cluster", str(nodes), "--trace", str(out / "pods.csv")]
    assert main([*argv, "--placement", "bestfit", "--out", str(replay)]) == 0
    assert len(rows(next(replay.glob("*pods*.csv")))) == 4


def test_the_same_seed_gives_the_same_random_search(tmp_path) -> None:
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        argv = ["tune", "serving", "--service", SERVICE, "--tuner", "random", "--budget", "12"]
        assert main([*argv, "--seed", "3", "--out", str(out)]) == 0
        runs.append(json.loads((out / "tuned.json").read_text())["samples"])
    assert runs[0] == runs[1] and len(runs[0]) == 12


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--service", "alpha=5,beta=2.5,kappa=4,m0=1,m=0.05,slo=1"],
            "configuration space is empty",
        ),
        (["--service", SERVICE, "--budget", "0"], "'--budget' must be in 1..720"),
        (["--service", SERVICE, "--tuner", "meta"], "needs --meta FILE"),
        (["--tuner", "grid"], "exactly one of --service and --services"),
        (["--service", SERVICE, "--load", "inf"], "'--load' must be > 0 requests/s and finite"),
        (["--service", SERVICE, "--duration", "inf"], "'--duration' must be > 0 s and finite"),
        (["--service", SERVICE, "--load", "1e30"], "more than the 100,000 pods pods.csv may list"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, extra, message) -> None:
    out = tmp_path / "svc"
    assert main(["tune", "serving", *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(
    "content", [b"", b"job,a\n1,2\n", b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order'"]
)
def test_a_file_that_is_not_meta_weights_is_one_line(tmp_path, capsys, content) -> None:
    meta = tmp_path / "meta.npz"
    meta.write_bytes(content)
    out = tmp_path / "svc"
    argv = ["tune", "serving", "--service", SERVICE, "--tuner", "meta", "--meta", str(meta)]
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a meta-weights file written by" in err, err
    assert str(meta) in err and "pickle" not in err
    assert not out.exists()


def test_a_bare_array_is_not_meta_weights(tmp_path, capsys) -> None:
    import numpy as np

    meta = tmp_path / "meta.npz"
    with open(meta, "wb") as fh:
        np.save(fh, np.zeros(3))
    argv = ["tune", "serving", "--service", SERVICE, "--tuner", "meta", "--meta", str(meta)]
    assert main([*argv, "--out", str(tmp_path / "svc")]) == 2
    assert "not a meta-weights file written by" in capsys.readouterr().err


def test_a_population_beyond_the_bound_is_refused(tmp_path, capsys) -> None:
    out = tmp_path / "services.csv"
    assert main(["tune", "serving", "gen", "--n", "100000000000", "--out", str(out)]) == 2
    assert "'--n' may be at most 100,000 services" in capsys.readouterr().err
    assert not out.exists()
