"""Slurm's switch tree in serve: topology.conf and ``scontrol show topology`` read into a schedlab
topology (hand cases, bad input, a property over random trees), handed to a network placement
as ``ctx.topology`` with the partition's nodes as hosts, and the refusals: a network placement
without a topology, policies and options that need NIC or switch control."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.model.snapshot import Reconfigure
from schedlab.network.topology import CORE, LEAF, SPINE
from schedlab.policies.api import SERVE
from schedlab.policies.ordering.fifo import Fifo
from schedlab.policies.plugins import forget, register
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.live import build_view
from schedlab.serve.loop import ServeConfig, Server
from schedlab.serve.topology import ServeTopology
from schedlab.serve.topology_conf import DEFAULT_NIC_GBPS, parse_topology_conf

T0 = 1_000_000.0
PLUGIN = ("leaf_placement:SameLeaf",)
#: The placement under test; a built-in network placement (e.g. "locality") drops in here.
PLACEMENT = "test-same-leaf"
TWO_LEAVES = "SwitchName=leaf1 Nodes=node[1-2]\nSwitchName=leaf2 Nodes=node[3-4]\n" + (
    "SwitchName=spine Switches=leaf[1-2]\n"
)
#: What ``scontrol show topology`` printed for TWO_LEAVES on Slurm 22.05 (the dev cluster).
TWO_LEAVES_LIVE = """\
SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=node[1-2]
SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=node[3-4]
SwitchName=spine Level=1 LinkSpeed=1 Nodes=node[1-4] Switches=leaf[1-2]
"""
NODES = ["node1", "node2", "node3", "node4"]


def tree(text: str, live: bool = False):
    parsed = parse_topology_conf(text, "topology.conf", live=live)
    assert parsed is not None
    return parsed


# -- the parser: hand cases --------------------------------------------------------------------
def test_two_leaves_under_a_spine_from_the_file_and_from_scontrol_alike() -> None:
    """Hosts in node order on their leaves; without LinkSpeed a node's link is the default and
    a leaf's uplink carries its two nodes (2 × 100 Gbps, non-blocking)."""
    for topo in (
        tree(TWO_LEAVES).topology(NODES, [8] * 4),
        tree(TWO_LEAVES_LIVE, live=True).topology(NODES, [8] * 4),
    ):
        assert topo.switch_names == ("leaf1", "leaf2", "spine")
        assert topo.switch_level.tolist() == [LEAF, LEAF, SPINE]
        assert topo.host_leaf.tolist() == [0, 0, 1, 1]
        assert topo.host_leaf_index().tolist() == [0, 0, 1, 1]
        assert topo.host_names == tuple(NODES)
        assert topo.host_gpus.tolist() == [8] * 4 and topo.host_nics.tolist() == [1] * 4
        assert topo.host_nic_gbps.tolist() == [DEFAULT_NIC_GBPS] * 4
        pairs = sorted(zip(topo.fabric_src.tolist(), topo.fabric_dst.tolist(), strict=True))
        assert pairs == [(0, 2), (1, 2), (2, 0), (2, 1)]
        assert topo.fabric_gbps.tolist() == [200.0] * 4
        assert topo.hop_distance[0, 1] == 2


def test_link_speeds_comments_continuations_and_case() -> None:
    """LinkSpeed is the Gbps of a switch's links down to its children; keys in any case;
    comments and backslash continuations as in slurm.conf; zero-padded ranges kept."""
    text = """\
# two racks
switchname=r1 nodes=gpu[01-02] linkspeed=25   # a 25 Gbps leaf
SwitchName=r2 \\
    Nodes=gpu03
SwitchName=top Switches=r[1-2] LinkSpeed=40
"""
    topo = tree(text).topology(["gpu01", "gpu02", "gpu03"], [4, 4, 2])
    assert topo.host_nic_gbps.tolist() == [25.0, 25.0, DEFAULT_NIC_GBPS]
    assert topo.fabric_gbps.tolist() == [40.0] * 4
    assert topo.host_leaf.tolist() == [0, 0, 1]
    assert topo.host_gpus.tolist() == [4, 4, 2]


