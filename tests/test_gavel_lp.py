"""Gavel's LP policies on problems whose optimum is known by hand, and their failure paths."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from schedlab.policies.heterogeneous import gavel_lp, highs_lp
from schedlab.policies.heterogeneous.allocation import (
    AllocationProblem,
    Fifo,
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


def stalled_solver(monkeypatch) -> None:
    """Every LP from here on stops at HiGHS's iteration limit of 0: a real solver failure."""
    monkeypatch.setattr(highs_lp, "OPTIONS", {**highs_lp.OPTIONS, "simplex_iteration_limit": 0})
    monkeypatch.setattr(highs_lp, "_local", threading.local())


def test_a_failing_solver_falls_back_to_the_isolated_allocation(monkeypatch) -> None:
    stalled_solver(monkeypatch)
    policy = MaxMinFairness()
    policy.reset(0)
    p = problem([[2, 1], [2, 1]], now=123.0)
    x = policy.allocate(p)
    np.testing.assert_allclose(x, isolated_allocation(p))
    assert policy.fallbacks == [(123.0, "max-min LP: Iteration limit reached")]


def test_a_failing_feasibility_lp_is_a_solver_failure_not_infeasibility(monkeypatch) -> None:
    """FTF's bisection (scipy's ``linprog``) must not read a failed solve as "this ρ is
    infeasible"."""

    class Failed:
        status, x, message = 4, None, "numerical difficulties (test)"

    import scipy.optimize

    monkeypatch.setattr(scipy.optimize, "linprog", lambda *a, **k: Failed())
    policy = FinishTimeFairness()
    policy.reset(0)
    p = problem([[2, 1], [1, 2]], now=50.0)
    np.testing.assert_allclose(policy.allocate(p), isolated_allocation(p))
    assert policy.fallbacks == [(50.0, "feasibility LP: numerical difficulties (test)")]


def test_an_infeasible_lp_is_reported_as_such() -> None:
    """One GPU, one job needing throughput 2 from a type that gives at most 1."""
    result = highs_lp.solve_lp(
        np.zeros(1), sparse.csr_matrix([[1.0], [-1.0]]), np.array([1.0, -2.0])
    )
    assert (result.status, result.x) == ("infeasible", None)


def test_the_solver_keeps_free_and_bounded_columns_apart() -> None:
    """min −z0 + z1 with z0 ≤ 3 (row), z1 ≥ −2 (bound), z0 free below: z = (3, −2)."""
    result = highs_lp.solve_lp(
        np.array([-1.0, 1.0]),
        sparse.csr_matrix([[1.0, 0.0]]),
        np.array([3.0]),
        lower=np.array([-np.inf, -2.0]),
    )
    assert result.status == "optimal"
    np.testing.assert_allclose(result.x, [3.0, -2.0])


def test_bad_tiebreak_is_refused() -> None:
    with pytest.raises(ValueError, match="'tiebreak' must be one of sum, none"):
        MaxMinFairness(tiebreak="mean")


# Hierarchical water-filling. Types a and b, one GPU each; job 0 runs only on a, job 2 only on
# b, job 1 on both (T = 1). Equal-share throughputs T̄ = 0.5, 1, 0.5, so ŷ = 2·x0a, x1a + x1b,
# 2·x2b. Jobs 0 and 1 belong to alice, job 2 to bob.
ENTITY_T = [[1, 0], [1, 1], [0, 1]]
ENTITY = np.array(["alice", "alice", "bob"])


def test_water_filling_one_entity_per_job() -> None:
    """max min(2·x0a, x1, 2·x2b) = t: x0a = t/2, x1 = t, x2b = t/2 on 2 GPUs → t = 1."""
    p = problem(ENTITY_T, entity=ENTITY)
    x = WaterFilling().allocate(p)
    np.testing.assert_allclose(x.sum(axis=1), [0.5, 1.0, 0.5], atol=1e-6)


def test_water_filling_shares_a_users_weight_among_its_jobs() -> None:
    """fairness: weights 0.5, 0.5, 1. max min(4·x0a, 2·x1, 2·x2b) = t: x0a = t/4, x1 = t/2,
    x2b = t/2, 5t/4 ≤ 2 → t = 1.6: x0a = 0.4, x1a = 1 − 0.4 = 0.6, x2b = 0.8, x1b = 0.2."""
    p = problem(ENTITY_T, entity=ENTITY)
    x = WaterFilling(entities="fairness").allocate(p)
    np.testing.assert_allclose(x, [[0.4, 0], [0.6, 0.2], [0, 0.8]], atol=1e-6)


