"""Per-link footprints of every collective, against hand-computed bytes (spec's worked example)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netcases import two_by_two, whole_hosts
from schedlab.errors import InputError
from schedlab.network.collectives import CommSpec, gradient_bytes, halving_doubling
from schedlab.network.footprint import Footprint, bytes_for_comm_time, footprint
from schedlab.network.generators import leafspine
from schedlab.network.routing import Routing, mix
from schedlab.network.topology import TIER_AGG, TIER_HOST, TIER_LEAF_SPINE, Topology

MB = 1e6


def per_link(fp: Footprint, topo: Topology, phase: int | None = None) -> dict[str, float]:
    """Bytes (MB) per named link, over all phases or one."""
    lo, hi = (0, len(fp.links)) if phase is None else fp.phase_ptr[phase : phase + 2]
    out: dict[str, float] = {}
    for link, b in zip(fp.links[lo:hi].tolist(), fp.nbytes[lo:hi].tolist(), strict=True):
        name = topo.describe_link(link)
        out[name] = out.get(name, 0.0) + b / MB
    return out


def tier_bytes(fp: Footprint, topo: Topology, tier: int, phase: int | None = None) -> list[float]:
    lo, hi = (0, len(fp.links)) if phase is None else fp.phase_ptr[phase : phase + 2]
    sel = topo.link_tier[fp.links[lo:hi]] == tier
    return sorted((fp.nbytes[lo:hi][sel] / MB).round(6).tolist())


def test_worked_example_ring_spray() -> None:
    topo = two_by_two()
    fp = footprint(CommSpec("ring", 400 * MB), whole_hosts([0, 1, 2, 3], 4), topo, Routing("spray"))
    assert fp.num_phases == 1 and fp.steps == 30
    assert fp.comm_time(0.0) == pytest.approx(0.060)
    assert fp.cross_host_bytes == pytest.approx(3000 * MB)
    assert fp.cross_leaf_bytes == pytest.approx(1500 * MB)
    loads = per_link(fp, topo)
    for h in range(4):
        assert loads[f"h{h:05d}.nic0->up"] == pytest.approx(750)
        assert loads[f"h{h:05d}.nic0<-down"] == pytest.approx(750)
    # h1→h2 leaves L0 (and h3→h0 leaves L1): 750 MB sprayed over two spines each.
    assert tier_bytes(fp, topo, TIER_LEAF_SPINE) == [375.0] * 8
    # Twelve intra-host edges at 1,000 Gbps: 6 ms each, hidden behind the 60 ms NIC edges.
    assert len(fp.links) == 8 + 8 + 12


def test_worked_example_hd_spray() -> None:
    topo = two_by_two()
    fp = footprint(CommSpec("hd", 400 * MB), whole_hosts([0, 1, 2, 3], 4), topo, Routing("spray"))
    assert fp.num_phases == 8 and fp.steps == 8
    assert fp.phase_times() * 1000 == pytest.approx([1.6, 0.8, 16, 8, 8, 16, 0.8, 1.6])
    assert fp.comm_time(0.0) == pytest.approx(0.0528)
    assert fp.cross_host_bytes == pytest.approx(2400 * MB)
    assert fp.cross_leaf_bytes == pytest.approx(800 * MB)
    assert tier_bytes(fp, topo, TIER_HOST, phase=2) == [200.0] * 8
    assert tier_bytes(fp, topo, TIER_HOST, phase=3) == [100.0] * 8
    assert tier_bytes(fp, topo, TIER_LEAF_SPINE, phase=3) == [100.0] * 8
    assert tier_bytes(fp, topo, TIER_LEAF_SPINE, phase=2) == []


def test_worked_example_hd_ecmp_may_collide() -> None:
    """With ECMP, stage 3's two host-pair aggregates of a leaf hash onto one or two uplinks."""
    topo = two_by_two()
    stage3 = set()
    for seed in range(16):
        fp = footprint(
            CommSpec("hd", 400 * MB), whole_hosts([0, 1, 2, 3], 4), topo, Routing("ecmp", seed)
        )
        times = fp.phase_times() * 1000
        stage3.add(round(float(times[3]), 6))
        # Bytes are conserved: 200 MB leave each leaf in stage 3 (up, then down) whatever the
        # hash.
        assert sum(tier_bytes(fp, topo, TIER_LEAF_SPINE, phase=3)) == pytest.approx(800)
        assert fp.cross_leaf_bytes == pytest.approx(800 * MB)
    assert stage3 == {8.0, 16.0}


