"""``ocs-vclos`` (network spec §4.3): private circuits per job; it places what vclos must leave
waiting, and the job pays the OCS reconfiguration delay."""

from __future__ import annotations

from pathlib import Path

import pytest

from netplace import busy, hold, request, started
from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.network.plan import NetPlan


def ocs(leaves: int, spines: int, delay: float = 0.01) -> str:
    """One host of 4 GPUs and 4 NICs a leaf: 4 uplink ports a leaf."""
    return (
        f"ocs:leaves={leaves},spines={spines},hosts_per_leaf=1,g=4,m=4,nic_gbps=100,delay={delay}"
    )


def leafspine(leaves: int, spines: int) -> str:
    return f"leafspine:leaves={leaves},spines={spines},hosts_per_leaf=1,g=4,m=4,nic_gbps=100"


def test_ocs_vclos_places_what_vclos_leaves_waiting() -> None:
    """Leaves 0 and 1 have 2 free GPUs each; on fixed wiring the links leaf 0 → spine 0 and
    leaf 1 → spine 1 are held, so vclos finds no spine reaching both. Through the OCS the two
    leaves are joined by two circuits of their own."""
    vclos, state = started("vclos", leafspine(3, 2))
    for node, count in ((0, 2), (1, 2), (2, 4)):
        busy(state, node, count)
    hold(state, 90, NetPlan(links=vclos.fabric.links([0], [0])))
    hold(state, 91, NetPlan(links=vclos.fabric.links([1], [1])))
    assert vclos.place_job(request(4), state) is None

    policy, state = started("ocs-vclos", ocs(3, 2))
    for node, count in ((0, 2), (1, 2), (2, 4)):
        busy(state, node, count)
    alloc = policy.place_job(request(4, job=1), state)
    assert alloc == ((0, (2, 3)), (1, (2, 3)))
    l0, l1 = (int(x) for x in policy.leaf_switch[:2])
    assert policy.plan_for(1, alloc) == NetPlan(circuits=((l0, l1), (l0, l1)))


def test_one_spine_and_whole_leaf_steps_count_ports() -> None:
    policy, state = started("ocs-vclos", ocs(4, 2))  # 4 ports a leaf, 8 a spine
    for node in range(4):
        busy(state, node, 3)  # one free GPU a leaf
    # 4 GPUs: no leaf, no pair (2 free GPUs needed a leaf); s = 1: 4 leaves, spine with 4 ports.
    alloc = policy.place_job(request(4, job=2), state)
    assert [node for node, _ in alloc] == [0, 1, 2, 3]
    plan = policy.plan_for(2, alloc)
    spine0 = int(policy.spine_switch[0])
    assert plan.circuits == tuple((int(leaf), spine0) for leaf in policy.leaf_switch)
    # 8 GPUs on an empty fabric: a leaf pair joined by 4 circuits.
    policy, state = started("ocs-vclos", ocs(4, 2))
    leaf = [int(x) for x in policy.leaf_switch]
    spine = [int(x) for x in policy.spine_switch]
    hold(state, 9, NetPlan(circuits=((leaf[3], spine[0]),)))
    alloc = policy.place_job(request(8, job=3), state)
    assert policy.plan_for(3, alloc).circuits == ((leaf[0], leaf[1]),) * 4
    # 12 GPUs: no pair (6 > 4 a leaf), no single spine with 12 ports; whole leaves 0-2 (leaf 3
    # has a port in use) over k = 2 spines with ≥ 6 free ports, fewest free first: spine 0
    # (7 free), then spine 1 (8); 4/2 = 2 circuits from each leaf to each.
    alloc = policy.place_job(request(12, job=4), state)
    assert [node for node, _ in alloc] == [0, 1, 2]
    expect = tuple((leaf[i], p) for i in range(3) for p in spine for _ in range(2))
    assert policy.plan_for(4, alloc).circuits == expect


def test_circuits_need_an_ocs() -> None:
    with pytest.raises(InputError, match="optical circuit switch"):
        started("ocs-vclos", leafspine(2, 2))


def _end_time(tmp_path: Path, delay: float) -> float:
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\nbig,0,8,1000\n")
    out = tmp_path / f"out-{delay}"
    args = ["replay", "--trace", str(trace), "--topology", ocs(2, 2, delay)]
    args += ["--policy", "fifo", "--placement", "ocs-vclos"]
    assert main([*args, "--out", str(out)]) == 0
    header, row = (out / "jobs.csv").read_text().splitlines()
    return float(row.split(",")[header.split(",").index("end_time")])


def test_the_reconfiguration_delay_is_charged(tmp_path: Path) -> None:
    """An 8-GPU job on two 4-GPU leaves needs circuits: it starts at 0 but makes progress only
    once the OCS is re-wired, so a delay 5 s longer ends it exactly 5 s later."""
    assert _end_time(tmp_path, 5.01) - _end_time(tmp_path, 0.01) == pytest.approx(5.0)
