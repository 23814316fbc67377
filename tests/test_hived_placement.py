"""HiveD's buddy cells (``hived``): a hand split/merge sequence on one node, the cell chain, and
multi-node jobs kept inside one rack."""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.model.gpu_models import ANY_MODEL_MASK
from schedlab.network.generators import leafspine
from schedlab.network.topology import Topology, cluster_for
from schedlab.policies.api import REPLAY, PolicyContext
from schedlab.policies.placement.job_placement import JobRequest
from schedlab.policies.placement.network.hived import HiveD, cell_sizes, free_cells


def _hived(topo: Topology, state: ClusterState) -> HiveD:
    policy = HiveD()
    policy.reset(
        PolicyContext(state.cluster, None, np.random.default_rng(0), topology=topo, engine=REPLAY)
    )
    return policy


def _cells(state: ClusterState) -> list[tuple[int, int, int]]:
    slots = state.gpu_exists & (state.gpu_free >= GPU_MILLI)
    gpus = state.cluster.num_gpus
    rack_free = np.bincount(state.cluster.rack, weights=slots.sum(axis=1))[state.cluster.rack]
    return free_cells(slots, gpus, rack_free).as_tuples()


def _place(policy: HiveD, state: ClusterState, n: int):
    got = policy.place_job(JobRequest(-1, n, 0, 0, ANY_MODEL_MASK), state)
    assert got is not None
    for node, gpus in got:
        state.allocate(node, gpus, 0, 0, GPU_MILLI, len(gpus))
    return got


def _release(state: ClusterState, allocation) -> None:
    for node, gpus in allocation:
        state.release(node, gpus, 0, 0, GPU_MILLI, len(gpus))


def test_cell_chain_follows_the_node_size() -> None:
    assert cell_sizes(8) == (8, 4, 2, 1)
    assert cell_sizes(4) == (4, 2, 1)
    assert cell_sizes(6) == (6, 3, 1)
    assert cell_sizes(1) == (1,)


def test_split_then_merge_back_on_one_node() -> None:
    topo = leafspine(leaves=1, spines=1, hosts_per_leaf=1, g=8, m=1, nic_gbps=100.0)
    state = cluster_for(topo).new_state()
    policy = _hived(topo, state)
    assert _cells(state) == [(8, 0, 0)]
    a = _place(policy, state, 1)  # splits 8 → 4 + 4 → 2 + 2 → 1 + 1: takes GPU 0
    assert a == ((0, (0,)),)
    assert _cells(state) == [(1, 0, 1), (2, 0, 2), (4, 0, 4)]
    b = _place(policy, state, 1)  # the free single GPU, no split
    assert b == ((0, (1,)),)
    c = _place(policy, state, 2)  # the free pair
    assert c == ((0, (2, 3)),)
    d = _place(policy, state, 4)  # the free quad
    assert d == ((0, (4, 5, 6, 7)),)
    assert _cells(state) == []
    _release(state, a)
    assert _cells(state) == [(1, 0, 0)]
    _release(state, b)  # buddies 0 and 1 merge into a pair
    assert _cells(state) == [(2, 0, 0)]
    _release(state, c)  # pairs merge into a quad
    assert _cells(state) == [(4, 0, 0)]
    _release(state, d)  # quads merge into the node cell
    assert _cells(state) == [(8, 0, 0)]


def test_of_free_cells_of_one_level_the_one_with_the_fullest_parent_is_taken() -> None:
    topo = leafspine(leaves=1, spines=1, hosts_per_leaf=2, g=8, m=1, nic_gbps=100.0)
    state = cluster_for(topo).new_state()
    policy = _hived(topo, state)
    state.allocate(0, (0,), 0, 0, GPU_MILLI, 1)  # node 0: free pair 2–3 in a quad with 3 free
    state.allocate(1, (0, 1, 2, 3, 4, 5), 0, 0, GPU_MILLI, 6)  # node 1: pair 6–7, quad 2 free
    assert _place(policy, state, 2) == ((1, (6, 7)),)
    # then node 0's pair (a free cell of the level) before its free quad is split
    assert _place(policy, state, 2) == ((0, (2, 3)),)
    # 3 GPUs need a quad: node 0's free quad
    assert _place(policy, state, 3) == ((0, (4, 5, 6)),)


def test_multi_node_jobs_stay_in_one_rack_when_one_holds_them() -> None:
    topo = leafspine(leaves=2, spines=2, hosts_per_leaf=4, g=8, m=1, nic_gbps=100.0)
    state = cluster_for(topo).new_state()
    policy = _hived(topo, state)
    state.allocate(0, (0,), 0, 0, GPU_MILLI, 1)  # rack 0 has 3 idle nodes, rack 1 has 4
    # 24 GPUs = 3 node cells: the rack with the fewest idle nodes that suffice (rack 0)
    job = _place(policy, state, 24)
    assert [node for node, _ in job] == [1, 2, 3]
    _release(state, job)
    # 20 GPUs: ⌈20/8⌉ = 3 node cells, the last one partly used
    job = _place(policy, state, 20)
    assert [(node, len(g)) for node, g in job] == [(1, 8), (2, 8), (3, 4)]
    _release(state, job)
    # 40 GPUs (5 nodes) fit in no rack: rack 1 (most idle) first, then rack 0
    job = _place(policy, state, 40)
    assert [node for node, _ in job] == [4, 5, 6, 7, 1]
    assert policy.place_job(JobRequest(-1, 64, 0, 0, ANY_MODEL_MASK), state) is None
