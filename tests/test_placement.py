"""Placement policies: hand-computed scores and GPU choices, feasibility, ties, the fgd cache,
and the registry. Each policy is also checked against a plain-Python reading of the spec
(``/work/shared/specs/fgd-pack.md``) on random states."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import make_cluster, make_ctx, make_target, pod, set_cpu_free, set_gpu_free
from schedlab.errors import InputError
from schedlab.metrics.fragmentation import TargetWorkload
from schedlab.model.cluster import ClusterState
from schedlab.model.gpu_models import ANY_MODEL_MASK, spec_mask
from schedlab.policies.placement import (
    BestFitPlacement,
    DotProductPlacement,
    FgdPlacement,
    GpuClusteringPlacement,
    GpuPackingPlacement,
    Placer,
    PodRequest,
    RandomPlacement,
)
from schedlab.policies.placement.base import (
    best_fit_gpus,
    choose_node,
    feasible_nodes,
    node_model_bits,
)
from schedlab.policies.registry import (
    PLACEMENT_POLICIES,
    make_placement,
    pack_study_names,
    placement_names,
)

ALL_POLICIES = ["random", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd"]
DUMMY_TARGET = make_target([(0, 1, 500, 1.0)])


def scored(policy, cluster, state, p: PodRequest, target: TargetWorkload = DUMMY_TARGET):
    policy.reset(make_ctx(cluster, target))
    feasible = feasible_nodes(p, state, node_model_bits(cluster))
    return policy.score(p, state, feasible), feasible


# -- feasibility --------------------------------------------------------------------------------
@pytest.fixture
def three_nodes():
    cluster = make_cluster(
        [
            ("n0", 64_000, 256_000, 8, "G2"),
            ("n1", 32_000, 128_000, 2, "T4"),
            ("n2", 96_000, 512_000, 4, "T4"),
        ]
    )
    return cluster, cluster.new_state()


def feas(cluster, state, p):
    return feasible_nodes(p, state, node_model_bits(cluster)).tolist()


def test_feasibility_cpu_and_memory_boundaries(three_nodes):
    cluster, state = three_nodes
    assert feas(cluster, state, pod(32_000, mem=128_000)) == [True, True, True]
    assert feas(cluster, state, pod(32_001)) == [True, False, True]
    assert feas(cluster, state, pod(0, mem=128_001)) == [True, False, True]
    assert feas(cluster, state, pod(64_001, 1, 500)) == [False, False, True]


def test_feasibility_model_mask(three_nodes):
    cluster, state = three_nodes
    assert feas(cluster, state, pod(1000, 1, 500, spec="T4")) == [False, True, True]
    assert feas(cluster, state, pod(1000, 1, 500, spec="G2")) == [True, False, False]
    assert feas(cluster, state, pod(1000, 1, 500, spec="P100")) == [False, False, False]
    assert feas(cluster, state, pod(1000, 1, 500, spec="P100|G2")) == [True, False, False]
    # CPU-only pods ignore the model constraint.
    assert feas(cluster, state, pod(1000, spec="P100")) == [True, True, True]


def test_feasibility_gpu_count_and_share(three_nodes):
    cluster, state = three_nodes
    assert feas(cluster, state, pod(0, 4, 1000)) == [True, False, True]
    assert feas(cluster, state, pod(0, 8, 1000)) == [True, False, False]
    set_gpu_free(state, 2, [1000, 300, 1000, 0])
    set_gpu_free(state, 1, [300, 299])
    # 2 whole GPUs: n2 has two (0 and 2), n1 none.
    assert feas(cluster, state, pod(0, 2, 1000)) == [True, False, True]
    assert feas(cluster, state, pod(0, 3, 1000)) == [True, False, False]
    # 1×300: n1 GPU 0 has exactly 300 (fits); 1×301 does not fit on n1.
    assert feas(cluster, state, pod(0, 1, 300)) == [True, True, True]
    assert feas(cluster, state, pod(0, 1, 301)) == [True, False, True]


def test_feasibility_cpu_only_pod_on_gpuless_node():
    cluster = make_cluster([("cpu", 8000, 1000, 0, None), ("gpu", 8000, 1000, 1, "T4")])
    state = cluster.new_state()
    assert feas(cluster, state, pod(4000)) == [True, True]
    assert feas(cluster, state, pod(4000, 1, 100)) == [False, True]


def test_placer_returns_none_when_nothing_fits(three_nodes):
    cluster, state = three_nodes
    for name in ALL_POLICIES:
        placer = Placer(make_placement(name), make_ctx(cluster, DUMMY_TARGET), np.arange(3))
        assert placer.place(pod(0, 16, 1000), state) is None
        assert placer.place(pod(1000, 1, 100, spec="A100"), state) is None


# -- choose_node --------------------------------------------------------------------------------
def test_choose_node_highest_feasible_score():
    scores = np.array([5, 99, 7, 6])
    feasible = np.array([True, False, True, True])
    # Node 1 scores highest but is infeasible.
    assert choose_node(scores, feasible, np.arange(4)) == 2


def test_choose_node_ties_go_to_lowest_tie_rank():
    scores = np.array([5, 9, 9, 9])
    feasible = np.array([True, True, False, True])
    # Nodes 1 and 3 tie (node 2 is infeasible even with the best rank).
    assert choose_node(scores, feasible, np.array([0, 3, 0, 1])) == 3
    assert choose_node(scores, feasible, np.array([0, 1, 0, 3])) == 1
    # Rank, not index or name, decides.
    assert choose_node(np.zeros(4), np.ones(4, bool), np.array([3, 2, 0, 1])) == 2


# -- best-fit GPU choice ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("free", "p", "expected"),
    [
        ([500, 1000, 0, 250], pod(0, 1, 500), (0,)),  # fitting 500 and 1000 → least free: 0
        ([500, 1000, 0, 250], pod(0, 1, 200), (3,)),  # 250 is the least free that fits
        ([600, 300, 300, 1000], pod(0, 1, 300), (1,)),  # tie 300/300 → lowest index
        ([1000, 0, 1000, 1000], pod(0, 2, 1000), (0, 2)),  # lowest-index fully free GPUs
        ([1000, 999, 1000, 1000], pod(0, 1, 1000), (0,)),
        ([1000, 1000, 1000, 1000], pod(0), ()),  # CPU-only: no GPU
    ],
)
def test_best_fit_gpus(free, p, expected):
    free = np.array(free)
    assert best_fit_gpus(p, free, np.ones(4, bool)) == expected


def test_best_fit_gpus_ignores_padding_slots():
    # Slots 1-3 do not exist; even if they showed free share they are never chosen.
    free = np.array([300, 1000, 1000, 1000])
    exists = np.array([True, False, False, False])
    assert best_fit_gpus(pod(0, 1, 200), free, exists) == (0,)
    assert best_fit_gpus(pod(0, 1, 500), free, exists) == ()


# -- dotprod ------------------------------------------------------------------------------------
def test_dotprod_hand_scores(three_nodes):
    cluster, state = three_nodes
    set_cpu_free(state, 2, 16_000)
    set_gpu_free(state, 2, [500, 1000, 0, 250])  # 1750 free
    # Pod (8 cores, 0.5 GPU): demand vector (8000/128000, 500/8000) = (0.0625, 0.0625).
    #   n0: (64000/128000)·0.0625 + (8000/8000)·0.0625 = 0.03125 + 0.0625 = 0.09375
    #       100·(1 − 0.046875) = 95.3125 → 95
    #   n1: 0.25·0.0625 + 0.25·0.0625 = 0.03125 → 100·(1 − 0.015625) = 98.4375 → 98
    #   n2: 0.125·0.0625 + 0.21875·0.0625 = 0.021484375 → 98.92578125 → 98
    scores, feasible = scored(DotProductPlacement(), cluster, state, pod(8000, 1, 500))
    assert scores.tolist() == [95, 98, 98]
    assert feasible.tolist() == [True, True, True]
    # n1 and n2 tie: the seeded order decides.
    assert choose_node(scores, feasible, np.array([0, 1, 2])) == 1
    assert choose_node(scores, feasible, np.array([0, 2, 1])) == 2
    # Pod (16 cores, 2 GPUs): demand (0.125, 0.25).
    #   n0: 0.5·0.125 + 1·0.25 = 0.3125 → 84.375 → 84
    #   n1: 0.25·0.125 + 0.25·0.25 = 0.09375 → 95.3125 → 95
    #   n2: 0.125·0.125 + 0.21875·0.25 = 0.0703125 → 96.484375 → 96 (but infeasible)
    scores, feasible = scored(DotProductPlacement(), cluster, state, pod(16_000, 2, 1000))
    assert scores.tolist() == [84, 95, 96]
    assert feasible.tolist() == [True, True, False]
    assert choose_node(scores, feasible, np.zeros(3)) == 1


def test_dotprod_picks_best_fit_gpu(three_nodes):
    _, state = three_nodes
    set_gpu_free(state, 2, [500, 1000, 0, 250])
    assert DotProductPlacement().pick_gpus(pod(0, 1, 200), state, 2) == (3,)


# -- bestfit ------------------------------------------------------------------------------------
def test_bestfit_hand_scores(three_nodes):
    cluster, state = three_nodes
    set_cpu_free(state, 2, 16_000)
    set_gpu_free(state, 2, [500, 1000, 0, 250])
    # Pod (8000 CPU, 1×500). L = 0.5·(C − 8000)/128000 + 0.5·(G − 500)/8000.
    #   n0: 0.5·56000/128000 + 0.5·7500/8000 = 0.21875 + 0.46875 = 0.6875 → 31.25 → 31
    #   n1: 0.5·24000/128000 + 0.5·1500/8000 = 0.09375 + 0.09375 = 0.1875 → 81.25 → 81
    #   n2: 0.5·8000/128000 + 0.5·1250/8000 = 0.03125 + 0.078125 = 0.109375 → 89.0625 → 89
    p = pod(8000, 1, 500)
    scores, feasible = scored(BestFitPlacement(), cluster, state, p)
    assert scores.tolist() == [31, 81, 89]
    node = choose_node(scores, feasible, np.arange(3))
    assert node == 2
    # Inside n2 the fitting GPUs are 0 (500) and 1 (1000): least free is GPU 0.
    assert BestFitPlacement().pick_gpus(p, state, node) == (0,)


def test_bestfit_integer_scores_tie(three_nodes):
    cluster, state = three_nodes
    # n0: C = 64000, G = 8000; n1: C = 32000, G = 2000 free; set n2 to C = 32000, G = 2000.
    set_cpu_free(state, 2, 32_000)
    set_gpu_free(state, 2, [1000, 1000, 0, 0])
    # n1 and n2 leave exactly the same → same integer score; tie_rank decides.
    p = pod(4000, 1, 1000)
    scores, feasible = scored(BestFitPlacement(), cluster, state, p)
    assert scores[1] == scores[2]
    assert choose_node(scores, feasible, np.array([5, 9, 1])) == 2
    assert choose_node(scores, feasible, np.array([5, 1, 9])) == 1


def test_bestfit_ignores_memory(three_nodes):
    cluster, state = three_nodes
    p = pod(8000, 1, 500)
    before, _ = scored(BestFitPlacement(), cluster, state, p)
    state.mem_free[:] = 1
    after, _ = scored(BestFitPlacement(), cluster, state, p)
    assert before.tolist() == after.tolist()


# -- gpu-clustering -----------------------------------------------------------------------------
@pytest.fixture
def clustered():
    cluster = make_cluster(
        [
            ("n0", 64_000, 256_000, 8, "G2"),
            ("n1", 64_000, 256_000, 8, "G2"),
            ("n2", 64_000, 256_000, 8, "G2"),
            ("n3", 32_000, 128_000, 2, "T4"),
        ]
    )
    state = cluster.new_state()
    state.allocate(0, [0], 1000, 0, 500, 1)  # n0: one sharing pod     → free 7500
    state.allocate(1, [0], 1000, 0, 300, 1)  # n1: a sharing pod ...
    state.allocate(1, [1], 1000, 0, 1000, 1)  # ... and a 1-GPU pod     → free 6700
    state.allocate(2, [], 4000, 0, 0, 0)  # n2: only a CPU-only pod  → free 8000
    state.allocate(3, [0], 1000, 0, 1000, 1)  # n3: one 1-GPU pod        → free 1000
    return cluster, state


def test_gpu_clustering_hand_scores(clustered):
    cluster, state = clustered
    # fill = ⌊25·(8000 − free)/8000⌋: n0 ⌊1.5625⌋ = 1, n1 ⌊4.0625⌋ = 4, n2 0,
    # n3 ⌊25·7000/8000⌋ = ⌊21.875⌋ = 21 (8000 even though n3 has 2 GPUs).
    # Sharing pod: n0 holds only sharing pods → 75 + 1; n1 holds sharing among others → 50 + 4;
    # n2 holds no GPU pod (CPU-only pods carry no tag) → 25 + 0; n3 only other tags → 0 + 21.
    s, _ = scored(GpuClusteringPlacement(), cluster, state, pod(1000, 1, 250))
    assert s.tolist() == [76, 54, 25, 21]
    # 1-GPU pod: n0 other tag only → 1; n1 mixed incl. 1-GPU → 54; n2 → 25; n3 only 1-GPU → 96.
    s, _ = scored(GpuClusteringPlacement(), cluster, state, pod(1000, 1, 1000))
    assert s.tolist() == [1, 54, 25, 96]
    # 2-GPU pod: no node holds a 2-GPU pod: n0 1, n1 4, n2 25, n3 21.
    s, f = scored(GpuClusteringPlacement(), cluster, state, pod(1000, 2, 1000))
    assert s.tolist() == [1, 4, 25, 21]
    assert f.tolist() == [True, True, True, False]
    # CPU-only pods score 0 everywhere.
    s, _ = scored(GpuClusteringPlacement(), cluster, state, pod(1000))
    assert s.tolist() == [0, 0, 0, 0]


def test_gpu_clustering_full_node_scores_100(clustered):
    cluster, state = clustered
    state.allocate(3, [1], 1000, 0, 1000, 1)  # n3 now has no free GPU: fill 25 → 75 + 25
    s, _ = scored(GpuClusteringPlacement(), cluster, state, pod(0, 1, 1000))
    assert s[3] == 100


def test_gpu_clustering_tags_4_and_8_gpu_pods():
    cluster = make_cluster([("a", 64_000, 1 << 18, 8, "G2"), ("b", 64_000, 1 << 18, 8, "G2")])
    state = cluster.new_state()
    state.allocate(0, [0, 1, 2, 3], 0, 0, 1000, 4)  # a: one 4-GPU pod → free 4000, fill 12
    # 4-GPU pod: a holds only 4-GPU pods → 75 + 12; b empty → 25 + 0.
    s, _ = scored(GpuClusteringPlacement(), cluster, state, pod(0, 4, 1000))
    assert s.tolist() == [87, 25]
    # 2-GPU pod: a holds another tag only → 0 + 12.
    s, _ = scored(GpuClusteringPlacement(), cluster, state, pod(0, 2, 1000))
    assert s.tolist() == [12, 25]


# -- gpu-packing --------------------------------------------------------------------------------
@pytest.fixture
def packing_nodes():
    cluster = make_cluster(
        [
            ("n0", 64_000, 256_000, 8, "G2"),
            ("n1", 32_000, 128_000, 2, "T4"),
            ("n2", 64_000, 256_000, 4, "T4"),
            ("n3", 64_000, 256_000, 4, "T4"),
        ]
    )
    state = cluster.new_state()
    set_cpu_free(state, 1, 1000)  # CPU use does not make a node "partly used"
    set_gpu_free(state, 2, [1000, 650, 1000, 1000])  # a shared GPU
    set_gpu_free(state, 3, [1000, 1000, 0, 1000])  # a whole GPU in use
    return cluster, state


def test_gpu_packing_hand_scores(packing_nodes):
    cluster, state = packing_nodes
    # Idle nodes: max(33 − n, n): n0 (8 GPUs) → 25, n1 (2 GPUs) → 31.
    # Sharing 1×300 on n2: takes the 650 GPU (least free that fits), already shared →
    #   100 − ⌊650·100/1000⌋/10 = 100 − 65/10 = 100 − 6 = 94.
    # n3 is partly used but the pod takes a fully free GPU → 50 − 1 = 49.
    s, _ = scored(GpuPackingPlacement(), cluster, state, pod(1000, 1, 300))
    assert s.tolist() == [25, 31, 94, 49]
    # Sharing 1×700 does not fit on the 650 GPU: n2 needs a free GPU on a partly used node → 49.
    s, _ = scored(GpuPackingPlacement(), cluster, state, pod(1000, 1, 700))
    assert s.tolist() == [25, 31, 49, 49]
    # 2 whole GPUs: partly used nodes → 50 − 2 = 48.
    s, _ = scored(GpuPackingPlacement(), cluster, state, pod(1000, 2, 1000))
    assert s.tolist() == [25, 31, 48, 48]
    # CPU-only pods score 0.
    s, _ = scored(GpuPackingPlacement(), cluster, state, pod(1000))
    assert s.tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize(
    ("free", "share", "expected"),
    [
        # 100 − ⌊free·100/1000⌋ // 10 with the GPU the pod takes (least free that fits).
        ([1000, 999, 1000, 1000], 300, 91),  # ⌊99.9⌋ = 99 → 9 → 91
        ([1000, 50, 1000, 1000], 50, 100),  # 5 → 0 → 100
        ([1000, 100, 1000, 1000], 100, 99),  # 10 → 1 → 99
        ([1000, 650, 400, 1000], 300, 96),  # takes 400 (< 650): 40 → 4 → 96
        ([1000, 650, 400, 1000], 500, 94),  # 400 does not fit: takes 650 → 94
    ],
)
def test_gpu_packing_shared_gpu_score(packing_nodes, free, share, expected):
    cluster, state = packing_nodes
    set_gpu_free(state, 2, free)
    s, _ = scored(GpuPackingPlacement(), cluster, state, pod(1000, 1, share))
    assert s[2] == expected


def test_gpu_packing_chooses_shared_gpu_then_takes_it(packing_nodes):
    cluster, state = packing_nodes
    p = pod(1000, 1, 300)
    placer = Placer(GpuPackingPlacement(), make_ctx(cluster, DUMMY_TARGET), np.arange(4))
    assert (placer.place(p, state).node, placer.place(p, state).gpus) == (2, (1,))


def test_gpu_packing_bounds_on_large_nodes():
    cluster = make_cluster(
        [("big", 64_000, 1 << 18, 20, "G2"), ("huge", 64_000, 1 << 18, 32, "G2")]
    )
    state = cluster.new_state()
    state.allocate(1, [0], 0, 0, 1000, 1)  # huge is partly used
    # Idle 20-GPU node: max(33 − 20, 20) = 20. Partly used, 20 fresh GPUs: max(50 − 20, 33) = 33.
    s, _ = scored(GpuPackingPlacement(), cluster, state, pod(0, 20, 1000))
    assert s.tolist() == [20, 33]


# -- fgd ----------------------------------------------------------------------------------------
# Target: A = (1000 CPU, 1×500) with p = 0.5 and B = CPU-only with p = 0.5.
FGD_TARGET = make_target([(1000, 1, 500, 0.5), (0, 0, 0, 0.5)])


@pytest.fixture
def fgd_nodes():
    cluster = make_cluster(
        [
            ("n0", 8000, 64_000, 2, "T4"),
            ("n1", 1500, 64_000, 4, "T4"),
            ("n2", 8000, 64_000, 2, "T4"),
            ("n3", 8000, 64_000, 3, "T4"),
        ]
    )
    state = cluster.new_state()
    set_gpu_free(state, 0, [1000, 600])
    set_gpu_free(state, 2, [400, 1000])
    set_gpu_free(state, 3, [600, 1000, 1000])
    return cluster, state


def test_fgd_sharing_pod_hand_scores(fgd_nodes):
    cluster, state = fgd_nodes
    # Pod: 1000 CPU, 1×300.  score = ⌊100·σ(Δ/1000)⌋, F = 0.5·F_A + 0.5·F_B.
    # n0 [1000, 600], C 8000: before F_A 0, F_B 1600 → 800.
    #   GPU0 → [700, 600]: F_A 0, F_B 1300 → 650, Δ 150 → ⌊53.74⌋ = 53
    #   GPU1 → [1000, 300]: F_A 300, F_B 1300 → 800, Δ 0 → 50.  Best: GPU0 (not best fit!)
    # n1 [1000×4], C 1500: before F_A 0, F_B 4000 → 2000. After (any GPU) C 500 < 1000:
    #   F_A 3700, F_B 3700 → 3700, Δ −1700 → ⌊15.45⌋ = 15; all tie → GPU0
    # n2 [400, 1000]: before F_A 400, F_B 1400 → 900.
    #   GPU0 → [100, 1000]: F_A 100, F_B 1100 → 600, Δ 300 → ⌊57.44⌋ = 57
    #   GPU1 → [400, 700]: F_A 400, F_B 1100 → 750, Δ 150 → 53.  Best: GPU0
    # n3 [600, 1000, 1000]: before F_A 0, F_B 2600 → 1300.
    #   GPU0 → [300, ...]: F_A 300, F_B 2300 → 1300, Δ 0 → 50
    #   GPU1 or GPU2 → 700: F_A 0, F_B 2300 → 1150, Δ 150 → 53.  Tie → lowest index: GPU1
    p = pod(1000, 1, 300)
    policy = FgdPlacement()
    scores, feasible = scored(policy, cluster, state, p, FGD_TARGET)
    assert scores.tolist() == [53, 15, 57, 53]
    assert [policy.pick_gpus(p, state, n) for n in range(4)] == [(0,), (0,), (0,), (1,)]
    assert choose_node(scores, feasible, np.arange(4)) == 2


def test_fgd_whole_and_cpu_only_pods_hand_scores(fgd_nodes):
    cluster, state = fgd_nodes
    # Pod 1000 CPU, 1×1000 (takes the lowest-index fully free GPU):
    #   n0 → [0, 600], C 7000: F_A 0 (600 ≥ 500), F_B 600 → 300; Δ 800 − 300 = 500 → ⌊62.25⌋ = 62
    #   n1 → C 500: F_A 3000, F_B 3000 → 3000; Δ 2000 − 3000 = −1000 → ⌊26.89⌋ = 26
    #   n2 → [400, 0]: no GPU ≥ 500: F_A 400, F_B 400 → 400; Δ 900 − 400 = 500 → 62
    #   n3 → [600, 0, 1000]: F_A 0, F_B 1600 → 800; Δ 1300 − 800 = 500 → 62
    p = pod(1000, 1, 1000)
    policy = FgdPlacement()
    scores, feasible = scored(policy, cluster, state, p, FGD_TARGET)
    assert scores.tolist() == [62, 26, 62, 62]
    assert policy.pick_gpus(p, state, 2) == (1,)
    assert policy.pick_gpus(p, state, 3) == (1,)
    assert choose_node(scores, feasible, np.array([3, 0, 2, 1])) == 3
    # CPU-only pod with 7000 CPU: n1 is infeasible.
    #   n0 → C 1000: F_A 0, F_B 1600 → 800; Δ 0 → 50.   n2 → C 1000: 900 → 900; Δ 0 → 50.
    #   n3 → C 1000: 1300 → 1300; Δ 0 → 50.
    scores, feasible = scored(FgdPlacement(), cluster, state, pod(7000), FGD_TARGET)
    assert feasible.tolist() == [True, False, True, True]
    assert scores[feasible].tolist() == [50, 50, 50]
    # 7500 CPU leaves 500 < 1000: task A stops fitting.
    #   n0: F 1600, Δ −800 → ⌊31.00⌋ = 31.   n2: F 1400, Δ −500 → ⌊37.75⌋ = 37.
    #   n3: F 2600, Δ −1300 → ⌊21.42⌋ = 21.
    scores, feasible = scored(FgdPlacement(), cluster, state, pod(7500), FGD_TARGET)
    assert scores[feasible].tolist() == [31, 37, 21]


def test_fgd_multi_gpu_pod_takes_lowest_index_free_gpus(fgd_nodes):
    cluster, state = fgd_nodes
    # 2×1000 on n3 [600, 1000, 1000] → GPUs 1 and 2 → [600, 0, 0], C 7000:
    #   F_A 0 (600 ≥ 500), F_B 600 → 300; before 1300: Δ 1000 → ⌊73.11⌋ = 73.
    p = pod(1000, 2, 1000)
    policy = FgdPlacement()
    scores, feasible = scored(policy, cluster, state, p, FGD_TARGET)
    assert feasible.tolist() == [False, True, False, True]
    assert scores[3] == 73
    assert policy.pick_gpus(p, state, 3) == (1, 2)


# -- random -------------------------------------------------------------------------------------
def test_random_only_feasible_nodes_and_all_of_them(three_nodes):
    cluster, state = three_nodes
    set_gpu_free(state, 2, [300, 1000, 200, 1000])
    policy = RandomPlacement()
    placer = Placer(policy, make_ctx(cluster, DUMMY_TARGET, seed=7), np.arange(3))
    p = pod(1000, 1, 250, spec="T4")  # n0 (G2) is infeasible
    nodes, gpus = [], []
    for _ in range(400):
        pl = placer.place(p, state)
        nodes.append(pl.node)
        gpus.append(pl.gpus)
    counts = np.bincount(nodes, minlength=3)
    assert counts[0] == 0
    assert 140 <= counts[1] <= 260 and 140 <= counts[2] <= 260
    # Inside n2 the fitting GPUs are 0, 1 and 3 (200 < 250); each gets chosen sometimes.
    on_n2 = {g for n, g in zip(nodes, gpus, strict=True) if n == 2}
    assert on_n2 == {(0,), (1,), (3,)}


def test_random_whole_gpu_pods_take_lowest_index_free_gpus(three_nodes):
    cluster, state = three_nodes
    set_gpu_free(state, 2, [300, 1000, 1000, 1000])
    policy = RandomPlacement()
    policy.reset(make_ctx(cluster, DUMMY_TARGET))
    for _ in range(10):
        assert policy.pick_gpus(pod(0, 2, 1000), state, 2) == (1, 2)
    assert policy.pick_gpus(pod(0), state, 2) == ()


def test_random_same_seed_same_choices(three_nodes):
    cluster, state = three_nodes

    def run(seed):
        placer = Placer(RandomPlacement(), make_ctx(cluster, DUMMY_TARGET, seed), np.arange(3))
        return [placer.place(pod(1000, 1, 250), state) for _ in range(30)]

    assert run(3) == run(3)
    assert run(3) != run(4)


# -- reference implementation of the spec, plain Python, one node at a time ---------------------
def ref_frag(cpu_free: int, free: list[int], model: int, target: TargetWorkload) -> float:
    total = sum(free)
    out = 0.0
    for c, k, d, mask, p in zip(
        target.cpu_milli.tolist(),
        target.num_gpu.tolist(),
        target.gpu_milli.tolist(),
        target.model_mask.tolist(),
        target.prob.tolist(),
        strict=True,
    ):
        fits = (
            k > 0 and (mask >> model) & 1 and cpu_free >= c and sum(1 for r in free if r >= d) >= k
        )
        out += p * (sum(r for r in free if r < d) if fits else total)
    return out


def ref_fgd(p: PodRequest, cpu: int, free: list[int], model: int, target) -> tuple[int, int]:
    def score(after_cpu, after_free):
        delta = ref_frag(cpu, free, model, target) - ref_frag(after_cpu, after_free, model, target)
        return int(100.0 / (1.0 + math.exp(-delta / 1000.0)))

    if p.is_sharing:
        best, best_gpu = -1, -1
        for g, r in enumerate(free):
            if r >= p.gpu_milli:
                after = list(free)
                after[g] -= p.gpu_milli
                s = score(cpu - p.cpu_milli, after)
                if s > best:
                    best, best_gpu = s, g
        return best, best_gpu
    after = list(free)
    if p.needs_gpu:
        taken = [g for g, r in enumerate(free) if r >= p.gpu_milli][: p.num_gpu]
        for g in taken:
            after[g] -= p.gpu_milli
    return score(cpu - p.cpu_milli, after), -1


def ref_score(name: str, p: PodRequest, state: ClusterState, n: int, target) -> int:
    c = state.cluster
    k = int(c.num_gpus[n])
    free = state.gpu_free[n, :k].tolist()
    cpu = int(state.cpu_free[n])
    gfree = sum(free)
    if name == "dotprod":
        dot = (cpu / 128_000) * (p.cpu_milli / 128_000) + (gfree / 8000) * (
            p.num_gpu * p.gpu_milli / 8000
        )
        return math.trunc(100.0 * (1.0 - dot / 2.0))
    if name == "bestfit":
        left = 0.5 * (cpu - p.cpu_milli) / 128_000 + 0.5 * (gfree - p.gpu_total_milli) / 8000
        return math.floor(100.0 * (1.0 - left))
    if name == "gpu-clustering":
        if not p.needs_gpu:
            return 0
        tags = {t for t in range(1, 6) if state.class_counts[n, t] > 0}
        mine = 1 if p.is_sharing else {1: 2, 2: 3, 4: 4, 8: 5}[p.num_gpu]
        band = 3 if tags == {mine} else 2 if mine in tags else 1 if not tags else 0
        return 25 * band + (25 * (8000 - gfree)) // 8000
    if name == "gpu-packing":
        if not p.needs_gpu:
            return 0
        fitting = sorted((r, g) for g, r in enumerate(free) if r >= p.gpu_milli)
        taken = [r for r, _ in fitting[: p.num_gpu]]
        if p.is_sharing and taken[0] < 1000:
            return max(100 - (taken[0] * 100 // 1000) // 10, 50)
        if any(r < 1000 for r in free):
            return max(50 - p.num_gpu, 33)
        return max(33 - k, k)
    if name == "fgd":
        return ref_fgd(p, cpu, free, int(c.model[n]), target)[0]
    raise AssertionError(name)


def random_cluster(rng: np.random.Generator, n: int):
    rows = []
    for i in range(n):
        g = int(rng.choice([1, 2, 4, 8]))
        rows.append(
            (
                f"n{i}",
                int(rng.choice([8, 16, 32, 64])) * 1000,
                64_000,
                g,
                str(rng.choice(["T4", "G2"])),
            )
        )
    return make_cluster(rows)


SHAPES = [
    (0, 0),
    (1, 100),
    (1, 250),
    (1, 500),
    (1, 750),
    (1, 1000),
    (2, 1000),
    (4, 1000),
    (8, 1000),
]


def random_pod(rng: np.random.Generator) -> PodRequest:
    k, d = SHAPES[int(rng.integers(len(SHAPES)))]
    cpu = int(rng.choice([0, 1000, 2000, 4000, 8000]))
    mask = int(rng.choice([ANY_MODEL_MASK, spec_mask(["T4"]), spec_mask(["G2"])]))
    return PodRequest(cpu, int(rng.choice([0, 1000, 8000])), k, d, mask)


# Dyadic probabilities keep the float sums exact, so Δ = 0 stays exactly 0.
REF_TARGET = make_target(
    [
        (1000, 1, 500, 0.25),
        (2000, 1, 1000, 0.25),
        (0, 0, 0, 0.125),
        (4000, 2, 1000, 0.125),
        (1000, 1, 250, 0.125, spec_mask(["T4"])),
        (8000, 8, 1000, 0.0625),
        (500, 1, 750, 0.0625),
    ]
)


def random_mutation(rng, state: ClusterState, placed: list) -> None:
    """Allocate a random pod where it fits (best-fit GPUs), or release an earlier one."""
    if placed and rng.random() < 0.3:
        args = placed.pop(int(rng.integers(len(placed))))
        state.release(*args)
        return
    p = random_pod(rng)
    feasible = np.flatnonzero(feasible_nodes(p, state, node_model_bits(state.cluster)))
    if len(feasible) == 0:
        return
    n = int(rng.choice(feasible))
    gpus = best_fit_gpus(p, state.gpu_free[n], state.gpu_exists[n])
    state.allocate(n, gpus, p.cpu_milli, p.memory_mib, p.gpu_milli, p.num_gpu)
    placed.append((n, list(gpus), p.cpu_milli, p.memory_mib, p.gpu_milli, p.num_gpu))


@pytest.mark.parametrize("name", ["dotprod", "bestfit", "gpu-clustering", "gpu-packing", "fgd"])
def test_scores_match_reference_on_random_states(name):
    rng = np.random.default_rng(1234)
    for _ in range(6):
        cluster = random_cluster(rng, 6)
        state = cluster.new_state()
        placed: list = []
        for _ in range(int(rng.integers(0, 25))):
            random_mutation(rng, state, placed)
        for _ in range(15):
            p = random_pod(rng)
            policy = make_placement(name)
            scores, feasible = scored(policy, cluster, state, p, REF_TARGET)
            for n in np.flatnonzero(feasible):
                assert scores[n] == ref_score(name, p, state, int(n), REF_TARGET), (name, p, n)


def test_fgd_node_fragmentation_matches_reference():
    from schedlab.metrics.fragmentation import node_fragmentation

    rng = np.random.default_rng(99)
    cluster = random_cluster(rng, 8)
    state = cluster.new_state()
    placed: list = []
    for _ in range(30):
        random_mutation(rng, state, placed)
        got = node_fragmentation(state.cpu_free, state.gpu_free, cluster.model, REF_TARGET)
        want = [
            ref_frag(
                int(state.cpu_free[n]),
                state.gpu_free[n, : cluster.num_gpus[n]].tolist(),
                int(cluster.model[n]),
                REF_TARGET,
            )
            for n in range(cluster.size)
        ]
        np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("name", ALL_POLICIES)
def test_policies_do_not_mutate_the_state(name):
    rng = np.random.default_rng(5)
    cluster = random_cluster(rng, 5)
    state = cluster.new_state()
    placed: list = []
    for _ in range(15):
        random_mutation(rng, state, placed)
    arrays = ("cpu_free", "mem_free", "gpu_free", "gpu_exists", "class_counts", "version")
    before = {a: getattr(state, a).copy() for a in arrays}
    placer = Placer(make_placement(name), make_ctx(cluster, REF_TARGET), np.arange(5))
    for _ in range(20):
        placer.place(random_pod(rng), state)
    for a in arrays:
        np.testing.assert_array_equal(getattr(state, a), before[a], err_msg=a)


# -- fgd cache ----------------------------------------------------------------------------------
def test_fgd_cache_matches_fresh_policy_and_reference_after_state_changes():
    rng = np.random.default_rng(2024)
    cluster = random_cluster(rng, 8)
    ctx = make_ctx(cluster, REF_TARGET)
    bits = node_model_bits(cluster)
    cached = FgdPlacement()
    cached.reset(ctx)
    state = cluster.new_state()
    placed: list = []
    fresh_rescored = 0
    compared = 0
    for _ in range(150):
        random_mutation(rng, state, placed)
        for _ in range(3):
            p = random_pod(rng)
            feasible = feasible_nodes(p, state, bits)
            if not feasible.any():
                continue
            fresh = FgdPlacement()
            fresh.reset(ctx)
            got = cached.score(p, state, feasible)[feasible]
            want = fresh.score(p, state, feasible)[feasible]
            fresh_rescored += fresh.rescored_states
            np.testing.assert_array_equal(got, want)
            for n in np.flatnonzero(feasible):
                s, g = ref_fgd(
                    p,
                    int(state.cpu_free[n]),
                    state.gpu_free[n, : cluster.num_gpus[n]].tolist(),
                    int(cluster.model[n]),
                    REF_TARGET,
                )
                assert cached.score(p, state, feasible)[n] == s
                picked = cached.pick_gpus(p, state, int(n))
                assert picked == fresh.pick_gpus(p, state, int(n))
                if p.is_sharing:
                    assert picked == (g,)
                compared += 1
    assert compared > 500
    # The cache did its job: fewer candidate states were scored than from scratch.
    assert cached.rescored_states < fresh_rescored


def test_fgd_cache_rescoring_only_changed_nodes():
    cluster = make_cluster([(f"n{i}", 8000, 1000, 2, "T4") for i in range(5)])
    state = cluster.new_state()
    policy = FgdPlacement()
    policy.reset(make_ctx(cluster, FGD_TARGET))
    bits = node_model_bits(cluster)
    whole, share = pod(1000, 1, 1000), pod(1000, 1, 300)
    policy.score(whole, state, feasible_nodes(whole, state, bits))
    assert policy.rescored_states == 5  # one candidate state per node
    policy.score(whole, state, feasible_nodes(whole, state, bits))
    assert policy.rescored_states == 5  # nothing changed: all from the cache
    policy.score(share, state, feasible_nodes(share, state, bits))
    assert policy.rescored_states == 5 + 10  # new shape: every fitting GPU of every node
    state.allocate(3, [0], 0, 0, 1000, 1)
    policy.score(whole, state, feasible_nodes(whole, state, bits))
    assert policy.rescored_states == 16  # only node 3
    policy.score(share, state, feasible_nodes(share, state, bits))
    assert policy.rescored_states == 17  # only node 3, whose one fitting GPU is tried


def test_fgd_cache_sees_changes_made_through_allocate_and_release():
    cluster = make_cluster([("a", 8000, 1000, 2, "T4"), ("b", 8000, 1000, 2, "T4")])
    state = cluster.new_state()
    policy = FgdPlacement()
    policy.reset(make_ctx(cluster, FGD_TARGET))
    bits = node_model_bits(cluster)
    p = pod(1000, 1, 300)
    first = policy.score(p, state, feasible_nodes(p, state, bits)).copy()
    assert first[0] == first[1]
    state.allocate(0, [1], 0, 0, 400, 1)  # a → [1000, 600]: now the n0 case above (53)
    second = policy.score(p, state, feasible_nodes(p, state, bits)).copy()
    assert second[0] == 53 and second[1] == first[1]
    assert policy.pick_gpus(p, state, 0) == (0,)
    state.release(0, [1], 0, 0, 400, 1)
    third = policy.score(p, state, feasible_nodes(p, state, bits))
    assert third.tolist() == first.tolist()


# -- registry -----------------------------------------------------------------------------------
def test_registry_names_in_paper_order():
    assert pack_study_names() == ALL_POLICIES
    assert placement_names()[: len(ALL_POLICIES)] == ALL_POLICIES
    # besides the whole-job network placements, which need a topology
    network = {n for n, c in PLACEMENT_POLICIES.items() if getattr(c, "requires_topology", False)}
    assert set(PLACEMENT_POLICIES) - network == {*ALL_POLICIES, "consolidate", "pwr", "pwr+fgd"}


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("random", RandomPlacement),
        ("dotprod", DotProductPlacement),
        ("gpu-clustering", GpuClusteringPlacement),
        ("gpu-packing", GpuPackingPlacement),
        ("bestfit", BestFitPlacement),
        ("fgd", FgdPlacement),
    ],
)
def test_make_placement_returns_fresh_instances(name, cls):
    a, b = make_placement(name), make_placement(name)
    assert type(a) is cls and a.name == name
    assert a is not b
    assert isinstance(a.summary, str) and a.summary


def test_make_placement_suggests_close_names():
    with pytest.raises(InputError) as info:
        make_placement("bestfti")
    msg = str(info.value)
    assert "unknown placement policy 'bestfti'" in msg
    assert "did you mean 'bestfit'" in msg
    assert "known: random, dotprod, gpu-clustering, gpu-packing, bestfit, fgd" in msg
    with pytest.raises(InputError, match="did you mean 'gpu-packing'"):
        make_placement("gpu_packing")


def test_make_placement_unknown_without_suggestion():
    with pytest.raises(InputError) as info:
        make_placement("zzzzzz")
    assert "did you mean" not in str(info.value)
    assert "known: random" in str(info.value)
