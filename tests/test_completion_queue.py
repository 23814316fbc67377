"""The replay engine's completion queue against a plain heap of every re-issue.

The queue defers re-issues later than a job's armed entry; a plain heap pushes every re-issue
and drops stale entries as they surface. Both must surface the same live completions in the
same order, at the same times, whatever the interleaving of re-issues, voids and time steps.
"""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.engines.completions import INF, CompletionQueue


class PlainHeap:
    """Every re-issue pushed; an entry counts while its version is the job's latest."""

    def __init__(self, n: int) -> None:
        self.version = [0] * n
        self.heap: list[tuple[float, int, int, int]] = []
        self.seq = 0

    def issue(self, job: int, at: float) -> None:
        self.version[job] += 1
        self.seq += 1
        heapq.heappush(self.heap, (at, self.seq, job, self.version[job]))

    def void(self, job: int) -> None:
        self.version[job] += 1

    def next_time(self, live) -> float:
        while self.heap:
            _, _, job, v = self.heap[0]
            if v == self.version[job] and live(job):
                return self.heap[0][0]
            heapq.heappop(self.heap)
        return INF

    def pop_due(self, now: float, live) -> int:
        while self.heap and self.heap[0][0] <= now:
            _, _, job, v = heapq.heappop(self.heap)
            if v == self.version[job] and live(job):
                return job
        return -1


N_JOBS = 5
# Few distinct offsets, so that equal times (ordered by sequence number) are common.
OFFSETS = st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, 3.0, 7.5])
STEP = st.one_of(
    st.tuples(st.just("issue"), st.integers(0, N_JOBS - 1), OFFSETS),
    st.tuples(st.just("all"), st.permutations(range(N_JOBS)), st.lists(OFFSETS, min_size=5)),
    st.tuples(st.just("void"), st.integers(0, N_JOBS - 1), st.just(0.0)),
    st.tuples(st.just("stop"), st.integers(0, N_JOBS - 1), st.just(0.0)),
    st.tuples(st.just("go"), st.integers(0, N_JOBS - 1), st.just(0.0)),
    st.tuples(st.just("advance"), st.just(0), st.sampled_from([0.0, 0.5, 1.0, 2.5])),
)


def replay(queue, steps) -> list[tuple]:
    """Run ``steps`` on ``queue``; the trace of what it surfaced (and its head times)."""
    now, running, trace = 0.0, set(range(N_JOBS)), []
    live = running.__contains__
    for kind, job, value in steps:
        if kind == "issue":
            queue.issue(job, now + value)
        elif kind == "all":
            times = [now + v for v in value[: len(job)]]
            jobs = list(job)[: len(times)]
            if isinstance(queue, CompletionQueue):
                queue.issue_all(jobs, times)
            else:
                for j, at in zip(jobs, times, strict=True):
                    queue.issue(j, at)
        elif kind == "void":
            queue.void(job)
        elif kind == "stop":  # the job stops without its completion being voided
            running.discard(job)
        elif kind == "go":
            running.add(job)
        else:
            head = queue.next_time(live)
            trace.append(("head", head))
            if head == INF:
                continue
            now = max(now, head) + value
            while (done := queue.pop_due(now, live)) >= 0:
                trace.append(("done", done, now))
                queue.void(done)
    trace.append(("end", queue.next_time(live)))
    return trace


@settings(max_examples=300, deadline=None)
@given(st.lists(STEP, max_size=60))
def test_queue_surfaces_what_a_plain_heap_surfaces(steps) -> None:
    assert replay(CompletionQueue(N_JOBS), steps) == replay(PlainHeap(N_JOBS), steps)


def test_later_reissue_is_deferred_and_earlier_one_pushed() -> None:
    q = CompletionQueue(2)
    q.issue(0, 10.0)
    q.issue(0, 12.0)  # later than the armed entry: recorded, not pushed
    assert len(q.heap) == 1
    q.issue(0, 4.0)  # earlier: pushed at once
    assert len(q.heap) == 2
    q.issue(1, 6.0)
    assert q.next_time(lambda j: True) == 4.0
    assert q.pop_due(5.0, lambda j: True) == 0
    q.void(0)
    assert q.next_time(lambda j: True) == 6.0


def test_deferred_completion_surfaces_with_its_own_time() -> None:
    q = CompletionQueue(1)
    q.issue(0, 3.0)
    q.issue(0, 9.0)  # live one, behind the armed 3.0
    assert q.pop_due(8.0, lambda j: True) == -1  # the 3.0 entry is stale: 9.0 armed instead
    assert q.next_time(lambda j: True) == 9.0
    assert q.pop_due(9.0, lambda j: True) == 0
    assert q.next_time(lambda j: True) == INF
