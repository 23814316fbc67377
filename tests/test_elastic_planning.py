"""ElasticFlow's planning primitives, checked by hand."""

from __future__ import annotations

import math

import pytest

from schedlab.policies.elastic.planning import FreeTimeline, fit, minimum_satisfactory_share

LEVELS = [1, 2, 4, 8]


def linear(per_gpu: float):
    return lambda n: per_gpu * n


def test_fit_takes_the_largest_level_not_above() -> None:
    assert [fit(LEVELS, x) for x in (0, 0.5, 1, 3, 7.9, 8, 100)] == [0, 0, 1, 2, 4, 8, 8]


def test_timeline_subtract_and_merge() -> None:
    f = FreeTimeline.empty(0, 8)
    f.subtract(100, 200, 3)
    assert (f.key, f.count) == ([0, 100, 200], [8, 5, 8])
    assert f.at(150) == 5 and f.at(250) == 8
    f.subtract(100, 200, 5)
    f.subtract(200, 300, 8)
    assert (f.key, f.count) == ([0, 100, 300], [8, 0, 8])
    with pytest.raises(ValueError, match="more GPUs than free"):
        f.subtract(150, 160, 1)


def test_the_worked_example_runs_one_gpu_as_late_as_possible() -> None:
    # Slot 240, 8 GPUs, another job holds 4 GPUs until 1200. New job: 18,000 iterations at 10 it/s
    # per GPU, deadline 3000, now 0. Aligned deadline A = 3120. With q = 1 the backward walk
    # covers exactly 18,000 over [1200, 3000) (1800 s · 10), so p = 1200. Laid forwards: the level
    # below 1 is 0, so it idles until 1200, then runs 1 GPU: real end 3000, reserved until 3120.
    f = FreeTimeline.empty(0, 8)
    f.subtract(0, 1200, 4)
    plan = minimum_satisfactory_share(f, 0, 3000, 18_000, linear(10.0), LEVELS, 240)
    assert plan.share == 1 and plan.feasible
    assert plan.segments == [(1200.0, 3120.0, 1)]
    assert plan.real_end == 3000 and plan.end == 3120
    assert plan.gpus_at(600) == 0 and plan.gpus_at(1500) == 1
    assert (f.key, f.count) == ([0.0, 1200.0, 3120.0], [4, 7, 8])


def test_a_tighter_deadline_needs_a_larger_share() -> None:
    # Same job, empty 8-GPU cluster, deadline 1000 (A = 1200). q = 1: 1000 s · 10 = 10,000 <
    # 18,000. q = 2: 1000 s · 20 = 20,000 ≥ 18,000, reached in the interval starting at 0 → p = 0.
    # Forwards at 2 GPUs: 18,000 / 20 = 900 s → real end 900, slot end 960.
    f = FreeTimeline.empty(0, 8)
    plan = minimum_satisfactory_share(f, 0, 1000, 18_000, linear(10.0), LEVELS, 240)
    assert plan.share == 2 and plan.feasible
    assert plan.segments == [(0.0, 960.0, 2)]
    assert (plan.real_end, plan.end) == (900, 960)
    assert (f.key, f.count) == ([0.0, 960.0], [6, 8])


def test_a_job_no_level_can_finish_in_time_is_infeasible() -> None:
    # 8 GPUs at most give 80 it/s: 18,000 iterations need 225 s, the deadline is 100 s away. The
    # fallback plan runs the largest free level (8) until done: real end 225, slot end 240.
    f = FreeTimeline.empty(0, 8)
    plan = minimum_satisfactory_share(f, 0, 100, 18_000, linear(10.0), LEVELS, 240)
    assert not plan.feasible and plan.share == 0
    assert plan.segments == [(0.0, 240.0, 8)]
    assert (plan.real_end, plan.end) == (225, 240)


def test_plans_in_deadline_order_share_the_timeline() -> None:
    # Two jobs on 4 GPUs, 10 it/s per GPU, slot 100. The first (deadline 400, 4,000 iterations)
    # needs only 1 GPU (400 s · 10 = 4,000), idles nothing (level below 1 is 0 but p = 0), and
    # holds 1 GPU over [0, 400). The second (deadline 200, 6,000 iterations) must then fit in
    # the 3 free GPUs: fit(3) = 2 GPUs give 200 · 20 = 4,000 < 6,000, so it is infeasible.
    f = FreeTimeline.empty(0, 4)
    first = minimum_satisfactory_share(f, 0, 400, 4_000, linear(10.0), [1, 2, 4], 100)
    assert first.share == 1 and first.segments == [(0.0, 400.0, 1)]
    second = minimum_satisfactory_share(f, 0, 200, 6_000, linear(10.0), [1, 2, 4], 100)
    assert not second.feasible
    assert math.isfinite(second.real_end)
