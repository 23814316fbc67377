"""RDMA NIC share per node and per-app density limits: the state, shared feasibility, and every
placement plugin respecting them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import make_cluster, make_ctx, make_target, policy_params
from schedlab.model.cluster import Cluster
from schedlab.policies.api import PACK
from schedlab.policies.placement.base import (
    Placer,
    PodRequest,
    feasible_nodes,
    node_model_bits,
)
from schedlab.policies.registry import PLACEMENT_POLICIES, make_placement

TARGET = make_target([(8000, 1, 1000, 0.5), (16000, 0, 0, 0.5)])


def with_rdma(cluster: Cluster, rdma: list[int]) -> Cluster:
    return Cluster(
        names=cluster.names,
        cpu_milli=cluster.cpu_milli,
        memory_mib=cluster.memory_mib,
        num_gpus=cluster.num_gpus,
        model=cluster.model,
        rdma=np.array(rdma, dtype=np.int64),
    )


def instance(cpu: int, gpus: int, rdma: int, app: int = -1, limit: int = -1) -> PodRequest:
    share = 1000 if gpus else 0
    return PodRequest(cpu, 0, gpus, share, rdma=rdma, app=app, max_per_node=limit)


@pytest.fixture
def nodes() -> Cluster:
    base = make_cluster(
        [("a", 64000, 1 << 20, 8, "A10"), ("b", 64000, 1 << 20, 8, "A10"), ("c", 64000, 0, 0, "")]
    )
    return with_rdma(base, [200, 50, 100])


def feasible(cluster, state, p):
    return feasible_nodes(p, state, node_model_bits(cluster)).tolist()


def test_rdma_share_limits_feasibility_and_is_taken(nodes):
    state = nodes.new_state()
    assert feasible(nodes, state, instance(8000, 1, 75)) == [True, False, False]
    state.allocate(0, [0], 8000, 0, 1000, 1, rdma=150)
    assert state.rdma_free.tolist() == [50, 50, 100]
    assert feasible(nodes, state, instance(8000, 1, 50)) == [True, True, False]
    assert feasible(nodes, state, instance(8000, 1, 51)) == [False, False, False]
    with pytest.raises(ValueError, match="lacks RDMA"):
        state.allocate(0, [1], 8000, 0, 1000, 1, rdma=51)
    assert state.rdma_free.tolist() == [50, 50, 100]  # refused: nothing changed
    state.release(0, [0], 8000, 0, 1000, 1, rdma=150)
    assert state.rdma_free.tolist() == [200, 50, 100]
    state.allocate(1, [], 1000, 0, 0, 0)
    with pytest.raises(ValueError, match="RDMA share would exceed capacity"):
        state.release(1, [], 1000, 0, 0, 0, rdma=1)


def test_without_rdma_in_the_cluster_there_is_no_limit():
    cluster = make_cluster([("a", 64000, 1 << 20, 8, "A10")])
    state = cluster.new_state()
    assert state.rdma_free is None
    assert feasible(cluster, state, instance(8000, 1, 100)) == [True]
    state.allocate(0, [0], 8000, 0, 1000, 1, rdma=100)


def test_app_limit_counts_per_node_and_per_app(nodes):
    state = nodes.new_state()
    one = instance(1000, 0, 0, app=3, limit=2)
    state.allocate(2, [], 1000, 0, 0, 0, app=3, app_limit=2)
    state.allocate(2, [], 1000, 0, 0, 0, app=3, app_limit=2)
    assert state.app_count(3).tolist() == [0, 0, 2]
    assert feasible(nodes, state, one) == [True, True, False]
    # Another app, or the same app without a limit, still fits there.
    assert feasible(nodes, state, instance(1000, 0, 0, app=4, limit=2)) == [True, True, True]
    assert feasible(nodes, state, instance(1000, 0, 0, app=3)) == [True, True, True]
    with pytest.raises(ValueError, match="already holds 2 instance"):
        state.allocate(2, [], 1000, 0, 0, 0, app=3, app_limit=2)
    assert state.app_count(3).tolist() == [0, 0, 2] and state.cpu_free[2] == 62000
    copy = state.copy()
    state.release(2, [], 1000, 0, 0, 0, app=3)
    assert feasible(nodes, state, one) == [True, True, True]
    assert copy.app_count(3).tolist() == [0, 0, 2]  # the copy is independent
    with pytest.raises(ValueError, match="holds no instance of app 9"):
        state.release(2, [], 1000, 0, 0, 0, app=9)


def test_plain_pods_ignore_the_new_resources(nodes):
    """Pack's pods (no RDMA, no app) see the same feasibility as before."""
    state = nodes.new_state()
    state.allocate(1, [0], 8000, 0, 1000, 1, rdma=50, app=0, app_limit=1)
    assert feasible(nodes, state, PodRequest(8000, 0, 1, 1000)) == [True, True, False]


shapes = st.lists(
    st.tuples(
        st.sampled_from([2000, 8000, 48000, 64000]),  # CPU milli
        st.integers(0, 2),  # GPUs
        st.sampled_from([0, 1, 25, 50, 75, 100]),  # RDMA %
        st.integers(0, 3),  # app
        st.sampled_from([-1, 1, 2, 4]),  # per-node limit
    ),
    min_size=1,
    max_size=40,
)


#: The placements that place pods one by one (whole-job network placements have no pods).
POD_PLACEMENTS = [n for n, c in PLACEMENT_POLICIES.items() if PACK in c.engines]


@pytest.mark.parametrize("name", policy_params(POD_PLACEMENTS))
@settings(max_examples=25, deadline=None)
@given(pods=shapes, seed=st.integers(0, 3))
def test_every_policy_respects_rdma_and_app_limits(name, pods, seed):
    base = make_cluster(
        [(f"n{k}", 128000, 1 << 20, 8 if k % 3 else 0, "A10" if k % 3 else "") for k in range(6)]
    )
    cluster = with_rdma(base, [100, 200, 400, 100, 200, 400])
    state = cluster.new_state()
    rng = np.random.default_rng(seed)
    placer = Placer(make_placement(name), make_ctx(cluster, TARGET, seed), rng.permutation(6))
    limits: dict[int, int] = {}
    for cpu, gpus, rdma, app, limit in pods:
        limit = limits.setdefault(app, limit)  # one limit per app
        p = instance(cpu, gpus, rdma, app, limit)
        placement = placer.place(p, state)
        fits = feasible(cluster, state, p)
        if placement is None:
            assert not any(fits)
            continue
        k = placement.node
        assert fits[k]
        assert state.rdma_free[k] >= rdma
        assert limit < 0 or state.app_count(app)[k] < limit
        state.allocate(k, placement.gpus, cpu, 0, p.gpu_milli, gpus, rdma=rdma, app=app,
                       app_limit=limit)  # fmt: skip
    assert (state.rdma_free >= 0).all()
    for app, limit in limits.items():
        if limit > 0:
            assert (state.app_count(app) <= limit).all()
