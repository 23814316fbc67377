"""Pollux's goodput model on hand-computed cases: throughput with gradient accumulation,
statistical efficiency from the gradient noise scale, goodput, the batch-size optimiser, the
speedup, the fitter, and the legacy decimal parser the measured tables are read with."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import approx_fprime

from schedlab.perf.goodput import csv_floats
from schedlab.perf.goodput.csv_floats import legacy_float
from schedlab.perf.goodput.model import (
    FitData,
    GoodputFunction,
    SpeedupFunction,
    _objective,
    accum_time,
    fit_perf_params,
    log_optim_time,
    network_time,
)

#: θ = (α_c, β_c, α_n, β_n, α_r, β_r, γ) with γ = 1 (no overlap: T_s = T_c + T_n).
THETA = np.array([0.1, 0.01, 0.5, 0.1, 0.2, 0.05, 1.0])


def fn(theta=THETA, sqr=1.0, var=4.0, m0=10.0) -> GoodputFunction:
    return GoodputFunction(np.asarray(theta, dtype=float), sqr, var, m0)


def test_network_time_by_placement() -> None:
    # across nodes α_n + β_n·(K−2); within one node α_r + β_r·(K−2); one GPU ≈ 0
    assert network_time(THETA, 2, 8) == pytest.approx(0.5 + 0.1 * 6)
    assert network_time(THETA, 1, 4) == pytest.approx(0.2 + 0.05 * 2)
    assert network_time(THETA, 1, 2) == pytest.approx(0.2 + 0.05 * 1e-8)
    assert network_time(THETA, 1, 1) == pytest.approx(1e-8, abs=1e-12)


def test_throughput_with_accumulation_hand_computed() -> None:
    f = fn()
    # one GPU, m = 10, no accumulation: T_c = 0.1 + 0.01·10 = 0.2, T_n ≈ 0 → X = 10 / 0.2
    assert f.throughput(1, 1, 10, 0) == pytest.approx(10 / 0.2)
    # 4 GPUs on one node, m = 10, s = 1: T_c = 0.2, T_n = 0.2 + 0.05·2 = 0.3, γ = 1 →
    # T_s = 0.5; T_iter = 1·0.2 + 0.5 = 0.7; M = 4·10·2 = 80
    assert f.throughput(1, 4, 10, 1) == pytest.approx(80 / 0.7)
    # γ = 2 overlaps compute and network: 2 nodes, 8 GPUs, m = 10: T_n = 0.5 + 0.1·6 = 1.1,
    # T_s = sqrt(0.2² + 1.1²)
    g2 = fn(theta=[*THETA[:6], 2.0])
    assert g2.throughput(2, 8, 10, 0) == pytest.approx(80 / math.sqrt(0.04 + 1.21))


def test_efficiency_from_gradient_noise_scale() -> None:
    f = fn(sqr=1.0, var=4.0, m0=10.0)  # φ = M0·var/sqr = 40
    assert f.efficiency(10.0) == pytest.approx(1.0)
    assert f.efficiency(20.0) == pytest.approx((40 + 10) / (40 + 20))
    assert f.efficiency(90.0) == pytest.approx(50 / 130)
    # goodput = throughput × efficiency at the global batch
    assert f.evaluate(1, 4, 10, 1) == pytest.approx(80 / 0.7 * 50 / (40 + 80))


@given(st.floats(1e-3, 1e3), st.floats(1e-3, 1e3), st.floats(1, 1e3), st.floats(1, 1e3))
@settings(max_examples=50, deadline=None)
def test_efficiency_decreases_in_batch(sqr: float, var: float, a: float, b: float) -> None:
    f = fn(sqr=sqr, var=var, m0=1.0)
    lo, hi = sorted((a, b))
    assert f.efficiency(hi) <= f.efficiency(lo) + 1e-12
    assert 0 < f.efficiency(hi) <= 1 + 1e-12


def test_optimizer_takes_the_smallest_batch_without_noise() -> None:
    # var ≈ 0: E = M0/M, goodput = M0 / T_iter, so the smallest batch wins: M0 = 10 on one
    # GPU, m = 10, no accumulation (local is not above M0)
    f = fn(sqr=1.0, var=1e-12, m0=10.0)
    good, micro, accum = f.optimize(1, 1, 100.0, (5, 50))
    assert (micro, accum) == (10, 0)
    assert good == pytest.approx(10 / 0.2, rel=1e-6)


def test_optimizer_takes_the_largest_batch_when_noise_dominates() -> None:
    # var ≫ sqr: E ≈ 1, so throughput decides. On one GPU above M0 at least one accumulation
    # step is forced; M = 100 → local 100, s = ceil(100/50) − 1 = 1, m = 50:
    # T_iter = 1·T_c(50) + T_c(50) = 2·0.6 → X = 100/1.2, better than any smaller batch
    f = fn(sqr=1e-9, var=1e9, m0=10.0)
    good, micro, accum = f.optimize(1, 1, 100.0, (5, 50))
    assert (micro, accum) == (50, 1)
    assert good == pytest.approx(100 / 1.2, rel=1e-6)


def test_optimizer_zeroes_micro_batches_out_of_range() -> None:
    # without accumulation every local batch (≥ M0 = 10) is above the largest micro-batch 5
    f = fn()
    good, _, _ = f.optimize(1, 1, 100.0, (1, 5), accumulation=False)
    assert good == 0.0
    # with it, the optimiser splits the batch into micro-batches that fit
    good, micro, accum = f.optimize(1, 1, 100.0, (1, 5))
    assert good > 0 and micro <= 5 and accum >= 1


def test_optimizer_vectorised_matches_scalar() -> None:
    f = fn(sqr=1.0, var=30.0)
    nodes, replicas = np.array([1, 1, 2, 3]), np.array([1, 4, 8, 12])
    good, micro, accum = f.optimize(nodes, replicas, 2000.0, (5, 64))
    for i in range(4):
        g, m, a = f.optimize(int(nodes[i]), int(replicas[i]), 2000.0, (5, 64))
        assert (good[i], micro[i], accum[i]) == (pytest.approx(g), m, a)


def test_speedup_is_one_on_one_gpu_and_rebases() -> None:
    f = fn(sqr=1.0, var=30.0)
    s = SpeedupFunction(f, 2000.0, (5, 64))
    assert s(1, 1) == pytest.approx(1.0)
    four = s(1, 4)
    assert four == pytest.approx(
        f.optimize(1, 4, 2000.0, (5, 64))[0] / f.optimize(1, 1, 2000.0, (5, 64))[0]
    )
    assert 1.0 < four <= 4.0
    s.rebase(1, 4)
    assert s(1, 4) == pytest.approx(1.0)
    # memoised values and fresh ones agree (the second call reads the memo)
    np.testing.assert_allclose(
        s(np.array([1, 1, 2]), np.array([1, 4, 8])), s(np.array([1, 1, 2]), np.array([1, 4, 8]))
    )


@pytest.mark.parametrize(
    "placements",
    [[(1, 1), (1, 2), (1, 4)], [(1, 1), (1, 2), (1, 4), (2, 2), (2, 8)]],
    ids=["one-node", "two-nodes"],
)
def test_fitter_recovers_theta_from_synthetic_profiles(placements) -> None:
    theta = np.array([0.05, 0.004, 0.3, 0.02, 0.1, 0.01, 1.0])
    truth = fn(theta=theta)
    keys = [(n, k, m) for n, k in placements for m in (8, 32, 64)]
    nodes, reps, micro = (np.array(c) for c in zip(*keys, strict=True))
    step = np.array([(k * m) / truth.throughput(n, k, m, 0) for n, k, m in keys])
    t_c = theta[0] + theta[1] * micro
    fitted = fit_perf_params(nodes, reps, micro, t_c, step)
    got = fn(theta=fitted)
    for n, k, m in keys:
        assert got.throughput(n, k, m, 0) == pytest.approx(truth.throughput(n, k, m, 0), rel=0.02)
    np.testing.assert_allclose(fitted[[0, 1]], theta[[0, 1]], rtol=0.01)


def test_fitting_gradient_is_exact() -> None:
    rng = np.random.default_rng(1)
    nodes, reps = np.array([1, 1, 1, 2, 2, 4]), np.array([1, 2, 4, 2, 8, 16])
    micro = np.array([8, 16, 32, 8, 32, 64])
    data = FitData.of(nodes, reps, micro, rng.uniform(0.05, 0.5, 6), rng.uniform(0.3, 1.5, 6))
    mask = np.ones(7, dtype=bool)
    for _ in range(3):
        theta = np.concatenate([rng.uniform(0.01, 0.5, 6), [rng.uniform(1, 3)]])
        _, grad = _objective(theta, theta, mask, data)
        numeric = approx_fprime(theta, lambda x, t=theta: _objective(x, t, mask, data)[0], 1e-7)
        np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)


def loss_long(theta, nodes, reps, micro, accum_obs, optim_obs) -> float:
    """The fitting loss from the model's own functions, nothing prepared."""
    a = accum_time(theta, micro)
    r1 = np.log(a) - np.log(accum_obs)
    r2 = log_optim_time(theta, a, network_time(theta, nodes, reps)) - np.log(optim_obs)
    reg1 = 1e-3 * (theta[6] - 1) ** 2
    reg2 = 1e-2 * ((theta[3] / theta[2]) ** 2 + (theta[5] / theta[4]) ** 2)
    return float(np.sqrt((r1**2).mean()) + np.sqrt((r2**2).mean()) + reg1 + reg2)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 30))
