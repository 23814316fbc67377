"""``suspend-resume``: run each job only in the cleanest carbon steps of its window.

At arrival a job gets the cheapest CI steps in [arrival, arrival + d + slack] that total its
oracle run time d (ties: earliest; the last one partial); adjacent chosen steps merge into one
run. The job runs only inside them — started at a window's start, preempted at its end, paying
``--restart-overhead`` at every resume. Windows it could not use because the cluster was full are
lost; once its last window has passed it runs whenever it fits, so every job finishes. Jobs start
in arrival order, each where the placement puts it; one that does not fit is skipped.
"""

from __future__ import annotations

import math

from schedlab.energy.shifting import cheapest_steps
from schedlab.model.snapshot import Decision, Preempt, Reject, Snapshot, Start
from schedlab.policies.api import never_fits
from schedlab.policies.carbon.base import SlackScheduler
from schedlab.policies.ordering.queue_scheduler import copy_state, give_back, take
from schedlab.policies.scheduler import ReplayContext, between_rounds


def merge(windows: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Touching intervals as one (so a run across two chosen steps is not interrupted)."""
    out: list[tuple[float, float]] = []
    for a, b in windows:
        if out and abs(out[-1][1] - a) <= 1e-9:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


class SuspendResume(SlackScheduler):
    name = "suspend-resume"
    summary = "run each job only in the lowest-carbon steps of its slack window"
    preemptive = True

    def reset(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        self.windows: dict[int, list[tuple[float, float]]] = {}

    def eligible(self, job: int, now: float) -> bool:
        """Inside one of its windows, or past all of them."""
        windows = self.windows.get(job, [])
        if not windows or now >= windows[-1][1] - 1e-9:
            return True
        return any(a - 1e-9 <= now < b - 1e-9 for a, b in windows)

    def decide(self, snap: Snapshot) -> list[Decision]:
        ci = self.carbon
        decisions: list[Decision] = []
        for job in snap.new_pending:
            why = never_fits(
                snap.cluster, int(snap.jobs.num_gpus[job]), int(snap.jobs.gpu_model_mask[job])
            )
            if why is not None:
                decisions.append(Reject(job, why))
                self.windows[job] = []
            elif job not in self.windows:
                d = self.oracle_seconds(snap, job)
                if math.isfinite(d):
                    slack = self.slack_of(snap, job, self.slack)
                    self.windows[job] = merge(cheapest_steps(ci, snap.now, d, slack))
        if between_rounds(snap.now, self.slot):
            return decisions
        jobs, rt = snap.jobs, snap.runtime
        scratch = copy_state(snap.state)
        refused = {d.job for d in decisions}
        for job in snap.running().tolist():
            if not self.eligible(job, snap.now):
                decisions.append(Preempt(job))
                alloc = rt.allocation[job]
                give_back(scratch, alloc, int(jobs.cpu_milli[job]), int(jobs.memory_mib[job]))
        waiting = sorted(snap.pending().tolist(), key=lambda j: (jobs.submit_time[j], j))
        for job in waiting:
            if job in refused or not self.eligible(job, snap.now):
                continue
            cpu, mem = int(jobs.cpu_milli[job]), int(jobs.memory_mib[job])
            alloc = self.ctx.placer.place(
                int(jobs.num_gpus[job]), cpu, mem, int(jobs.gpu_model_mask[job]), scratch, job=job
            )
            if alloc is not None:
                take(scratch, alloc, cpu, mem)
                decisions.append(Start(job, alloc))
        return decisions

    def next_wakeup(self, snap: Snapshot) -> float:
        wake = math.inf
        for job in (*snap.pending_set, *snap.running_set):
            for a, b in self.windows.get(job, []):
                for t in (a, b):
                    if t > snap.now + 1e-9:
                        wake = min(wake, t)
                        break
        return self.round_wakeup(snap, wake)
