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

import heapq
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from schedlab.model.snapshot import PENDING, RUNNING, RunWatch, Snapshot
from schedlab.policies.api import PolicyContext
from schedlab.policies.ordering.base import Ordering

DEFAULT_THRESHOLDS = (3600.0,)
DEFAULT_STARVATION = 10.0
#: Up to this many jobs, keys are computed one by one in Python rather than with numpy.
FEW = 4


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
        self._limits = limits
        self.starvation = float(starvation)

    def reset(self, ctx: PolicyContext) -> None:
        self.job_ids = ctx.jobs.job_id  # type: ignore[union-attr]
        self.service_base = np.zeros(len(self.job_ids))  # attained service at the last promotion
        # Each running job's next threshold crossing, kept in a heap as jobs start and stop
        # (read from the runtime's size log), so that a wake-up costs a heap look, not a pass
        # over every running job. An entry is live while its stamp is the job's latest.
        self._watch = RunWatch()
        self._crossings: list[tuple[float, int, int]] = []  # (time, job, stamp)
        self._stamp: dict[int, int] = {}
        self._stamps = 0

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
        if len(idx) <= FEW:
            return self._few_keys(snap, idx)
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

    def _few_keys(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        """:meth:`keys` of a handful of jobs (an arrival's) one by one, in the same arithmetic:
        numpy's cost per call would outweigh the work."""
        rt, now, base = snap.runtime, snap.now, self.service_base
        out = []
        for job in idx.tolist():
            running = rt.status.item(job) == RUNNING
            ran = now - rt.run_started.item(job) if running else 0.0
            if self.starvation > 0 and rt.status.item(job) == PENDING:
                executed = rt.executed.item(job) + ran
                if executed > 0 and now - rt.queued_since.item(job) >= self.starvation * executed:
                    base[job] = rt.attained.item(job) + rt.alloc_n.item(job) * ran
            service = rt.attained.item(job) + rt.alloc_n.item(job) * ran - base.item(job)
            out.append(float(bisect_right(self._limits, service)))
        return np.array(out, dtype=np.float64)

    def next_wakeup(self, snap: Snapshot) -> float:
        """The next threshold crossing of a running job, or the next starvation promotion."""
        soonest = self._next_crossing(snap)
        if self.starvation > 0 and snap.pending_set:
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

    def _crossing(self, snap: Snapshot, job: int) -> float:
        """When running ``job`` crosses its next threshold at its current size (inf: past the
        last one). The arithmetic of :meth:`service`, one job at a time."""
        rt = snap.runtime
        held = rt.alloc_n.item(job)
        attained = rt.attained.item(job) + held * (snap.now - rt.run_started.item(job))
        attained -= self.service_base.item(job)
        nxt = bisect_right(self._limits, attained)
        if nxt >= len(self._limits):
            return np.inf
        return snap.now + (self._limits[nxt] - attained) / max(held, 1)

    def _track(self, snap: Snapshot, job: int) -> None:
        """(Re)enter ``job``'s crossing; older entries of it go stale."""
        self._stamps += 1
        self._stamp[job] = self._stamps
        if snap.runtime.status.item(job) == RUNNING:
            when = self._crossing(snap, job)
            if when < np.inf:
                heapq.heappush(self._crossings, (when, job, self._stamps))

    def _next_crossing(self, snap: Snapshot) -> float:
        """The earliest threshold crossing among the running jobs (inf: none)."""
        changed = self._watch.changed(snap.runtime)
        heap = self._crossings
        if changed is None:  # a runtime not seen before: every running job afresh
            heap.clear()
            self._stamp.clear()
            for job in snap.running_set:
                self._track(snap, job)
        else:
            for job in changed:
                self._track(snap, job)
        status, stamp = snap.runtime.status, self._stamp
        while heap:
            when, job, mark = heap[0]
            if stamp.get(job) != mark or status.item(job) != RUNNING:
                heapq.heappop(heap)  # stopped or changed size since: a stale entry
                continue
            # The time as computed now (a job past its crossing has a later one, or none).
            exact = self._crossing(snap, job)
            if exact == when:
                return when
            if exact < np.inf:
                heapq.heapreplace(heap, (exact, job, mark))
            else:
                heapq.heappop(heap)
        return np.inf
