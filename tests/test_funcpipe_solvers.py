"""The two exact solvers of the serverless planner agree, and the planner's answers hold up.

Property: on random small instances (layers, memory options, prices, batch, stage limit,
objective, overlap, sync, uniform memory) the MILP's best score equals the exhaustive search's,
and neither returns a plan that does not fit.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.tune.serverless import exhaustive, milp, search
from schedlab.tune.serverless.objective import Objective
from schedlab.tune.serverless.plan import Plan, Training, evaluate
from schedlab.tune.serverless.platform import Platform
from schedlab.tune.serverless.profile import Layer, ModelProfile

positive = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def instances(draw):
    n = draw(st.integers(1, 5))
    layers = tuple(
        Layer(
            f"l{i}",
            draw(st.floats(0, 300)),
            draw(st.floats(0, 20)),
            draw(st.floats(0, 10)),
            (draw(st.floats(0, 0.05)), draw(st.floats(0, 0.2))),
            (draw(st.floats(0, 0.1)), draw(st.floats(0, 0.4))),
        )
        for i in range(n)
    )
    sizes = draw(st.lists(st.sampled_from([512, 1024, 1536, 2048, 3072, 4096]), min_size=1,
                          max_size=3, unique=True))  # fmt: skip
    sizes.sort()
    speeds = [draw(st.floats(0.2, 3.0)) for _ in sizes]
    platform = Platform(
        "random",
        tuple(float(s) for s in sizes),
        tuple(speeds),
        bandwidth_mb_s=draw(st.floats(20, 200)),
        latency_s=draw(st.sampled_from([0.0, 0.05])),
        price_gb_s=draw(st.sampled_from([1e-5, 1.66667e-5, 0.0])),
        price_put=draw(st.sampled_from([5e-6, 0.0])),
        price_get=draw(st.sampled_from([4e-7, 0.0])),
        polls_per_get=draw(st.sampled_from([0.0, 1.0])),
    )
    training = Training(
        draw(st.sampled_from([1, 2, 4, 8])),
        k_w=draw(st.sampled_from([2.0, 4.0])),
        base_mb=draw(st.sampled_from([0.0, 300.0])),
        overlap=draw(st.booleans()),
        sync=draw(st.sampled_from(["pipelined", "four-phase"])),
    )
    limits = search.Limits(
        max_stages=draw(st.integers(1, 4)),
        max_d=draw(st.sampled_from([1, 2, 4])),
        max_m=draw(st.sampled_from([1, 2, 4])),
    )
    kind = draw(st.sampled_from(["time", "cost", "weighted"]))
    objective = Objective(
        kind, draw(positive), draw(st.floats(0.5, 20)), draw(st.floats(1e-5, 1e-2))
    )
    return (
        ModelProfile("random", layers),
        platform,
        training,
        limits,
        objective,
        draw(st.booleans()),
    )


@settings(max_examples=200, deadline=None)
@given(instances())
def test_milp_equals_exhaustive(instance) -> None:
    profile, platform, training, limits, objective, uniform = instance
    a = search.plan(profile, platform, training, objective, limits, "exhaustive", uniform)
    b = search.plan(profile, platform, training, objective, limits, "milp", uniform)
    assert (a.best is None) == (b.best is None)
    if a.best is None:
        return
    assert a.best.fits and b.best.fits
    score_a = objective.value(a.best.t_iter, a.best.cost)
    score_b = objective.value(b.best.t_iter, b.best.cost)
    assert score_b == pytest.approx(score_a, rel=1e-7, abs=1e-12)
    if uniform:
        assert len(set(b.best.plan.memory)) == 1 and len(set(a.best.plan.memory)) == 1
    # Every plan on a front fits and none is beaten in both time and cost by another.
    for front in (a.front, b.front):
        assert all(e.fits for e in front)
        for x in front:
            assert not any(y.t_iter < x.t_iter and y.cost < x.cost for y in front)


def test_the_exhaustive_count_matches_the_enumeration() -> None:
    assert exhaustive.count_plans(4, 2, 4) == sum(math.comb(3, s - 1) * 2**s for s in range(1, 5))
    assert len(list(exhaustive.cuts_of(5, 5))) == 2**4
    assert exhaustive.count_plans(4, 3, 2, uniform=True) == 3 + 3 * 3


def test_a_time_optimal_milp_plan_does_not_waste_memory() -> None:
    # Two options of equal speed: the larger buys nothing, so the planner keeps the smaller.
    profile = ModelProfile(
        "p", tuple(Layer(f"l{i}", 10, 1, 1, (0, 0.1), (0, 0.2)) for i in range(3))
    )
    platform = Platform("eq", (1024.0, 2048.0), (1.0, 1.0), 100, 0, 1e-5, 0, 0)
    t = Training(4, k_w=2.0, base_mb=0.0)
    r = search.plan(profile, platform, t, Objective("time"), search.Limits(3, 2, 2), "milp")
    assert r.best is not None and set(r.best.plan.memory) == {0}


def test_the_speed_sums_bound_every_plan() -> None:
    platform = Platform("p", (1024.0, 3072.0), (0.5, 2.0), 100, 0, 1e-5, 0, 0)
    sums = milp.speed_sums(platform, 2, False)
    assert sums == {1024.0: 0.5, 2048.0: 1.0, 3072.0: 2.0, 4096.0: 2.5, 6144.0: 4.0}
    assert milp.speed_sums(platform, 2, True) == {1024.0: 0.5, 2048.0: 1.0, 3072.0: 2.0,
                                                   6144.0: 4.0}  # fmt: skip


def test_a_layer_larger_than_the_largest_function_is_refused_by_name() -> None:
    from schedlab.errors import InputError

    profile = ModelProfile("p", (Layer("small", 10, 0, 0, (0, 0), (0, 0)),
                                 Layer("huge", 5000, 0, 0, (0, 0), (0, 0))))  # fmt: skip
    platform = Platform("p", (1024.0, 4096.0), (1.0, 4.0), 100, 0, 1e-5, 0, 0)
    with pytest.raises(InputError, match=r"layer 1 \('huge'\).*largest function of p \(4096 MB\)"):
        search.check_fits_somewhere(profile, platform, Training(4))


def test_lower_bounds_never_exceed_the_optimum() -> None:
    profile = ModelProfile("p", tuple(Layer(f"l{i}", 50 + 20 * i, 3, 2, (0.01, 0.05), (0.02, 0.1))
                                      for i in range(4)))  # fmt: skip
    platform = Platform("p", (1024.0, 2048.0, 4096.0), (0.6, 1.2, 2.3), 80, 0.05, 1.6e-5, 5e-6,
                        4e-7)  # fmt: skip
    t = Training(8)
    limits = search.Limits(3, 4, 4)
    for d, m in search.pairs(t, limits):
        scored = exhaustive.score(profile, platform, t, d, m, limits.max_stages)
        if not len(scored.t):
            continue
        t_low, c_low = search.lower_bounds(profile, platform, t, d, m, limits)
        assert t_low <= scored.t.min() * (1 + 1e-12)
        assert c_low <= scored.c.min() * (1 + 1e-12)
        best = scored.plan(int(scored.t.argmin()))
        assert evaluate(profile, platform, t, best).t_iter == pytest.approx(scored.t.min())
        assert isinstance(best, Plan)
