"""Titan (ICNP '24) and the placements it compares with: bestfit-machine, fragments-first,
tiresias-skew — hand-computed cases, Titan's toy case exactly, and the bandwidth check against a
live network."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from schedlab.experiments.replay_network import network_model
from schedlab.experiments.titan_toy import PUBLISHED, place_toy, toy_row, toy_table, write_toy
from schedlab.model.cluster import ClusterState
from schedlab.model.gpu_models import ANY_MODEL_MASK
from schedlab.model.jobs import JobTable
from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import footprint
from schedlab.network.generators import leafspine
from schedlab.network.routing import Routing
from schedlab.network.topology import Topology, cluster_for
from schedlab.perf.models import TraceDuration
from schedlab.policies.api import REPLAY, PolicyContext
from schedlab.policies.placement.job_placement import JobPlacementPolicy, JobRequest
from schedlab.policies.placement.network.machines import Machines, to_allocation
from schedlab.policies.placement.network.titan import titan_blocks
from schedlab.policies.registry import make_placement


def _topology(hosts: int = 4, gpus: int = 4) -> Topology:
    return leafspine(leaves=1, spines=1, hosts_per_leaf=hosts, g=gpus, m=1, nic_gbps=100.0)


def _state(topo: Topology, free: list[int]) -> ClusterState:
    """Each machine's lowest GPUs busy, ``free[i]`` free on machine i."""
    state = cluster_for(topo).new_state()
    for node, f in enumerate(free):
        g = int(topo.host_gpus[node])
        state.set_gpu_free(node, [0] * (g - f) + [1000] * f)
    return state


def _policy(
    name: str, topo: Topology, state: ClusterState, jobs: JobTable | None = None, network=None
) -> JobPlacementPolicy:
    policy = make_placement(name, REPLAY)
    assert isinstance(policy, JobPlacementPolicy)
    ctx = PolicyContext(
        state.cluster, None, np.random.default_rng(0), jobs=jobs, topology=topo, network=network
    )
    policy.reset(ctx)
    return policy


def _request(n: int, job: int = -1) -> JobRequest:
    return JobRequest(job, n, 0, 0, ANY_MODEL_MASK)


# -- Titan's toy case (exact) ------------------------------------------------------------------
TOY_ALLOCATIONS = {
    "bestfit-machine": ((0, (0, 1, 2, 3)),),
    "fragments-first": ((1, (1, 2, 3)), (3, (3,))),
    "titan": ((2, (2, 3)), (1, (1, 2))),
}


@pytest.mark.parametrize("policy", list(PUBLISHED))
def test_toy_case_placements_machines_and_traffic_are_the_papers(policy: str) -> None:
    allocation, _, _ = place_toy(policy)
    assert allocation == TOY_ALLOCATIONS[policy]
    row = toy_row(policy, k_bytes=8e6)
    assert (row.machines_after, row.cross_traffic_k) == PUBLISHED[policy]


def test_toy_traffic_is_half_the_footprints_sender_side_bytes() -> None:
    # titan: stage 1 pairs {0,2} and {1,3} cross M3–M2, K/4 each way, in reduce-scatter and
    # all-gather: sender side 4 × 2 × K/4 = 2K; Titan counts each pair once per stage: K.
    allocation, _, topo = place_toy("titan")
    fp = footprint(CommSpec("hd", 4e6), allocation, topo, Routing())
    assert fp.cross_host_bytes == pytest.approx(8e6)
    assert toy_row("titan", k_bytes=4e6).cross_traffic_k == pytest.approx(1.0)


def test_toy_table_lists_the_paper_beside_ours() -> None:
    table = toy_table()
    paper = table.dropna(subset=["paper_machines_after"])
    assert (paper["machines_after"] == paper["paper_machines_after"]).all()
    assert (paper["cross_traffic_K"] == paper["paper_cross_traffic_K"]).all()
    assert table.loc[table.policy == "fragments-first", "placement"].item() == (
        "ranks 0–2 on M2, 3 on M4"
    )