def test_ecmp_is_a_fixed_function_of_seed_and_job() -> None:
    topo = two_by_two()
    place = whole_hosts([0, 2], 4)
    spec = CommSpec("a2a", 400 * MB)
    a = footprint(spec, place, topo, Routing("ecmp", 7), job=3)
    b = footprint(spec, place, topo, Routing("ecmp", 7), job=3)
    assert a.links.tolist() == b.links.tolist() and a.nbytes.tolist() == b.nbytes.tolist()
    assert mix(1, 2, 3) == mix(1, 2, 3) != mix(3, 2, 1)
    assert mix(0) == 0xE220A8397B1DCDAF  # splitmix64(0): fixed across Python versions


def test_rank_order_decides_the_crossings() -> None:
    """Ring on hosts h0, h2, h1, h3 crosses leaves on all four host edges."""
    topo = two_by_two()
    fp = footprint(CommSpec("ring", 400 * MB), whole_hosts([0, 2, 1, 3], 4), topo, Routing("spray"))
    assert fp.cross_leaf_bytes == pytest.approx(3000 * MB)
    # Each leaf sends two 750 MB edges, sprayed over two spines.
    assert tier_bytes(fp, topo, TIER_LEAF_SPINE) == [750.0] * 8


def test_ring_channels_use_one_nic_each() -> None:
    """Two hosts × 4 GPUs, 2 NICs: two rings, each host edge's 1.75·S split over both NICs."""
    topo = two_by_two(g=4, m=2)
    fp = footprint(CommSpec("ring", 400 * MB), whole_hosts([0, 1], 4), topo, Routing("ecmp"))
    loads = per_link(fp, topo)
    for h in (0, 1):
        for nic in (0, 1):
            assert loads[f"h{h:05d}.nic{nic}->up"] == pytest.approx(350)
            assert loads[f"h{h:05d}.nic{nic}<-down"] == pytest.approx(350)
    assert fp.comm_time(0.0) == pytest.approx(350 * MB / 12.5e9)


def test_bidirectional_ring_halves_each_direction() -> None:
    topo = two_by_two()
    spec = CommSpec("ring", 400 * MB, ring_directions=2)
    fp = footprint(spec, whole_hosts([0, 1, 2, 3], 4), topo, Routing("spray"))
    loads = per_link(fp, topo)
    assert loads["h00000.nic0->up"] == pytest.approx(750)  # 375 to h1, 375 back to h3
    assert fp.comm_time(0.0) == pytest.approx(0.060)


def test_hd_on_six_ranks_folds_the_extra_two() -> None:
    tr = halving_doubling(6, 600.0)
    assert tr.num_phases == 6 and tr.steps == 6
    first = tr.phase == 0
    assert tr.src[first].tolist() == [4, 5] and tr.dst[first].tolist() == [0, 1]
    assert tr.nbytes[first].tolist() == [600.0, 600.0]
    last = tr.phase == 5
    assert tr.src[last].tolist() == [0, 1] and tr.dst[last].tolist() == [4, 5]
    stage0 = tr.phase == 1
    assert sorted(zip(tr.src[stage0].tolist(), tr.dst[stage0].tolist(), strict=True)) == [
        (0, 1),
        (1, 0),
        (2, 3),
        (3, 2),
    ]
    assert set(tr.nbytes[stage0].tolist()) == {300.0}


