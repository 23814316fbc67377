"""Inputs of the sharing engine: cluster scaling, windows, compression, synthetic workloads."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import make_cluster
from schedlab.errors import InputError
from schedlab.model.cluster_scale import scale_cluster
from schedlab.traces.alibaba_sharing import compress, offered_load, parse_window, window
from schedlab.traces.synthetic_sharing import synthetic_fillers, synthetic_workload
from sharing_cases import workload


def test_scale_cluster_keeps_the_mix_by_largest_remainder():
    # Groups: 6 × (8 GPUs, G2) = 48 GPUs, 4 × (2 GPUs, T4) = 8, 2 × (4 GPUs, P100) = 8 → 64.
    nodes = [(f"g{i}", 96000, 1000, 8, "G2") for i in range(6)]
    nodes += [(f"t{i}", 32000, 1000, 2, "T4") for i in range(4)]
    nodes += [(f"p{i}", 32000, 1000, 4, "P100") for i in range(2)]
    small = scale_cluster(make_cluster(nodes), 16)
    # Quotas in nodes: G2 1.5, T4 1.0, P100 0.5 → floors 1, 1, 0 (10 GPUs); 6 GPUs left:
    # G2 (remainder .5, larger group) cannot take 8; P100 (.5) takes one node of 4 → 14 GPUs.
    assert small.names.tolist() == ["g0", "t0", "p0"]  # in the node file's order
    assert small.total_gpus == 14
    assert scale_cluster(make_cluster(nodes), 64).size == 12
    with pytest.raises(InputError, match="between 1 and 64"):
        scale_cluster(make_cluster(nodes), 65)


ROWS = [
    ("a", 1000, 10, 1, 500, "LS", 100, 10),
    ("b", 1000, 10, 1, 1000, "BE", 110, 20),
    ("c", 1000, 10, 0, 0, "Burstable", 200, 30),
]


def test_window_compress_and_offered_load():
    w = workload(ROWS)
    inside = window(w, *parse_window("105:"))
    assert inside.pods.name.tolist() == ["b", "c"] and inside.dropped == {"outside_window": 1}
    fast = compress(w, 10)
    assert fast.arrival.tolist() == [100, 101, 110] and fast.work.tolist() == [10, 20, 30]
    # ρ = (0.5·10 + 1·20) GPU-s / (2 GPUs × 100 s span).
    assert offered_load(w, 2) == pytest.approx(25 / 200)
    assert parse_window(":50") == (-np.inf, 50)
    with pytest.raises(InputError, match="START:END"):
        parse_window("50")


def test_synthetic_workload_resamples_rows_at_the_offered_load():
    base = workload(ROWS)
    rng = np.random.default_rng(3)
    w = synthetic_workload(base, 20000, 0.5, 4, rng)
    assert len(w) == 20000 and (np.diff(w.arrival) >= 0).all()
    assert set(w.qos.tolist()) <= {"LS", "BE", "Burstable"}
    # Each draw keeps a row's shape, class and work together.
    pairs = set(zip(w.pods.gpu_milli.tolist(), w.qos.tolist(), w.work.tolist(), strict=True))
    assert pairs <= {(500, "LS", 10.0), (1000, "BE", 20.0), (0, "Burstable", 30.0)}
    assert offered_load(w, 4) == pytest.approx(0.5, rel=0.05)
    again = synthetic_workload(base, 20000, 0.5, 4, np.random.default_rng(3))
    assert np.array_equal(again.arrival, w.arrival)


def test_synthetic_fillers_are_valid_and_staggered():
    jobs = synthetic_fillers(5, 10.0, np.random.default_rng(0), r_max=16)
    assert [j.arrival for j in jobs] == [0, 3600, 7200, 10800, 14400]
    assert all(1 <= j.r_min <= j.r_max <= 16 and j.m_min <= j.m_max for j in jobs)
