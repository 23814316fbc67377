"""``elasticflow``: deadline-aware elastic scheduling with admission control (ASPLOS '23).

Once per slot (a round where nothing arrived, no job finished and no plan changes its GPU count
is skipped: every plan still holds):

1. *Admission control* (:mod:`.admission`): every admitted job and every arrival is planned in
   deadline order at its minimum satisfactory share on an empty free-GPU timeline. With
   ``blame="any"`` (the artifact) any infeasible plan — even an admitted job's that fell behind —
   rejects every arrival of the round that has a deadline; with ``blame="new"`` arrivals are
   judged one by one in deadline order and only a plan they make infeasible counts against them.
   Best-effort arrivals are never rejected. ``admission=false`` admits everything.
2. *Hand-out* (:mod:`.handout`, unless ``handout=false``): GPUs still idle now are given away one
   level at a time, jobs holding no GPUs first, then by ``rule``: ``gpu-time`` (the default, the
   artifact's) re-plans the job at its next level and scores the change in its plan's GPU-seconds
   per added GPU; ``throughput`` scores the throughput gain per added GPU; ``deadline`` gives to
   the earliest deadline. Ties keep deadline order.
3. Every admitted job runs at its plan's GPU count for now, resized, started or preempted to get
   there.
4. *Overhead*: every job holding GPUs after the round loses ``round_overhead`` seconds of
   progress while its workers re-form — the artifact's base charge, 2 s, or 7 s on clusters of
   256+ GPUs (``auto``) — whether or not it was resized.

GPU counts are the levels of the job's throughput table (1, 2, 4, …, 64) up to a cap that the
artifact fixes per GPU model, job model and global batch (:data:`ELASTICFLOW_CAPS`: its A100 and
T4 tables); a job not listed there is capped at min(batch, 64), and one without a batch size
where its throughput peaks. On a cluster of several GPU models a job takes the largest cap of the
models it may run on.

Simplifications against the public artifact: its extra overhead when a job lands on GPUs it did
not use before is not charged (only the per-round base), and the hand-out re-scores only the
granted job after each grant (the same grants; see :func:`.handout.hand_out`).
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import GPU_MODELS
from schedlab.model.snapshot import Decision, Overheads, Reject, Snapshot
from schedlab.perf.models import ThroughputTable
from schedlab.policies.elastic.admission import Admission, PlanRequest, admit, plan_all
from schedlab.policies.elastic.counts import no_count_error, runnable_counts
from schedlab.policies.elastic.edf_greedy import ElasticEdf
from schedlab.policies.elastic.handout import HANDOUT_RULES, hand_out
from schedlab.policies.elastic.planning import FreeTimeline, Plan
from schedlab.policies.scheduler import ReplayContext, between_rounds

#: GPU counts ElasticFlow considers (those of its throughput tables).
LEVELS = (1, 2, 4, 8, 16, 32, 64)

#: Where ElasticFlow caps each job, per GPU model: (model, global batch) → GPUs, a batch of None
#: standing for every batch of the model — where the artifact's throughput tables stop paying off
#: (its ``get_max_gpu``). Jobs not listed are capped at min(batch, 64).
ELASTICFLOW_CAPS: dict[str, dict[tuple[str, int | None], int]] = {
    "A100": {
        ("bert", 64): 8,
        ("bert", 128): 16,
        ("gpt2", 128): 16,
        ("gpt2", 256): 32,
        ("inception3", 64): 16,
        ("inception3", 128): 32,
        ("resnet50", 64): 32,
        ("vgg16", 64): 32,
    },
    "T4": {
        ("bert", None): 16,
        ("cifar10", None): 16,
        ("deepspeech2", 320): 32,
        ("yolov3", None): 4,
        ("ncf", None): 1,
    },
}

#: The cap of a job ElasticFlow's tables do not list (its batch size bounds it too).
DEFAULT_CAP = 64


def elasticflow_cap(gpu_model: str, model: str, batch: int) -> int:
    """ElasticFlow's cap for a job of ``model`` at global ``batch`` on ``gpu_model`` GPUs."""
    table = ELASTICFLOW_CAPS.get(gpu_model, {})
    cap = table.get((model, batch), table.get((model, None)))
    return cap if cap is not None else min(batch, DEFAULT_CAP)


