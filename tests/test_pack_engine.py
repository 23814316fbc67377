"""Workload inflation, a hand-checked pack run, the binned curves and the run summary."""

from __future__ import annotations

import signal

import numpy as np
import pytest

from conftest import make_cluster, make_pods
from schedlab.engines.inflation import inflate
from schedlab.engines.pack import NO_NODE, PackConfig, run_pack
from schedlab.metrics.pack_curves import arrived_bins, binned_means, value_at


# -- inflation ----------------------------------------------------------------------------------
def _pods(n: int, seed: int = 0):
    """n pods with mixed requests, given in an order that is not sorted by name."""
    rng = np.random.default_rng(seed)
    shapes = [(0, 0), (1, 200), (1, 500), (1, 1000), (2, 1000), (4, 1000)]
    rows = []
    for i in rng.permutation(n):
        k, d = shapes[i % len(shapes)]
        rows.append((f"pod-{i:03d}", 1000 * (i % 5), 100, k, d))
    return make_pods(rows)


def test_inflate_sorts_by_name_then_shuffles_then_draws_copies():
    pods = _pods(30)
    base = pods.sorted_by_name()
    total_gpus = 40
    ratio = 1.3
    stream = inflate(pods, ratio, total_gpus, np.random.default_rng(7))

    # Replay the protocol with the same seed: permutation, then one integer per draw.
    rng = np.random.default_rng(7)
    order = rng.permutation(len(base))
    n = len(base)
    assert stream.origin[:n].tolist() == order.tolist()
    assert stream.pods.name[:n].tolist() == base.name[order].tolist()

    request = base.gpu_request_milli
    target = ratio * total_gpus * 1000
    total = int(request.sum())
    assert total == 38_500 <= target  # 38.5 GPUs asked < 52 GPUs: copies are needed
    draws = []
    while True:
        j = int(rng.integers(n))
        if total + request[j] > target:
            break
        draws.append(j)
        total += request[j]
    assert stream.copies == len(draws) > 0
    assert stream.origin[n:].tolist() == draws
    # The stream asks for at most ratio × capacity; one more draw would have passed it.
    assert int(stream.pods.gpu_request_milli.sum()) == total <= target
    assert total + request[j] > target
    # Copies are named <name>~<k>, k counting copies from 1; rows are the originals' rows.
    for k, j in enumerate(draws, start=1):
        row = n + k - 1
        assert stream.pods.name[row] == f"{base.name[j]}~{k}"
        assert stream.pods.cpu_milli[row] == base.cpu_milli[j]
        assert stream.pods.gpu_milli[row] == base.gpu_milli[j]
        assert stream.pods.num_gpu[row] == base.num_gpu[j]
        assert stream.pods.model_mask[row] == base.model_mask[j]
    assert len(set(stream.pods.name.tolist())) == len(stream.pods)


def test_inflate_hand_example_exactly_one_copy():
    # Three 1-GPU pods on 2 GPUs, ratio 2: target 4000. Originals 3000; one copy → 4000
    # (not past 4000, so kept); a second copy would make 5000 > 4000.
    pods = make_pods([("c", 0, 0, 1, 1000), ("a", 0, 0, 1, 1000), ("b", 0, 0, 1, 1000)])
    for seed in range(5):
        stream = inflate(pods, 2.0, 2, np.random.default_rng(seed))
        assert stream.copies == 1
        names = stream.pods.name.tolist()
        assert sorted(names[:3]) == ["a", "b", "c"]
        assert names[3] in {"a~1", "b~1", "c~1"}


def test_inflate_does_not_depend_on_row_order():
    pods = _pods(25)
    reordered = pods.take(np.arange(len(pods))[::-1])
    a = inflate(pods, 1.3, 8, np.random.default_rng(3))
    b = inflate(reordered, 1.3, 8, np.random.default_rng(3))
    assert a.pods.name.tolist() == b.pods.name.tolist()
    assert a.origin.tolist() == b.origin.tolist()


def test_inflate_is_deterministic_for_a_seed():
    pods = _pods(25)
    a = inflate(pods, 1.3, 8, np.random.default_rng(11))
    b = inflate(pods, 1.3, 8, np.random.default_rng(11))
    c = inflate(pods, 1.3, 8, np.random.default_rng(12))
    assert a.pods.name.tolist() == b.pods.name.tolist()
    assert a.copies == b.copies
    assert a.pods.name.tolist() != c.pods.name.tolist()


