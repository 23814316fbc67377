"""Topology generators, specs, TOML files, the Lingjun reader and the cluster check."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SHARED_DIR, make_cluster
from netcases import two_by_two
from schedlab.errors import InputError
from schedlab.network.generators import parse_topology
from schedlab.network.topology import (
    TIER_LEAF_LEAF,
    TIER_LEAF_SPINE,
    TIER_SPINE_CORE,
    TIERS,
    check_cluster,
    cluster_for,
    ocs_moved_jobs,
)

LINGJUN = SHARED_DIR / "data" / "topologies" / "alibaba-lingjun-2023" / "topo.csv"


@pytest.mark.parametrize(
    ("spec", "hosts", "gpus", "leaves"),
    [
        ("vclos", 2048, 8192, 128),
        ("ocs", 2048, 8192, 256),
        ("titan", 512, 4096, 64),
        ("crux-clos", 346, 2768, 173),
        ("fattree:k=4,g=2", 16, 32, 8),
    ],
)
def test_generator_sizes(spec: str, hosts: int, gpus: int, leaves: int) -> None:
    topo = parse_topology(spec)
    assert (topo.num_hosts, topo.total_gpus, len(topo.leaves)) == (hosts, gpus, leaves)


def test_vclos_is_one_to_one_with_one_link_per_leaf_and_spine() -> None:
    topo = parse_topology("vclos")
    up = topo.link_tier == TIER_LEAF_SPINE
    assert up.sum() == 2 * 128 * 64  # both directions
    assert np.all(topo.link_gbps[up] == 100.0)
    # 16 hosts × 4 NICs × 100 Gbps down, 64 × 100 Gbps up per leaf.
    assert topo.hop_distance[topo.leaves[0], topo.leaves[1]] == 2


def test_oversubscription_shrinks_uplinks() -> None:
    topo = parse_topology(
        "leafspine:leaves=2,spines=2,hosts_per_leaf=4,g=8,m=1,nic_gbps=100,oversub=4"
    )
    up = topo.link_tier == TIER_LEAF_SPINE
    # 400 Gbps down, 2 uplinks, 4:1 → 50 Gbps each.
    assert np.all(topo.link_gbps[up] == 50.0)


def test_titan_wiring_agg_i_to_cores_8i() -> None:
    topo = parse_topology("titan")
    names = topo.switch_names
    core_links = np.flatnonzero(topo.link_tier == TIER_SPINE_CORE) - topo.fabric_base
    pairs = {(names[topo.fabric_src[f]], names[topo.fabric_dst[f]]) for f in core_links}
    assert ("P3A2", "C16") in pairs and ("P3A2", "C23") in pairs
    assert ("P3A2", "C24") not in pairs
    assert len(core_links) == 2 * 8 * 8 * 8
    # Two ToRs in different pods are 4 hops apart (ToR, agg, core, agg, ToR).
    assert topo.hop_distance[names.index("P0T0"), names.index("P7T7")] == 4


def test_fattree_paths_cross_pods_through_cores() -> None:
    topo = parse_topology("fattree:k=4")
    assert topo.num_switches == 4 * 4 + 4
    names = topo.switch_names
    # From an edge switch towards another pod: both aggregation switches are next hops.
    hops = topo.next_hops(names.index("P0T0"), names.index("P1T0"))
    assert sorted(names[topo.link_far_end(int(h))] for h in hops) == ["P0A0", "P0A1"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("vclos:leaves=x", "field 'leaves', value 'x'"),
        ("vclos:leaves=0", "field 'leaves', value '0'"),
        ("vclos:nic_gbps=-5", "field 'nic_gbps', value '-5'"),
        ("vclos:nic_gbps=inf", "field 'nic_gbps', value 'inf'"),
        ("vclos:model=Z80", "field 'model', value 'Z80'"),
        ("vclos:foo=1", "no parameter 'foo'"),
        ("vclos:leaves", "expected key=value"),
        ("mesh:n=3", "unknown topology generator 'mesh'"),
        ("fattree:k=5", "field 'k', value 5"),
        ("leafspine:leaves=2", "missing"),
        ("lingjun:", "lingjun needs a file"),
        ("lingjun:/nonexistent/topo.csv", "not found"),
        ("ocs:leaves=3,spines=7", "field 'spines', value 7"),
    ],
)
def test_bad_specs_name_field_and_value(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        parse_topology(spec)


def test_toml_generator_and_explicit_forms(tmp_path: Path) -> None:
    gen = tmp_path / "gen.toml"
    gen.write_text(
        'generator = "leafspine"\n[params]\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n'
        'g = 4\nm = 1\nnic_gbps = 100\nmodel = "A100"\n'
    )
    a = parse_topology(str(gen))
    assert (a.num_hosts, a.total_gpus, a.gpu_model, a.source) == (4, 16, "A100", str(gen))

    explicit = tmp_path / "mini.toml"
    explicit.write_text(
        'model = "V100"\n'
        '[[switches]]\nname = "L0"\ntier = "leaf"\n'
        '[[switches]]\nname = "L1"\ntier = "leaf"\nina_gbps = 400\n'
        '[[switches]]\nname = "S0"\ntier = "spine"\n'
        '[[hosts]]\nleaf = "L0"\ncount = 2\ngpus = 4\nnics = 2\nnic_gbps = 100\n'
        '[[hosts]]\nleaf = "L1"\ngpus = 8\nnic_gbps = 200\n'
        '[[links]]\na = "L0"\nb = "S0"\ngbps = 100\ncount = 2\n'
        '[[links]]\na = "L1"\nb = "S0"\ngbps = 400\n'
    )
    b = parse_topology(str(explicit))
    assert b.host_gpus.tolist() == [4, 4, 8]
    assert b.host_nics.tolist() == [2, 2, 1]
    assert b.num_links == 2 * 5 + 16 + 6 + 1  # NIC up+down, intra, fabric, agg(L1)
    assert b.describe_link(b.num_links - 1) == "agg(L1)"
    assert b.hop_distance[0, 1] == 2


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[[switches]]\nname = "L0"\ntier = "top"\n', "field 'tier', value 'top'"),
        (
            '[[switches]]\nname = "L0"\ntier = "leaf"\n[[hosts]]\nleaf = "L9"\ngpus = 1\n'
            "nic_gbps = 1\n",
            "field 'leaf', value 'L9'",
        ),
        (
            '[[switches]]\nname = "L0"\ntier = "leaf"\n[[hosts]]\nleaf = "L0"\ngpus = 0\n'
            "nic_gbps = 1\n",
            "field 'gpus', value 0",
        ),
        ('generator = "vclos"\n[params]\nspines = "many"\n', "field 'spines', value 'many'"),
        ("x = [", "bad TOML"),
        ("", "no hosts"),
    ],
)
def test_bad_toml_names_field_and_value(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "t.toml"
    path.write_text(body)
    with pytest.raises(InputError, match=message):
        parse_topology(str(path))


def test_cluster_check_and_racks() -> None:
    topo = two_by_two()
    good = make_cluster([(f"n{i}", 32000, 256000, 4, "V100") for i in range(4)])
    assert cluster_for(topo, good).rack.tolist() == [0, 0, 1, 1]
    with pytest.raises(InputError, match="4 hosts but the cluster"):
        check_cluster(topo, make_cluster([("n0", 1000, 1000, 4, "V100")] * 3))
    bad = make_cluster([(f"n{i}", 1000, 1000, 8 if i == 2 else 4, "V100") for i in range(4)])
    with pytest.raises(InputError, match=r"node n2 \(#2\) has 8 GPUs"):
        check_cluster(topo, bad)
    built = cluster_for(topo)
    assert built.num_gpus.tolist() == [4, 4, 4, 4] and built.rack.tolist() == [0, 0, 1, 1]


def test_ocs_circuits_set_the_fabric_and_respect_ports() -> None:
    topo = parse_topology("ocs:leaves=4,spines=2,hosts_per_leaf=1,g=2,m=2,nic_gbps=100")
    assert topo.ocs is not None and topo.ocs.leaf_ports == 2 and topo.ocs.spine_ports == 4
    l0, l1, l2 = (int(x) for x in topo.leaves[:3])
    s0 = topo.switch_names.index("S0")
    assert not topo.reachable(l0, l1)
    wired = topo.with_circuits([(l0, s0), (l1, s0), (l0, l2)])
    assert wired.hop_distance[l0, l1] == 2 and wired.hop_distance[l0, l2] == 1
    tiers = Counter(TIERS[t] for t in wired.link_tier[wired.fabric_base :])
    assert tiers == {"leaf-spine": 4, "leaf-leaf": 2}
    assert np.flatnonzero(wired.link_tier == TIER_LEAF_LEAF).size == 2
    with pytest.raises(InputError, match="uplink ports of leaf L0"):
        topo.with_circuits([(l0, s0), (l0, s0), (l0, l1)])
    assert ocs_moved_jobs({1: frozenset({(0, 4)}), 2: frozenset()}, {1: frozenset({(0, 5)})}) == [1]


@pytest.fixture
def lingjun_file() -> Path:
    if not LINGJUN.is_file():
        pytest.skip(f"{LINGJUN} not found: the Lingjun topology file is not beside this checkout")
    return LINGJUN


def test_lingjun_facts(lingjun_file: Path) -> None:
    topo = parse_topology(f"lingjun:{lingjun_file}")
    assert topo.num_hosts == 847
    levels = Counter(topo.switch_level.tolist())
    assert levels == {1: 119, 2: 3, 3: 1}
    by_tor = Counter(Counter(topo.host_leaf.tolist()).values())
    assert by_tor == {8: 68, 7: 23, 6: 15, 5: 7, 4: 2, 3: 1, 2: 3}
    psw_hosts = Counter(topo.switch_names[s].split("/")[0] for s in topo.host_leaf)
    assert psw_hosts == {"P8": 179, "P10": 362, "P12": 306}
    src, dst = topo.switch_level[topo.fabric_src], topo.switch_level[topo.fabric_dst]
    tor_up = (src == 1) & (dst == 2)
    # 8 uplinks of 8 × 4 × 200 / 8 = 800 Gbps per ToR.
    assert tor_up.sum() == 119 * 8 and np.all(topo.fabric_gbps[tor_up] == 800.0)
    # P8's 29 ToRs: 16 uplinks of 29 × 8 × 800 / 16 Gbps to the single DSW.
    p8 = topo.switch_names.index("P8")
    p8_up = (topo.fabric_src == p8) & (dst == 3)
    assert p8_up.sum() == 16 and np.all(topo.fabric_gbps[p8_up] == 29 * 8 * 800 / 16)


def test_lingjun_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "topo.csv"
    path.write_text("ip,DSW,PSW,ASW\na,G6,P1,S1\nb,G6,,S2\n")
    with pytest.raises(InputError, match=r"topo.csv:3, column 'PSW'"):
        parse_topology(f"lingjun:{path}")
    path.write_text("ip,DSW,PSW\na,G6,P1\n")
    with pytest.raises(InputError, match=r"expected the header"):
        parse_topology(f"lingjun:{path}")
    path.write_text("ip,DSW,PSW,ASW\na,G6,P1,S1\na,G6,P1,S1\n")
    with pytest.raises(InputError, match=r"already on line 2"):
        parse_topology(f"lingjun:{path},g=4")


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["leafspine", "vclos", "ocs", "fattree", "titan", "crux-clos", "x"]),
    st.lists(
        st.tuples(
            st.sampled_from(["leaves", "spines", "k", "g", "m", "nic_gbps", "oversub", "model"]),
            st.sampled_from(["0", "-1", "1", "2", "3", "x", "", "1e400", "nan", "V100"]),
        ),
        max_size=3,
    ),
)
def test_any_spec_builds_or_says_why(name: str, pairs: list[tuple[str, str]]) -> None:
    """Bad values end in an InputError, never another exception."""
    spec = name + ":" + ",".join(f"{k}={v}" for k, v in pairs)
    try:
        topo = parse_topology(spec)
    except InputError as exc:
        assert str(exc)
        return
    assert topo.num_hosts > 0 and np.all(topo.link_gbps > 0) and np.all(np.isfinite(topo.link_gbps))