def test_prepared_loss_equals_the_model_functions(seed: int, points: int) -> None:
    # the loss a fit minimises, bit for bit, from prepared data and from the model's functions
    rng = np.random.default_rng(seed)
    nodes = rng.integers(1, 4, points)
    reps = np.maximum(nodes, rng.integers(1, 17, points))
    micro = rng.integers(8, 256, points)
    accum, optim = rng.uniform(0.01, 0.5, points), rng.uniform(0.3, 1.5, points)
    theta = np.concatenate([rng.uniform(1e-4, 0.5, 6), [rng.uniform(1, 10)]])
    data = FitData.of(nodes, reps, micro, accum, optim)
    got, _ = _objective(theta, theta, np.ones(7, dtype=bool), data)
    assert got == loss_long(theta, nodes, reps, micro, accum, optim)


def test_fitter_priors_without_multi_node_data() -> None:
    # one micro-batch size only: α_c is fixed at half the mean compute time; no multi-node data:
    # α_n, β_n end at least 1.1× the within-node α_r, β_r
    keys = [(1, 1, 16), (1, 2, 16), (1, 4, 16)]
    nodes, reps, micro = (np.array(c) for c in zip(*keys, strict=True))
    accum = np.array([0.2, 0.2, 0.2])
    step = np.array([0.2, 0.3, 0.35])
    p = fit_perf_params(nodes, reps, micro, accum, step)
    assert p[0] == pytest.approx(0.1)
    assert p[2] >= 1.1 * p[4] - 1e-12
    assert p[3] >= 1.1 * p[5] - 1e-12
    assert 1.0 <= p[6] <= 10.0


