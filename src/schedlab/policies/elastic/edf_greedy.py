"""``edf-greedy``: earliest deadline first with greedy GPU counts, no admission control.

Once per slot (every event without ``--slot``), and only when a job arrived or finished since the
last decision, all active jobs are re-sized from scratch in deadline order (ties by submit time;
jobs without a deadline last): each gets its maximum GPU count if that many are free, otherwise
the largest power-of-two level that is free, otherwise nothing — a running job left with nothing
is preempted. The maximum is, as in the ElasticFlow artifact's EDF, the largest power of two
≤ min(64, batch size, cluster) — even past the point where more GPUs stop helping — or, with
``cap="peak"``, no more than where the job's throughput peaks. No job is rejected and no
per-round overhead is charged (the artifact's EDF pays none). This is the EDF baseline of the
ElasticFlow (ASPLOS '23) artifact: early-deadline jobs take large shares and later ones miss (on
its 195-job testbed trace it meets 17 deadlines).
"""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.model.snapshot import Allocation, Decision, Preempt, Resize, Snapshot, Start
from schedlab.policies.api import REPLAY_ONLY
from schedlab.policies.elastic.counts import sized_levels
from schedlab.policies.ordering.queue_scheduler import copy_state, give_back, take
from schedlab.policies.scheduler import (
    ReplayContext,
    SchedulingPolicy,
    between_rounds,
    check_slot,
    next_round,
)

MAX_LEVEL = 64


def level_at_most(x: int) -> int:
    """The largest power of two ≤ x (0 when x < 1)."""
    return 0 if x < 1 else 1 << (int(x).bit_length() - 1)


def gpu_limits(ctx: ReplayContext, rule: str) -> np.ndarray:
    """Each job's most GPUs: at most 64, its batch size (one sample per GPU) and the cluster;
    with ``rule="peak"`` also no more than where its throughput stops growing."""
    jobs = ctx.jobs
    limits = np.empty(len(jobs), dtype=np.int64)
    for j in range(len(jobs)):
        limit = min(MAX_LEVEL, ctx.cluster.total_gpus)
        if jobs.batch_size[j] > 0:
            limit = min(limit, int(jobs.batch_size[j]))
        if rule == "peak":
            limit = ctx.perf.max_useful_gpus(jobs, j, limit)
        limits[j] = limit
    return limits


def job_levels(
    policy: str, ctx: ReplayContext, rule: str
) -> tuple[np.ndarray, list[list[int]] | None]:
    """Each job's cap and, when the performance model declares the GPU counts it knows (a
    throughput matrix), each job's counts up to its limit that run on the cluster — the cap is
    then the largest of them. Levels None: the caps are the powers of two at most the limits."""
    limits = gpu_limits(ctx, rule)
    levels = sized_levels(policy, ctx.perf, ctx.jobs, ctx.cluster, limits)
    if levels is None:
        return np.array([level_at_most(int(n)) for n in limits], dtype=np.int64), None
    return np.array([lv[-1] for lv in levels], dtype=np.int64), levels


def greedy_sizes(
    order: list[int], cap: np.ndarray, gpus: int, levels: list[list[int]] | None = None
) -> dict[int, int]:
    """EDF's sizing: in ``order``, each job its cap if that many GPUs are free, else the largest
    level that is (of its ``levels`` when given, powers of two otherwise); jobs after the GPUs
    run out are left out (they get none)."""
    free = gpus
    target: dict[int, int] = {}
    for job in order:
        if free == 0:
            break
        want = int(cap[job])
        if free >= want:
            n = want
        elif levels is None:
            n = level_at_most(free)
        else:
            n = max((x for x in levels[job] if x <= free), default=0)
        target[job] = n
        free -= n
    return target


class ElasticEdf(SchedulingPolicy):
    name = "edf-greedy"
    summary = "deadline order, each job given up to 64 GPUs (ElasticFlow's EDF baseline)"
    elastic = True  # it sizes every job itself

    preemptive = True
    stateful = True
    #: It resizes running jobs, which Slurm cannot do: replay only.
    engines = REPLAY_ONLY

    def __init__(self, cap: str = "table", slot: float | None = None) -> None:
        if cap not in ("table", "peak"):
            raise ValueError(f"'cap' must be 'table' or 'peak' (got {cap!r})")
        self.cap_rule = cap
        #: Decide once per round of this many seconds (None: at every event).
        self.slot = check_slot(slot)

    def reset(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        jobs = ctx.jobs
        self.cap, self.levels_known = job_levels(self.name, ctx, self.cap_rule)
        deadline = jobs.deadline
        self.key = np.where(np.isfinite(deadline), deadline, np.inf)
        self.arrivals_seen = 0
        self.last_signature: tuple[int, int] = (-1, -1)

    def next_wakeup(self, snap: Snapshot) -> float:
        if self.slot is None or not (snap.pending_set or snap.running_set):
            return float("inf")
        return next_round(snap.now, self.slot)

    def decide(self, snap: Snapshot) -> list[Decision]:
        self.arrivals_seen += len(snap.new_pending)
        if between_rounds(snap.now, self.slot):
            return []
        # The active set changes only by arrivals and completions (this policy's own rejections
        # and preemptions aside): if neither happened, sizing from scratch gives the same answer.
        signature = (self.arrivals_seen, len(snap.pending_set) + len(snap.running_set))
        if signature == self.last_signature:
            return []
        self.last_signature = signature
        active = np.concatenate([snap.running(), snap.pending()])
        if len(active) == 0:
            return []
        order = active[np.lexsort((active, snap.jobs.submit_time[active], self.key[active]))]
        target = greedy_sizes(order.tolist(), self.cap, snap.cluster.total_gpus, self.levels_known)
        for job in snap.running().tolist():
            target.setdefault(int(job), 0)  # running, but no GPUs left for it: preempted
        return self._apply_targets(snap, target)

    def _apply_targets(self, snap: Snapshot, target: dict[int, int]) -> list[Decision]:
        rt, jobs = snap.runtime, snap.jobs
        scratch: ClusterState = copy_state(snap.state)
        changed = [j for j, n in target.items() if int(rt.alloc_n[j]) != n]
        for j in changed:
            if rt.allocation[j] is not None:
                give_back(
                    scratch, rt.allocation[j], int(jobs.cpu_milli[j]), int(jobs.memory_mib[j])
                )
        decisions: list[Decision] = []
        for j in sorted(changed, key=lambda j: -target[j]):
            n = target[j]
            alloc: Allocation | None = None
            if n > 0:
                alloc = self.ctx.placer.place(
                    n,
                    int(jobs.cpu_milli[j]),
                    int(jobs.memory_mib[j]),
                    int(jobs.gpu_model_mask[j]),
                    scratch,
                    job=j,
                )
            running = rt.allocation[j] is not None
            if alloc is not None:
                take(scratch, alloc, int(jobs.cpu_milli[j]), int(jobs.memory_mib[j]))
                decisions.append(Resize(j, alloc) if running else Start(j, alloc))
            elif running:
                decisions.append(Preempt(j))
            if n > 0 and alloc is None:
                self.last_signature = (-1, -1)  # retry the placement at the next round
        return decisions