def test_inflate_ratio_below_one_keeps_a_shuffled_prefix():
    pods = _pods(30)
    base = pods.sorted_by_name()
    total_gpus = 40
    ratio = 0.5  # target 20000 milli; the originals ask for 38500
    stream = inflate(pods, ratio, total_gpus, np.random.default_rng(5))
    order = np.random.default_rng(5).permutation(len(base))
    keep = len(stream.pods)
    assert stream.copies == 0
    assert 0 < keep < len(base)
    assert stream.origin.tolist() == order[:keep].tolist()
    assert stream.pods.name.tolist() == base.name[order[:keep]].tolist()
    kept = int(base.gpu_request_milli[order[:keep]].sum())
    assert kept <= ratio * total_gpus * 1000 < kept + base.gpu_request_milli[order[keep]]


def test_inflate_rejects_non_positive_ratio():
    pods = _pods(5)
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="inflate"):
            inflate(pods, bad, 4, np.random.default_rng(0))


class _Timeout(Exception):
    pass


def test_inflate_terminates_for_cpu_only_pods():
    pods = make_pods([("a", 1000, 100, 0, 0), ("b", 2000, 100, 0, 0)])

    def on_alarm(signum, frame):
        raise _Timeout

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        try:
            stream = inflate(pods, 1.3, 4, np.random.default_rng(0))
        except ValueError:
            return  # refusing such a workload is fine too
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Timeout:
        pytest.fail("inflate() did not return within 0.5 s for a CPU-only pod list")
    finally:
        signal.signal(signal.SIGALRM, old)
    assert len(stream.pods) >= 2


# -- a tiny pack run, checked by hand -----------------------------------------------------------
@pytest.fixture
def tiny_run():
    # Cluster: nA 32 cores, 2 T4; nB 64 cores, 4 T4 → 6 GPUs, capacity 6000 milli.
    cluster = make_cluster([("nA", 32_000, 64_000, 2, "T4"), ("nB", 64_000, 128_000, 4, "T4")])
    pods = make_pods(
        [
            ("p1", 4000, 8000, 2, 1000),
            ("p2", 8000, 8000, 1, 500),
            ("p3", 2000, 4000, 4, 1000),
            ("p4", 16_000, 8000, 1, 300),
        ]
    )
    # Request 6800 ≤ 1.15 × 6000 = 6900, and any copy (≥ 300) would pass it: no copies.
    return run_pack(cluster, pods, PackConfig("bestfit", seed=42, inflate=1.15))


def test_tiny_pack_run_by_hand(tiny_run):
    r = tiny_run
    # Seed 42: permutation(4) = [3, 2, 1, 0], so the order is p4, p3, p2, p1.
    assert r.pods.name.tolist() == ["p4", "p3", "p2", "p1"]
    assert r.copies == 0
    # p4 (16000 CPU, 1×300): bestfit L(nA) = 0.5·16000/128000 + 0.5·1700/8000 = 0.16875 → 83;
    #   L(nB) = 0.5·48000/128000 + 0.5·3700/8000 = 0.41875 → 58. → nA, GPU 0 (both free).
    # p3 (4×1000): only nB has 4 GPUs → nB, GPUs 0-3.
    # p2 (1×500): nB has no GPU left → nA; fitting GPUs 700 and 1000 → least free, GPU 0.
    # p1 (2×1000): nA has [200, 1000], nB has none → fails.
    assert r.node.tolist() == [0, 1, 0, NO_NODE]
    assert r.gpus == [(0,), (0, 1, 2, 3), (0,), ()]
    assert r.failed.tolist() == [False, False, False, True]
    assert r.arrived_milli.tolist() == [300, 4300, 4800, 6800]
    assert r.allocated_milli.tolist() == [300, 4300, 4800, 4800]
    assert r.idle_milli.tolist() == [5700, 1700, 1200, 1200]
    # Typical tasks: the 4 pods are 4 groups of 1 → all kept, p = 1/4 each:
    #   T3 (2000 CPU, 4×1000), T1 (4000, 2×1000), T2 (8000, 1×500), T4 (16000, 1×300).
    # After p4: nA C 16000 [700, 1000]: T3 1700, T1 1700 (one whole GPU), T2 0, T4 0 → 850.
    #           nB fresh: everything fits, nothing below d → 0.           F = 850
    # After p3: nB has no idle share → 0.                                   F = 850
    # After p2: nA C 8000 [200, 1000]: T3 1200, T1 1200, T2 sliver 200,
    #           T4 (8000 < 16000 CPU) 1200 → 0.25·3800 = 950.               F = 950
    # p1 fails: unchanged.                                                  F = 950
    np.testing.assert_allclose(r.frag_milli, [850, 850, 950, 950])
    assert r.typical_tasks == 4
    np.testing.assert_allclose(r.arrived_pct, [5, 4300 / 60, 80, 6800 / 60])
    np.testing.assert_allclose(r.unallocated_pct, [95, 100 - 4300 / 60, 20, 20])
    np.testing.assert_allclose(r.frag_amount_pct, [850 / 60, 850 / 60, 950 / 60, 950 / 60])
    np.testing.assert_allclose(r.frag_ratio_pct, [850 / 57, 850 / 17, 950 / 12, 950 / 12])