def test_legacy_float_parses_as_pandas_1_did() -> None:
    # 17 significant digits, then one scaling by 10^16: one unit in the last place above the
    # correctly rounded value
    assert legacy_float("5.4859538034431825") == 5.485953803443183
    assert float("5.4859538034431825") != 5.485953803443183
    for text in ("0", "1.5", "-2.25", "3e2", "1.0E-3", "+7"):
        assert legacy_float(text) == float(text)
    for text in ("", "abc", "1.2.3", "e5", "1e"):
        with pytest.raises(ValueError):
            legacy_float(text)


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from(["", "+", "-"]),
    st.text("0123456789", min_size=0, max_size=20),
    st.integers(0, 20),
    st.sampled_from(["", " ", "\t"]),
)
def test_legacy_float_shortcut_equals_the_digit_by_digit_parse(
    sign: str, digits: str, point: int, pad: str
) -> None:
    """Plain decimals of up to 15 digits take ``float``; every bit (and the sign of zero) must be
    what the reader's own parse gives, and text it refuses is still refused."""
    body = digits[:point] + "." + digits[point:] if point < len(digits) else digits
    text = pad + sign + body + pad
    try:
        expected = csv_floats._parse(text.strip(), text)
    except ValueError:
        with pytest.raises(ValueError):
            legacy_float(text)
        return
    got = legacy_float(text)
    assert got == expected and math.copysign(1.0, got) == math.copysign(1.0, expected)
