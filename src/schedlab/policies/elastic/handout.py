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

import copy
import math
from collections.abc import Mapping

from schedlab.policies.elastic.admission import PlanRequest
from schedlab.policies.elastic.planning import (
    FreeTimeline,
    Plan,
    fit,
    lay_forward,
    minimum_satisfactory_share,
    slot_ceil,
)

HANDOUT_RULES = ("gpu-time", "throughput", "deadline")


def plan_gpu_seconds(plan: Plan) -> float:
    """W(plan): GPU-seconds the plan reserves up to its slot-aligned end."""
    return sum(n * (stop - start) for start, stop, n in plan.segments if math.isfinite(stop))


def next_level(levels: list[int], n: int) -> int | None:
    return next((lv for lv in levels if lv > n), None)


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
    later = [k for k in timeline.key if k > now and k < aligned]
    boundary = later[0] if later else aligned
    exact_end = now + math.ceil(remaining / rate_up - 1e-9)
    end = slot_ceil(now, exact_end, slot)
    if (end <= boundary and exact_end <= deadline) or not math.isfinite(boundary):
        return Plan(share=up, segments=[(now, end, up)], real_end=exact_end, end=end)
    length = (deadline if boundary == aligned else boundary) - now
    rest = remaining - length * rate_up
    if rest <= 1e-9:
        return Plan(share=up, segments=[(now, end, up)], real_end=exact_end, end=end)
    scratch = copy.deepcopy(timeline)
    scratch.subtract(now, boundary, up)
    if math.isfinite(deadline):
        tail = minimum_satisfactory_share(
            scratch, boundary, deadline, rest, request.rate, request.levels, slot
        )
    else:
        tail = lay_forward(
            scratch, boundary, rest, request.rate, request.levels, slot, lambda k: up
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

    ``order`` is the deadline order of the admitted jobs (ties among scores keep it).
    """
    idle = timeline.at(now)
    while idle > 0:
        best: tuple[float, int] | None = None
        best_job, best_plan = -1, None
        for rank, j in enumerate(order):
            r = requests[j]
            n = plans[j].gpus_at(now)
            levels = list(r.levels)
            up = next_level(levels, n)
            if up is None or up - n > idle or fit(levels, up) != up:
                continue
            candidate = None
            if n == 0:
                score = math.inf
            elif rule == "gpu-time":
                _add_back(timeline, plans[j])
                candidate = candidate_plan(timeline, r, up, now, slot)
                _take(timeline, plans[j])
                score = (plan_gpu_seconds(candidate) - plan_gpu_seconds(plans[j])) / (up - n)
            elif rule == "throughput":
                score = (r.rate(up) - r.rate(n)) / (up - n)
            else:
                score = -r.deadline
            key = (score, -rank)
            if best is None or key > best:
                best, best_job, best_plan = key, j, candidate
        if best is None:
            return
        r = requests[best_job]
        old = plans[best_job]
        n = old.gpus_at(now)
        up = next_level(list(r.levels), n)
        assert up is not None
        _add_back(timeline, old)
        new = best_plan if best_plan is not None else candidate_plan(timeline, r, up, now, slot)
        _take(timeline, new)
        plans[best_job] = new
        idle -= up - n
