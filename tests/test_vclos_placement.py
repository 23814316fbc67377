"""``vclos`` (network spec §4.2): isolated leaf × spine reservations, hand-computed cases, the
exact solver against the greedy one, and invariants over random job sequences."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netplace import busy, hold, request, started
from schedlab.errors import InputError
from schedlab.model.cluster import GPU_MILLI
from schedlab.network.plan import NetPlan
from schedlab.policies.placement.network.vclos import milp_spine_set


# One host of 4 GPUs a leaf (gpl = 4), one link per (leaf, spine).
def topo(leaves: int, spines: int) -> str:
    return f"leafspine:leaves={leaves},spines={spines},hosts_per_leaf=1,g=4,m=1,nic_gbps=100"


def pair_links(policy, leaf: int, spine: int) -> frozenset[int]:
    return policy.fabric.links([leaf], [spine])


def test_whole_empty_leaves_take_all_their_uplinks_and_a_small_job_one_leaf() -> None:
    policy, state = started("vclos", topo(3, 2))
    busy(state, 0, 1)
    alloc = policy.place_job(request(8, job=5), state)
    assert alloc == ((1, (0, 1, 2, 3)), (2, (0, 1, 2, 3)))
    plan = policy.plan_for(5, alloc)
    assert plan is not None and plan.private
    # leaves 1 and 2 × spines 0 and 1, both ways: 8 links.
    assert plan.links == pair_links(policy, 1, 0) | pair_links(policy, 1, 1) | pair_links(
        policy, 2, 0
    ) | pair_links(policy, 2, 1)
    assert len(plan.links) == 8
    # 3 GPUs fit leaf 0 (3 free): one leaf, no links.
    alloc = policy.place_job(request(3, job=6), state)
    assert alloc == ((0, (1, 2, 3)),)
    assert policy.plan_for(6, alloc) == NetPlan()


def test_a_job_waits_although_enough_gpus_are_free() -> None:
    """Leaves 0 and 1 have 2 free GPUs each, but leaf 0's link to spine 0 and leaf 1's to
    spine 1 are held: no spine reaches both, so 4 GPUs wait; locality would place them."""
    policy, state = started("vclos", topo(3, 2))
    busy(state, 0, 2)
    busy(state, 1, 2)
    busy(state, 2, 4)
    hold(state, 90, NetPlan(links=pair_links(policy, 0, 0)))
    hold(state, 91, NetPlan(links=pair_links(policy, 1, 1)))
    assert policy.place_job(request(4), state) is None
    locality, _ = started("locality", topo(3, 2))
    assert locality.place_job(request(4), state) == ((0, (2, 3)), (1, (2, 3)))
    # once leaf 1's link to spine 1 is released, both spines reach both leaves... except
    # spine 0 for leaf 0: s = 2 still fails, s = 1 needs 4 leaves; it still waits.
    state.net.release(91)
    assert policy.place_job(request(4), state) is None
    state.net.release(90)
    alloc = policy.place_job(request(4, job=3), state)
    assert alloc == ((0, (2, 3)), (1, (2, 3)))
    assert len(policy.plan_for(3, alloc).links) == 8


def _greedy_trap(solver: str):
    """4 leaves with 2 free GPUs each, 3 spines. Spine 0 reaches leaves 0, 1, 2 (held: 3);
    spines 1 and 2 reach leaves 2 and 3 only. Greedy takes spine 0 first (widest reach) and
    then finds no second spine sharing two of its leaves; leaves 2, 3 × spines 1, 2 work."""
    policy, state = started("vclos", topo(4, 3), {"solver": solver})
    for node in range(4):
        busy(state, node, 2)
    held = [(0, 1), (0, 2), (1, 1), (1, 2), (3, 0)]
    for i, (leaf, spine) in enumerate(held):
        hold(state, 100 + i, NetPlan(links=pair_links(policy, leaf, spine)))
    return policy, state


def test_the_exact_solver_finds_what_greedy_misses() -> None:
    greedy, state = _greedy_trap("greedy")
    assert greedy.place_job(request(4), state) is None
    exact, state = _greedy_trap("milp")
    alloc = exact.place_job(request(4, job=7), state)
    assert alloc == ((2, (2, 3)), (3, (2, 3)))
    expect = set()
    for leaf in (2, 3):
        for spine in (1, 2):
            expect |= pair_links(exact, leaf, spine)
    assert exact.plan_for(7, alloc).links == expect


def test_milp_minimises_free_gpus_then_indices() -> None:
    # Leaves A..D = 0..3 with 2, 3, 3, 3 free; A and B share no two free spines.
    free_pairs = np.array(
        [[1, 1, 0], [0, 0, 1], [1, 1, 0], [1, 1, 1]],
        dtype=bool,
    )
    leaf_free = np.array([2, 3, 3, 3])
    got = milp_spine_set(2, 2, np.arange(4), np.arange(3), leaf_free, free_pairs)
    assert got == ([0, 2], [0, 1])
    free_pairs[0] = False  # A reaches nothing: C and D (cost 3 + 3), spines 0 and 1
    assert milp_spine_set(2, 2, np.arange(4), np.arange(3), leaf_free, free_pairs) == (
        [2, 3],
        [0, 1],
    )
    free_pairs[2, 1] = False
    assert milp_spine_set(2, 2, np.arange(4), np.arange(3), leaf_free, free_pairs) is None


def test_unknown_solver_and_non_leaf_spine_topologies_are_refused() -> None:
    with pytest.raises(InputError, match="solver must be one of milp, greedy"):
        started("vclos", topo(2, 2), {"solver": "lp"})
    with pytest.raises(InputError, match="two-tier leaf-spine"):
        started("vclos", "fattree:k=4,g=1,m=1,nic_gbps=100")


# -- invariants over random sequences ----------------------------------------------------------
ops_st = st.lists(
    st.tuples(st.booleans(), st.sampled_from([1, 2, 3, 4, 6, 8, 12]), st.integers(0, 50)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops_st, solver=st.sampled_from(["milp", "greedy"]))
def test_reservations_are_exclusive_and_released_exactly(ops, solver) -> None:
    """Place or release at random: no link is held by two jobs, no GPU is given twice, each
    plan's links are exactly its leaves × spines, and a release gives back exactly what the
    job took (checked against a model of the state kept apart)."""
    policy, state = started("vclos", topo(4, 4), {"solver": solver})
    gpu_free = state.gpu_free.copy()
    owner: dict[int, int] = {}  # link → job, kept apart from the ledger
    running: dict[int, tuple] = {}
    next_job = 0
    for place, size, pick in ops:
        if place or not running:
            job, next_job = next_job, next_job + 1
            alloc = policy.place_job(request(size, job=job), state)
            if alloc is None:
                continue
            plan = policy.plan_for(job, alloc)
            assert sum(len(g) for _, g in alloc) == size
            for node, gpus in alloc:
                assert (gpu_free[node, list(gpus)] == GPU_MILLI).all()  # never given twice
                gpu_free[node, list(gpus)] = 0
                state.allocate(node, list(gpus), 0, 0, GPU_MILLI, len(gpus))
            assert not set(plan.links) & set(owner)  # nobody else holds them
            if plan.links:
                leaves = {int(policy.leaves.host_leaf[node]) for node, _ in alloc}
                spines = {
                    int(policy.fabric.pair[link - policy.fabric.base]) % 4 for link in plan.links
                }
                assert plan.links == policy.fabric.links(sorted(leaves), sorted(spines))
                assert len(spines) * len(leaves) * 2 == len(plan.links)
            state.net.hold(job, plan)
            owner.update({link: job for link in plan.links})
            running[job] = alloc
        else:
            job = sorted(running)[pick % len(running)]
            alloc = running.pop(job)
            for node, gpus in alloc:
                state.release(node, list(gpus), 0, 0, GPU_MILLI, len(gpus))
                gpu_free[node, list(gpus)] = GPU_MILLI
            released = state.net.release(job)
            assert {k for k, v in owner.items() if v == job} == set(released.links)
            owner = {k: v for k, v in owner.items() if v != job}
        np.testing.assert_array_equal(state.gpu_free, gpu_free)
        assert state.net.link_owner == owner


def test_the_spines_must_be_free_to_every_chosen_leaf() -> None:
    """Three leaves with one free GPU each, two spines; leaf 0's link to spine 1 and leaf 1's
    to spine 0 are held. A 2-GPU job needs two leaves and one spine free to both: the cheapest
    pair (leaves 0, 1) has none (each spine is free to one of them only), so the solver takes
    leaves 0 and 2 over spine 0 — never a link another job holds."""
    policy, state = started("vclos", topo(3, 2))
    for node in range(3):
        busy(state, node, 3)
    held = pair_links(policy, 0, 1) | pair_links(policy, 1, 0)
    hold(state, 90, NetPlan(links=pair_links(policy, 0, 1)))
    hold(state, 91, NetPlan(links=pair_links(policy, 1, 0)))
    alloc = policy.place_job(request(2, job=4), state)
    assert alloc == ((0, (3,)), (2, (3,)))
    plan = policy.plan_for(4, alloc)
    assert plan.links == pair_links(policy, 0, 0) | pair_links(policy, 2, 0)
    assert not plan.links & held