def test_unset_uplinks_carry_everything_below_them() -> None:
    """Three levels: leaves of 2 and 3 nodes (100 Gbps, one at 50), spines above them, a core
    switch above the spines. Levels count from the leaves; a fourth level is still core."""
    text = """\
SwitchName=a Nodes=n[1-2]
SwitchName=b Nodes=n[3-5] LinkSpeed=50
SwitchName=c Nodes=n6
SwitchName=s1 Switches=a,b
SwitchName=s2 Switches=c
SwitchName=core Switches=s[1-2]
SwitchName=top Switches=core
"""
    t = tree(text)
    topo = t.topology([f"n{i}" for i in range(1, 7)], [8] * 6)
    level = dict(zip(topo.switch_names, topo.switch_level.tolist(), strict=True))
    assert level == {"a": LEAF, "b": LEAF, "c": LEAF, "s1": SPINE, "s2": SPINE} | {
        "core": CORE,
        "top": CORE,
    }
    rate = {
        (topo.switch_names[s], topo.switch_names[d]): g
        for s, d, g in zip(topo.fabric_src, topo.fabric_dst, topo.fabric_gbps, strict=True)
    }
    assert rate[("s1", "a")] == 200.0 and rate[("s1", "b")] == 150.0
    assert rate[("core", "s1")] == 350.0 and rate[("core", "s2")] == 100.0
    assert rate[("top", "core")] == 450.0 and rate[("a", "s1")] == 200.0


def test_linkspeed_one_means_unset_only_in_scontrol_output() -> None:
    """scontrol prints LinkSpeed=1 for a switch whose line has none; a file means it."""
    line = "SwitchName=leaf Nodes=node[1-2] LinkSpeed=1\n"
    assert tree(line, live=True).topology(NODES[:2], [8, 8]).host_nic_gbps.tolist() == [100.0] * 2
    assert tree(line).topology(NODES[:2], [8, 8]).host_nic_gbps.tolist() == [1.0, 1.0]


def test_no_switch_lines_is_no_topology() -> None:
    assert parse_topology_conf("", "x") is None
    assert parse_topology_conf("# nothing here\n\n", "x") is None


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("SwitchName=a Nodes=n1\nSwitchName=b Nodez=n2\n", 2, "unknown key 'Nodez'"),
        ("SwitchName=a Nodes=n1 spine\n", 1, "expected KEY=VALUE, got 'spine'"),
        ("Nodes=n1 SwitchName=a\n", 1, "expected a SwitchName= line"),
        ("BlockName=b1 Nodes=n[1-4]\n", 1, "schedlab reads topology/tree"),
        ("SwitchName=a Nodes=n1\n\nSwitchName=a Nodes=n2\n", 3, "already defined on line 1"),
        ("SwitchName=a Nodes=n1\nSwitchName=s Switches=a,b\n", 2, "unknown switch 'b'"),
        ("SwitchName=a Nodes=n1\nSwitchName=s Switches=a\nSwitchName=t Switches=a\n", 3, "one"),
        ("SwitchName=a Switches=b\nSwitchName=b Switches=a\n", 1, "below itself"),
        ("SwitchName=a Switches=a\n", 1, "lists itself"),
        ("SwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n2\n", 2, "n2 is already under"),
        ("SwitchName=a Nodes=n1\nSwitchName=s Switches=a Nodes=n9\n", 2, "n9 hangs off it"),
        ("SwitchName=a LinkSpeed=10\n", 1, "neither Nodes nor Switches"),
        ("SwitchName=a Nodes=n1 LinkSpeed=0\n", 1, "LinkSpeed must be a number > 0"),
        ("SwitchName=a Nodes=n1 LinkSpeed=fast\n", 1, "got 'fast'"),
        ("SwitchName=a Nodes=n[x-2]\n", 1, "Nodes: bad node range"),
        ("SwitchName=a Nodes=n1 Nodes=n2\n", 1, "Nodes given twice"),
        ("SwitchName=a[1-2] Nodes=n1\n", 1, "must name one switch"),
        ("# c\nSwitchName=a \\\n  Nodes=n1 Bad=1\n", 2, "unknown key 'Bad'"),
    ],
)
def test_bad_topology_conf_is_one_error_naming_file_and_line(
    text: str, line: int, words: str
) -> None:
    with pytest.raises(InputError) as err:
        parse_topology_conf(text, "etc/topology.conf")
    assert str(err.value).endswith(f"at etc/topology.conf:{line}"), str(err.value)
    assert words in str(err.value)
    assert "\n" not in str(err.value)