# -- the comparison rules, by hand -------------------------------------------------------------
def test_bestfit_machine_takes_whole_idle_machines_then_best_fit() -> None:
    topo = _topology(3)
    state = _state(topo, [4, 4, 2])
    # 6 GPUs: no machine holds it; idle M0 whole, the remaining 2 on the best fit M2 (2 free).
    got = _policy("bestfit-machine", topo, state).place_job(_request(6), state)
    assert got == ((0, (0, 1, 2, 3)), (2, (2, 3)))
    # 3 GPUs fit on M0 and M1 (4 free each): the lower index.
    assert _policy("bestfit-machine", topo, state).place_job(_request(3), state) == (
        (0, (0, 1, 2)),
    )
    assert _policy("bestfit-machine", topo, state).place_job(_request(11), state) is None


def test_fragments_first_fills_busy_machines_and_touches_idle_ones_last() -> None:
    topo = _topology(3)
    state = _state(topo, [4, 1, 1])
    got = _policy("fragments-first", topo, state).place_job(_request(4), state)
    # M1 and M2 (one free each; the most free first, ties by index), then 2 on idle M0.
    assert got == ((1, (3,)), (2, (3,)), (0, (0, 1)))
    # a 1-GPU job goes to a fragment, not to the idle machine
    assert _policy("fragments-first", topo, state).place_job(_request(1), state) == ((1, (3,)),)


def test_tiresias_skew_consolidates_skewed_and_unknown_models_only() -> None:
    topo = _topology()
    state = _state(topo, [4, 3, 2, 1])
    jobs = JobTable.from_columns(
        job_id=["v", "r", "x"],
        submit_time=[0, 0, 0],
        num_gpus=[4, 4, 4],
        duration=[10, 10, 10],
        model_name=["vgg16", "resnet50", "mystery"],
    )
    policy = _policy("tiresias-skew", topo, state, jobs=jobs)
    on_one = ((0, (0, 1, 2, 3)),)
    assert policy.place_job(_request(4, job=0), state) == on_one  # VGG-16: skew 0.74
    assert policy.place_job(_request(4, job=1), state) == TOY_ALLOCATIONS["fragments-first"]
    assert policy.place_job(_request(4, job=2), state) == on_one  # unknown: consolidate


# -- titan's blocks ----------------------------------------------------------------------------
def _machines(free: list[int], size: int = 4) -> Machines:
    f = np.asarray(free)
    sizes = np.full(len(f), size)
    return Machines(f, sizes, f == sizes, np.zeros(len(f), dtype=np.int64))


def test_titan_splits_n_into_aligned_power_of_two_blocks() -> None:
    # N = 3 = 2 + 1: the pair on M3 (fewest free ≥ 2), the single rank on M4.
    assert titan_blocks(_machines([4, 3, 2, 1]), 3) == [(2, 2), (3, 1)]
    # N = 8: busy machines hold 6 < 8, so idle M1 joins; 4 on M1, then 2 + 2 on M3 and M2.
    assert titan_blocks(_machines([4, 3, 2, 1]), 8) == [(0, 4), (2, 2), (1, 2)]
    # nothing but busy machines with 1 free each: single ranks, lowest index first
    assert titan_blocks(_machines([1, 1, 1, 0]), 2) == [(0, 1), (1, 1)]
    assert titan_blocks(_machines([0, 1, 1, 0]), 3) is None


