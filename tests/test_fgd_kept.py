"""FGD on the placement framework's kept path (``FgdPlacement.score_nodes``: only the nodes that
changed since a shape was last placed are asked about) places every pod on the node and GPUs
that FGD scoring every feasible node (``FgdPlacement.score``) chooses, through any sequence of
placements and releases, whole-GPU and sharing pods alike."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import make_cluster, make_ctx, make_target, pod
from schedlab.model.cluster import GPU_MILLI
from schedlab.policies.placement import Placer
from schedlab.policies.placement.base import PlacementPolicy, feasible_nodes, node_model_bits
from schedlab.policies.placement.fgd import FgdPlacement

#: A target workload of several shapes, so that a node's fragmentation depends on how its GPUs
#: are split (FGD's scores differ between nodes and between GPUs of one node).
TARGET = make_target(
    [(2_000, 1, GPU_MILLI, 0.4), (1_000, 1, 500, 0.3), (4_000, 2, GPU_MILLI, 0.2), (0, 0, 0, 0.1)]
)
#: (name, CPU cores, GPUs, model): memory is 4 GiB per core.
NODES = [
    (name, cores * 1_000, cores * 4_000, gpus, model)
    for name, cores, gpus, model in (
        ("a", 32, 8, "V100"),
        ("b", 32, 8, "V100"),
        ("c", 16, 4, "T4"),
        ("d", 64, 8, "A100"),
        ("e", 8, 2, "T4"),
        ("f", 16, 0, None),
        ("g", 32, 4, "V100"),
    )
]
REQUESTS = [
    pod(2_000, 1, GPU_MILLI),
    pod(4_000, 2, GPU_MILLI),
    pod(1_000, 1, 500),
    pod(500, 1, 250),
    pod(1_000, 1, 700, spec="T4"),
    pod(8_000, 4, GPU_MILLI),
    pod(3_000, 0, 0),
]


class FullScanFgd(FgdPlacement):
    """FGD without per-node scores: the framework filters and scores every node each time."""

    score_nodes = PlacementPolicy.score_nodes


def placer(policy: PlacementPolicy, seed: int) -> Placer:
    cluster = make_cluster(NODES)
    tie = np.random.default_rng(seed).permutation(cluster.size)
    return Placer(policy, make_ctx(cluster, TARGET, seed), tie)


steps = st.lists(
    st.one_of(
        st.tuples(st.just("place"), st.integers(0, len(REQUESTS) - 1)),
        st.tuples(st.just("free"), st.integers(0, 5)),
    ),
    max_size=50,
)


@settings(max_examples=120, deadline=None)
@given(steps=steps, seed=st.integers(0, 3))
def test_kept_fgd_places_where_scoring_every_node_does(steps, seed) -> None:
    kept, full = placer(FgdPlacement(), seed), placer(FullScanFgd(), seed)
    assert kept._node_scores and not full._node_scores
    states = [p.ctx.cluster.new_state() for p in (kept, full)]
    held: list[tuple[int, tuple[int, ...], object]] = []
    for action, k in steps:
        if action == "free":
            if held:
                node, gpus, r = held.pop(k % len(held))
                for state in states:
                    state.release(node, gpus, r.cpu_milli, r.memory_mib, r.gpu_milli, r.num_gpu)
            continue
        r = REQUESTS[k]
        got = [p.place(r, s) for p, s in zip((kept, full), states, strict=True)]
        assert got[0] == got[1]
        if got[0] is not None:
            for state in states:
                state.allocate(
                    got[0].node, got[0].gpus, r.cpu_milli, r.memory_mib, r.gpu_milli, r.num_gpu
                )
            held.append((got[0].node, got[0].gpus, r))


@settings(max_examples=80, deadline=None)
@given(
    used=st.lists(st.integers(0, 8), min_size=len(NODES), max_size=len(NODES)),
    share=st.sampled_from([0, 300, 500, GPU_MILLI]),
    k=st.integers(0, len(REQUESTS) - 1),
)
def test_score_nodes_answers_what_score_answers(used, share, k) -> None:
    """Every node asked, on a state with some GPUs taken whole or in part: the same scores."""
    cluster = make_cluster(NODES)
    state = cluster.new_state()
    for node, n in enumerate(used):
        n = min(n, int(cluster.num_gpus[node]))
        if n and share:
            state.allocate(node, tuple(range(n)), 1_000, 0, share, n)
    request = REQUESTS[k]
    bits = node_model_bits(cluster)
    feasible = feasible_nodes(request, state, bits)
    nodes = list(range(cluster.size))
    a, b = FgdPlacement(), FgdPlacement()
    for policy in (a, b):
        policy.reset(make_ctx(cluster, TARGET))
    full = b.score(request, state, feasible)
    asked = a.score_nodes(request, state, nodes)
    fits = feasible.nonzero()[0].tolist()
    assert [asked[n] for n in fits] == full[fits].tolist()
    if request.is_sharing:
        for node in feasible.nonzero()[0].tolist():
            assert a.pick_gpus(request, state, node) == b.pick_gpus(request, state, node)