def test_a_partition_node_under_no_switch_or_without_gpus_is_named() -> None:
    with pytest.raises(InputError, match="node node5 is under no switch of the topology"):
        tree(TWO_LEAVES).topology([*NODES, "node5"], [8] * 5)
    with pytest.raises(InputError, match="node node2 has no GPUs"):
        tree(TWO_LEAVES).topology(NODES, [8, 0, 8, 8])


# -- the parser: a property over random trees ---------------------------------------------------
@st.composite
def forests(draw: st.DrawFn) -> tuple[list[tuple[str, list[str], list[str]]], dict[str, str]]:
    """Random switch forests: (name, child switches, nodes) lines in file order, and each
    node's leaf."""
    leaves = draw(st.integers(1, 6))
    lines: list[tuple[str, list[str], list[str]]] = []
    leaf_of: dict[str, str] = {}
    node = 0
    level = []
    for k in range(leaves):
        count = draw(st.integers(1, 4))
        nodes = [f"n{node + i}" for i in range(count)]
        node += count
        lines.append((f"leaf{k}", [], nodes))
        leaf_of.update(dict.fromkeys(nodes, f"leaf{k}"))
        level.append(f"leaf{k}")
    depth = 0
    while len(level) > 1 and draw(st.booleans()):
        depth += 1
        groups = draw(st.integers(1, len(level)))
        cut = sorted(draw(st.sets(st.integers(1, len(level) - 1), max_size=groups - 1)))
        parts = [level[a:b] for a, b in zip([0, *cut], [*cut, len(level)], strict=True)]
        level = []
        for j, part in enumerate(parts):
            lines.append((f"sw{depth}x{j}", part, []))
            level.append(f"sw{depth}x{j}")
    order = draw(st.permutations(range(len(lines))))
    return [lines[i] for i in order], leaf_of


def _as_file(lines: list[tuple[str, list[str], list[str]]]) -> str:
    out = []
    for name, switches, nodes in lines:
        item = f"SwitchName={name}"
        item += f" Switches={','.join(switches)}" if switches else f" Nodes={','.join(nodes)}"
        out.append(item)
    return "\n".join(out) + "\n"


def _as_scontrol(lines: list[tuple[str, list[str], list[str]]], leaf_of: dict[str, str]) -> str:
    """The scontrol form: Level, LinkSpeed=1, and every node below a switch in its Nodes."""
    children = {name: switches for name, switches, _ in lines}
    own = {name: nodes for name, _, nodes in lines}

    def below(name: str) -> list[str]:
        return own[name] + [n for c in children[name] for n in below(c)]

    def height(name: str) -> int:
        return max((1 + height(c) for c in children[name]), default=0)

    out = []
    for name, switches, _ in lines:
        item = f"SwitchName={name} Level={height(name)} LinkSpeed=1 Nodes={','.join(below(name))}"
        if switches:
            item += f" Switches={','.join(switches)}"
        out.append(item)
    return "\n".join(out) + "\n"


@settings(max_examples=60, deadline=None)
@given(forests(), st.randoms(use_true_random=False))
def test_random_trees_put_every_node_on_its_leaf_in_either_form(
    forest: tuple[list[tuple[str, list[str], list[str]]], dict[str, str]], rnd
) -> None:
    """Every node hangs off its own leaf, each parent-child pair is one link each way, leaves
    are level 1 and parents are above their children; the scontrol form gives the same."""
    lines, leaf_of = forest
    hosts = sorted(leaf_of, key=lambda n: int(n[1:]))
    rnd.shuffle(hosts)
    gpus = [1 + int(h[1:]) % 8 for h in hosts]
    a = tree(_as_file(lines)).topology(hosts, gpus)
    b = tree(_as_scontrol(lines, leaf_of), live=True).topology(hosts, gpus)
    for topo in (a, b):
        assert [topo.switch_names[s] for s in topo.host_leaf] == [leaf_of[h] for h in hosts]
        edges = sum(len(switches) for _, switches, _ in lines)
        assert len(topo.fabric_src) == 2 * edges
        level = topo.switch_level
        for s, d in zip(topo.fabric_src, topo.fabric_dst, strict=True):
            assert level[s] != level[d] or level[s] == CORE
        assert (level[topo.host_leaf] == LEAF).all()
        assert topo.host_gpus.tolist() == gpus
    for attr in ("host_leaf", "switch_level", "fabric_src", "fabric_dst", "fabric_gbps"):
        assert np.array_equal(getattr(a, attr), getattr(b, attr)), attr