def test_titan_keeps_ranks_in_block_order_even_when_a_machine_returns() -> None:
    # 4 free on busy M0 (size 8): block 4 there; then 2 → M1 (2 free); then 1 → M2, 1 → M0?
    m = Machines(
        np.array([5, 2, 1]), np.array([8, 8, 8]), np.zeros(3, dtype=bool), np.zeros(3, dtype=int)
    )
    blocks = titan_blocks(m, 7)
    assert blocks == [(0, 4), (1, 2), (0, 1)]
    topo = _topology(3, 8)
    state = _state(topo, [5, 2, 1])
    allocation = to_allocation(blocks, state, _request(7))
    assert allocation == ((0, (3, 4, 5, 6)), (1, (6, 7)), (0, (7,)))
    merged = to_allocation(blocks, state, JobRequest(-1, 7, 1000, 0, ANY_MODEL_MASK))
    assert merged == ((0, (3, 4, 5, 6, 7)), (1, (6, 7)))


# -- titan's bandwidth check against the live network -------------------------------------------
def _live_network(topo: Topology, running: tuple) -> object:
    """A replay network state with one HD job running on ``running`` (its links loaded)."""
    jobs = JobTable.from_columns(
        job_id=["busy", "new"],
        submit_time=[0, 1],
        num_gpus=[2, 4],
        duration=[1000, 1000],
        model_name=["vgg16", "resnet50"],
    )
    model = network_model(
        topo,
        jobs,
        TraceDuration(),
        rule="random-phase",
        routing="ecmp",
        seed=0,
        trace=None,
        fmt=None,
        builtin=False,
    )
    model = replace(model, comm=replace(model.comm, collective=np.array(["hd", "hd"], object)))
    net = model.new_state(jobs)
    net.start(0, running, 0.0)
    net.settle(0.0)
    return net


def test_titan_avoids_machine_pairs_whose_links_are_already_loaded() -> None:
    topo = _topology()
    state = _state(topo, [4, 3, 2, 1])
    # the VGG-16 job on M2 and M4 loads both their NICs
    net = _live_network(topo, ((1, (0,)), (3, (0,))))
    assert net.util[topo.nic_up(1, 0)] > 0
    policy = _policy("titan", topo, state, network=net)
    # On the toy state Titan would take M3 + M2; M2's NIC cannot carry the job's stage at line
    # rate beside the running job. Dropping machines one by one ends on idle M1: no pair crosses.
    assert policy.place_job(_request(4, job=1), state) == ((0, (0, 1, 2, 3)),)
    # a quiet network (the running job on one machine only) leaves the toy placement
    quiet = _live_network(topo, ((3, (0, 1)),))
    policy = _policy("titan", topo, state, network=quiet)
    assert policy.place_job(_request(4, job=1), state) == TOY_ALLOCATIONS["titan"]


def test_titan_waits_when_no_machine_set_passes_the_check() -> None:
    topo = _topology()
    state = _state(topo, [0, 3, 2, 1])  # no idle machine to fall back on
    net = _live_network(topo, ((1, (0,)), (3, (0,))))
    policy = _policy("titan", topo, state, network=net)
    # 4 ranks need at least two of M2, M3, M4, and every pair touches M2's or M4's loaded NIC
    # except M3 alone, which holds only 2.
    assert policy.place_job(_request(4, job=1), state) is None
    assert policy.place_job(_request(2, job=1), state) == ((2, (2, 3)),)


def test_toy_study_writes_table_and_figure(tmp_path: Path) -> None:
    """The toy case as ``schedlab reproduce titan`` writes it (titan_toy.write_toy)."""
    out = tmp_path / "toy"
    out.mkdir()
    write_toy(out)
    assert {p.name for p in out.iterdir()} == {"table.csv", "table.md", "toy.png"}
    rows = list(csv.DictReader((out / "table.csv").open()))
    assert [(r["policy"], float(r["cross_traffic_K"])) for r in rows[:3]] == [
        ("bestfit-machine", 0.0),
        ("fragments-first", 1.5),
        ("titan", 1.0),
    ]
    assert (
        "| titan | Titan | ranks 0–1 on M3, 2–3 on M2 | 3 | 3 | 1 | 1 |"
        in (out / "table.md").read_text()
    )
