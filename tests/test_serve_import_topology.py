"""A live run's network reaches its replay: ``serve slurm`` keeps it in the journal's ``serve``
record, and ``trace import-slurm`` puts it on the replay command it prints (``--topology``)."""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np
import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.model.jobs import JobTable
from schedlab.network.generators import parse_topology
from schedlab.network.topology_toml import read_topology_toml, topology_as_toml
from schedlab.serve.compare import replay_starts
from schedlab.serve.fake import FakeSlurm, fake_node
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.loop import ServeConfig, Server
from schedlab.serve.topology_conf import parse_topology_conf
from test_serve_import import SERVE, import_with

T0 = 1_000_000.0
#: node1, node2 under leaf1, node3, node4 under leaf2, both under a spine (scontrol's form).
TREE = """\
SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=node[1-2]
SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=node[3-4]
SwitchName=spine Level=1 LinkSpeed=1 Nodes=node[1-4] Switches=leaf[1-2]
"""
NODES = ["node1", "node2", "node3", "node4"]
SPEC = "leafspine:leaves=2,spines=1,hosts_per_leaf=2,g=8,m=1,nic_gbps=100"


def _same(a, b) -> None:
    """Two topologies with the same hosts, switches and links."""
    for attr in ("host_gpus", "host_nics", "host_nic_gbps", "host_leaf", "switch_level"):
        assert np.array_equal(getattr(a, attr), getattr(b, attr)), attr
    for attr in ("fabric_src", "fabric_dst", "fabric_gbps", "ina_gbps"):
        assert np.array_equal(getattr(a, attr), getattr(b, attr)), attr
    assert a.switch_names == b.switch_names and a.intra_gbps == b.intra_gbps
    assert a.gpu_model == b.gpu_model


@pytest.mark.parametrize(
    "spec",
    [SPEC, "leafspine:leaves=2,spines=2,hosts_per_leaf=1,g=4,m=2,nic_gbps=100,links_per_pair=2"],
)
def test_the_explicit_toml_reads_back_the_same_network(tmp_path: Path, spec: str) -> None:
    topo = parse_topology(spec)
    path = tmp_path / "t.toml"
    path.write_text(topology_as_toml(topo))
    _same(read_topology_toml(path), topo)


def test_a_switch_tree_reads_back_the_same_network(tmp_path: Path) -> None:
    tree = parse_topology_conf(TREE, "'scontrol show topology'", live=True)
    assert tree is not None
    topo = tree.topology(NODES, [8] * 4)
    path = tmp_path / "tree.toml"
    path.write_text(topology_as_toml(topo))
    _same(read_topology_toml(path), topo)


def _serve_record(tmp_path: Path, **config: object) -> dict:
    fake = FakeSlurm([fake_node(n) for n in NODES])
    fake.topology_text = TREE
    cfg = ServeConfig(policy="fifo", placement="locality", until_idle=True, **config)  # type: ignore[arg-type]
    Server(fake, cfg, Journal(tmp_path / "j.jsonl"), clock=lambda: T0).run()
    return next(r for r in read_journal(tmp_path / "j.jsonl") if r["action"] == "serve")


def test_serve_records_slurms_tree_as_a_topology_file_text(tmp_path: Path) -> None:
    record = _serve_record(tmp_path)
    assert "topology_spec" not in record
    path = tmp_path / "kept.toml"
    path.write_text(record["topology_toml"])
    tree = parse_topology_conf(TREE, "'scontrol show topology'", live=True)
    assert tree is not None
    _same(read_topology_toml(path), tree.topology(NODES, [8] * 4))


def test_serve_records_a_replay_spec_as_given(tmp_path: Path) -> None:
    record = _serve_record(tmp_path, topology=SPEC)
    assert record["topology_spec"] == SPEC and "topology_toml" not in record


def _import(tmp_path: Path, serve: dict, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The replay command import-slurm prints, as arguments."""
    err = import_with(tmp_path, serve, capsys)
    line = next(x for x in err.splitlines() if x.startswith("replay it: "))
    return shlex.split(line.removeprefix("replay it: "))


def test_import_slurm_carries_a_replay_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = "leafspine:leaves=1,spines=1,hosts_per_leaf=2,g=8,m=1,nic_gbps=100"
    command = _import(tmp_path, {**SERVE, "placement": "locality", "topology_spec": spec}, capsys)
    assert command[command.index("--topology") + 1] == spec
    assert not (tmp_path / "w.topology.toml").exists()
    out = tmp_path / "replayed"
    assert main([*command[1:-1], str(out)]) == 0  # the printed command runs as it is
    assert (out / "summary.json").is_file()


def test_import_slurm_writes_a_switch_tree_beside_the_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two = "SwitchName=leaf1 Nodes=node1\nSwitchName=leaf2 Nodes=node2\n"
    tree = parse_topology_conf(two + "SwitchName=spine Switches=leaf[1-2]\n", "topology.conf")
    assert tree is not None
    text = topology_as_toml(tree.topology(["node1", "node2"], [8, 8]))
    command = _import(tmp_path, {**SERVE, "placement": "locality", "topology_toml": text}, capsys)
    kept = tmp_path / "w.topology.toml"
    assert command[command.index("--topology") + 1] == str(kept)
    assert kept.read_text() == text
    out = tmp_path / "replayed"
    assert main([*command[1:-1], str(out)]) == 0
    assert '"topology": "w.topology"' in (out / "summary.json").read_text()


def test_import_slurm_without_a_network_prints_no_topology(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "--topology" not in _import(tmp_path, SERVE, capsys)


@pytest.mark.parametrize("kept", ["spec", "tree"])
def test_a_live_runs_replay_places_on_the_network_it_kept(kept: str) -> None:
    """replay_starts of a locality run: A (8 GPUs) takes node1 (the tie goes to leaf1); B (16)
    fits only leaf2 whole, so it takes node3 and node4 — on the network the serve record kept,
    as a spec or as Slurm's tree. Without a kept network, locality cannot run at all."""
    serve = {
        "policy": "fifo",
        "placement": "locality",
        "nodes": NODES,
        "node_gpus": [8] * 4,
    }
    if kept == "spec":
        serve["topology_spec"] = SPEC
    else:
        tree = parse_topology_conf(TREE, "'scontrol show topology'", live=True)
        assert tree is not None
        serve["topology_toml"] = topology_as_toml(tree.topology(NODES, [8] * 4))
    jobs = JobTable.from_columns(
        job_id=["a", "b"], submit_time=[0.0, 1.0], num_gpus=[8, 16], duration=[100.0, 50.0]
    )
    assert replay_starts(jobs, serve) == {"a": [("node1",)], "b": [("node3", "node4")]}
    bare = {k: v for k, v in serve.items() if not k.startswith("topology")}
    with pytest.raises(InputError, match="topology"):
        replay_starts(jobs, bare)