def test_all_to_all_and_parameter_server_bytes() -> None:
    topo = leafspine(leaves=1, spines=1, hosts_per_leaf=2, g=2, m=1, nic_gbps=100.0)
    place = whole_hosts([0, 1], 2)
    a2a = per_link(footprint(CommSpec("a2a", 400 * MB), place, topo, Routing()), topo)
    # 4 ranks, S/4 per ordered pair: 4 cross-host pairs leave each host, 1 local pair per GPU.
    assert a2a["h00000.nic0->up"] == pytest.approx(400)
    assert a2a["h00000.gpu0.intra"] == pytest.approx(100)
    ps = footprint(CommSpec("ps", 400 * MB), place, topo, Routing())
    push = per_link(ps, topo, phase=0)
    assert push == pytest.approx(
        {"h00000.gpu1.intra": 400, "h00001.nic0->up": 800, "h00000.nic0<-down": 800}
    )
    pull = per_link(ps, topo, phase=1)
    assert pull == pytest.approx(
        {"h00000.gpu0.intra": 400, "h00000.nic0->up": 800, "h00001.nic0<-down": 800}
    )
    assert ps.steps == 2 and ps.cross_host_bytes == pytest.approx(1600 * MB)


def test_in_network_aggregation_at_the_tors() -> None:
    """Worked-example fabric with 400 Gbps of aggregation per switch: each leaf sums its
    workers, so the PS NIC carries 2·S instead of 12·S and the workers' NICs bound D."""
    plain = two_by_two()
    ina_topo = leafspine(
        leaves=2, spines=2, hosts_per_leaf=2, g=4, m=1, nic_gbps=100.0, ina_gbps=400.0
    )
    place = whole_hosts([0, 1, 2, 3], 4)
    ps = footprint(CommSpec("ps", 400 * MB), place, plain, Routing("spray"))
    assert ps.phase_times() * 1000 == pytest.approx([384, 384])  # 12 × 400 MB into one NIC
    fp = footprint(CommSpec("ina", 400 * MB), place, ina_topo, Routing("spray"))
    assert fp.phase_times() * 1000 == pytest.approx([128, 128])  # 4 × 400 MB out of a host
    push = per_link(fp, ina_topo, phase=0)
    assert push["h00000.nic0<-down"] == pytest.approx(800)
    assert push["agg(L0)"] == pytest.approx(1600) and push["agg(L1)"] == pytest.approx(3200)
    assert tier_bytes(fp, ina_topo, TIER_LEAF_SPINE, phase=0) == [200.0] * 4
    assert len(tier_bytes(fp, ina_topo, TIER_AGG)) == 2
    # Without programmable switches "ina" is the parameter server.
    same = footprint(CommSpec("ina", 400 * MB), place, plain, Routing("spray"))
    assert same.phase_times().tolist() == ps.phase_times().tolist()


def test_source_routing_stays_on_reserved_links() -> None:
    topo = two_by_two()
    reserved = topo.links_between([topo.switch("L0"), topo.switch("L1")], [topo.switch("S1")])
    assert len(reserved) == 4
    routing = Routing("source", reserved=reserved)
    fp = footprint(CommSpec("ring", 400 * MB), whole_hosts([0, 2], 4), topo, routing)
    fabric = {topo.describe_link(int(x)) for x in fp.links if topo.link_tier[x] == TIER_LEAF_SPINE}
    assert fabric == {"L0->S1#2", "S1->L1#7", "L1->S1#6", "S1->L0#3"}
    with pytest.raises(InputError, match="no switch 'S9'"):
        topo.switch("S9")
    only_up = frozenset(x for x in reserved if topo.describe_link(x).startswith("L0"))
    with pytest.raises(InputError, match="reserved links give no path from S1 toward L1"):
        footprint(
            CommSpec("ring", MB), whole_hosts([0, 2], 4), topo, Routing("source", reserved=only_up)
        )


def test_policy_paths_override_ecmp_per_aggregate() -> None:
    topo = two_by_two(g=1)
    up = topo.fabric_base + 2  # L0->S1
    down = topo.fabric_base + 7  # S1->L1
    routing = Routing("policy", paths={(0, 2, 0): ((up, 1.0), (down, 1.0))})
    fp = footprint(CommSpec("ring", 400 * MB), whole_hosts([0, 2], 1), topo, routing)
    assert up in fp.links and down in fp.links


