"""The fast planning paths agree with the plain, stepwise computation on random timelines.

Planning reads a view of the timeline instead of splitting and tidying the timeline itself, and the
hand-out re-uses candidates; these properties pin every result (segments, ends, feasibility, the
timeline afterwards) to the straightforward forms they replace.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.policies.elastic.planning import (
    FreeTimeline,
    fit,
    fitter,
    lay_forward,
    minimum_satisfactory_share,
    minimum_satisfactory_share_stepwise,
    slot_ceil,
)

CAPACITY = 16


def is_merged(f: FreeTimeline) -> bool:
    return all(a != b for a, b in zip(f.count, f.count[1:], strict=False)) and all(
        a < b for a, b in zip(f.key, f.key[1:], strict=False)
    )


@st.composite
def timelines(draw: st.DrawFn) -> FreeTimeline:
    """A merged timeline from 0 built the way plans build it: reservations on an empty one."""
    f = FreeTimeline.empty(0, CAPACITY)
    for _ in range(draw(st.integers(0, 8))):
        start = draw(st.integers(0, 40)) * draw(st.sampled_from([10.0, 15.0, 2.5]))
        length = draw(st.integers(1, 30)) * draw(st.sampled_from([10.0, 7.5]))
        n = draw(st.integers(1, CAPACITY))
        if all(f.at(t) >= n for t in [start, *[k for k in f.key if start < k < start + length]]):
            f.subtract(start, start + length, n)
    assert is_merged(f)
    return f


@st.composite
def jobs(draw: st.DrawFn) -> tuple[list[int], dict[int, float]]:
    levels = sorted(draw(st.sets(st.sampled_from([1, 2, 4, 8, 16]), min_size=1)))
    if draw(st.booleans()):
        levels = levels[::-1]  # an order the bisection fast path must not assume
    per_gpu = draw(st.floats(0.5, 20.0))
    curve = {n: per_gpu * n ** draw(st.floats(0.5, 1.0)) for n in levels}
    return levels, curve


times = st.integers(0, 120).map(lambda k: k * 5.0) | st.floats(0.0, 600.0)


@settings(max_examples=400, deadline=None)
@given(
    timeline=timelines(),
    job=jobs(),
    now=times,
    ahead=st.floats(-100.0, 900.0),
    remaining=st.floats(1.0, 60_000.0),
    slot=st.sampled_from([10.0, 60.0, 240.0, 7.0]),
    reserve=st.booleans(),
)
def test_planning_on_a_view_matches_stepwise_planning(
    timeline: FreeTimeline,
    job: tuple[list[int], dict[int, float]],
    now: float,
    ahead: float,
    remaining: float,
    slot: float,
    reserve: bool,
) -> None:
    levels, curve = job
    deadline = now + ahead
    plain = timeline.copy()
    fast = timeline.copy()
    try:
        expected = minimum_satisfactory_share_stepwise(
            plain, now, deadline, remaining, curve.__getitem__, levels, slot, reserve
        )
    except ValueError:
        # A slot-aligned end can reach into a piece with nothing free: both forms refuse.
        with pytest.raises(ValueError, match="more GPUs than free"):
            minimum_satisfactory_share(
                fast, now, deadline, remaining, curve.__getitem__, levels, slot, reserve
            )
        return
    got = minimum_satisfactory_share(
        fast, now, deadline, remaining, curve.__getitem__, levels, slot, reserve
    )
    assert got.segments == expected.segments
    assert (got.share, got.feasible) == (expected.share, expected.feasible)
    assert got.real_end == expected.real_end and got.end == expected.end
    assert (fast.key, fast.count) == (plain.key, plain.count)
    if min(now, slot_ceil(now, deadline, slot)) >= timeline.key[0]:
        # (Before the first breakpoint even the plain form leaves a split behind.)
        if not reserve:
            assert (fast.key, fast.count) == (timeline.key, timeline.count)
        assert is_merged(fast)


@given(levels=st.lists(st.integers(-2, 70), max_size=8), x=st.floats(-5.0, 80.0))
def test_fitter_matches_fit(levels: list[int], x: float) -> None:
    assert fitter(levels)(x) == fit(levels, x)
    assert fitter(sorted(levels))(x) == fit(sorted(levels), x)


def test_the_timeline_capacity_bounds_the_levels() -> None:
    # Sanity for the strategy: plans never reserve beyond the last breakpoint.
    f = FreeTimeline.empty(0, CAPACITY)
    plan = minimum_satisfactory_share(f, 0, 100, 1_000, lambda n: 10.0 * n, [1, 2, 4], 60)
    assert all(math.isfinite(stop) for _, stop, _ in plan.segments)
    assert f.count[-1] == CAPACITY
    assert lay_forward(f.copy(), 0, 10, lambda n: 1.0, [1], 60, lambda k: 1, False).segments
