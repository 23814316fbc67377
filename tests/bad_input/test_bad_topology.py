"""Bad topologies, refused when read and before any work: TOML files (explicit and generator
form), ``NAME:key=value`` specs, Lingjun files and an optical switch's static wiring. Each case is
one line naming the file (or spec), the table and the key, exit 2, and no output folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from bad_input_helpers import refused, replay_argv, write

from schedlab.cli import main

SWITCHES = """\
[[switches]]
name = "L0"
tier = "leaf"
[[switches]]
name = "L1"
tier = "leaf"
[[switches]]
name = "S0"
tier = "spine"
"""
HOSTS = """\
[[hosts]]
leaf = "L0"
count = 2
gpus = 4
nic_gbps = 100
[[hosts]]
leaf = "L1"
count = 2
gpus = 4
nic_gbps = 100
"""
LINK_L0 = '[[links]]\na = "L0"\nb = "S0"\ngbps = 100\n'
LINK_L1 = '[[links]]\na = "L1"\nb = "S0"\ngbps = 100\n'
GOOD = SWITCHES + HOSTS + LINK_L0 + LINK_L1
GENERATOR = (
    'generator = "leafspine"\n[params]\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n'
    "g = 4\nm = 1\nnic_gbps = 100\n"
)
#: A trace whose first job spans both leaves (16 GPUs on hosts of 4).
WIDE = "job_id,submit_time,num_gpus,duration\nwide,0,16,100\nb,10,1,50\n"


def once(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# (case, file text, what the error line must hold: table and key)
FILE_CASES = [
    (
        "link gbps nan",
        once(GOOD, "\ngbps = 100", "\ngbps = nan"),
        ["[[links]] #1", "'gbps'", "nan"],
    ),
    (
        "link gbps inf",
        once(GOOD, "\ngbps = 100", "\ngbps = inf"),
        ["[[links]] #1", "'gbps'", "inf"],
    ),
    ("link gbps 0", once(GOOD, "\ngbps = 100", "\ngbps = 0"), ["[[links]] #1", "'gbps'"]),
    ("link gbps < 0", once(GOOD, "\ngbps = 100", "\ngbps = -5"), ["[[links]] #1", "'gbps'", "-5"]),
    ("link gbps text", once(GOOD, "\ngbps = 100", '\ngbps = "fast"'), ["[[links]] #1", "'fast'"]),
    ("link gbps bool", once(GOOD, "\ngbps = 100", "\ngbps = true"), ["[[links]] #1", "'gbps'"]),
    ("link gbps 1e300", once(GOOD, "\ngbps = 100", "\ngbps = 1e300"), ["[[links]] #1", "1e+300"]),
    ("nic 0", once(GOOD, "nic_gbps = 100", "nic_gbps = 0"), ["[[hosts]] #1", "'nic_gbps'"]),
    ("nic nan", once(GOOD, "nic_gbps = 100", "nic_gbps = nan"), ["[[hosts]] #1", "'nic_gbps'"]),
    ("intra 0", "intra_gbps = 0\n" + GOOD, ["'intra_gbps', value 0"]),
    ("intra inf", "intra_gbps = inf\n" + GOOD, ["'intra_gbps', value inf"]),
    (
        "ina nan",
        once(GOOD, 'tier = "spine"', 'tier = "spine"\nina_gbps = nan'),
        ["[[switches]] #3", "'ina_gbps'"],
    ),
    ("misspelt table", once(GOOD, "[[links]]", "[[link]]"), ["field 'link'", "'links'?"]),
    ("unknown top key", "bogus_key = 1\n" + GOOD, ["field 'bogus_key'"]),
    (
        "unknown host key",
        once(GOOD, "nic_gbps = 100", "nic_gbps = 100\nnic_gpbs = 5"),
        ["[[hosts]] #1", "field 'nic_gpbs'", "did you mean 'nic_gbps'"],
    ),
    (
        "unknown link key",
        once(GOOD, "\ngbps = 100", "\ngbps = 100\nlatency_us = 3"),
        ["[[links]] #1", "field 'latency_us'"],
    ),
    (
        "unknown switch key",
        once(GOOD, 'tier = "leaf"', 'tier = "leaf"\nports = 32'),
        ["[[switches]] #1", "field 'ports'"],
    ),
    (
        "unknown cell key",
        GOOD + '[[cells]]\nname = "node"\nchild = "gpu"\ncount = 4\ncolour = "red"\n',
        ["[[cells]] #1", "field 'colour'"],
    ),
    ("no links", SWITCHES + HOSTS, ["[[hosts]] #2", "leaf 'L1'", "cannot reach", "'L0'"]),
    ("two islands", SWITCHES + HOSTS + LINK_L0, ["[[hosts]] #2", "cannot reach"]),
    ("hosts 1e8", once(GOOD, "count = 2", "count = 100000000"), ["[[hosts]] #1", "'count'"]),
    ("hosts 1e8 float", once(GOOD, "count = 2", "count = 1e8"), ["[[hosts]] #1", "'count'"]),
    ("hosts 0", once(GOOD, "count = 2", "count = 0"), ["[[hosts]] #1", "'count'"]),
    ("gpus 2^40", once(GOOD, "gpus = 4", "gpus = 1099511627776"), ["[[hosts]] #1", "'gpus'"]),
    ("gpus 2.5", once(GOOD, "gpus = 4", "gpus = 2.5"), ["[[hosts]] #1", "'gpus'", "2.5"]),
    ("nics 0", once(GOOD, "gpus = 4", "gpus = 4\nnics = 0"), ["[[hosts]] #1", "'nics'"]),
    (
        "parallel links 1e8",
        once(GOOD, "\ngbps = 100", "\ngbps = 100\ncount = 100000000"),
        ["[[links]] #1", "'count'"],
    ),
    (
        "self link",
        GOOD + '[[links]]\na = "S0"\nb = "S0"\ngbps = 100\n',
        ["[[links]] #3", "linked to itself"],
    ),
    ("unknown switch", once(GOOD, 'b = "S0"', 'b = "S9"'), ["[[links]] #1", "'b'", "'S9'"]),
    ("host on a spine", once(GOOD, 'leaf = "L0"', 'leaf = "S0"'), ["[[hosts]] #1", "'leaf'"]),
    ("no gpus field", once(GOOD, "gpus = 4\n", ""), ["[[hosts]] #1", "'gpus'"]),
    ("switches not tables", "switches = 3\n" + HOSTS, ["'switches'", "array of tables"]),
    ("unknown model", 'model = "Z99"\n' + GOOD, ["'model'", "'Z99'"]),
    ("bad TOML", GOOD + "[[links\n", ["bad TOML"]),
    ("generator: unknown key", "intra_gbps = 10\n" + GENERATOR, ["field 'intra_gbps'"]),
    (
        "generator: unknown param",
        GENERATOR + "hosts = 3\n",
        ["[params]", "no parameter 'hosts'"],
    ),
    (
        "generator: nic nan",
        once(GENERATOR, "nic_gbps = 100", "nic_gbps = nan"),
        ["[params]", "'nic_gbps'", "nan"],
    ),
    (
        "generator: leaves 1e6",
        once(GENERATOR, "leaves = 2", "leaves = 1000000"),
        ["[params]", "2000000 hosts (leaves × hosts_per_leaf), at most 1000000"],
    ),
]


@pytest.mark.parametrize(
    ("text", "needles"), [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES]
)
def test_a_bad_topology_file_is_refused_naming_table_and_key(
    text: str, needles: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topology = write(tmp_path, "net.toml", text)
    argv = replay_argv(tmp_path, "--topology", str(topology), trace=WIDE)
    refused(argv, capsys, str(topology), *needles, out=tmp_path / "out")


SPEC_CASES = [
    (
        "leafspine:leaves=1000000,spines=1000,hosts_per_leaf=1,g=1,m=1,nic_gbps=100",
        ["1001000 switches (leaves + spines), at most 4096"],
    ),
    ("fattree:k=1000", ["250000000 hosts (k × k/2 × hosts_per_edge), at most 1000000"]),
    ("fattree:k=64,hosts_per_edge=64", ["5120 switches"]),
    (
        "leafspine:leaves=2,spines=2,hosts_per_leaf=1000000000000,g=1,m=1,nic_gbps=100",
        ["field 'hosts_per_leaf'", "1..1000000"],
    ),
    (
        "leafspine:leaves=1000,spines=1000,hosts_per_leaf=1,g=1,m=1,nic_gbps=100,links_per_pair=2",
        ["4000000 fabric links"],
    ),
    ("leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=100000,m=1,nic_gbps=100", ["field 'g'"]),
    ("leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=4,m=0,nic_gbps=100", ["field 'm'"]),
    ("leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=4,m=1,nic_gbps=nan", ["field 'nic_gbps'"]),
    ("leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=4,m=1,nic_gbps=0", ["field 'nic_gbps'"]),
    ("leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=4,m=1,nic_gbps=1e308", ["'nic_gbps'"]),
    ("vclos:intra_gbps=inf", ["field 'intra_gbps'"]),
    ("vclos:oversub=1e-300", ["field 'oversub'"]),
    ("vclos:ina_gbps=-1", ["field 'ina_gbps'"]),
    ("vclos:nic_gbps=0.01,oversub=1000", ["link L0->S0#0", "comes out at 1e-05 Gbps"]),
    ("vclos:leaves=2.5", ["field 'leaves'"]),
    ("titan:aggs_per_pod=2.5", ["field 'aggs_per_pod'"]),
    ("ocs:delay=nan", ["field 'delay'"]),
    ("vclos:latency=3", ["vclos has no parameter 'latency'"]),
    ("torus:k=4", ["unknown topology generator 'torus'"]),
    ("vclos:leaves", ["expected key=value"]),
    (
        "ocs:leaves=4,spines=4,hosts_per_leaf=1,g=4,m=1",
        ["static OCS wiring", "leaf 'L1' unable to reach 'L0'", "1 uplink ports"],
    ),
]


@pytest.mark.parametrize(("spec", "needles"), SPEC_CASES, ids=[c[0] for c in SPEC_CASES])
def test_a_bad_topology_spec_is_refused_naming_the_parameter(
    spec: str, needles: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused(replay_argv(tmp_path, "--topology", spec, trace=WIDE), capsys, *needles)
    assert not (tmp_path / "out").exists()


def test_the_same_topology_written_well_runs(tmp_path: Path) -> None:
    """The refusals above are the bad values, not the file's shape."""
    topology = write(tmp_path, "net.toml", GOOD)
    assert main(replay_argv(tmp_path, "--topology", str(topology), trace=WIDE)) == 0
    jobs = (tmp_path / "out" / "jobs.csv").read_text().splitlines()
    assert all(",completed" in row for row in jobs[1:])


