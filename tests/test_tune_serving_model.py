"""The serving performance model's hand cases M1–M6 (docs/tuning.md), exact to 1e-9, and the
configuration space's shape and order.

Service: α 5 ms, β 2.5 ms/sample (T4), κ 4 core-ms, M₀ 1 GB, m 0.05 GB/sample, SLO 100 ms;
default hardware (T4 16 GB $0.35/h, V100 16 GB $2.48/h with v 2, A100 40 GB $2.93/h with v 4;
$0.03 per core-hour; no time-slice period).
"""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.tune.serving.model import Hardware, Service, evaluate
from schedlab.tune.serving.space import GPU_TYPES, features, space

SERVICE = Service("u", 5.0, 2.5, 4.0, 1.0, 0.05, 100.0)
PERF = evaluate(SERVICE)


def at(gpu: str, share: float, memory: float, cores: int, batch: int) -> int:
    s = space()
    hit = np.flatnonzero(
        (s.gpu == GPU_TYPES.index(gpu))
        & (s.share == share)
        & (s.memory_gb == memory)
        & (s.cores == cores)
        & (s.batch == batch)
    )
    assert len(hit) == 1
    return int(hit[0])


def close(value: float, expected: float) -> bool:
    return float(value) == pytest.approx(expected, rel=1e-9, abs=0)


def test_the_space_has_720_configurations_in_lexicographic_order() -> None:
    s = space()
    assert len(s) == 720
    assert s.config(0) == {"gpu": "T4", "share": 0.25, "memory_gb": 2.0, "cores": 1, "batch": 1}
    assert s.config(1)["batch"] == 4 and s.config(5)["cores"] == 2
    assert s.config(719) == {"gpu": "A100", "share": 1.0, "memory_gb": 16.0, "cores": 4,
                             "batch": 32}  # fmt: skip
    f = features()
    assert f.shape == (720, 7) and f.min() == 0.0 and f.max() == 1.0
    assert (f[:, :3].sum(axis=1) == 1).all()


def test_m1_gpu_bound_within_the_slo() -> None:
    i = at("T4", 1.0, 4, 2, 16)
    assert close(PERF.batch_ms[i], 45.0)
    assert close(PERF.throughput[i], 16 / 0.045)  # 355.6, GPU-bound (CPU allows 500)
    assert close(PERF.latency_ms[i], 94.0) and close(PERF.price[i], 0.41)
    assert close(PERF.objective[i], (16 / 0.045) / 0.41)  # 867.2
    assert round(float(PERF.objective[i]), 1) == 867.2


def test_m2_a_larger_batch_breaks_the_slo() -> None:
    i = at("T4", 1.0, 4, 2, 32)
    assert close(PERF.batch_ms[i], 85.0) and close(PERF.throughput[i], 32 / 0.085)  # 376.5
    assert close(PERF.latency_ms[i], 174.0) and not PERF.feasible[i]
    assert PERF.objective[i] == 0.0


def test_m3_half_a_gpu_at_two_batch_sizes() -> None:
    big, small = at("T4", 0.5, 2, 1, 8), at("T4", 0.5, 2, 1, 4)
    assert close(PERF.batch_ms[big], 50.0) and close(PERF.latency_ms[big], 104.0)
    assert not PERF.feasible[big] and PERF.objective[big] == 0.0
    assert close(PERF.batch_ms[small], 30.0) and close(PERF.throughput[small], 400 / 3)
    assert close(PERF.latency_ms[small], 64.0) and close(PERF.price[small], 0.205)
    assert round(float(PERF.objective[small]), 1) == 650.4


def test_m4_cpu_bound_forms_smaller_batches() -> None:
    i = at("T4", 1.0, 4, 1, 16)
    assert close(PERF.throughput[i], 250.0)  # 1000·1/4: the CPU binds
    assert close(PERF.batch_formed[i], 10 / 3)  # 250·0.005/(1 − 250·0.0025)
    assert close(PERF.batch_ms[i], 5 + 2.5 * 10 / 3)  # 13.33
    assert close(PERF.latency_ms[i], 4 + 2 * (5 + 2.5 * 10 / 3))  # 30.67
    assert close(PERF.price[i], 0.38) and round(float(PERF.objective[i]), 1) == 657.9


def test_m5_a_quarter_of_a_v100() -> None:
    big, small = at("V100", 0.25, 4, 4, 16), at("V100", 0.25, 4, 4, 4)
    assert close(PERF.batch_ms[big], 90.0) and close(PERF.latency_ms[big], 184.0)
    assert PERF.objective[big] == 0.0
    assert close(PERF.batch_ms[small], 30.0) and close(PERF.throughput[small], 400 / 3)
    assert close(PERF.latency_ms[small], 64.0) and close(PERF.price[small], 0.74)
    assert round(float(PERF.objective[small]), 1) == 180.2


def test_m6_the_batch_does_not_fit_the_gpu_memory() -> None:
    i = at("T4", 1.0, 2, 2, 32)  # 1 + 32·0.05 = 2.6 GB > 2 GB
    assert not PERF.feasible[i] and PERF.objective[i] == 0.0
    assert PERF.latency_ms[i] > 0  # the latency is modelled; memory alone rules it out


def test_memory_above_the_gpu_is_infeasible_and_time_slicing_costs_latency() -> None:
    # A T4 has 16 GB: a 16 GB slice fits it, and nothing here asks more; with q > 0 a partial
    # share pays (1 − s)·q per batch.
    q = evaluate(SERVICE, Hardware(slice_ms=10.0))
    i = at("T4", 0.5, 2, 1, 4)
    assert close(q.batch_ms[i], 30.0 + 0.5 * 10.0)
    j = at("T4", 1.0, 4, 2, 16)
    assert close(q.batch_ms[j], 45.0)  # a whole GPU is never sliced


def test_the_objective_is_zero_exactly_where_infeasible() -> None:
    assert ((PERF.objective > 0) == PERF.feasible).all()
    assert PERF.best == int(np.argmax(PERF.objective))
