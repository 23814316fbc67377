"""serve slurm with the network under the cluster, end to end on the 4-node dev cluster.

Two leaf switches of two nodes each (leaf1 = node1, node2; leaf2 = node3, node4) under one spine,
given as a topology.conf file (``--topology``) or read from Slurm itself (a cluster started with
``scripts/slurm-dev-cluster.sh start --topology``). Jobs of partition ``free`` (Slurm's own) hold
one GPU of node1 for a few seconds and one of node4 for longer, so the only whole free nodes are
node2 and node3, under different switches. A ``-N2 --gres=gpu:8`` job must then wait and run on
node1 + node2, under one switch, as soon as node1 is free: what a placement that keeps a job's
traffic under one leaf does (a node-only placement starts it at once on node2 + node3).

The placement is the built-in ``locality``, which reads the tree as ``ctx.topology``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import test_serve_slurm_e2e as e2e
from schedlab.serve.client import SubprocessSlurm
from schedlab.serve.journal import read_journal
from test_serve_slurm_e2e import (
    INTERVAL,
    REPO,
    SCENARIO_TIMEOUT,
    finish,
    job_field,
    journal_starts,
    ran_once_where_chosen,
    records_for,
    sbatch,
    wait_until,
)

pytestmark = pytest.mark.slurm
slurm = e2e.slurm  # the fixtures of the serve end-to-end tests
clean = e2e.clean

#: The network placement under test: the built-in ``locality`` (fewest leaves, then hosts). The
#: test plugin ``leaf_placement:SameLeaf`` does the same with only ``ctx.topology`` in view.
PLACEMENT = ("--placement", "locality")
TOPOLOGY_CONF = """\
# two leaf switches of two nodes under one spine
SwitchName=leaf1 Nodes=node[1-2]
SwitchName=leaf2 Nodes=node[3-4]
SwitchName=spine Switches=leaf[1-2]
"""


def serve_with(tmp_path: Path, *extra: str) -> subprocess.Popen:
    """``serve slurm --policy fifo`` with the placement under test, its own lock folder (never
    the machine's), until idle."""
    argv = [sys.executable, "-m", "schedlab", "serve", "slurm", "--policy", "fifo", *PLACEMENT]
    argv += ["--interval", INTERVAL, "--journal", str(tmp_path / "serve.jsonl"), "--quiet"]
    argv += ["--state-dir", str(tmp_path / "state"), "--until-idle", *extra]
    tests = str(Path(__file__).parent)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")])),
    }
    return subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.fixture
def settled(clean):
    """``clean``, and afterwards every job of the test gone before the next test starts."""
    ours, _ = clean
    yield ours
    if ours:
        subprocess.run(["scancel", *map(str, ours)], check=False, capture_output=True)
        wait_until(
            lambda: all(job_field(j, "%T") in ("", "COMPLETED", "CANCELLED") for j in ours),
            time.monotonic() + 30,
        )


def live_tree() -> str:
    return subprocess.run(
        ["scontrol", "show", "topology"], capture_output=True, text=True, check=True
    ).stdout


def two_leaves_one_free_node_each(ours: list[int]) -> tuple[int, int, int]:
    """Slurm's own jobs on node1 (6 s) and node4 (20 s), then the held 16-GPU job; returns
    (the short foreign job, the long one, the 16-GPU job)."""
    short = sbatch(
        ours, "-p", "free", "-w", "node1", "--gres=gpu:1", "-t", "1", "--wrap", "sleep 6"
    )
    long = sbatch(
        ours, "-p", "free", "-w", "node4", "--gres=gpu:1", "-t", "2", "--wrap", "sleep 20"
    )
    wait_until(
        lambda: job_field(short, "%T") == "RUNNING" and job_field(long, "%T") == "RUNNING",
        time.monotonic() + 20,
    )
    wide = sbatch(ours, "-N2", "--gres=gpu:8", "-t", "1", "--wrap", "sleep 2")
    return short, long, wide


def check_one_switch(tmp_path: Path, short: int, wide: int) -> None:
    journal = tmp_path / "serve.jsonl"
    ran = ran_once_where_chosen([wide], journal)
    assert sorted(ran[wide].nodes) == ["node1", "node2"], ran[wide]
    first = records_for([short])[short][0]
    assert ran[wide].start >= first.end, "the 16-GPU job did not wait for node1"
    assert journal_starts(journal)[wide][-1]["nodes"] == ["node1", "node2"]
    assert not [r for r in read_journal(journal) if r["action"] in ("skip", "error")]


def test_a_topology_conf_file_keeps_a_two_node_job_under_one_switch(
    slurm: SubprocessSlurm, settled: list[int], tmp_path: Path
) -> None:
    ours = settled
    conf = tmp_path / "topology.conf"
    conf.write_text(TOPOLOGY_CONF)
    short, _, wide = two_leaves_one_free_node_each(ours)
    proc = serve_with(tmp_path, "--topology", str(conf))
    finish(proc, time.monotonic() + SCENARIO_TIMEOUT)
    check_one_switch(tmp_path, short, wide)
    record = next(r for r in read_journal(tmp_path / "serve.jsonl") if r["action"] == "serve")
    assert record["topology"] == str(conf)


def test_slurms_own_tree_keeps_a_two_node_job_under_one_switch(
    slurm: SubprocessSlurm, settled: list[int], tmp_path: Path
) -> None:
    if not live_tree().strip():
        pytest.skip(
            "the Slurm cluster has no switch tree: start it with "
            "'scripts/slurm-dev-cluster.sh start --topology'"
        )
    ours = settled
    short, _, wide = two_leaves_one_free_node_each(ours)
    finish(serve_with(tmp_path), time.monotonic() + SCENARIO_TIMEOUT)
    check_one_switch(tmp_path, short, wide)
    record = next(r for r in read_journal(tmp_path / "serve.jsonl") if r["action"] == "serve")
    assert record["topology"] == "'scontrol show topology'"


def test_without_a_tree_a_network_placement_is_refused_live(
    slurm: SubprocessSlurm, tmp_path: Path
) -> None:
    if live_tree().strip():
        pytest.skip("the Slurm cluster has a switch tree (the refusal needs one without)")
    proc = serve_with(tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "needs the network under the cluster" in lines[0], lines
    assert not (tmp_path / "serve.jsonl").exists()