def job_gpu_models(cluster: Cluster, mask: int) -> list[str]:
    """The GPU models of ``cluster`` a job with model ``mask`` may run on."""
    present = sorted({int(m) for m in cluster.model if m >= 0})
    return [GPU_MODELS[m] for m in present if (mask >> m) & 1]


class ElasticFlow(ElasticEdf):
    name = "elasticflow"
    summary = "admission control + minimum satisfactory shares + elastic hand-out (ASPLOS '23)"

    def __init__(
        self,
        rule: str = "gpu-time",
        admission: bool = True,
        handout: bool = True,
        round_overhead: str = "auto",
        blame: str = "any",
        slot: float | None = None,
    ) -> None:
        """``admission=false`` and ``handout=false`` give the paper's ablations (elastic scaling
        without admission control; admission control at minimum shares only).
        ``round_overhead``: seconds every running job loses at each decision round while its
        workers re-form; ``auto`` is the artifact's 2 s (7 s on clusters of 256+ GPUs).
        ``blame``: which infeasible plan turns arrivals away — ``any`` (the artifact: any plan,
        even of an admitted job that had already fallen behind, rejects every arrival of the
        round) or ``new`` (arrivals are judged one by one in deadline order, and only a plan
        they made infeasible counts, so one late job or one hopeless newcomer does not close
        the door on everyone)."""
        if blame not in ("any", "new"):
            raise ValueError(f"'blame' must be 'any' or 'new' (got {blame!r})")
        self.blame = blame
        if rule not in HANDOUT_RULES:
            raise ValueError(f"'rule' must be one of {', '.join(HANDOUT_RULES)} (got {rule!r})")
        if round_overhead != "auto":
            try:
                if not float(round_overhead) >= 0:
                    raise ValueError
            except ValueError:
                raise ValueError(
                    f"'round_overhead' must be 'auto' or seconds ≥ 0 (got {round_overhead!r})"
                ) from None
        self.round_overhead = round_overhead
        super().__init__(cap="peak", slot=slot)
        self.rule = rule
        self.admission = admission
        self.handout = handout

    def reset(self, ctx: ReplayContext) -> None:
        super().reset(ctx)
        jobs = ctx.jobs
        self.levels: list[list[int]] = []
        self.curves: list[dict[int, float]] = []
        models_of: dict[int, list[str]] = {}
        for j in range(len(jobs)):
            batch = int(jobs.batch_size[j])
            mask = int(jobs.gpu_model_mask[j])
            if mask not in models_of:
                models_of[mask] = job_gpu_models(ctx.cluster, mask)
            if batch <= 0:
                cap = int(self.cap[j])
            else:
                name = str(jobs.model_name[j])
                caps = [elasticflow_cap(m, name, batch) for m in models_of[mask]]
                cap = max(caps, default=min(batch, DEFAULT_CAP))
            curve = ctx.perf.curve(jobs, j) if isinstance(ctx.perf, ThroughputTable) else None
            if curve:
                points = {n: float(r) for n, r in curve.items() if n <= cap and r > 0}
            else:
                points = {n: ctx.perf.rate(jobs, j, n, -1) for n in LEVELS if n <= cap}
            if self.levels_known is not None:  # a model that knows only some counts
                ok = set(runnable_counts(ctx.perf, jobs, j, ctx.cluster, sorted(points)))
                points = {n: r for n, r in points.items() if r > 0 and n in ok}
                if not points:
                    raise no_count_error(self.name, ctx.perf, jobs, j, cap)
            else:
                points = {n: r for n, r in points.items() if r > 0} or {
                    1: ctx.perf.rate(jobs, j, 1, -1)
                }
            self.curves.append(points)
            self.levels.append(sorted(points))
        self.admitted: set[int] = set()
        #: Jobs holding GPUs after the last decision, and the first time a plan changes its
        #: GPU count: a round where neither moved and nobody arrived has nothing to decide.
        self.holding: set[int] = set()
        self.next_change = math.inf
        self.slot_length = self.slot or 60.0
        if self.round_overhead == "auto":
            self.overhead_seconds = 7.0 if ctx.cluster.total_gpus >= 256 else 2.0
        else:
            self.overhead_seconds = float(self.round_overhead)

    def _request(self, snap: Snapshot, job: int) -> PlanRequest:
        curve = self.curves[job]
        remaining = float(snap.remaining_work(np.asarray([job]))[0])
        return PlanRequest(
            job, float(self.key[job]), remaining, curve.__getitem__, self.levels[job]
        )

    def decide(self, snap: Snapshot) -> list[Decision]:
        if between_rounds(snap.now, self.slot):
            return []
        total = snap.cluster.total_gpus
        active = {int(j) for j in np.concatenate([snap.running(), snap.pending()])}
        self.admitted &= active
        arrivals = sorted(active - self.admitted)
        running = {int(j) for j in snap.running()}
        if not arrivals and running == self.holding and snap.now < self.next_change:
            return []  # nothing happened since the last round: every plan still holds
        decisions: list[Decision] = []
        requests = {j: self._request(snap, j) for j in sorted(active)}
        admitted_requests = [requests[j] for j in sorted(self.admitted)]
        arrival_requests = [requests[j] for j in arrivals]
        if self.admission and arrivals:
            if self.blame == "new":
                result = self._admit_one_by_one(admitted_requests, arrival_requests, snap.now)
            else:
                result = admit(
                    admitted_requests, arrival_requests, snap.now, total, self.slot_length
                )
            for j in result.rejected:
                decisions.append(
                    Reject(
                        j,
                        "admission control: its deadline cannot be met "
                        "without breaking an admitted one",
                    )
                )
            self.admitted |= set(result.admitted)
            plans, timeline = result.plans, result.timeline
        else:
            self.admitted |= set(arrivals)
            plans, timeline, _ = plan_all(
                [*admitted_requests, *arrival_requests], snap.now, total, self.slot_length
            )
        target = self._targets(snap, requests, plans, timeline)
        changes = self._apply_targets(snap, target)
        decisions += changes
        self.holding = snap.running_after(changes)
        self.next_change = min(
            (
                t
                for j in self.admitted
                for start, stop, _ in plans[j].segments
                for t in (start, stop)
                if t > snap.now + 1e-9
            ),
            default=math.inf,
        )
        if self.overhead_seconds > 0 and self.holding:
            held = sorted(self.holding)
            decisions.append(Overheads(tuple(held), (self.overhead_seconds,) * len(held)))
        return decisions

    def _admit_one_by_one(
        self, admitted: list[PlanRequest], arrivals: list[PlanRequest], now: float
    ) -> Admission:
        """``blame=new``: arrivals in deadline order, each admitted unless it — with the ones
        admitted before it — makes a plan infeasible that was feasible without them."""
        total = self.ctx.cluster.total_gpus
        plans, timeline, _ = plan_all(admitted, now, total, self.slot_length)
        late = {j for j, plan in plans.items() if not plan.feasible}
        kept: list[PlanRequest] = []
        rejected: list[int] = []
        for a in sorted(arrivals, key=lambda r: (r.deadline, r.job)):
            step = admit([*admitted, *kept], [a], now, total, self.slot_length, late)
            if step.admitted:
                # The plans of everything admitted so far (a rejection leaves them as they are).
                kept.append(a)
                plans, timeline = step.plans, step.timeline
            else:
                rejected.append(a.job)
        return Admission([a.job for a in kept], rejected, plans, timeline)

    def _targets(
        self,
        snap: Snapshot,
        requests: dict[int, PlanRequest],
        plans: dict[int, Plan],
        timeline: FreeTimeline,
    ) -> dict[int, int]:
        """GPUs each admitted job holds until the next round: its plan now, after the hand-out."""
        if self.handout:
            order = sorted(self.admitted, key=lambda j: (requests[j].deadline, j))
            hand_out(requests, plans, timeline, snap.now, self.slot_length, self.rule, order)
        return {j: plans[j].gpus_at(snap.now) for j in self.admitted}