def test_water_filling_fifo_entity_serves_the_users_oldest_job_first() -> None:
    """fifo: job 0 holds alice's whole weight, job 1 none; max min(2·x0a, 2·x2b) gives both a
    whole GPU and freezes them; job 1 gets alice's weight next, with nothing left to take."""
    p = problem(ENTITY_T, entity=ENTITY)
    x = WaterFilling(entities="fifo").allocate(p)
    np.testing.assert_allclose(x, [[1, 0], [0, 0], [0, 1]], atol=1e-6)


def test_water_filling_entity_weights_scale_a_user() -> None:
    """fairness with bob weighing 3: weights 0.5, 0.5, 3. Level 1: max min(4·x0a, 2·x1,
    2·x2b/3) = t with x2b = 1.5t ≤ 1 → t = 2/3: x2b = 1 (b full), x0a = 1/6, x1a = 1/3; job 2
    cannot grow and freezes, alice's two can (a has 1/2 left). Level 2 from y = 1/3, 1/3:
    2·x0a − 1/3 = x1a − 1/3 with x0a + x1a = 1 → x0a = 1/3, x1a = 2/3."""
    p = problem(ENTITY_T, entity=ENTITY)
    x = WaterFilling(entities="fairness", weights="bob=3").allocate(p)
    np.testing.assert_allclose(x, [[1 / 3, 0], [2 / 3, 0], [0, 1]], atol=1e-6)


def test_bad_entity_policy_and_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="entities"):
        WaterFilling(entities="lottery")
    with pytest.raises(ValueError, match="NAME=WEIGHT"):
        WaterFilling(entities="fairness", weights="bob")


def test_fifo_agnostic_keeps_placements_and_hands_a_freed_type_to_the_queue_head() -> None:
    policy = Fifo()
    policy.reset(0)
    first = policy.allocate(problem([[1, 1], [1, 1], [1, 1]]))
    assert first.sum(axis=0).tolist() == [1, 1] and first[2].sum() == 0  # job 2 waits
    freed = int(np.argmax(first[0]))  # job 0 completes: its type goes to job 2
    p = AllocationProblem(
        jobs=np.array([1, 2]),
        throughput=np.ones((2, 2)),
        scale=np.array([1, 1]),
        weight=np.ones(2),
        remaining=np.full(2, 100.0),
        age=np.zeros(2),
        capacity=np.array([1, 1]),
        types=("a", "b"),
    )
    second = policy.allocate(p)
    np.testing.assert_array_equal(second[0], first[1])
    assert int(np.argmax(second[1])) == freed


def test_fifo_compat_places_on_the_last_open_type_and_closes_the_drawn_one() -> None:
    """Gavel's quirk: job 0 lands on b (the loop's last type) whatever was drawn; if the draw
    was a, a is closed instead of b and job 1 finds no fitting type."""
    policy = Fifo(compat=True)
    policy.reset(0)
    x = policy.allocate(problem([[1, 1], [1, 1]]))
    drawn = random.Random(0).randrange(2)
    assert x[0].tolist() == [0, 1]
    assert x[1].tolist() == ([0, 0] if drawn == 0 else [1, 0])


def test_max_sum_throughput_pairs_each_job_with_the_type_it_gains_most_on() -> None:
    """2·x0a + x0b + 3·x1a + x1b on one GPU each: 1 on b + 3 on a = 4 beats 2 + 1 = 3."""
    x = MaxSumThroughput().allocate(problem([[2, 1], [3, 1]]))
    np.testing.assert_allclose(x, [[0, 1], [1, 0]], atol=1e-9)


# Two jobs of 400 steps at 1 step/s on a k80 and 4 on a v100, one GPU of each type.
TWO = [[1, 4], [1, 4]]


def test_ftf_perf_and_agnostic() -> None:
    """perf: I = 0.5·1 + 0.5·4 = 2.5, E = 160; total throughput ≤ 5 → 2.5 each, ρ = 1.
    agnostic: 4 everywhere, I = 4, E = 100; each job a whole GPU (row sum 1), ρ = 1."""
    kw = {"types": ("k80", "v100"), "remaining": [400.0, 400.0]}
    p = problem(TWO, **kw)
    perf = FinishTimeFairness().allocate(p)
    np.testing.assert_allclose((p.throughput * perf).sum(axis=1), [2.5, 2.5], rtol=2e-4)
    agnostic = FinishTimeFairness(perf=False).allocate(problem(TWO, **kw))
    assert feasible(p, agnostic)
    np.testing.assert_allclose(agnostic.sum(axis=1), [1.0, 1.0], rtol=2e-4)