def test_bad_inputs() -> None:
    topo = two_by_two()
    with pytest.raises(InputError, match="GPU 4 of host 0"):
        footprint(CommSpec(), ((0, (4,)),), topo, Routing())
    with pytest.raises(InputError, match="field 'collective', value 'tree'"):
        CommSpec("tree")
    with pytest.raises(InputError, match=r"field 'overlap', value 1\.5"):
        CommSpec(overlap=1.5)
    with pytest.raises(InputError, match="field 'mode', value 'magic'"):
        Routing("magic")
    with pytest.raises(InputError, match="no gradient size for model 'llama'"):
        gradient_bytes("llama")
    assert gradient_bytes("ResNet-50") == pytest.approx(102.4 * MB)
    ocs = leafspine(leaves=2, spines=1, hosts_per_leaf=1, g=1, m=1, nic_gbps=100.0)
    empty = ocs.__class__(
        **{
            **ocs.__dict__,
            "fabric_src": np.zeros(0, np.int64),
            "fabric_dst": np.zeros(0, np.int64),
            "fabric_gbps": np.zeros(0),
        }
    )
    with pytest.raises(InputError, match="no path from leaf L0 to leaf L1"):
        footprint(CommSpec("ring", MB), whole_hosts([0, 1], 1), empty, Routing())


def test_single_gpu_job_has_no_traffic() -> None:
    fp = footprint(CommSpec("ring", 400 * MB), ((0, (2,)),), two_by_two(), Routing())
    assert len(fp.links) == 0 and fp.comm_time(1e-5) == 0.0 and fp.gpus == 1


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["ring", "hd", "a2a", "ps"]),
    st.permutations([(h, g) for h in range(4) for g in range(4)]),
    st.integers(2, 16),
    st.sampled_from(["ecmp", "spray"]),
    st.integers(1, 2),
    st.integers(1, 2),
)
def test_bytes_are_conserved(collective, slots, n, mode, nics, directions) -> None:
    """Whatever the placement: every cross-host byte leaves one NIC and enters one NIC, every
    cross-leaf byte climbs one leaf uplink and descends one, and the rest stays on intra links."""
    topo = two_by_two(g=4, m=nics)
    place = tuple((h, (g,)) for h, g in slots[:n])
    spec = CommSpec(collective, 64 * MB, ring_directions=directions)
    fp = footprint(spec, place, topo, Routing(mode, seed=n))
    tier = topo.link_tier[fp.links]
    up = fp.links < topo.num_nics
    assert fp.nbytes[(tier == TIER_HOST) & up].sum() == pytest.approx(fp.cross_host_bytes)
    assert fp.nbytes[(tier == TIER_HOST) & ~up].sum() == pytest.approx(fp.cross_host_bytes)
    fabric = fp.links[tier == TIER_LEAF_SPINE]
    fabric_bytes = fp.nbytes[tier == TIER_LEAF_SPINE]
    leaf_up = topo.switch_level[topo.fabric_src[fabric - topo.fabric_base]] == 1
    assert fabric_bytes[leaf_up].sum() == pytest.approx(fp.cross_leaf_bytes)
    assert fabric_bytes[~leaf_up].sum() == pytest.approx(fp.cross_leaf_bytes)
    assert np.all(fp.nbytes > 0) and fp.gpus == n


def test_bytes_for_a_communication_share() -> None:
    """Ring on the worked example: D⁰ = 2·15/16·S / 12.5 GB/s + 30 α; 60 ms + 30 α needs 400 MB."""
    topo = two_by_two()
    place = whole_hosts([0, 1, 2, 3], 4)
    s = bytes_for_comm_time(CommSpec("ring"), place, topo, Routing("spray"), 0.060 + 30e-5, 1e-5)
    assert s == pytest.approx(400 * MB)
    hd = bytes_for_comm_time(CommSpec("hd"), place, topo, Routing("spray"), 0.0528, 0.0)
    assert hd == pytest.approx(400 * MB)
    with pytest.raises(InputError, match=r"no gradient size gives 0\.0001 s"):
        bytes_for_comm_time(CommSpec("ring"), place, topo, Routing(), 1e-4, 1e-5)
    with pytest.raises(InputError, match="no gradient size"):
        bytes_for_comm_time(CommSpec("ring"), ((0, (1,)),), topo, Routing(), 1.0, 1e-5)
    with pytest.raises(InputError, match="'ina'"):
        bytes_for_comm_time(CommSpec("ina"), place, topo, Routing(), 1.0, 1e-5)
