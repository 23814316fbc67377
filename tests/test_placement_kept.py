"""The placement framework's kept scores: a placer that rescores only the nodes that changed
chooses exactly what filtering and scoring every node would, through any sequence of changes,
on the state and on copies of it; the per-node twins (``node_fits``, ``score_nodes``) agree
with their vectorised originals."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import make_cluster, make_ctx, make_target, pod
from schedlab.model import cluster as cluster_module
from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.policies.placement import BestFitPlacement, Placer, PodRequest
from schedlab.policies.placement.base import feasible_nodes, node_fits, node_model_bits

TARGET = make_target([(0, 1, 500, 1.0)])
#: Identical nodes make ties, which the seeded tie order must break the same way both ways.
NODES = [
    ("a", 32_000, 128_000, 8, "V100"),
    ("b", 32_000, 128_000, 8, "V100"),
    ("g", 32_000, 128_000, 8, "V100"),
    ("h", 32_000, 128_000, 8, "V100"),
    ("c", 16_000, 64_000, 4, "T4"),
    ("d", 64_000, 256_000, 8, "A100"),
    ("e", 8_000, 32_000, 2, "T4"),
    ("f", 16_000, 64_000, 0, None),
]
REQUESTS = [
    pod(0, 1, GPU_MILLI),
    pod(2_000, 2, GPU_MILLI),
    pod(4_000, 4, GPU_MILLI, mem=8_000),
    pod(1_000, 8, GPU_MILLI),
    pod(8_000, 1, GPU_MILLI, spec="T4"),
    pod(500, 1, 300),
    pod(3_000, 0, 0),
]


def fresh_choice(placer: Placer, request: PodRequest, state: ClusterState) -> int:
    """What filtering and scoring every node chooses (-1: nothing fits)."""
    return placer._choose(request, state, None)


def placer_on(cluster, seed: int) -> Placer:
    ctx = make_ctx(cluster, TARGET, seed)
    tie = np.random.default_rng(seed).permutation(cluster.size)
    return Placer(BestFitPlacement(), ctx, tie)


#: One step: place a request (and take what it got), or free the oldest holding, or copy the
#: state (later steps go on in the copy, as a scheduler's scratch state does).
steps = st.lists(
    st.one_of(
        st.tuples(st.just("place"), st.integers(0, len(REQUESTS) - 1)),
        st.tuples(st.just("free"), st.just(0)),
        st.tuples(st.just("copy"), st.just(0)),
        st.tuples(st.just("back"), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(steps=steps, seed=st.integers(0, 3), journal=st.sampled_from([2, 5, 1 << 16]))
def test_kept_scores_choose_what_a_full_rescoring_would(steps, seed, journal) -> None:
    """Also when the placer goes back to a state it left (its journal moved on meanwhile) and
    when a state's journal is short enough to be cut between two placements of a shape."""
    cluster = make_cluster(NODES)
    first = state = cluster.new_state()
    placer = placer_on(cluster, seed)
    held: list[tuple[int, tuple[int, ...], PodRequest]] = []
    with patch.object(cluster_module, "JOURNAL_LIMIT", journal):
        _walk(placer, state, first, steps, held)


def _walk(placer, state, first, steps, held) -> None:
    held_by = {id(first): held}  # what is placed on each state (a copy starts with its own)
    for action, k in steps:
        if action == "copy":
            state = state.copy()
            held = held_by[id(state)] = list(held)
        elif action == "back":
            state, held = first, held_by[id(first)]
        elif action == "free" and held:
            node, gpus, r = held.pop(0)
            state.release(node, gpus, r.cpu_milli, r.memory_mib, r.gpu_milli, r.num_gpu)
        elif action == "place":
            request = REQUESTS[k]
            expected = fresh_choice(placer, request, state)
            got = placer.place(request, state)
            assert (got.node if got is not None else -1) == expected
            if got is not None:
                r = request
                state.allocate(
                    got.node, got.gpus, r.cpu_milli, r.memory_mib, r.gpu_milli, r.num_gpu
                )
                held.append((got.node, got.gpus, r))


@settings(max_examples=100, deadline=None)
@given(
    cpu=st.lists(st.integers(0, 64_000), min_size=len(NODES), max_size=len(NODES)),
    used=st.lists(st.integers(0, 8), min_size=len(NODES), max_size=len(NODES)),
    k=st.integers(0, len(REQUESTS) - 1),
)
def test_per_node_twins_agree_with_the_vectorised_filter_and_score(cpu, used, k) -> None:
    cluster = make_cluster(NODES)
    state = cluster.new_state()
    for node, (c, n) in enumerate(zip(cpu, used, strict=True)):
        n = min(n, int(cluster.num_gpus[node]))
        c = min(c, int(cluster.cpu_milli[node]))
        state.allocate(node, tuple(range(n)), c, 0, GPU_MILLI if n else 0, n)
    request = REQUESTS[k]
    bits = node_model_bits(cluster)
    allowed = (bits & request.model_mask) != 0
    feasible = feasible_nodes(request, state, bits)
    nodes = list(range(cluster.size))
    assert [node_fits(request, state, n, allowed) for n in nodes] == feasible.tolist()
    policy = BestFitPlacement()
    policy.reset(make_ctx(cluster, TARGET))
    assert (
        policy.score_nodes(request, state, nodes) == policy.score(request, state, feasible).tolist()
    )


def test_a_copy_changed_differently_never_shares_a_version_with_the_original() -> None:
    # Version stamps name a node's contents: the original and a copy that change the same node
    # differently end with different versions, so scores kept for one are never taken for the
    # other.
    cluster = make_cluster(NODES)
    state = cluster.new_state()
    copy = state.copy()
    state.allocate(0, (0,), 0, 0, GPU_MILLI, 1)
    copy.allocate(0, (0, 1), 0, 0, GPU_MILLI, 2)
    assert state.version[0] != copy.version[0]
    assert (state.version[1:] == copy.version[1:]).all()


def test_a_kept_winner_that_got_better_still_beats_a_node_that_got_less_better() -> None:
    # Node 0 wins a 1-GPU request (the fullest node, bestfit); then node 0 gets fuller still and
    # node 1 gets fuller than node 0 was, but not as full as node 0 is now: node 0 still wins.
    cluster = make_cluster([(f"n{i}", 32_000, 128_000, 8, "V100") for i in range(3)])
    state = cluster.new_state()
    state.allocate(0, (0,), 0, 0, GPU_MILLI, 1)
    placer = placer_on(cluster, 0)
    one = pod(0, 1, GPU_MILLI)
    assert placer.place(one, state).node == 0
    state.allocate(0, (1, 2, 3, 4), 0, 0, GPU_MILLI, 4)  # node 0: 5 GPUs taken
    state.allocate(1, (0, 1, 2), 0, 0, GPU_MILLI, 3)  # node 1: 3 taken
    assert fresh_choice(placer, one, state) == 0
    assert placer.place(one, state).node == 0
