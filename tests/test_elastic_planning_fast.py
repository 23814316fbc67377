"""The fast planning paths agree with the plain, stepwise computation on random timelines.

Planning reads a view of the timeline instead of splitting and tidying the timeline itself, and the
hand-out re-uses candidates; these properties pin every result (segments, ends, feasibility, the
timeline afterwards) to the straightforward forms they replace.
"""

from __future__ import annotations

import heapq
import math

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from schedlab.policies.elastic.admission import PlanRequest, plan_all
from schedlab.policies.elastic.handout import (
    _add_back,
    _take,
    candidate_plan,
    hand_out,
    next_level,
    plan_gpu_seconds,
)
from schedlab.policies.elastic.planning import (
    FreeTimeline,
    Plan,
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


def stepwise_hand_out(
    requests: dict[int, PlanRequest],
    plans: dict[int, Plan],
    timeline: FreeTimeline,
    now: float,
    slot: float,
    rule: str,
    order: list[int],
) -> None:
    """The hand-out re-scoring every popped job on the live timeline (give back, plan, take)."""

    def score(r: PlanRequest, plan: Plan, idle: int) -> float | None:
        n = plan.gpus_at(now)
        up = next_level(list(r.levels), n)
        if up is None or up - n > idle:
            return None
        if n == 0:
            return math.inf
        _add_back(timeline, plan)
        candidate = candidate_plan(timeline, r, up, now, slot)
        _take(timeline, plan)
        return (plan_gpu_seconds(candidate) - plan_gpu_seconds(plan)) / (up - n)

    idle = timeline.at(now)
    heap = []
    for rank, j in enumerate(order):
        entry = score(requests[j], plans[j], idle)
        if entry is not None:
            heapq.heappush(heap, (-entry, rank, j))
    fresh: set[int] = set()
    while idle > 0 and heap:
        _, rank, j = heapq.heappop(heap)
        r = requests[j]
        if j not in fresh:
            s = score(r, plans[j], idle)
            fresh.add(j)
            if s is None:
                continue
            if heap and (-s, rank) > heap[0][:2]:
                heapq.heappush(heap, (-s, rank, j))
                continue
        n = plans[j].gpus_at(now)
        up = next_level(list(r.levels), n)
        if up is None or up - n > idle:
            continue
        _add_back(timeline, plans[j])
        new = candidate_plan(timeline, r, up, now, slot)
        _take(timeline, new)
        plans[j] = new
        idle -= up - n
        fresh.clear()
        entry = score(r, new, idle)
        if entry is not None:
            heapq.heappush(heap, (-entry, rank, j))


@st.composite
def rounds(draw: st.DrawFn) -> list[PlanRequest]:
    out = []
    for j in range(draw(st.integers(1, 7))):
        levels, curve = draw(jobs())
        levels.sort()
        deadline = draw(st.floats(30.0, 3_000.0) | st.just(math.inf))
        remaining = draw(st.floats(10.0, 40_000.0))
        out.append(PlanRequest(j, deadline, remaining, curve.__getitem__, levels))
    return out


@settings(max_examples=300, deadline=None)
@given(requests=rounds(), slot=st.sampled_from([10.0, 60.0, 240.0]), gpus=st.integers(1, 24))
def test_hand_out_re_using_scores_matches_re_scoring_every_time(
    requests: list[PlanRequest], slot: float, gpus: int
) -> None:
    try:
        plans, timeline, _ = plan_all(requests, 0.0, gpus, slot)
    except ValueError:
        reject()  # a job larger than the cluster: not a round the policy plays
    by_job = {r.job: r for r in requests}
    order = sorted(by_job, key=lambda j: (by_job[j].deadline, j))
    plain_plans, plain_timeline = dict(plans), timeline.copy()
    stepwise_hand_out(by_job, plain_plans, plain_timeline, 0.0, slot, "gpu-time", order)
    hand_out(by_job, plans, timeline, 0.0, slot, "gpu-time", order)
    assert plans == plain_plans
    assert (timeline.key, timeline.count) == (plain_timeline.key, plain_timeline.count)
    assert is_merged(timeline)
