"""ElasticFlow's hand-out of idle GPUs: which admitted job gets the next level.

After every admitted job holds its minimum satisfactory share, the GPUs still idle *now* are given
away one level step at a time. Jobs holding no GPU come first (a best-effort job starts whenever a
GPU is idle). Among the others the choice is a rule, because the paper and its artifact disagree:

- ``gpu-time`` (the artifact): re-plan the job as if it got the next level now — that level until
  the free-GPU timeline next changes, then its minimum satisfactory share from there — and score
  the change in the plan's GPU-seconds per added GPU; the largest score wins;
- ``throughput``: the largest gain in iterations per second per added GPU (the paper's
  "diminishing returns" reading; cheap, needs no re-planning);
- ``deadline``: the earliest deadline.

A grant adopts the candidate plan (so the timeline, the job's plan end and its on-time estimate
follow it), then every score is computed afresh.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Mapping, Sequence

from schedlab.policies.elastic.admission import PlanRequest
from schedlab.policies.elastic.planning import (
    FreeTimeline,
    Plan,
    lay_forward,
    minimum_satisfactory_share,
    slot_ceil,
)

HANDOUT_RULES = ("gpu-time", "throughput", "deadline")


def plan_gpu_seconds(plan: Plan) -> float:
    """W(plan): GPU-seconds the plan reserves up to its slot-aligned end."""
    return sum(n * (stop - start) for start, stop, n in plan.segments if math.isfinite(stop))


def next_level(levels: Sequence[int], n: int) -> int | None:
    """The first level above ``n`` (in the table's order), None at the top."""
    for lv in levels:
        if lv > n:
            return lv
    return None


def _add_back(timeline: FreeTimeline, plan: Plan) -> None:
    for start, stop, n in plan.segments:
        if math.isfinite(stop):
            timeline.subtract(start, stop, -n)


def _take(timeline: FreeTimeline, plan: Plan) -> None:
    for start, stop, n in plan.segments:
        if math.isfinite(stop):
            timeline.subtract(start, stop, n)


def candidate_plan(
    timeline: FreeTimeline, request: PlanRequest, up: int, now: float, slot: float
) -> Plan:
    """The job's plan if it ran at ``up`` GPUs from ``now``; ``timeline`` must not hold the job's
    current plan and is left unchanged.

    ``up`` runs until the timeline's first breakpoint after ``now`` (the slot-aligned deadline if
    there is none); if the job is not done by then, the rest is planned from that point as a
    minimum satisfactory share.
    """
    rate_up = request.rate(up)
    remaining = request.remaining
    deadline = request.deadline
    aligned = slot_ceil(now, deadline, slot) if math.isfinite(deadline) else math.inf
    i = bisect.bisect_right(timeline.key, now)
    boundary = timeline.key[i] if i < len(timeline.key) and timeline.key[i] < aligned else aligned
    exact_end = now + math.ceil(remaining / rate_up - 1e-9)
    end = slot_ceil(now, exact_end, slot)
    if (end <= boundary and exact_end <= deadline) or not math.isfinite(boundary):
        return Plan(share=up, segments=[(now, end, up)], real_end=exact_end, end=end)
    length = (deadline if boundary == aligned else boundary) - now
    rest = remaining - length * rate_up
    if rest <= 1e-9:
        return Plan(share=up, segments=[(now, end, up)], real_end=exact_end, end=end)
    # The tail starts at ``boundary`` and never looks before it, so it is planned on the timeline
    # itself without reserving anything (the caller reserves the plan it adopts).
    if math.isfinite(deadline):
        tail = minimum_satisfactory_share(
            timeline, boundary, deadline, rest, request.rate, request.levels, slot, False
        )
    else:
        tail = lay_forward(
            timeline, boundary, rest, request.rate, request.levels, slot, lambda k: up, False
        )
        tail.feasible = True
    return Plan(
        share=up,
        segments=[(now, boundary, up), *tail.segments],
        real_end=tail.real_end,
        end=tail.end,
        feasible=tail.feasible,
    )


def hand_out(
    requests: Mapping[int, PlanRequest],
    plans: dict[int, Plan],
    timeline: FreeTimeline,
    now: float,
    slot: float,
    rule: str,
    order: list[int],
) -> None:
    """Give the GPUs idle at ``now`` away, updating ``plans`` and ``timeline`` in place.

    ``order`` is the deadline order of the admitted jobs (ties among scores keep it). Scores are
    kept in a heap and only the granted job is scored again after a grant: another job's score
    moves only through the part of the timeline the grant changed, and re-scoring every job after
    every grant (the artifact's way) costs jobs² re-plans per round — hours on a 1,000-GPU trace.

    A score and its candidate depend only on the timeline, the job's plan and the idle count, and
    the latter two change only with a grant; so a score computed since the last grant is the
    re-scoring's answer, and a granted job's candidate is the one its score was computed from.
    """
    idle = timeline.at(now)
    heap: list[tuple[float, int, int]] = []
    grants = 0  # the timeline's version: grants so far this round
    # The latest score of each job: (version, score, candidate plan or None).
    scored: dict[int, tuple[int, float | None, Plan | None]] = {}
    for rank, j in enumerate(order):
        entry, candidate = _score(requests[j], plans[j], timeline, now, slot, rule, idle)
        scored[j] = (grants, entry, candidate)
        if entry is not None:
            heapq.heappush(heap, (-entry, rank, j))
    while idle > 0 and heap:
        _, rank, j = heapq.heappop(heap)
        r = requests[j]
        version, score, candidate = scored[j]
        if version != grants:
            # Scored before the last grant: re-score on the current timeline, and grant only if
            # it still beats the next claim.
            score, candidate = _score(r, plans[j], timeline, now, slot, rule, idle)
            scored[j] = (grants, score, candidate)
            if score is None:
                continue
            if heap and (-score, rank) > heap[0][:2]:
                heapq.heappush(heap, (-score, rank, j))
                continue
        levels = r.levels
        n = plans[j].gpus_at(now)
        up = next_level(levels, n)
        if up is None or up - n > idle:
            continue  # idle GPUs only shrink: this step will never fit again this round
        _add_back(timeline, plans[j])
        new = candidate if candidate is not None else candidate_plan(timeline, r, up, now, slot)
        _take(timeline, new)
        plans[j] = new
        idle -= up - n
        grants += 1
        entry, candidate = _score(r, new, timeline, now, slot, rule, idle)
        scored[j] = (grants, entry, candidate)
        if entry is not None:
            heapq.heappush(heap, (-entry, rank, j))


def _score(
    r: PlanRequest,
    plan: Plan,
    timeline: FreeTimeline,
    now: float,
    slot: float,
    rule: str,
    idle: int,
) -> tuple[float | None, Plan | None]:
    """The job's claim on its next level (higher first; None if it cannot grow now), and the
    candidate plan it was computed from (the "gpu-time" rule only).

    The candidate is planned on a copy of the timeline with the job's plan given back, which is
    cheaper than giving it back to the timeline and taking it again."""
    levels = r.levels
    n = plan.gpus_at(now)
    up = next_level(levels, n)
    if up is None or up - n > idle:
        return None, None
    if n == 0:
        return math.inf, None
    if rule == "throughput":
        return (r.rate(up) - r.rate(n)) / (up - n), None
    if rule == "deadline":
        return -r.deadline, None
    given_back = timeline.copy()
    _add_back(given_back, plan)
    candidate = candidate_plan(given_back, r, up, now, slot)
    return (plan_gpu_seconds(candidate) - plan_gpu_seconds(plan)) / (up - n), candidate