# -- where serve's topology comes from ----------------------------------------------------------
def nodes4() -> list[dict]:
    return [fake_node(n) for n in NODES]


def test_serve_topology_from_a_file_a_replay_spec_or_slurm(tmp_path: Path) -> None:
    conf = tmp_path / "topology.conf"
    conf.write_text(TWO_LEAVES)
    fake = FakeSlurm(nodes4())
    infos = Server(fake, ServeConfig(policy="fifo"), Journal(None)).read()[1]
    from_file = ServeTopology.from_spec(str(conf)).for_nodes(infos)
    assert from_file is not None and from_file.host_leaf_index().tolist() == [0, 0, 1, 1]
    spec = "leafspine:leaves=2,spines=1,hosts_per_leaf=2,g=8,m=1,nic_gbps=100"
    from_spec = ServeTopology.from_spec(spec).for_nodes(infos)
    assert from_spec is not None and from_spec.host_names == tuple(NODES)
    fake.topology_text = TWO_LEAVES_LIVE
    live = ServeTopology.from_slurm(fake).for_nodes(infos)
    assert live is not None and live.host_leaf_index().tolist() == [0, 0, 1, 1]
    fake.topology_text = ""
    assert ServeTopology.from_slurm(fake).for_nodes(infos) is None
    wrong = "leafspine:leaves=1,spines=1,hosts_per_leaf=2,g=8,m=1,nic_gbps=100"
    with pytest.raises(InputError, match="has 2 hosts but the cluster"):
        ServeTopology.from_spec(wrong).for_nodes(infos)
    with pytest.raises(InputError, match="no SwitchName lines"):
        (tmp_path / "empty.conf").write_text("# nothing\n")
        ServeTopology.from_spec(str(tmp_path / "empty.conf"))


def leaf_server(fake: FakeSlurm, tmp_path: Path, **kw: object) -> Server:
    cfg = ServeConfig(policy="fifo", placement=PLACEMENT, plugins=PLUGIN, **kw)  # type: ignore[arg-type]
    return Server(fake, cfg, Journal(tmp_path / "j.jsonl"), clock=lambda: T0 + 10)


def test_a_network_placement_gets_the_tree_and_keeps_a_job_under_one_leaf(
    tmp_path: Path,
) -> None:
    """Other owners' jobs use a GPU of node1 and of node4, so the only whole free nodes are
    node2 and node3, under different leaves: bestfit starts the -N2 --gres=gpu:8 job there at
    once; the leaf placement keeps it waiting, and once node1 is free puts it on node1+node2."""
    foreign = [
        fake_job(1, 1, T0, state="RUNNING", held=False, nodes="node1", mark=""),
        fake_job(2, 1, T0, state="RUNNING", held=False, nodes="node4", mark=""),
    ]
    wide = fake_job(3, 8, T0 + 1, node_count=2)
    plain = FakeSlurm(nodes4(), [*foreign, dict(wide)])
    Server(plain, ServeConfig(policy="fifo"), Journal(None), clock=lambda: T0 + 10).cycle()
    assert ["update", "JobId=3", "ReqNodeList=node2,node3"] in plain.calls

    fake = FakeSlurm(nodes4(), [*foreign, wide])
    fake.topology_text = TWO_LEAVES_LIVE
    srv = leaf_server(fake, tmp_path)
    srv.describe_cluster()
    report = srv.cycle()
    assert report.started == 0 and not [c for c in fake.calls if "ReqNodeList" in " ".join(c)]
    fake.finish(1)
    assert srv.cycle().started == 1
    assert ["update", "JobId=3", "ReqNodeList=node1,node2"] in fake.calls
    starts = [r for r in read_journal(tmp_path / "j.jsonl") if r["action"] == "start"]
    assert [r["nodes"] for r in starts] == [["node1", "node2"]]