def test_tiny_pack_summary(tiny_run):
    s = tiny_run.summary()
    assert set(s) == {
        "policy",
        "seed",
        "inflate",
        "nodes",
        "gpus",
        "pods_total",
        "pods_copied",
        "pods_failed",
        "typical_tasks",
        "wall_seconds",
        "unallocated_gpu_pct",
        "frag_amount_pct",
        "frag_ratio_pct",
    }
    assert (s["policy"], s["seed"], s["inflate"]) == ("bestfit", 42, 1.15)
    assert (s["nodes"], s["gpus"], s["pods_total"], s["pods_copied"]) == (2, 6, 4, 0)
    assert s["pods_failed"] == 1
    assert s["typical_tasks"] == 4
    assert s["wall_seconds"] >= 0
    # Arrived % 5, 71.67, 80, 113.33 → bins 5, 72, 80, 113.
    assert s["unallocated_gpu_pct"] == pytest.approx(
        {"5": 95.0, "72": 100 - 4300 / 60, "80": 20.0, "113": 20.0}
    )
    assert s["frag_amount_pct"] == pytest.approx(
        {"5": 850 / 60, "72": 850 / 60, "80": 950 / 60, "113": 950 / 60}
    )
    assert value_at(s["unallocated_gpu_pct"], 80) == pytest.approx(20.0)
    assert value_at(s["unallocated_gpu_pct"], 100) is None


def test_pack_run_records_progress():
    cluster = make_cluster([("n", 8000, 8000, 2, "T4")])
    pods = make_pods([("a", 1000, 100, 1, 500), ("b", 1000, 100, 1, 1000)])
    calls = []
    r = run_pack(
        cluster, pods, PackConfig("fgd", 1, 1.0), progress=lambda d, t: calls.append((d, t))
    )
    assert calls[0] == (0, len(r.pods))
    assert calls[-1] == (len(r.pods), len(r.pods))


def test_pack_unknown_policy_is_an_input_error():
    from schedlab.errors import InputError

    cluster = make_cluster([("n", 8000, 8000, 2, "T4")])
    pods = make_pods([("a", 1000, 100, 1, 500)])
    with pytest.raises(InputError, match="did you mean 'fgd'"):
        run_pack(cluster, pods, PackConfig("fdg"))


# -- binned curves ------------------------------------------------------------------------------
def test_arrived_bins_round_half_up():
    # Python's round() would send 0.5 → 0 and 2.5 → 2; the curves use round half up.
    assert arrived_bins(np.array([0.4, 0.5, 1.49, 1.5, 2.5, 99.5, 100.49])).tolist() == [
        0,
        1,
        1,
        2,
        3,
        100,
        100,
    ]


def test_binned_means_by_hand():
    arrived = np.array([0.4, 0.5, 1.49, 1.5, 2.5, 99.5, 100.49])
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    # Bins: 0 → {1}; 1 → {2, 3}; 2 → {4}; 3 → {5}; 100 → {6, 7}.
    assert binned_means(arrived, values) == {
        "0": 1.0,
        "1": 2.5,
        "2": 4.0,
        "3": 5.0,
        "100": 6.5,
    }
    assert binned_means(np.array([]), np.array([])) == {}
    assert value_at({"100": 4.5}, 100) == 4.5
    assert value_at({"100": 4.5}, 130) is None
