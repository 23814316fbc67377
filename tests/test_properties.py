"""Property tests of the pack engine over random small clusters, pod lists and every policy.

The engine's record is replayed onto a fresh ClusterState through ``allocate`` (which refuses to
over-allocate), and everything recorded is recomputed from scratch along the way.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import make_cluster, make_pods, policy_params
from schedlab.engines.pack import NO_NODE, PackConfig, run_pack
from schedlab.metrics.fragmentation import TargetWorkload, cluster_fragmentation
from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.policies.api import PACK
from schedlab.policies.placement.base import PodRequest, feasible_nodes, node_model_bits
from schedlab.policies.registry import PLACEMENT_POLICIES, placement_names

#: The placements pack runs (whole-job network placements have no pods to place).
PACK_PLACEMENTS = [p for p in placement_names() if PACK in PLACEMENT_POLICIES[p].engines]

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

node_st = st.tuples(
    st.sampled_from([2000, 4000, 8000, 16_000, 32_000]),
    st.sampled_from([4000, 16_000, 64_000]),
    st.sampled_from([0, 1, 2, 4, 8]),
    st.sampled_from(["T4", "P100", "G2"]),
)
cluster_st = st.lists(node_st, min_size=1, max_size=4).filter(
    lambda nodes: sum(n[2] for n in nodes) > 0
)
shape_st = st.sampled_from(
    [(0, 0), (1, 100), (1, 300), (1, 500), (1, 750), (1, 1000), (2, 1000), (4, 1000), (8, 1000)]
)
pod_st = st.tuples(
    st.sampled_from([0, 500, 1000, 2000, 4000, 8000]),
    st.sampled_from([0, 1000, 4000, 16_000]),
    shape_st,
    st.sampled_from(["", "", "T4", "P100|G2"]),
)
pods_st = st.lists(pod_st, min_size=1, max_size=20).filter(
    lambda pods: any(p[2][0] > 0 for p in pods)  # an all-CPU-only list never stops inflating
)


def build(nodes, pod_rows):
    cluster = make_cluster(
        [
            (f"node-{i}", cpu, mem, g, model if g else None)
            for i, (cpu, mem, g, model) in enumerate(nodes)
        ]
    )
    pods = make_pods(
        [
            (f"pod-{i:02d}", cpu, mem, k, d, spec)
            for i, (cpu, mem, (k, d), spec) in enumerate(pod_rows)
        ]
    )
    return cluster, pods


def check_state_within_capacity(state: ClusterState) -> None:
    c = state.cluster
    assert (state.cpu_free >= 0).all() and (state.cpu_free <= c.cpu_milli).all()
    assert (state.mem_free >= 0).all() and (state.mem_free <= c.memory_mib).all()
    assert (state.gpu_free >= 0).all() and (state.gpu_free <= GPU_MILLI).all()
    assert (state.gpu_free[~state.gpu_exists] == 0).all()


def replay_and_check(result, original_pods) -> ClusterState:
    """Replay every recorded placement onto a fresh state and check the record step by step."""
    cluster, s = result.cluster, result.pods
    # The typical tasks come from the original (pre-inflation) pod list.
    target = TargetWorkload.from_pods(original_pods)
    state = cluster.new_state()
    bits = node_model_bits(cluster)
    arrived = 0
    for i in range(len(s)):
        p = PodRequest(
            int(s.cpu_milli[i]),
            int(s.memory_mib[i]),
            int(s.num_gpu[i]),
            int(s.gpu_milli[i]),
            int(s.model_mask[i]),
        )
        feasible = feasible_nodes(p, state, bits)
        node = int(result.node[i])
        arrived += p.num_gpu * p.gpu_milli
        if node == NO_NODE:
            assert result.gpus[i] == ()
            assert not feasible.any(), f"pod {i} failed although it fit somewhere"
        else:
            assert feasible[node], f"pod {i} placed on node {node} where it does not fit"
            gpus = result.gpus[i]
            assert len(gpus) == (p.num_gpu if p.needs_gpu else 0)
            state.allocate(node, gpus, p.cpu_milli, p.memory_mib, p.gpu_milli, p.num_gpu)
        check_state_within_capacity(state)
        assert result.arrived_milli[i] == arrived
        assert result.allocated_milli[i] == state.allocated_gpu_milli()
        snap = cluster_fragmentation(state, target)
        assert result.idle_milli[i] == snap.idle_milli
        assert result.frag_milli[i] == pytest.approx(snap.frag_milli, rel=1e-9, abs=1e-6)
    return state


def check_allocate_refuses(state: ClusterState) -> None:
    """On the final state, over-allocating anything raises and leaves the state unchanged."""
    arrays = ("cpu_free", "mem_free", "gpu_free", "class_counts", "version")
    before = {a: getattr(state, a).copy() for a in arrays}
    c = state.cluster
    for n in range(c.size):
        with pytest.raises(ValueError):
            state.allocate(n, [], int(state.cpu_free[n]) + 1, 0, 0, 0)
        with pytest.raises(ValueError):
            state.allocate(n, [], 0, int(state.mem_free[n]) + 1, 0, 0)
        k = int(c.num_gpus[n])
        for g in range(k):
            share = int(state.gpu_free[n, g]) + 1
            if share <= GPU_MILLI:
                with pytest.raises(ValueError):
                    state.allocate(n, [g], 0, 0, share, 1)
        if k < state.gpu_free.shape[1]:  # a padding slot the node does not have
            with pytest.raises(ValueError):
                state.allocate(n, [k], 0, 0, 1, 1)
        if k >= 1:
            with pytest.raises(ValueError):  # the same GPU twice
                state.allocate(n, [0, 0], 0, 0, 1, 2)
    for a in arrays:
        np.testing.assert_array_equal(getattr(state, a), before[a], err_msg=a)


@pytest.mark.parametrize("policy", policy_params(PACK_PLACEMENTS))
@SETTINGS
@given(
    nodes=cluster_st,
    pod_rows=pods_st,
    ratio=st.sampled_from([0.5, 1.0, 1.3, 2.0]),
    seed=st.integers(0, 10_000),
)
def test_pack_run_invariants(policy, nodes, pod_rows, ratio, seed):
    cluster, pods = build(nodes, pod_rows)
    result = run_pack(cluster, pods, PackConfig(policy, seed=seed, inflate=ratio))
    n = len(result.pods)
    # Every pod is accounted for: placed on a real node or failed.
    assert len(result.node) == len(result.gpus) == n
    assert ((result.node == NO_NODE) | ((result.node >= 0) & (result.node < cluster.size))).all()
    assert int(result.failed.sum()) + int((result.node >= 0).sum()) == n
    # Curves.
    assert (np.diff(result.arrived_milli) >= 0).all()
    assert (result.allocated_milli <= result.arrived_milli).all()
    assert (np.diff(result.allocated_milli) >= 0).all()
    assert (result.allocated_milli + result.idle_milli == result.capacity_milli).all()
    assert (result.frag_milli >= -1e-9).all()
    assert (result.frag_milli <= result.idle_milli + 1e-6).all()
    # Replay: capacity never exceeded, record equals recomputation from scratch.
    final = replay_and_check(result, pods)
    check_allocate_refuses(final)
    summary = result.summary()
    assert summary["pods_total"] == n
    assert summary["pods_failed"] == int(result.failed.sum())


@pytest.mark.parametrize("policy", policy_params(PACK_PLACEMENTS))
@settings(max_examples=25, deadline=None)
@given(nodes=cluster_st, pod_rows=pods_st, seed=st.integers(0, 10_000))
def test_same_seed_same_run(policy, nodes, pod_rows, seed):
    cluster, pods = build(nodes, pod_rows)
    a = run_pack(cluster, pods, PackConfig(policy, seed=seed, inflate=1.3))
    b = run_pack(cluster, pods, PackConfig(policy, seed=seed, inflate=1.3))
    assert a.pods.name.tolist() == b.pods.name.tolist()
    np.testing.assert_array_equal(a.node, b.node)
    assert a.gpus == b.gpus
    np.testing.assert_array_equal(a.arrived_milli, b.arrived_milli)
    np.testing.assert_array_equal(a.allocated_milli, b.allocated_milli)
    np.testing.assert_array_equal(a.frag_milli, b.frag_milli)
    np.testing.assert_array_equal(a.idle_milli, b.idle_milli)
    assert a.copies == b.copies


@SETTINGS
@given(nodes=cluster_st, pod_rows=pods_st, seed=st.integers(0, 10_000))
def test_row_order_of_inputs_does_not_matter(nodes, pod_rows, seed):
    cluster, pods = build(nodes, pod_rows)
    rev_pods = pods.take(np.arange(len(pods))[::-1])
    a = run_pack(cluster, pods, PackConfig("fgd", seed=seed, inflate=1.3))
    b = run_pack(cluster, rev_pods, PackConfig("fgd", seed=seed, inflate=1.3))
    assert a.pods.name.tolist() == b.pods.name.tolist()
    np.testing.assert_array_equal(a.node, b.node)
    np.testing.assert_array_equal(a.frag_milli, b.frag_milli)


@pytest.mark.parametrize("policy", policy_params([p for p in PACK_PLACEMENTS if p != "random"]))
@settings(max_examples=25, deadline=None)
@given(nodes=cluster_st, pod_rows=pods_st, seed=st.integers(0, 10_000), data=st.data())
def test_node_row_order_does_not_matter(policy, nodes, pod_rows, seed, data):
    """The seeded tie order is drawn over name-sorted nodes, so shuffling the node file's rows
    sends every pod to the same node (by name). (random draws per row, so it is excluded.)"""
    cluster, pods = build(nodes, pod_rows)
    perm = data.draw(st.permutations(range(len(nodes))))
    shuffled = make_cluster(
        [
            (
                str(cluster.names[i]),
                int(cluster.cpu_milli[i]),
                int(cluster.memory_mib[i]),
                int(cluster.num_gpus[i]),
                nodes[i][3] if nodes[i][2] else None,
            )
            for i in perm
        ]
    )
    a = run_pack(cluster, pods, PackConfig(policy, seed=seed, inflate=1.3))
    b = run_pack(shuffled, pods, PackConfig(policy, seed=seed, inflate=1.3))

    def names(result):
        return [str(result.cluster.names[n]) if n >= 0 else None for n in result.node]

    assert names(a) == names(b)
    assert a.gpus == b.gpus
    # Summation order over nodes differs, so allow float noise (seen: 4e-12 milli-GPU).
    np.testing.assert_allclose(a.frag_milli, b.frag_milli, rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("gpu", [-1, 2])
def test_allocate_rejects_gpu_indices_outside_the_node(gpu):
    cluster = make_cluster([("a", 8000, 1000, 2, "T4"), ("b", 8000, 1000, 2, "T4")])
    state = cluster.new_state()
    with pytest.raises(ValueError):
        state.allocate(0, [gpu], 0, 0, 500, 1)
    assert (state.gpu_free == 1000).all()


@settings(max_examples=200, deadline=None)
@given(
    node=st.integers(-1, 3),
    gpus=st.lists(st.integers(-2, 9), max_size=4),
    as_numpy=st.booleans(),
)
def test_slot_check_of_a_tuple_is_the_check_of_a_list(node, gpus, as_numpy):
    """The tuple fast path of the slot check accepts and refuses exactly what the general path
    does, on nodes of different widths (a node of 4 slots beside nodes of 8 and none)."""
    cluster = make_cluster(
        [("a", 8000, 1000, 8, "T4"), ("b", 8000, 1000, 4, "T4"), ("c", 8000, 1000, 0, None)]
    )
    state = cluster.new_state()
    slots = tuple(np.int64(g) for g in gpus) if as_numpy else tuple(gpus)

    def outcome(check):
        try:
            return list(check())
        except ValueError:
            return "refused"

    want = outcome(lambda: state._check_slots(node, list(gpus)))
    assert outcome(lambda: state._check_slots(node, slots)) == want
    state._widths = None  # the general path, for the same tuple
    assert outcome(lambda: state._check_slots(node, slots)) == want
