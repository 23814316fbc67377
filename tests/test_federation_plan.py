"""``W_k`` kept between dispatches (schedlab.federation.plan) gives, call for call, the number a
from-scratch placement of the whole queue gives — checked against a brute-force reference over
random histories of a site: arrivals, starts in and out of turn, completions, withdrawals,
running jobs slowing down, time passing."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.federation.plan import QueuePlan
from schedlab.federation.profile import Profile

INF = math.inf


def reference(free, releases, queued, need, seconds, now) -> float:
    """The rule of docs/federation.md, written out plainly: each queued job in turn at the first
    time ≥ the one ahead's start (≥ now) with its GPUs free throughout its run."""
    events = [(t, g) for t, g in releases]

    def level(t: float) -> float:
        return free + sum(g for et, g in events if et <= t)

    def fits(size: int, t0: float, run: float) -> float:
        for c in [t0, *sorted({et for et, _ in events if et > t0})]:
            inside = [et for et, _ in events if c < et < c + run]
            if level(c) >= size and all(level(et) >= size for et in inside):
                return c
        return INF

    t_prev = now
    for size, run in queued:
        start = fits(size, t_prev, run)
        if start == INF:
            return INF
        events += [(start, -size), (start + run, size)]
        t_prev = start
    return fits(need, t_prev, seconds)


def test_hand_profile() -> None:
    # 8 GPUs, 4 free now; 4 come back at 100. Queue: 6 GPUs for 50 s (starts at 100), then
    # 2 GPUs for 10 s (not before the one ahead: at 100, beside it); 4 more GPUs: at 150
    releases, queue = [(100.0, 4)], [(6, 50.0), (2, 10.0)]
    assert reference(4, releases, queue[:1], 2, 10.0, 0.0) == 100.0  # not before the head
    assert reference(4, releases, queue, 4, 10.0, 0.0) == 150.0
    profile = Profile.from_events(4, np.array([100.0]), np.array([4.0]))
    assert profile.fits(6, 0.0, 50.0) == 100.0 and profile.fits(4, 0.0, 100.0) == 0.0
    assert profile.fits(4, 0.0, 100.5) == 0.0 and profile.fits(5, 0.0, 1.0) == 100.0
    profile.take(100.0, 50.0, 6)
    assert profile.fits(3, 0.0, 120.0) == 150.0 and profile.fits(2, 0.0, 120.0) == 0.0
    assert profile.fits(9, 0.0, 1.0) == math.inf
    plan = QueuePlan()
    entry = dict(zip([7, 8], queue, strict=True)).__getitem__
    args = (np.array([100.0]), np.array([4.0]))
    plan.update(0.0, 4, *args, [7, 8], entry)
    assert plan.wait(0.0, 4, 10.0) == 150.0
    assert plan.start_of(7) == 100.0 and plan.start_of(8) == 100.0
    # later, nothing changed: the plan is kept
    plan.update(50.0, 4, *args, [7, 8], entry)
    assert plan.wait(50.0, 4, 10.0) == 150.0 and (plan.kept, plan.rebuilt) == (1, 1)


op = st.one_of(
    st.tuples(st.just("arrive"), st.sampled_from([1, 2, 4, 8]), st.sampled_from([5.0, 30, 7.5])),
    st.tuples(st.just("time"), st.sampled_from([1.0, 2.5, 10, 33.3]), st.just(0)),
    st.tuples(st.just("start"), st.integers(0, 5), st.just(0)),
    st.tuples(st.just("withdraw"), st.integers(0, 5), st.just(0)),
    st.tuples(st.just("head"), st.just(0), st.just(0)),
    st.tuples(st.just("delay"), st.integers(0, 5), st.sampled_from([4.0, 40.0])),
)


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(op, min_size=1, max_size=40),
    need=st.sampled_from([1, 4, 8]),
    seconds=st.sampled_from([3.0, 20.0]),
)
def test_the_kept_plan_gives_what_a_fresh_placement_gives(ops, need, seconds) -> None:
    """A site of 8 GPUs. Every call of the plan equals the brute-force placement."""
    total, now = 8, 0.0
    running: dict[int, tuple[float, int]] = {}  # job → (release time, GPUs)
    queue: list[int] = []
    shape: dict[int, tuple[int, float]] = {}
    plan = QueuePlan()
    next_id = 0
    for kind, a, b in ops:
        free = total - sum(g for _, g in running.values())
        if kind == "arrive":
            shape[next_id] = (a, float(b))
            queue.append(next_id)
            next_id += 1
        elif kind == "time":  # time passes; jobs whose release came end then
            now += a
            for job in [j for j, (t, _) in running.items() if t <= now]:
                del running[job]
        elif kind in ("start", "head") and queue:  # a job starts now if it fits (any of the queue)
            job = queue[0] if kind == "head" else queue[a % len(queue)]
            size, run = shape[job]
            if size <= free:
                queue.remove(job)
                running[job] = (now + run, size)
        elif kind == "withdraw" and queue:
            queue.pop(a % len(queue))
        elif kind == "delay" and running:  # a running job slows down: it ends later
            job = sorted(running)[a % len(running)]
            running[job] = (running[job][0] + b, running[job][1])
        free = total - sum(g for _, g in running.values())
        releases = list(running.values())
        rel_t = np.array([t for t, _ in releases], dtype=np.float64)
        rel_g = np.array([g for _, g in releases], dtype=np.float64)
        queued = [shape[j] for j in queue]
        want = reference(free, releases, queued, need, seconds, now)
        plan.update(now, free, rel_t, rel_g, list(queue), shape.__getitem__)
        assert plan.wait(now, need, seconds) == want
        for job in queue:  # each queued job's own place in line
            ahead = [shape[j] for j in queue[: queue.index(job)]]
            assert plan.start_of(job) == reference(free, releases, ahead, *shape[job], now)
