"""The fast paths of routing, the sharing solver and Titan give what the plain rules give.

Each fast path (a dense next-hop table, a hash prefix per flow aggregate, a solver incidence built
through a link map, bucketed best fit, Titan's memo of paths and verdicts) is checked against the
straightforward computation it replaces, on hand-made and generated cases.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.model.gpu_models import ANY_MODEL_MASK
from schedlab.network import sharing
from schedlab.network import topology as topology_module
from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import footprint
from schedlab.network.generators import fattree, leafspine
from schedlab.network.routing import Routing
from schedlab.network.sharing import SharingSolver, _Problem
from schedlab.network.topology import Topology
from schedlab.policies.api import REPLAY, PolicyContext
from schedlab.policies.placement.job_placement import JobPlacementPolicy, JobRequest
from schedlab.policies.placement.network.machines import Blocks, Machines, best_fit
from schedlab.policies.placement.network.titan import titan_blocks, titan_candidates
from schedlab.policies.placement.network.titan_bandwidth import bandwidth_test
from schedlab.policies.registry import make_placement
from test_titan_placements import _live_network, _state


# -- routing ------------------------------------------------------------------------------------
def test_next_hop_rows_are_next_hops_padded() -> None:
    topo = fattree(k=4, g=2, m=1, nic_gbps=100.0)
    s = topo.num_switches
    codes = np.arange(s * s)
    rows = topo.next_hop_rows(codes)
    assert rows is not None
    count, links = rows
    for code in codes.tolist():
        hops = topo.next_hops(code // s, code % s)
        assert count[code] == len(hops)
        assert links[code, : len(hops)].tolist() == hops.tolist()


def test_a_topology_too_large_for_the_table_has_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topology_module, "HOP_TABLE_ENTRIES", 10)
    topo = fattree(k=4, g=2, m=1, nic_gbps=100.0)
    assert topo.next_hop_rows(np.array([0, 1])) is None


def _ecmp_one_by_one(
    routing: Routing, topo: Topology, job: int, src: np.ndarray, dst: np.ndarray, nic: np.ndarray
) -> list[tuple[int, int, float]]:
    rows = []
    for i, (a, b, c) in enumerate(zip(src.tolist(), dst.tolist(), nic.tolist(), strict=True)):
        rows += [(i, link, share) for link, share in routing.fabric_shares(topo, job, a, b, c)]
    return rows


@settings(deadline=None)  # no timed tests: a loaded machine must not fail them
@given(
    pairs=st.lists(
        st.tuples(st.integers(0, 15), st.integers(0, 15), st.integers(0, 1)), min_size=1
    ),
    job=st.integers(0, 10**6),
    seed=st.integers(0, 3),
)
def test_ecmp_many_takes_the_per_aggregate_paths(
    pairs: list[tuple[int, int, int]], job: int, seed: int
) -> None:
    """Array ECMP (table or not) routes every aggregate as the hop-by-hop rule does alone."""
    src, dst, nic = (np.array(c, dtype=np.int64) for c in zip(*pairs, strict=True))
    routing = Routing("ecmp", seed=seed)
    topo = fattree(k=4, g=2, m=2, nic_gbps=100.0)  # 16 hosts, 3 tiers
    want = _ecmp_one_by_one(routing, topo, job, src, dst, nic)
    at, link, share = routing.many(topo, job, src, dst, nic)
    got = sorted(zip(at.tolist(), link.tolist(), share.tolist(), strict=True))
    assert got == sorted(want)


def test_ecmp_without_the_table_routes_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, 16, 200), rng.integers(0, 16, 200)
    nic = rng.integers(0, 2, 200)
    routing = Routing("ecmp", seed=7)
    with_table = routing.many(fattree(k=4, g=2, m=2, nic_gbps=100.0), 3, src, dst, nic)
    monkeypatch.setattr(topology_module, "HOP_TABLE_ENTRIES", 0)
    plain = routing.many(fattree(k=4, g=2, m=2, nic_gbps=100.0), 3, src, dst, nic)
    for a, b in zip(with_table, plain, strict=True):
        assert np.array_equal(a, b)


# -- the sharing solver's incidence -------------------------------------------------------------
#: Jobs as the hosts they span (two GPUs on each) of a 4-leaf, 16-host leaf-spine.
JOB_HOSTS = st.lists(
    st.lists(st.integers(0, 15), min_size=2, max_size=6, unique=True), min_size=1, max_size=8
)


def _solver_of(jobs: list[list[int]]) -> SharingSolver:
    """A random-phase solver (intra-host links private) with one HD job per host list."""
    topo = leafspine(leaves=4, spines=2, hosts_per_leaf=4, g=2, m=1, nic_gbps=100.0)
    solver = SharingSolver("random-phase", private=topo.link_tier == 0)
    for key, hosts in enumerate(jobs):
        placement = tuple((h, (0, 1)) for h in hosts)
        solver.add(key, footprint(CommSpec("hd", 1e8), placement, topo, Routing()), CommSpec())
    return solver


@settings(deadline=None)  # no timed tests: a loaded machine must not fail them
@given(jobs=JOB_HOSTS, changed=st.integers(0, 7))
def test_solver_incidence_points_each_entry_at_its_own_job_and_link(
    jobs: list[list[int]], changed: int
) -> None:
    solver = _solver_of(jobs)
    keys = sorted(solver.neighbours(changed % len(jobs)), key=repr)
    p = _Problem.build(solver, keys)
    links = np.unique(np.concatenate([solver.jobs[k].links for k in keys]))
    # every phase entry of A names its own job's incidence entry on the same link
    assert np.array_equal(p.inc_job[p.e_inc], p.e_job)
    assert np.array_equal(p.inc_link[p.e_inc], p.e_link)
    want = np.concatenate([solver.jobs[k].fp.links for k in keys])
    assert np.array_equal(links[p.e_link], want)
    # the incidence is sorted by (job, link) and holds only links of A
    key = p.inc_job * p.num_links + p.inc_link
    assert (np.diff(key) > 0).all()
    assert (solver.link_map == -1).all()  # the map is left clean for the next solve


@settings(deadline=None)  # no timed tests: a loaded machine must not fail them
@given(jobs=JOB_HOSTS, changed=st.integers(0, 7))
def test_the_jobs_beside_a_solve_are_found_alike_by_scan_and_by_link_users(
    jobs: list[list[int]], changed: int
) -> None:
    solver = _solver_of(jobs)
    keys = [changed % len(jobs)]
    links = solver.jobs[keys[0]].links
    solver.link_map[links] = np.arange(len(links))
    want = sorted(
        k for k, j in solver.jobs.items() if k not in keys and np.isin(j.shared, links).any()
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sharing, "SCAN_RATIO", 0)  # through the links' users
        assert sorted(sharing._others_on(solver, keys, links)) == want
        patch.setattr(sharing, "SCAN_RATIO", 10**9)  # by scanning every job
        assert sorted(sharing._others_on(solver, keys, links)) == want


# -- Titan --------------------------------------------------------------------------------------
def _blocks_by_array_best_fit(free: np.ndarray, num_gpus: int) -> Blocks:
    """Step 2 with :func:`best_fit` scanning the machines for every block."""
    free = free.copy()
    blocks: Blocks = []

    def place(size: int) -> None:
        node = best_fit(free, free > 0, size)
        if node >= 0:
            blocks.append((node, size))
            free[node] -= size
            return
        place(size // 2)
        place(size // 2)

    for bit in range(num_gpus.bit_length() - 1, -1, -1):
        if num_gpus >> bit & 1:
            place(1 << bit)
    return blocks


@settings(deadline=None)  # no timed tests: a loaded machine must not fail them
@given(
    free=st.lists(st.integers(0, 8), min_size=1, max_size=24),
    excluded=st.lists(st.booleans(), min_size=24, max_size=24),
    num_gpus=st.integers(1, 64),
)
def test_bucketed_best_fit_gives_the_blocks_of_the_array_best_fit(
    free: list[int], excluded: list[bool], num_gpus: int
) -> None:
    f = np.asarray(free, dtype=np.int64)
    m = Machines(f, np.full(len(f), 8), f == 8, np.zeros(len(f), dtype=np.int64))
    out = np.asarray(excluded[: len(f)])
    free_gpus = titan_candidates(m, num_gpus, out)
    want = None if free_gpus is None else _blocks_by_array_best_fit(free_gpus, num_gpus)
    assert titan_blocks(m, num_gpus, out) == want


def test_titan_forgets_its_verdicts_when_the_links_it_judged_change() -> None:
    """A blocked job is tried again on the same policy: its verdicts hold while the links they
    read keep their utilisation (an intra-host link is never read); once the loaded links are
    released they no longer hold, and the job gets the placement of the quiet network."""
    topo = leafspine(leaves=1, spines=1, hosts_per_leaf=4, g=4, m=1, nic_gbps=100.0)
    state = _state(topo, [0, 3, 2, 1])  # no idle machine to fall back on
    net = _live_network(topo, ((1, (0,)), (3, (0,))))  # loads M2's and M4's NICs
    policy = make_placement("titan", REPLAY)
    assert isinstance(policy, JobPlacementPolicy)
    policy.reset(
        PolicyContext(state.cluster, None, np.random.default_rng(0), topology=topo, network=net)
    )
    request = JobRequest(1, 4, 0, 0, ANY_MODEL_MASK)
    assert policy.place_job(request, state) is None  # every pair touches a loaded NIC
    kept = dict(policy.memo.verdicts)
    net.util[topo.intra(0, 0)] += 0.5  # as a job inside one machine would
    assert kept and policy.place_job(request, state) is None
    assert all(policy.memo.verdicts[a] is v for a, v in kept.items())  # none judged again
    net.stop(0, 2.0)
    net.settle(2.0)
    assert policy.place_job(request, state) == ((2, (2, 3)), (1, (1, 2)))


def test_titan_answers_a_repeated_call_alike_and_a_changed_cluster_anew() -> None:
    topo = leafspine(leaves=1, spines=1, hosts_per_leaf=4, g=4, m=1, nic_gbps=100.0)
    state = _state(topo, [0, 3, 2, 1])
    net = _live_network(topo, ((1, (0,)), (3, (0,))))
    policy = make_placement("titan", REPLAY)
    assert isinstance(policy, JobPlacementPolicy)
    policy.reset(
        PolicyContext(state.cluster, None, np.random.default_rng(0), topology=topo, network=net)
    )
    request = JobRequest(1, 4, 0, 0, ANY_MODEL_MASK)
    assert policy.place_job(request, state) is None
    assert policy.place_job(request, state) is None
    state.set_gpu_free(0, [1000] * 4)  # the job on M1 ended: an idle machine to fall back on
    assert policy.place_job(request, state) == ((0, (0, 1, 2, 3)),)


@pytest.mark.parametrize("seed", range(5))
def test_the_bandwidth_verdict_depends_only_on_the_links_it_read(seed: int) -> None:
    topo = leafspine(leaves=2, spines=2, hosts_per_leaf=4, g=4, m=1, nic_gbps=100.0)
    rng = np.random.default_rng(seed)
    util = rng.uniform(0.0, 0.9, topo.num_links)
    hosts = rng.choice(topo.num_hosts, 4, replace=False).tolist()
    allocation = tuple((h, (0, 1)) for h in hosts)
    spec = CommSpec("hd", 1e9)
    drop, read = bandwidth_test(topo, util, Routing(), 5, spec, allocation)
    assert len(read) and (topo.link_tier[read] != 0).all()
    other = rng.uniform(0.0, 0.9, topo.num_links)
    other[read] = util[read]
    assert bandwidth_test(topo, other, Routing(), 5, spec, allocation)[0] == drop
