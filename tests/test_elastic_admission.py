"""ElasticFlow admission control, by hand."""

from __future__ import annotations

import math

from schedlab.policies.elastic.admission import PlanRequest, admit

LEVELS = [1, 2, 4]


def req(job: int, deadline: float, remaining: float) -> PlanRequest:
    return PlanRequest(job, deadline, remaining, lambda n: 10.0 * n, LEVELS)


def test_feasible_arrivals_are_admitted_with_minimum_shares() -> None:
    # 4 GPUs, slot 100, 10 it/s per GPU. Job 0 (deadline 400, 4,000 it) needs 1 GPU for 400 s;
    # job 1 (deadline 200, 4,000 it) is planned first (earlier deadline): 1 GPU gives 2,000 by
    # 200, 2 GPUs give 4,000 → share 2 over [0, 200). Both fit.
    result = admit([req(0, 400, 4_000)], [req(1, 200, 4_000)], 0, 4, 100)
    assert result.admitted == [1] and result.rejected == []
    assert result.plans[1].share == 2 and result.plans[1].segments == [(0.0, 200.0, 2)]
    assert result.plans[0].share == 1 and result.plans[0].segments == [(0.0, 400.0, 1)]
    assert (result.timeline.key, result.timeline.count) == ([0.0, 200.0, 400.0], [1, 3, 4])


def test_an_arrival_that_cannot_make_it_is_rejected_and_nothing_else_changes() -> None:
    admitted = [req(0, 400, 4_000)]
    before = admit(admitted, [], 0, 4, 100)
    # Job 2 wants 20,000 iterations by 200: even 4 GPUs give 8,000. Rejected; job 0's plan is
    # exactly what it was without the arrival.
    after = admit(admitted, [req(2, 200, 20_000)], 0, 4, 100)
    assert after.admitted == [] and after.rejected == [2]
    assert after.plans.keys() == before.plans.keys() == {0}
    assert after.plans[0].segments == before.plans[0].segments
    assert (after.timeline.key, after.timeline.count) == (
        before.timeline.key,
        before.timeline.count,
    )


def test_an_arrival_that_would_break_an_admitted_deadline_is_rejected() -> None:
    # Job 0 (deadline 200, 6,000 it) needs 4 GPUs over [0, 150) → share 4 (2 GPUs: 4,000 < 6,000).
    # Job 3 (deadline 100, 2,000 it) planned first would take 2 GPUs over [0, 100), leaving job 0
    # only 2 GPUs until 100: 2·10·100 + 4·10·100 = 6,000 — feasible just in time. Job 4 (deadline
    # 100, 4,000 it) needs all 4 GPUs until 100; then job 0 gets 4 GPUs over [100, 200) = 4,000 <
    # 6,000: infeasible, so job 4 is rejected although its own plan fits.
    assert admit([req(0, 200, 6_000)], [req(3, 100, 2_000)], 0, 4, 100).rejected == []
    result = admit([req(0, 200, 6_000)], [req(4, 100, 4_000)], 0, 4, 100)
    assert result.rejected == [4] and result.admitted == []


def test_best_effort_arrivals_are_never_rejected() -> None:
    # The same infeasible arrival, plus a best-effort one: the best-effort job is admitted and
    # planned on 1 GPU after everything else (from the last breakpoint, 400).
    result = admit([req(0, 400, 4_000)], [req(2, 200, 20_000), req(5, math.inf, 1_000)], 0, 4, 100)
    assert result.rejected == [2] and result.admitted == [5]
    assert result.plans[5].segments == [(400.0, 500.0, 1)]
    assert result.plans[5].real_end == 500.0
