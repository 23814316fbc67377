"""The replay engine's queue of job completions.

Every decision that changes a running job's speed or charges it an overhead re-issues its
completion; a round-based policy does so for every running job at every round. A plain heap
pushes each re-issue and leaves the old entry behind, stale, to be popped when its time comes:
most of the heap's work is then on entries that no longer count.

Here each job keeps at most one *armed* entry in the heap. A re-issue later than the armed entry
(the usual case: an overhead moves the completion back) is only recorded; when the armed entry
surfaces, the recorded completion is pushed with the time and sequence number it was issued
with. A re-issue earlier than the armed entry is pushed at once. Entries surface in the same
``(time, seq)`` order as the plain heap's live entries, so a run is the same event for event:
any live completion earlier than the heap's head would have an armed entry earlier still, which
would be in the heap.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable

INF = float("inf")
NAN = float("nan")  # "no armed entry": ``at >= NAN`` is false, so the next re-issue is pushed


class CompletionQueue:
    """Completions of ``n`` jobs, one live completion (or none) per job.

    ``version[job]`` counts the job's re-issues; an entry of an older version is stale.
    """

    __slots__ = ("armed_at", "armed_seq", "heap", "later_at", "later_seq", "seq", "version")

    def __init__(self, n: int) -> None:
        self.version = [0] * n
        self.heap: list[tuple[float, int, int, int]] = []  # (time, seq, job, version)
        self.seq = 0
        self.armed_at = [NAN] * n  # time of the job's entry in the heap (NAN: none)
        self.armed_seq = [0] * n  # its sequence number (0: none)
        self.later_at = [0.0] * n  # the live completion not yet pushed, behind the armed one
        self.later_seq = [0] * n  # its sequence number (0: none)

    def issue(self, job: int, at: float) -> None:
        """The job's completion is now due at ``at``; the one issued before no longer counts."""
        v = self.version[job] + 1
        self.version[job] = v
        self.seq = seq = self.seq + 1
        if at >= self.armed_at[job]:
            self.later_at[job] = at
            self.later_seq[job] = seq
        else:
            heapq.heappush(self.heap, (at, seq, job, v))
            self.armed_at[job] = at
            self.armed_seq[job] = seq
            self.later_seq[job] = 0

    def issue_all(self, jobs: Iterable[int], times: Iterable[float]) -> None:
        """:meth:`issue` for each job in turn (distinct jobs), without a call per job."""
        version, heap, push = self.version, self.heap, heapq.heappush
        armed_at, armed_seq, later_at, later_seq = (
            self.armed_at,
            self.armed_seq,
            self.later_at,
            self.later_seq,
        )
        seq = self.seq
        for job, at in zip(jobs, times, strict=True):
            v = version[job] + 1
            version[job] = v
            seq += 1
            if at >= armed_at[job]:
                later_at[job] = at
                later_seq[job] = seq
            else:
                push(heap, (at, seq, job, v))
                armed_at[job] = at
                armed_seq[job] = seq
                later_seq[job] = 0
        self.seq = seq

    def void(self, job: int) -> None:
        """The job has no completion (it stopped, or makes no progress)."""
        self.version[job] += 1
        self.later_seq[job] = 0

    def _surfaced(self, seq: int, job: int) -> None:
        """An entry of ``job`` left the heap: if it was the armed one, arm the recorded
        completion (if any) in its place."""
        if seq != self.armed_seq[job]:
            return
        later = self.later_seq[job]
        if later:
            at = self.later_at[job]
            self.later_seq[job] = 0
            heapq.heappush(self.heap, (at, later, job, self.version[job]))
            self.armed_at[job] = at
            self.armed_seq[job] = later
        else:
            self.armed_at[job] = NAN
            self.armed_seq[job] = 0

    def next_time(self, live: Callable[[int], bool]) -> float:
        """When the earliest live completion is due (INF: none). Entries that no longer count
        (re-issued, voided, or of a job ``live`` rejects) are dropped on the way."""
        heap, version, pop = self.heap, self.version, heapq.heappop
        while heap:
            _, seq, job, v = heap[0]
            if v == version[job] and live(job):
                return heap[0][0]
            pop(heap)
            self._surfaced(seq, job)
        return INF

    def pop_due(self, now: float, live: Callable[[int], bool]) -> int:
        """The job of the next live completion due at or before ``now`` (-1: none), taken off."""
        heap, version, pop = self.heap, self.version, heapq.heappop
        while heap and heap[0][0] <= now:
            _, seq, job, v = pop(heap)
            self._surfaced(seq, job)
            if v == version[job] and live(job):
                return job
        return -1
