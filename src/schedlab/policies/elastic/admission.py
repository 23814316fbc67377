"""ElasticFlow's admission control: admit arrivals only if every admitted deadline still holds.

At an event with arrivals, every admitted job and every arrival is re-planned on an empty free-GPU
timeline in increasing-deadline order (:func:`minimum_satisfactory_share`). If any plan misses its
deadline — an admitted job that fell behind counts too — all arrivals with a deadline are rejected
and the admitted set is planned again without them; best-effort arrivals (no deadline) are never
rejected. Plain data in, plain decisions out, so the policy and the tests share it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from schedlab.policies.elastic.planning import (
    FreeTimeline,
    Plan,
    Rate,
    minimum_satisfactory_share,
    slot_ceil,
)


@dataclass(frozen=True)
class PlanRequest:
    """What planning needs to know about one job."""

    job: int
    deadline: float  # inf: best effort
    remaining: float  # iterations left
    rate: Rate
    levels: Sequence[int]

    @property
    def best_effort(self) -> bool:
        return not math.isfinite(self.deadline)


@dataclass
class Admission:
    admitted: list[int]  # arrivals admitted now
    rejected: list[int]  # arrivals turned away
    plans: dict[int, Plan]  # every admitted job's plan (old and new)
    timeline: FreeTimeline  # what is left free after those plans


def plan_all(
    requests: Sequence[PlanRequest], now: float, gpus: int, slot: float
) -> tuple[dict[int, Plan], FreeTimeline, bool]:
    """Plans for ``requests`` in deadline order on an empty cluster; True if all are feasible."""
    timeline = FreeTimeline.empty(now, gpus)
    plans: dict[int, Plan] = {}
    feasible = True
    for r in sorted(requests, key=lambda r: (r.deadline, r.job)):
        if r.best_effort:
            plans[r.job] = _best_effort_plan(timeline, r, slot)
            continue
        plan = minimum_satisfactory_share(
            timeline, now, r.deadline, r.remaining, r.rate, r.levels, slot
        )
        plans[r.job] = plan
        feasible &= plan.feasible
    return plans, timeline, feasible


def _best_effort_plan(timeline: FreeTimeline, r: PlanRequest, slot: float) -> Plan:
    """One GPU from the timeline's last breakpoint on (where everything else is done)."""
    start = timeline.key[-1]
    rate = r.rate(min(r.levels)) if r.levels else 0.0
    if rate <= 0:
        return Plan(share=0, feasible=True)
    real_end = start + math.ceil(r.remaining / rate - 1e-9)
    end = slot_ceil(start, real_end, slot)
    n = min(r.levels)
    timeline.subtract(start, end, n)
    return Plan(share=n, segments=[(start, end, n)], real_end=real_end, end=end)


def admit(
    admitted: Sequence[PlanRequest],
    arrivals: Sequence[PlanRequest],
    now: float,
    gpus: int,
    slot: float,
    forgiven: Collection[int] = (),
) -> Admission:
    """Admission control for one event; ``admitted`` are the jobs already accepted.

    An infeasible plan of a job in ``forgiven`` (admitted jobs already late before these
    arrivals) does not count against the arrivals."""
    plans, timeline, feasible = plan_all([*admitted, *arrivals], now, gpus, slot)
    if not feasible and forgiven:
        feasible = all(p.feasible or j in forgiven for j, p in plans.items())
    if feasible:
        return Admission([a.job for a in arrivals], [], plans, timeline)
    keep = [a for a in arrivals if a.best_effort]
    plans, timeline, _ = plan_all([*admitted, *keep], now, gpus, slot)
    return Admission(
        [a.job for a in keep], [a.job for a in arrivals if not a.best_effort], plans, timeline
    )
