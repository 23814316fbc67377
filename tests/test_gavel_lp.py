"""Gavel's LP policies on problems whose optimum is known by hand, and their failure paths."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.policies.heterogeneous import gavel_lp
from schedlab.policies.heterogeneous.allocation import (
    AllocationProblem,
    FifoPerf,
    equal_share_throughput,
    isolated_allocation,
)
from schedlab.policies.heterogeneous.gavel_lp import (
    FinishTimeFairness,
    MaxMinFairness,
    MaxSumThroughput,
    MinTotalDuration,
    WaterFilling,
)


def problem(t, scale=None, capacity=(1, 1), remaining=None, age=None, **kw) -> AllocationProblem:
    t = np.asarray(t, dtype=float)
    m = len(t)
    return AllocationProblem(
        jobs=np.arange(m),
        throughput=t,
        scale=np.asarray(scale if scale is not None else [1] * m),
        weight=np.asarray(kw.pop("weight", [1.0] * m)),
        remaining=np.asarray(remaining if remaining is not None else [100.0] * m, dtype=float),
        age=np.asarray(age if age is not None else [0.0] * m, dtype=float),
        capacity=np.asarray(capacity),
        types=kw.pop("types", ("a", "b")),
        **kw,
    )


def feasible(p: AllocationProblem, x: np.ndarray) -> bool:
    tol = 1e-7
    return bool(
        (x >= -tol).all()
        and (x.sum(axis=1) <= 1 + tol).all()
        and ((p.scale[:, None] * x).sum(axis=0) <= p.capacity + tol).all()
    )


def test_max_min_gives_each_job_half_of_each_type_when_both_prefer_the_same() -> None:
    p = problem([[2, 1], [2, 1]])
    x = MaxMinFairness().allocate(p)
    np.testing.assert_allclose(x, [[0.5, 0.5], [0.5, 0.5]], atol=1e-5)


def test_max_min_tiebreak_gives_the_fast_type_to_the_job_that_gains() -> None:
    """Job 1 reaches at most 1 (normalised), so τ* = 1; among the optima the tie-break keeps
    job 1 at 1 on type b and gives job 0 all of type a (3 steps/s, 1.5 normalised)."""
    p = problem([[3, 1], [1, 1]])
    x = MaxMinFairness(tiebreak="sum").allocate(p)
    np.testing.assert_allclose(x, [[1, 0], [0, 1]], atol=1e-5)
    share = equal_share_throughput(p)
    np.testing.assert_allclose(share, [2.0, 1.0])
    plain = MaxMinFairness(tiebreak="none").allocate(p)
    c = p.scale / share
    assert min(c * (p.throughput * plain).sum(axis=1)) == pytest.approx(1.0)


def test_agnostic_max_min_ignores_speed() -> None:
    p = problem([[3, 1], [1, 1]])
    x = MaxMinFairness(perf=False).allocate(p)
    assert feasible(p, x)
    np.testing.assert_allclose(x.sum(axis=1), [1.0, 1.0], atol=1e-7)


def test_weights_and_scale_enter_the_max_min_objective() -> None:
    """One 2-GPU job and one 1-GPU job on 2 GPUs of one type: the max-min value equalises
    s_j·x_j/w_j, so with weights (1, 1) they split 2 : 1 in time (x = 2/3, 2/3), with weight 2
    on the 1-GPU job x_1 doubles relative to x_0."""
    p = problem([[1.0], [1.0]], scale=[2, 1], capacity=(2,), types=("a",))
    x = MaxMinFairness(tiebreak="none").allocate(p)
    np.testing.assert_allclose(2 * x[0, 0], x[1, 0], rtol=1e-6)
    np.testing.assert_allclose(2 * x[0, 0] + x[1, 0], 2.0, rtol=1e-6)
    pw = problem([[1.0], [1.0]], scale=[2, 1], capacity=(2,), types=("a",), weight=[1.0, 2.0])
    xw = MaxMinFairness(tiebreak="none").allocate(pw)
    np.testing.assert_allclose(xw[1, 0] / xw[0, 0], 4.0, rtol=1e-6)


def test_isolated_allocation_is_an_equal_share_in_gpu_units() -> None:
    p = problem([[1, 1], [1, 1]], scale=[1, 2], capacity=(4, 2))
    np.testing.assert_allclose(isolated_allocation(p), [[2 / 3, 1 / 3], [2 / 3, 1 / 3]])
    # job 0: (2, 1)/1 → row sum 3 → (2/3, 1/3); job 1: (1, 0.5) → sum 1.5 → (2/3, 1/3)


def test_fifo_perf_takes_the_fastest_type_and_blocks_at_the_head() -> None:
    p = problem([[1, 3], [5, 4], [1, 1]], scale=[1, 2, 1], capacity=(1, 1))
    x = FifoPerf().allocate(p)
    # job 0 → b (3 > 1); job 1 needs 2 GPUs: no type has 2 → the pass stops there
    np.testing.assert_array_equal(x, [[0, 1], [0, 0], [0, 0]])


def test_ftf_single_job_gets_a_whole_gpu_of_its_fast_type() -> None:
    p = problem([[4.0, 1.0]], remaining=[400.0], age=[0.0])
    policy = FinishTimeFairness()
    x = policy.allocate(p)
    np.testing.assert_allclose(x, [[1.0, 0.0]], atol=1e-3)


def test_ftf_gives_the_older_job_more() -> None:
    """Two identical jobs, one waiting 100 s already: minimising the larger ρ gives the
    older one the larger share."""
    p = problem(
        [[1.0], [1.0]], capacity=(1,), types=("a",), remaining=[100.0, 100.0], age=[100.0, 0.0]
    )
    x = FinishTimeFairness().allocate(p)
    assert feasible(p, x)
    assert x[0, 0] > x[1, 0]
    # ρ equalised: (100 + 100/x0) / E = (0 + 100/x1) / E with E = 200 for both, x0 + x1 = 1
    assert x[0, 0] + x[1, 0] == pytest.approx(1.0, abs=1e-3)
    assert 100 + 100 / x[0, 0] == pytest.approx(100 / x[1, 0], rel=2e-3)


def test_makespan_finds_the_horizon_within_gavels_five_percent() -> None:
    p = problem([[1, 1], [1, 1]], remaining=[100.0, 100.0])
    x = MinTotalDuration().allocate(p)
    assert feasible(p, x)
    thr = (p.throughput * x).sum(axis=1)
    assert np.all(100 / thr <= 105.0)


def test_max_throughput_per_dollar_prefers_the_cheap_type() -> None:
    p = problem([[2.0, 1.0]], types=("v100", "k80"))
    assert MaxSumThroughput().allocate(p).tolist() == [[1.0, 0.0]]
    # per dollar: 2/0.74 = 2.7 < 1/0.135 = 7.4
    np.testing.assert_allclose(MaxSumThroughput(cost=True).allocate(p), [[0.0, 1.0]])


def test_unmeetable_deadlines_are_dropped_and_named() -> None:
    p = problem(
        [[1.0], [1.0]],
        capacity=(1,),
        types=("v100",),
        remaining=[100.0, 100.0],
        deadline=np.array([50.0, np.nan]),
    )
    policy = MaxSumThroughput(slos=True)
    policy.reset(0)
    x = policy.allocate(p)
    assert feasible(p, x)
    assert policy.dropped_slos == [(0.0, [0])]


def test_water_filling_equals_max_min_when_one_level_freezes_everyone() -> None:
    p = problem([[2, 1], [2, 1]])
    x = WaterFilling().allocate(p)
    np.testing.assert_allclose((p.throughput * x).sum(axis=1), [1.5, 1.5], atol=1e-6)


def test_water_filling_lets_the_unconstrained_job_keep_growing() -> None:
    """Job 1 can only run on type b; job 0 on both. Max-min levels them, then job 0 (the only
    one that can still grow) takes the rest of type a."""
    p = problem([[1, 1], [0, 1]])
    x = WaterFilling().allocate(p)
    thr = (p.throughput * x).sum(axis=1)
    assert feasible(p, x)
    assert thr[1] == pytest.approx(1.0, abs=1e-6)
    assert thr[0] == pytest.approx(1.0, abs=1e-6)


def test_a_failing_solver_falls_back_to_the_isolated_allocation(monkeypatch) -> None:
    class Failed:
        status, x, message = 4, None, "numerical difficulties (test)"

    monkeypatch.setattr(gavel_lp, "linprog", lambda *a, **k: Failed())
    policy = MaxMinFairness()
    policy.reset(0)
    p = problem([[2, 1], [2, 1]], now=123.0)
    x = policy.allocate(p)
    np.testing.assert_allclose(x, isolated_allocation(p))
    assert policy.fallbacks == [(123.0, "max-min LP: numerical difficulties (test)")]


def test_bad_tiebreak_is_refused() -> None:
    with pytest.raises(ValueError, match="'tiebreak' must be one of sum, none"):
        MaxMinFairness(tiebreak="mean")
