"""``carbon-scaler`` (CarbonScaler, SIGMETRICS '24): elastic GPU counts that follow the carbon.

At arrival each job's window [a, a + d + slack] is cut at the carbon-intensity steps. From all
zero, the plan repeatedly raises one step's count to the job's next GPU level, choosing the
largest Δwork/Δcarbon (Δwork = Δthroughput·Δt, Δcarbon = ΔGPUs·P_gpu·Δt·CI; ties: the earlier
step), until the plan covers the job's remaining work. Levels are powers of two up to where the
job's throughput stops growing (at most 64 GPUs, its batch size and the cluster). Every plan
boundary is a decision point: the job is resized, started or preempted to its planned count.
Short of GPUs it takes what fits and is re-planned from what it has left; past its window it
runs at its largest level.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from schedlab.energy.carbon import CarbonSeries
from schedlab.model.snapshot import Decision, Reject, Snapshot
from schedlab.policies.api import never_fits
from schedlab.policies.carbon.base import SlackScheduler
from schedlab.policies.carbon.elastic import apply_counts
from schedlab.policies.elastic.edf_greedy import job_levels
from schedlab.policies.scheduler import ReplayContext, between_rounds

Segment = tuple[float, float, int]


def plan_counts(
    ci: CarbonSeries,
    start: float,
    end: float,
    work: float,
    rate: Callable[[int], float],
    levels: Sequence[int],
    watts: float,
) -> list[Segment]:
    """CarbonScaler's greedy plan over the CI steps of [start, end): (from, to, GPUs) pieces."""
    edges = [start, *ci.steps_between(start, end), end] if end > start else [start]
    steps = [(a, b) for a, b in itertools.pairwise(edges) if b > a]
    level = [-1] * len(steps)  # index into levels, -1 = no GPUs

    def increment(s: int) -> tuple[float, float, int] | None:
        i = level[s] + 1
        if i >= len(levels):
            return None
        n0 = levels[i - 1] if i > 0 else 0
        n1 = levels[i]
        a, b = steps[s]
        dwork = (rate(n1) - (rate(n0) if n0 else 0.0)) * (b - a)
        dcarbon = (n1 - n0) * watts * (b - a) * ci.at(a)
        score = dwork / dcarbon if dcarbon > 0 else math.inf
        return (-score, a, s)

    heap = [inc for s in range(len(steps)) if (inc := increment(s)) is not None]
    heapq.heapify(heap)
    covered = 0.0
    while covered < work * (1 - 1e-12) and heap:
        _, _, s = heapq.heappop(heap)
        a, b = steps[s]
        old = rate(levels[level[s]]) if level[s] >= 0 else 0.0
        level[s] += 1
        covered += (rate(levels[level[s]]) - old) * (b - a)
        nxt = increment(s)
        if nxt is not None:
            heapq.heappush(heap, nxt)
    return [(a, b, levels[lv] if lv >= 0 else 0) for (a, b), lv in zip(steps, level, strict=True)]


def count_at(plan: list[Segment], now: float, top: int) -> int:
    for a, b, n in plan:
        if a - 1e-9 <= now < b - 1e-9:
            return n
    return top if not plan or now >= plan[-1][1] - 1e-9 else 0


class CarbonScaler(SlackScheduler):
    name = "carbon-scaler"
    summary = (
        "elastic GPU counts planned per carbon step by work gained per carbon (SIGMETRICS '24)"
    )
    elastic = True  # it sizes every job itself
    preemptive = True

    def reset(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        cap, known = job_levels(self.name, ctx, "peak")
        self.levels = {
            j: [1 << k for k in range(int(cap[j]).bit_length()) if 1 << k <= cap[j]] or [1]
            for j in range(len(ctx.jobs))
        }
        if known is not None:  # the model knows only some counts: only those
            self.levels = dict(enumerate(known))
        self.window_end: dict[int, float] = {}
        self.plans: dict[int, list[Segment]] = {}
        self.replan: set[int] = set()

    def _plan(self, snap: Snapshot, job: int) -> None:
        jobs, perf = snap.jobs, self.ctx.perf
        work = float(snap.remaining_work(np.asarray([job]))[0])
        end = max(self.window_end[job], snap.now)
        self.plans[job] = plan_counts(
            self.carbon,
            snap.now,
            end,
            work,
            lambda n: perf.rate(jobs, job, n, -1),
            self.levels[job],
            self.gpu_watts(),
        )

    def decide(self, snap: Snapshot) -> list[Decision]:
        decisions: list[Decision] = []
        refused: set[int] = set()
        for job in snap.new_pending:
            if job in self.window_end:
                continue
            # elastic: only a job whose smallest level can never run is turned away
            mask = int(snap.jobs.gpu_model_mask[job])
            why = never_fits(snap.cluster, self.levels[job][0], mask)
            if why is not None:
                decisions.append(Reject(job, why))
                refused.add(job)
                continue
            d = self.oracle_seconds(snap, job)
            self.window_end[job] = snap.now + d + self.slack_of(snap, job, self.slack)
            self.replan.add(job)
        if between_rounds(snap.now, self.slot):
            return decisions
        active = [j for j in (*snap.running_set, *snap.pending_set) if j not in refused]
        for job in sorted(self.replan & set(active)):
            self._plan(snap, job)
        self.replan.clear()
        target = {j: count_at(self.plans[j], snap.now, self.levels[j][-1]) for j in active}
        changes, got = apply_counts(snap, self.ctx.placer, target, self.levels)
        self.replan |= {j for j, n in got.items() if n != target[j]}
        return decisions + changes

    def next_wakeup(self, snap: Snapshot) -> float:
        wake = math.inf
        for job in (*snap.pending_set, *snap.running_set):
            for a, _, _ in self.plans.get(job, []):
                if a > snap.now + 1e-9:
                    wake = min(wake, a)
                    break
            plan = self.plans.get(job)
            if plan and plan[-1][1] > snap.now + 1e-9:
                wake = min(wake, plan[-1][1])
        return self.round_wakeup(snap, wake)  # short of GPUs: re-planned at the next event