def test_an_optical_switch_whose_placement_sets_circuits_is_not_refused(tmp_path: Path) -> None:
    """Static wiring with islands is only the start for ocs-vclos, which wires each job."""
    spec = "ocs:leaves=4,spines=4,hosts_per_leaf=1,g=4,m=1"
    argv = replay_argv(tmp_path, "--topology", spec, "--placement", "ocs-vclos", trace=WIDE)
    assert main(argv) == 0


LINGJUN_HEAD = "ip,DSW,PSW,ASW\n"


@pytest.mark.parametrize(
    ("rows", "extra", "needles"),
    [
        ("h1,G6,P1,S1\nh2,G6,P1,S2\nh3,G7,P2,S1\n", "", ["a second DSW 'G7'", ":4", "'DSW'"]),
        ("h1,G6,P1,S1\nh2,G6,P1,S2\n", ",tor_uplinks=1000", ["field 'tor_uplinks'"]),
        ("h1,G6,P1,S1\nh2,G6,P1,S2\n", ",nic_gbps=inf", ["field 'nic_gbps'"]),
        ("h1,G6,P1,S1\nh1,G6,P1,S2\n", "", ["host h1", ":3", "'ip'"]),
        ("h1,G6,P1,S1\nh2,G6,P1\n", "", ["expected 4 fields, got 3", ":3"]),
    ],
    ids=["two unlinked DSWs", "tor_uplinks 1000", "nic inf", "host twice", "short row"],
)
def test_a_bad_lingjun_file_is_refused(
    rows: str, extra: str, needles: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topo = write(tmp_path, "topo.csv", LINGJUN_HEAD + rows)
    spec = f"lingjun:{topo}{extra}"
    refused(
        replay_argv(tmp_path, "--topology", spec, "--placement", "consolidate"), capsys, *needles
    )
    assert not (tmp_path / "out").exists()


def test_sweep_and_serve_refuse_a_bad_topology_before_any_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topology = write(tmp_path, "net.toml", SWITCHES + HOSTS + LINK_L0)
    trace = write(tmp_path, "jobs.csv", WIDE)
    grid = tmp_path / "grid"
    argv = ["sweep", "--topology", str(topology), "--traces", str(trace), "--policies", "fifo"]
    refused([*argv, "--out", str(grid)], capsys, str(topology), "cannot reach", out=grid)
    journal = tmp_path / "serve.jsonl"
    argv = ["serve", "slurm", "--policy", "fifo", "--placement", "consolidate"]
    argv += ["--topology", str(topology), "--journal", str(journal)]
    refused(argv, capsys, str(topology), "cannot reach", out=journal)


TREE = "SwitchName=l1 Nodes=n[1-2]\nSwitchName=l2 Nodes=n[3-4]\nSwitchName=s Switches=l[1-2]\n"


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        (TREE.replace("l1 ", "l1 LinkSpeed=nan "), [":1", "LinkSpeed must be a number > 0"]),
        (TREE.replace("l1 ", "l1 LinkSpeed=0 "), [":1", "LinkSpeed", "'0'"]),
        (TREE.replace("l2 ", "l2 Bogus=3 "), [":2", "unknown key 'Bogus'"]),
        ("SwitchName=l1 Nodes=n[1-100000000]\n", [":1", "names more than 1000000 nodes"]),
    ],
    ids=["speed nan", "speed 0", "unknown key", "1e8 nodes"],
)
def test_a_bad_slurm_switch_tree_is_refused_before_slurm_is_asked(
    text: str, needles: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = write(tmp_path, "topology.conf", text)
    journal = tmp_path / "serve.jsonl"
    argv = ["serve", "slurm", "--policy", "fifo", "--placement", "locality"]
    argv += ["--topology", str(conf), "--journal", str(journal)]
    refused(argv, capsys, str(conf), *needles, out=journal)
