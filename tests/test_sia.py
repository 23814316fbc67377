"""Sia's configuration space, goodput matrix and per-round ILP on hand-computed cases, and the
ILP against brute force on small two-type clusters."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.policies.goodput.sia_configs import Config, GpuPool, config_space, pool_configs
from schedlab.policies.goodput.sia_ilp import objective, solve_sia
from schedlab.policies.goodput.sia_matrix import (
    FLOOR,
    SiaJob,
    goodput_matrix,
    ilp_coefficients,
    one_gpu_throughput,
    realloc_factor,
)

SIA_DEFAULT = [GpuPool("aws", 6, 4), GpuPool("rtx", 3, 8), GpuPool("dgx-ext", 2, 8)]


def test_default_cluster_has_nineteen_configurations() -> None:
    shapes = {p.name: [(c.nodes, c.gpus) for c in pool_configs(p)] for p in SIA_DEFAULT}
    assert shapes["aws"] == [(1, 1), (1, 2), (1, 4), (2, 8), (3, 12), (4, 16), (5, 20), (6, 24)]
    assert shapes["rtx"] == [(1, 1), (1, 2), (1, 4), (1, 8), (2, 16), (3, 24)]
    assert shapes["dgx-ext"] == [(1, 1), (1, 2), (1, 4), (1, 8), (2, 16)]
    assert len(config_space(SIA_DEFAULT)) == 19
    # a large 4-GPU type stops at 16 nodes (64 GPUs)
    assert pool_configs(GpuPool("big", 40, 4))[-1] == Config("big", 16, 64)


def test_realloc_factor() -> None:
    assert realloc_factor(20.0, 3, 30.0) == 1.0  # younger than the penalty
    assert realloc_factor(300.0, 2, 30.0) == pytest.approx((300 - 60) / 330)
    assert realloc_factor(100.0, 5, 30.0) == 0.0


def linear(scale: float):
    """A job whose goodput is ``scale`` × GPUs (whatever the nodes)."""
    return lambda nodes, gpus: scale * np.asarray(gpus, dtype=float)


POOLS = [GpuPool("slow", 2, 4), GpuPool("fast", 1, 4)]
CONFIGS = config_space(POOLS)  # slow: 1, 2, 4, 8 GPUs; fast: 1, 2, 4


def test_matrix_with_a_model_and_with_bootstrapping() -> None:
    """A model on "slow" only; fast's one-GPU throughput is twice slow's, so fast's entries are
    the slow model × 2. Max replicas 4 on both types: slow's 8-GPU configuration is invalid.
    The row is divided by its least positive entry (slow 1 GPU: 1) and floored."""
    job = SiaJob(models={"slow": linear(1.0)}, max_replicas={"slow": 4, "fast": 4}, min_replicas=1)
    g = goodput_matrix([job], CONFIGS, POOLS, {"slow": 10.0, "fast": 20.0})
    np.testing.assert_allclose(g[0], [1, 2, 4, FLOOR, 2, 4, 8])
    # without projection the unprofiled type is floored
    g = goodput_matrix([job], CONFIGS, POOLS, {"slow": 10.0, "fast": 20.0}, project=False)
    np.testing.assert_allclose(g[0], [1, 2, 4, FLOOR, FLOOR, FLOOR, FLOOR])


def test_matrix_of_an_unprofiled_job_and_the_restart_factor() -> None:
    fresh = SiaJob(max_replicas={"slow": 4, "fast": 4})
    g = goodput_matrix([fresh], CONFIGS, POOLS, {"slow": 1.0, "fast": 1.0})
    np.testing.assert_allclose(g[0], [1, FLOOR, FLOOR, FLOOR, 1, FLOOR, FLOOR])
    # an old job with restarts: every entry but its current configuration (slow, 2 GPUs) × f
    old = SiaJob(
        models={"slow": linear(1.0), "fast": linear(3.0)},
        max_replicas={"slow": 8, "fast": 4},
        current=1,
        age=300.0,
        restarts=2,
        penalty=30.0,
    )
    f = (300 - 60) / 330
    g = goodput_matrix([old], CONFIGS, POOLS, {"slow": 1.0, "fast": 1.0})
    np.testing.assert_allclose(g[0], [f * 1, 2, f * 4, f * 8, f * 3, f * 6, f * 12])


def test_coefficients_round_and_clip() -> None:
    a = ilp_coefficients(np.array([1.0, 4.0, 3.0, FLOOR, 1e-8, 0.0]), p=-0.5)
    np.testing.assert_allclose(a, [1.0, 0.5, 0.58, 100.0, 3000.0, 3000.0])
    with pytest.raises(ValueError):
        ilp_coefficients(np.ones(2), p=0.0)


def test_ilp_hand_case() -> None:
    """Two jobs, one 4-GPU type. Costs (p < 0): job 0 on 4 GPUs 0.5, on 2 GPUs 0.7; job 1 on
    4 GPUs 0.6, on 2 GPUs 0.8. Both on 2 GPUs costs 1.5; one on 4 and the other idle costs
    0.5 + 1.1 = 1.6: both run on 2 GPUs."""
    gpus = np.array([2, 4])
    pool = np.array([0, 0])
    coeff = np.array([[0.7, 0.5], [0.8, 0.6]])
    res = solve_sia(coeff, gpus, pool, np.array([4]))
    assert res is not None
    assert res.config.tolist() == [0, 0]
    assert res.objective == pytest.approx(1.5)
    # a locked job keeps its configuration even when it costs more: job 1 on 4 GPUs
    res = solve_sia(coeff, gpus, pool, np.array([4]), locked={1: 1})
    assert res is not None and res.config.tolist() == [-1, 1]
    assert res.objective == pytest.approx(0.6 + 1.1)


def test_ilp_rigid_jobs_take_a_type() -> None:
    """A rigid 4-GPU job is cheaper on type 1; the adaptive job then takes type 0."""
    gpus, pool = np.array([4, 4]), np.array([0, 1])
    res = solve_sia(
        np.array([[0.5, 0.4]]),
        gpus,
        pool,
        np.array([4, 4]),
        rigid_coeff=np.array([[0.9, 0.2]]),
        rigid_gpus=np.array([4]),
    )
    assert res is not None
    assert res.pool.tolist() == [1] and res.config.tolist() == [0]


def test_ilp_infeasible_lock_returns_none() -> None:
    # two locked jobs each needing the whole 4-GPU type: no solution
    res = solve_sia(
        np.array([[0.5], [0.5]]), np.array([4]), np.array([0]), np.array([4]), locked={0: 0, 1: 0}
    )
    assert res is None


@given(
    st.integers(1, 3),
    st.lists(st.floats(0.05, 5.0), min_size=21, max_size=21),
    st.sampled_from([-0.5, 0.5]),
)
@settings(max_examples=40, deadline=None)
def test_ilp_matches_brute_force(n_jobs: int, values: list[float], p: float) -> None:
    pools = [GpuPool("a", 1, 4), GpuPool("b", 2, 2)]
    configs = config_space(pools)  # a: 1, 2, 4; b: 1, 2, 4 (two nodes)
    gpus = np.array([c.gpus for c in configs])
    pool = np.array([0 if c.pool == "a" else 1 for c in configs])
    cap = np.array([4, 4])
    coeff = np.array(values[: n_jobs * len(configs)]).reshape(n_jobs, len(configs))
    res = solve_sia(coeff, gpus, pool, cap, p=p)
    assert res is not None
    used = np.zeros(2)
    for k in res.config:
        if k >= 0:
            used[pool[k]] += gpus[k]
    assert (used <= cap).all()
    best = None
    empty = np.zeros((0, 2))
    for choice in itertools.product(range(-1, len(configs)), repeat=n_jobs):
        load = np.zeros(2)
        for k in choice:
            if k >= 0:
                load[pool[k]] += gpus[k]
        if (load > cap).any():
            continue
        value = objective(coeff, np.array(choice), empty, np.zeros(0, dtype=int), p)
        if best is None or (value < best if p < 0 else value > best):
            best = value
    assert res.objective == pytest.approx(best, rel=1e-3, abs=1e-6)


def test_one_gpu_throughput_bootstrap_rate() -> None:
    assert one_gpu_throughput(np.array([32, 64, 128]), np.array([0.1, 0.2, 0.4])) == 320.0