def test_makespan_perf_and_agnostic() -> None:
    """perf: throughputs sum to ≤ 5, so H ≥ 800/5 = 160, found within Gavel's 5 %: each job at
    ≥ 400/168. agnostic (4 everywhere): H = 100 (within 5 %), so each row sums to ≥ 400/420."""
    p = problem(TWO, types=("k80", "v100"), remaining=[400.0, 400.0])
    perf = MinTotalDuration().allocate(p)
    thr = (p.throughput * perf).sum(axis=1)
    assert np.all(thr >= 400 / 168) and np.all(thr <= 2.5 + 1e-9)
    agnostic = MinTotalDuration(perf=False).allocate(p)
    assert feasible(p, agnostic)
    assert np.all(agnostic.sum(axis=1) >= 400 / 420 - 1e-9)


#: Shapes of the max-min / feasibility LP matrices, with a random instance per seed.
FLOOR_CASES = given(
    m=st.integers(1, 12),
    n=st.integers(1, 4),
    tau=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)


@settings(max_examples=60, deadline=None)
@FLOOR_CASES
def test_floor_rows_are_the_stacked_rows_entry_for_entry(
    m: int, n: int, tau: bool, seed: int
) -> None:
    """The direct CSR build of the max-min and feasibility LPs gives HiGHS exactly the matrix
    the generic construction gives (same entries, order, explicit zeros and signs, index types):
    the solver then returns the same vertex, so runs stay byte-identical."""
    from scipy import sparse

    rng = np.random.default_rng(seed)
    weights = rng.random((m, n))
    weights[rng.random((m, n)) < 0.3] = 0.0
    scale = rng.choice([1, 2, 4, 8], size=m)
    p = problem(weights, scale=scale, capacity=np.arange(1, n + 1), types=tuple("abcd"[:n]))
    base = gavel_lp.base_rows(p, extra=int(tau))
    own = -gavel_lp.throughput_rows(weights)
    if tau:
        own = gavel_lp.with_tau(own, np.ones(m))
    old = sparse.vstack([base.a_ub, own]).tocsr()
    new = gavel_lp.floor_rows(p.scale, weights, tau)
    assert old.shape == new.shape
    assert np.array_equal(old.indptr, new.indptr) and old.indptr.dtype == new.indptr.dtype
    assert np.array_equal(old.indices, new.indices) and old.indices.dtype == new.indices.dtype
    assert old.data.tobytes() == new.data.tobytes()  # -0.0 and explicit zeros included


@settings(max_examples=40, deadline=None)
@FLOOR_CASES
def test_bare_floor_arrays_solve_as_the_scipy_matrix_does(
    m: int, n: int, tau: bool, seed: int
) -> None:
    """The max-min LPs hand HiGHS the bare CSR arrays (:func:`gavel_lp.floor_csr`, shape-cached
    pattern): the same arrays, bit for bit, as :func:`gavel_lp.floor_rows`' matrix, and the same
    vertex out of the solver — including after a different shape came in between."""
    rng = np.random.default_rng(seed)
    weights = rng.random((m, n))
    weights[rng.random((m, n)) < 0.3] = 0.0
    scale = rng.choice([1, 2, 4, 8], size=m)
    gavel_lp.floor_csr(scale[:1], weights[:1, :1], not tau)  # another shape in the cache
    bare = gavel_lp.floor_csr(scale, weights, tau)
    full = gavel_lp.floor_rows(scale, weights, tau)
    assert bare.shape == full.shape and bare.nnz == full.nnz
    for name in ("indptr", "indices", "data"):
        a, b = getattr(bare, name), getattr(full, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    cols = m * n + int(tau)
    cost = -np.ones(cols) if not tau else np.concatenate([np.zeros(m * n), [-1.0]])
    limits = np.concatenate([np.arange(1, n + 1, dtype=float), np.ones(m), np.zeros(m)])
    lower = np.zeros(cols)
    if tau:
        lower[-1] = -np.inf
    one = highs_lp.solve_lp(cost, bare, limits, lower)
    two = highs_lp.solve_lp(cost, full, limits, lower)
    assert one.status == two.status
    if one.x is not None:
        assert one.x.tobytes() == two.x.tobytes()
