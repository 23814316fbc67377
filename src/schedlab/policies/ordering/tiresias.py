"""``tiresias``: discretised two-dimensional least-attained-service (Gu et al., NSDI '19).

A job's priority queue is set by the GPU-seconds it has attained (GPUs × time held): queue 0 below
the first threshold, queue 1 below the second, and so on; lower queues run first, first come first
served within a queue. Running jobs are demoted as they cross a threshold, which may let a waiting
job preempt them. The starvation guard promotes a job back to queue 0 once it has waited
``starvation`` times as long as it has run; a promoted job's service is counted afresh from the
promotion, so it keeps queue 0 for a whole first quantum instead of being demoted (and preempted)
again at the next decision.

Under deadlines (the ElasticFlow study) Tiresias ignores them: every job runs at its requested GPU
count in queue order, none is rejected for its deadline, and a job past it still runs to the end (it
counts as a miss). The study runs it with the artifact's settings, ``thresholds=3250,7200`` and
``starvation=0`` (no promotion).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from schedlab.model.snapshot import PENDING, Snapshot
from schedlab.policies.api import PolicyContext
from schedlab.policies.ordering.base import Ordering

DEFAULT_THRESHOLDS = (3600.0,)
DEFAULT_STARVATION = 10.0


class Tiresias(Ordering):
    name = "tiresias"
    summary = "discretised 2D-LAS on attained GPU-time, with a starvation guard (preemptive)"
    preemptive = True
    static = False
    #: A promoted job's service counts from its promotion, which only this object remembers.
    stateful = True

    def __init__(
        self,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        starvation: float = DEFAULT_STARVATION,
    ) -> None:
        limits = [float(t) for t in thresholds]
        if not limits or any(t <= 0 for t in limits) or limits != sorted(limits):
            raise ValueError(f"'thresholds' must be increasing and > 0 (got {list(thresholds)})")
        if starvation < 0:
            raise ValueError(f"'starvation' must be ≥ 0 (0 turns the guard off; got {starvation})")
        self.thresholds = np.asarray(limits)
        self.starvation = float(starvation)

    def reset(self, ctx: PolicyContext) -> None:
        self.job_ids = ctx.jobs.job_id  # type: ignore[union-attr]
        self.service_base = np.zeros(len(self.job_ids))  # attained service at the last promotion

    def export_state(self) -> dict[str, Any]:
        promoted = np.flatnonzero(self.service_base)
        return {
            "service_base": {
                str(self.job_ids[j]): float(self.service_base[j]) for j in promoted.tolist()
            }
        }

    def import_state(self, state: Mapping[str, Any]) -> None:
        base = state.get("service_base") or {}
        for j, job_id in enumerate(self.job_ids.tolist()):
            if str(job_id) in base:
                self.service_base[j] = float(base[str(job_id)])

    def service(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        """Attained GPU-seconds that count for the queue (since the last promotion)."""
        return snap.attained(idx) - self.service_base[idx]

    def keys(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        if self.starvation > 0:
            executed = snap.executed(idx)
            waited = snap.now - snap.runtime.queued_since[idx]
            pending = snap.runtime.status[idx] == PENDING
            starving = pending & (executed > 0) & (waited >= self.starvation * executed)
            if starving.any():
                promoted = idx[starving]
                self.service_base[promoted] = snap.attained(promoted)
        queue = np.searchsorted(self.thresholds, self.service(snap, idx), side="right")
        return queue.astype(np.float64)

    def next_wakeup(self, snap: Snapshot) -> float:
        """The next threshold crossing of a running job, or the next starvation promotion."""
        soonest = np.inf
        running = snap.running()
        if len(running):
            # service() of jobs known to be running, in the same arithmetic, with fewer
            # numpy calls: this runs at every decision point.
            rt = snap.runtime
            held = rt.alloc_n[running]
            attained = rt.attained[running] + held * (snap.now - rt.run_started[running])
            attained -= self.service_base[running]
            nxt = np.searchsorted(self.thresholds, attained, side="right")
            has_next = nxt < len(self.thresholds)
            if has_next.all():
                gap = self.thresholds[nxt] - attained
                soonest = snap.now + float((gap / np.maximum(held, 1)).min())
            elif has_next.any():
                gpus = np.maximum(held[has_next], 1)
                gap = self.thresholds[nxt[has_next]] - attained[has_next]
                soonest = min(soonest, snap.now + float((gap / gpus).min()))
        if self.starvation > 0:
            pending = snap.pending()
            if len(pending):
                executed = snap.executed(pending)
                ran = executed > 0
                if ran.any():
                    due = snap.runtime.queued_since[pending[ran]] + self.starvation * executed[ran]
                    later = due[due > snap.now]
                    if len(later):
                        soonest = min(soonest, float(later.min()))
        return soonest
