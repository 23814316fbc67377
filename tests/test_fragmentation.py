"""Hand-computed cases for the FGD fragmentation measure and the target workload.

Notation in the comments: r = free share per GPU (milli), d = task's per-GPU share, k = task's GPU
count, F = fragmented milli-GPU of the node for the task.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import make_cluster, make_pods, make_target, set_cpu_free, set_gpu_free
from schedlab.metrics.fragmentation import (
    COUNT_SHIFT,
    FragmentationSnapshot,
    TargetWorkload,
    _groups,
    cluster_fragmentation,
    node_fragmentation,
    plain_per_task,
)
from schedlab.model.gpu_models import ANY_MODEL_MASK, model_index, spec_mask

T4 = model_index("T4")
P100 = model_index("P100")


def frag_one(cpu_free: int, free: list[int], model: int, tasks: list[tuple]) -> float:
    out = node_fragmentation(
        np.array([cpu_free]), np.array([free]), np.array([model]), make_target(tasks)
    )
    assert out.shape == (1,)
    return float(out[0])


# -- one task at a time ------------------------------------------------------------------------
def test_cpu_only_task_counts_all_idle_share():
    # Task needs no GPU: F = Σ r = 1000 + 300 + 0 + 1000 = 2300, however much CPU is free.
    assert frag_one(64_000, [1000, 300, 0, 1000], T4, [(1000, 0, 0, 1.0)]) == 2300
    assert frag_one(0, [1000, 300, 0, 1000], T4, [(0, 0, 0, 1.0)]) == 2300


def test_model_mismatch_counts_all_idle_share():
    p100_only = spec_mask(["P100"])
    # Task 1×500 allowed only on P100; node is T4: F = Σ r = 1000 + 400 = 1400.
    assert frag_one(64_000, [1000, 400], T4, [(1000, 1, 500, 1.0, p100_only)]) == 1400
    # Same node as P100: the task fits, only the sliver 400 < 500 counts.
    assert frag_one(64_000, [1000, 400], P100, [(1000, 1, 500, 1.0, p100_only)]) == 400
    # A multi-model mask that includes T4 fits too.
    both = spec_mask(["P100", "T4"])
    assert frag_one(64_000, [1000, 400], T4, [(1000, 1, 500, 1.0, both)]) == 400


def test_cpu_shortage_counts_all_idle_share():
    # Task 1×500 with 4000 CPU; node has 3999 free: does not fit, F = 1000 + 400 = 1400.
    assert frag_one(3_999, [1000, 400], T4, [(4000, 1, 500, 1.0)]) == 1400
    # Exactly 4000 free: fits, only the sliver 400 counts.
    assert frag_one(4_000, [1000, 400], T4, [(4000, 1, 500, 1.0)]) == 400


def test_partial_gpus_only_slivers_below_d_count():
    # d = 500: slivers 450 and 200 (< 500) count; 1000 and 600 are usable. F = 650.
    assert frag_one(8_000, [1000, 450, 200, 600], T4, [(0, 1, 500, 1.0)]) == 650
    # d = 200: r == d is usable, nothing is smaller: F = 0.
    assert frag_one(8_000, [1000, 450, 200, 600], T4, [(0, 1, 200, 1.0)]) == 0
    # d = 1000 (one whole GPU): every partial GPU is a sliver: 450 + 200 + 600 = 1250.
    assert frag_one(8_000, [1000, 450, 200, 600], T4, [(0, 1, 1000, 1.0)]) == 1250


def test_multi_gpu_task_with_too_few_whole_gpus():
    # Task 2×1000; only one whole GPU free: does not fit, F = 1000 + 700 + 300 + 0 = 2000.
    assert frag_one(8_000, [1000, 700, 300, 0], T4, [(0, 2, 1000, 1.0)]) == 2000
    # Two whole GPUs free: fits, slivers < 1000 are 300 and 0: F = 300.
    assert frag_one(8_000, [1000, 1000, 300, 0], T4, [(0, 2, 1000, 1.0)]) == 300
    # Task 4×1000 on a 2-GPU node: never fits, F = 2000.
    assert frag_one(8_000, [1000, 1000], T4, [(0, 4, 1000, 1.0)]) == 2000


def test_probability_weighting_across_tasks():
    # A: 1×500, p = 0.75 → fits, sliver 300 → F_A = 300.
    # B: 2×1000, p = 0.25 → only 1 whole GPU → F_B = 1000 + 300 = 1300.
    # F = 0.75·300 + 0.25·1300 = 225 + 325 = 550.
    tasks = [(0, 1, 500, 0.75), (0, 2, 1000, 0.25)]
    assert frag_one(8_000, [1000, 300], T4, tasks) == pytest.approx(550)


def test_batch_of_nodes_is_per_node():
    # Same task 1×500 on three node states at once.
    #   node 0: [1000, 300]  → 300
    #   node 1: [200, 100]   → no GPU ≥ 500, does not fit → 300
    #   node 2: [600, 600], CPU 0 < 1000 → does not fit → 1200
    out = node_fragmentation(
        np.array([8000, 8000, 0]),
        np.array([[1000, 300], [200, 100], [600, 600]]),
        np.array([T4, T4, T4]),
        make_target([(1000, 1, 500, 1.0)]),
    )
    np.testing.assert_allclose(out, [300, 300, 1200])


def test_padding_slots_of_smaller_nodes_contribute_nothing():
    cluster = make_cluster([("big", 64_000, 1 << 18, 8, "G2"), ("small", 32_000, 1 << 17, 2, "T4")])
    state = cluster.new_state()
    assert state.gpu_free.shape == (2, 8)
    assert not state.gpu_exists[1, 2:].any()
    set_gpu_free(state, 1, [1000, 250])
    target = make_target([(0, 0, 0, 0.5), (0, 1, 500, 0.5)])
    # small: CPU-only task → 1250; 1×500 → sliver 250 (six padding zeros add nothing).
    #   F_small = 0.5·1250 + 0.5·250 = 750
    # big (all 8 free): CPU-only → 8000; 1×500 → 0.  F_big = 4000
    per_node = node_fragmentation(state.cpu_free, state.gpu_free, cluster.model, target)
    np.testing.assert_allclose(per_node, [4000, 750])
    snap = cluster_fragmentation(state, target)
    assert snap.frag_milli == pytest.approx(4750)
    assert snap.idle_milli == 9250
    assert snap.total_gpus == 10


def test_memory_plays_no_part():
    cluster = make_cluster([("a", 8000, 100, 2, "T4")])
    state = cluster.new_state()
    state.mem_free[0] = 0
    set_gpu_free(state, 0, [1000, 300])
    # 1×500 fits on GPU 0 although no memory is free: sliver 300 only.
    assert cluster_fragmentation(state, make_target([(0, 1, 500, 1.0)])).frag_milli == 300


def test_cluster_fragmentation_follows_cpu_changes():
    cluster = make_cluster([("a", 8000, 100, 2, "T4")])
    state = cluster.new_state()
    target = make_target([(4000, 1, 500, 1.0)])
    assert cluster_fragmentation(state, target).frag_milli == 0
    set_cpu_free(state, 0, 3000)  # 3000 < 4000: the task no longer fits → all 2000 idle
    assert cluster_fragmentation(state, target).frag_milli == 2000


# -- the table-driven path ----------------------------------------------------------------------
def test_slot_table_packs_fit_count_and_usable_share_by_hand():
    # Tasks d = 0, 500, 1000. A slot with 700 free fits d = 0 and 500 (offering 700), not 1000.
    t = make_target([(0, 0, 0, 0.25), (0, 1, 500, 0.5), (0, 1, 1000, 0.25)]).tables
    one = 1 << COUNT_SHIFT
    assert t.slot[700].tolist() == [one + 700, one + 700, 0]
    assert t.slot[1000].tolist() == [one + 1000] * 3
    assert t.slot[0].tolist() == [one, 0, 0]
    # Node [1000, 700, 300]: d = 500 → 2 fitting GPUs, 1700 usable; d = 1000 → 1, 1000 usable.
    packed = t.slot_sums(np.array([[1000, 700, 300]]))
    assert (packed[0] >> COUNT_SHIFT).tolist() == [3, 2, 1]
    assert (packed[0] & ((1 << COUNT_SHIFT) - 1)).tolist() == [2000, 1700, 1000]


def test_table_model_rows_follow_the_mask_shift():
    p100_only = spec_mask(["P100"])
    t = make_target([(0, 1, 500, 0.5, p100_only), (0, 0, 0, 0.5)]).tables
    # Row k + 1 is model k; a CPU-only task is never "allowed" (it cannot use a GPU).
    assert t.allowed[P100 + 1].tolist() == [True, False]
    assert t.allowed[T4 + 1].tolist() == [False, False]
    # Nodes without GPUs (-1) read model 0's bit, as the plain path's max(model, 0) does.
    assert t.allowed[0].tolist() == t.allowed[1].tolist()
    assert not t.allowed[-1].any()


_shares = st.sampled_from([0, 1, 100, 160, 250, 499, 500, 501, 650, 999, 1000])


@st.composite
def _batches(draw):
    tasks = []
    for _ in range(draw(st.integers(1, 6))):
        k = draw(st.sampled_from([0, 1, 1, 2, 4, 8]))
        d = draw(_shares) if k else 0
        mask = draw(st.sampled_from([ANY_MODEL_MASK, spec_mask(["T4"]), spec_mask(["P100"])]))
        tasks.append((draw(st.sampled_from([0, 1000, 4000, 8000])), k, d, 1.0, mask))
    probs = np.array(draw(st.lists(st.integers(1, 50), min_size=len(tasks), max_size=len(tasks))))
    tasks = [(*t[:3], p / probs.sum(), t[4]) for t, p in zip(tasks, probs, strict=True)]
    rows, width = draw(st.integers(1, 12)), draw(st.integers(1, 8))
    gpu = np.array(draw(st.lists(_shares, min_size=rows * width, max_size=rows * width)))
    cpu = np.array(
        draw(st.lists(st.sampled_from([0, 999, 1000, 4000, 9000]), min_size=rows, max_size=rows))
    )
    model = np.array(draw(st.lists(st.integers(-2, 70), min_size=rows, max_size=rows)))
    return make_target(tasks), cpu, gpu.reshape(rows, width).astype(np.int64), model


@settings(max_examples=200, deadline=None)
@given(_batches())
def test_table_path_builds_the_plain_per_task_matrix(batch):
    target, cpu, gpu, model = batch
    t = target.tables
    fast = t.per_task(cpu, t.slot_sums(gpu), gpu.sum(axis=1), t.allowed_for(model))
    plain = plain_per_task(cpu, gpu, model, target)
    assert fast.dtype == plain.dtype == np.int64
    np.testing.assert_array_equal(fast, plain)
    # Same matrix, same product: bit for bit the plain path's result (int32 shares take it).
    got = node_fragmentation(cpu, gpu, model, target)
    want = node_fragmentation(cpu, gpu.astype(np.int32), model, target)
    assert got.tobytes() == want.tobytes()


def test_shares_outside_0_to_1000_take_the_plain_path():
    # A share above a whole GPU (a hand-built state) must not index past the table.
    target = make_target([(0, 1, 500, 1.0)])
    out = node_fragmentation(np.array([0]), np.array([[1500, 200]]), np.array([T4]), target)
    assert out.tolist() == [200.0]


# -- snapshot ----------------------------------------------------------------------------------
def test_snapshot_amount_and_ratio():
    s = FragmentationSnapshot(frag_milli=1500.0, idle_milli=3000, total_gpus=4)
    assert s.amount_pct == pytest.approx(37.5)  # 100·1500 / 4000
    assert s.ratio_pct == pytest.approx(50.0)  # 100·1500 / 3000


def test_snapshot_idle_zero_and_no_gpus():
    assert FragmentationSnapshot(0.0, 0, 4).ratio_pct == 0.0
    assert FragmentationSnapshot(0.0, 0, 4).amount_pct == 0.0
    assert FragmentationSnapshot(0.0, 0, 0).amount_pct == 0.0


# -- target workload ---------------------------------------------------------------------------
def _pods_with_groups(groups: list[tuple[int, int, int, str, int]]):
    """Pods from ``(cpu, num_gpu, gpu_milli, spec, count)``; memory varies and is ignored."""
    rows = []
    for cpu, k, d, spec, count in groups:
        for _ in range(count):
            rows.append((f"p{len(rows):03d}", cpu, 1000 + 7 * len(rows), k, d, spec))
    return make_pods(rows)


def test_from_pods_coverage_cut_at_95_percent():
    # Counts 10, 6, 3, 1 of 20 pods: cumulative 50 %, 80 %, 95 %, 100 %.
    # The third group reaches 95 % exactly, so three groups are kept: p = 10/19, 6/19, 3/19.
    pods = _pods_with_groups(
        [(1000, 1, 500, "", 10), (2000, 1, 1000, "", 6), (0, 0, 0, "", 3), (4000, 2, 1000, "", 1)]
    )
    t = TargetWorkload.from_pods(pods)
    assert len(t) == 3
    assert t.cpu_milli.tolist() == [1000, 2000, 0]
    assert t.gpu_milli.tolist() == [500, 1000, 0]
    assert t.num_gpu.tolist() == [1, 1, 0]
    assert t.count.tolist() == [10, 6, 3]
    np.testing.assert_allclose(t.prob, [10 / 19, 6 / 19, 3 / 19])
    assert t.prob.sum() == pytest.approx(1.0)
    # Asking for 96 % needs the fourth group too.
    assert len(TargetWorkload.from_pods(pods, coverage=0.96)) == 4
    # 50 % is reached by the first group alone.
    t50 = TargetWorkload.from_pods(pods, coverage=0.5)
    assert len(t50) == 1
    assert t50.prob.tolist() == [1.0]


def test_from_pods_ties_ordered_by_key_and_row_order_irrelevant():
    # Two groups of 2 pods each: (cpu 3000, 1000, 1) and (cpu 1000, 1000, 1); one of 1 pod.
    # Equal counts are ordered by the key (cpu first), so cpu 1000 comes before cpu 3000.
    pods = _pods_with_groups([(3000, 1, 1000, "", 2), (1000, 1, 1000, "", 2), (500, 0, 0, "", 1)])
    t = TargetWorkload.from_pods(pods, coverage=0.8)  # 2/5, 4/5 → two groups
    assert t.cpu_milli.tolist() == [1000, 3000]
    np.testing.assert_allclose(t.prob, [0.5, 0.5])
    # Reversed rows: the same groups in the same order.
    rev = pods.take(np.arange(len(pods))[::-1])
    t_rev = TargetWorkload.from_pods(rev, coverage=0.8)
    assert t_rev.cpu_milli.tolist() == [1000, 3000]


def test_from_pods_groups_by_model_constraint_not_memory():
    # Same shape, three model constraints: any (3 pods), T4 (2 pods), P100|T4 (1 pod).
    pods = _pods_with_groups(
        [(1000, 1, 500, "", 3), (1000, 1, 500, "T4", 2), (1000, 1, 500, "P100|T4", 1)]
    )
    t = TargetWorkload.from_pods(pods, coverage=1.0)
    assert t.count.tolist() == [3, 2, 1]
    assert t.model_mask.tolist() == [ANY_MODEL_MASK, spec_mask(["T4"]), spec_mask(["T4", "P100"])]


def test_from_pods_rejects_empty_and_bad_coverage():
    with pytest.raises(ValueError, match="empty"):
        TargetWorkload.from_pods(make_pods([]))
    pods = _pods_with_groups([(1000, 1, 500, "", 2)])
    for bad in (0.0, -0.1, 1.01):
        with pytest.raises(ValueError, match="coverage"):
            TargetWorkload.from_pods(pods, coverage=bad)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(*[st.integers(-3, 3)] * 4).map(list),
        min_size=1,
        max_size=40,
    )
)
def test_target_groups_are_numpy_unique_rows(rows: list[list[int]]) -> None:
    """The typical tasks' grouping (one lexsort) gives np.unique's rows, order and counts,
    negative keys (model masks) included."""
    keys = np.asarray(rows, dtype=np.int64)
    uniq, counts = _groups(keys)
    want, want_counts = np.unique(keys, axis=0, return_counts=True)
    assert uniq.tolist() == want.tolist()
    assert counts.tolist() == want_counts.tolist()
