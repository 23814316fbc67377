"""``schedlab sweep`` with a network: ``--topology``, ``--net-sharing``, ``--net-routing`` and
``--net-control`` reach every run exactly as they reach ``schedlab replay``: a sweep run's
summary and jobs.csv are the same replay's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.cli import main

TOPO = "leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=4,m=1,nic_gbps=100"
#: Timing of the process, not of the simulation.
WALL = ("wall_seconds", "jobs_per_second")


def _trace(path: Path) -> Path:
    path.write_text(
        "job_id,submit_time,num_gpus,duration,model\n"
        "a,0,8,300,vgg16\nb,10,8,200,resnet50\nc,20,4,100,bert\nd,30,16,400,vgg16\n"
    )
    return path


def _replay(tmp_path: Path, trace: Path, net: list[str], cluster: list[str]) -> Path:
    out = tmp_path / "replay"
    args = ["replay", *cluster, "--trace", str(trace), "--topology", TOPO, "--policy", "fifo"]
    assert main([*args, *net, "--out", str(out)]) == 0
    return out


def _sweep(tmp_path: Path, trace: Path, net: list[str], cluster: list[str]) -> Path:
    out = tmp_path / "sweep"
    args = ["sweep", *cluster, "--traces", str(trace), "--topology", TOPO]
    args += ["--policies", "fifo", "--placements", "bestfit", "--workers", "1"]
    assert main([*args, *net, "--out", str(out)]) == 0
    return out / "runs" / "t" / "fifo-bestfit-s0"


def _summary(folder: Path) -> dict[str, object]:
    summary = json.loads((folder / "summary.json").read_text())
    return {k: v for k, v in summary.items() if k not in WALL}


@pytest.mark.parametrize(
    ("net", "cluster"),
    [
        (["--net-control", "crux"], ["--cluster", "4x4"]),
        (["--net-sharing", "maxmin", "--net-routing", "spray"], []),  # hosts from the topology
        (["--net-control", "spray", "--net-sharing", "worst-case"], ["--cluster", "4x4"]),
    ],
)
def test_a_sweep_run_is_the_same_replay(tmp_path: Path, net: list[str], cluster: list[str]) -> None:
    trace = _trace(tmp_path / "t.csv")
    replay = _replay(tmp_path, trace, net, cluster)
    run = _sweep(tmp_path, trace, net, cluster)
    assert _summary(run) == _summary(replay)
    assert (run / "jobs.csv").read_text() == (replay / "jobs.csv").read_text()
    block = _summary(run)["network"]
    assert isinstance(block, dict)
    if "crux" in net:
        assert block["control"] == "crux" and block["sharing"] == "priority"
    else:
        assert block["sharing"] == net[net.index("--net-sharing") + 1]


@pytest.mark.parametrize(
    ("net", "message"),
    [
        (["--net-control", "crux", "--net-routing", "ecmp"], "drop '--net-routing ecmp'"),
        (["--net-control", "crux", "--net-sharing", "maxmin"], "--net-sharing priority"),
    ],
)
def test_contradicting_network_options_are_refused_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], net: list[str], message: str
) -> None:
    trace = _trace(tmp_path / "t.csv")
    out = tmp_path / "sweep"
    args = ["sweep", "--cluster", "4x4", "--traces", str(trace), "--topology", TOPO]
    assert main([*args, "--policies", "fifo", *net, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("schedlab: error: ") and message in err[0]
    assert not out.exists()


def test_net_control_needs_a_topology(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace(tmp_path / "t.csv")
    args = ["sweep", "--cluster", "4x4", "--traces", str(trace), "--net-control", "crux"]
    assert main([*args, "--out", str(tmp_path / "o")]) == 2
    assert "'--net-control' needs '--topology'" in capsys.readouterr().err