def test_the_serve_record_names_the_topology(tmp_path: Path) -> None:
    fake = FakeSlurm(nodes4())
    fake.topology_text = TWO_LEAVES_LIVE
    leaf_server(fake, tmp_path, until_idle=True).run()
    record = next(r for r in read_journal(tmp_path / "j.jsonl") if r["action"] == "serve")
    assert record["topology"] == "'scontrol show topology'"


def test_a_network_placement_without_a_topology_is_refused_before_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Slurm without TopologyPlugin and no --topology: one error line, exit 2, no scontrol, no
    journal record."""
    fake = FakeSlurm(nodes4(), [fake_job(3, 8, T0, node_count=2)])
    monkeypatch.setattr("schedlab.commands.serve.SubprocessSlurm", lambda: fake)
    journal = tmp_path / "j.jsonl"
    argv = ["serve", "slurm", "--policy", "fifo", "--plugin", PLUGIN[0], "--placement"]
    argv += [PLACEMENT, "--state-dir", str(tmp_path / "state"), "--journal", str(journal)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"schedlab: error: placement '{PLACEMENT}' needs the network")
    assert "Slurm reports no switch tree" in err[0] and "--topology FILE" in err[0]
    assert fake.calls == []
    assert not journal.exists() or journal.read_text() == ""


def test_a_bad_topology_file_is_refused_before_the_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "topology.conf"
    conf.write_text("SwitchName=leaf1 Nodes=node[1-2]\nSwitchName=spine Switches=leaf[1-2]\n")
    argv = ["serve", "slurm", "--policy", "fifo", "--topology", str(conf)]
    assert main([*argv, "--state-dir", str(tmp_path / "state")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"schedlab: error: switch 'spine' lists unknown switch 'leaf2' in Switches at {conf}:2"
    ]
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("option", ["--net-control", "--net-routing", "--net-sharing"])
def test_network_control_options_are_refused_with_why(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "slurm", "--policy", "fifo", option, "x", "--state-dir", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"'{option} x' needs control of NICs and switches" in err[0]
    assert "runs in 'schedlab replay' only" in err[0]


class ReservingFifo(Fifo):
    """fifo that (as a stand-in for reservation- or circuit-based policies) needs the fabric."""

    name = "test-reserving-fifo"
    summary = "test policy"
    network_control = "link reservations"


def test_policies_that_need_switch_control_are_refused_by_serve_only() -> None:
    register(ReservingFifo, f"{__name__}:ReservingFifo", "--plugin")
    try:
        with pytest.raises(InputError, match="'test-reserving-fifo' needs link reservations"):
            build(SERVE, PolicyChoice("test-reserving-fifo"))
        assert build("replay", PolicyChoice("test-reserving-fifo")).scheduler is not None
    finally:
        forget(ReservingFifo.name)


def test_a_circuit_decision_is_journaled_as_skipped_not_sent(tmp_path: Path) -> None:
    """OCS circuits have no Slurm counterpart: a skip record about no job, no command."""
    fake = FakeSlurm(nodes4(), [fake_job(5, 2, T0)])
    srv = Server(fake, ServeConfig(policy="fifo"), Journal(tmp_path / "j.jsonl"))
    jobs, nodes = srv.read()
    out = srv.applier.apply(build_view(jobs, nodes, T0), [Reconfigure(((0, 1),))])
    assert fake.calls == [] and out.errors == 0
    assert out.records[0]["action"] == "skip" and out.records[0]["job"] is None
    assert "switch control" in out.records[0]["reason"]


def test_a_network_placement_conforms_in_serve() -> None:
    """The conformance suite's serve runs give the fake partition a switch tree, so a network
    placement is checked there like any other."""
    from leaf_placement import SameLeaf
    from schedlab.policies.plugins import load_reference
    from schedlab.testing import check_policy

    load_reference(PLUGIN[0])
    assert check_policy(SameLeaf, engines=(SERVE,)) == []
