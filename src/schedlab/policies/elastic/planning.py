"""ElasticFlow's planning primitives: a free-GPU timeline and the minimum satisfactory share.

ElasticFlow (ASPLOS '23) admits a job only if, after every earlier-deadline job has its plan, enough
GPU-time is left before the job's deadline; the *minimum satisfactory share* is the smallest GPU
level that finishes the job in time when run as late as possible. This module holds those pieces as
plain functions over a :class:`FreeTimeline` (free GPU counts, piecewise constant in time), so the
policy, its admission control and its GPU hand-out can share them and tests can check them by hand.
The rules follow the artifact's simulator, including its slot-aligned deadline and plan ends.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

#: Iterations per second of one job on n GPUs (n a level of its table).
Rate = Callable[[int], float]


def fit(levels: Sequence[int], x: float) -> int:
    """The largest level ≤ x (0 when none is)."""
    best = 0
    for level in levels:
        if level <= x:
            best = level
    return best


@dataclass
class FreeTimeline:
    """Free GPUs over time: ``count[i]`` from ``key[i]`` until ``key[i + 1]`` (the last forever)."""

    key: list[float]
    count: list[int]

    @classmethod
    def empty(cls, now: float, gpus: int) -> FreeTimeline:
        return cls([float(now)], [int(gpus)])

    def copy(self) -> FreeTimeline:
        return FreeTimeline(self.key[:], self.count[:])

    def at(self, t: float) -> int:
        i = bisect.bisect_right(self.key, t) - 1
        return self.count[max(i, 0)]

    def split(self, t: float) -> None:
        """Make ``t`` a breakpoint (no change in values)."""
        i = bisect.bisect_left(self.key, t)
        if i < len(self.key) and self.key[i] == t:
            return
        self.key.insert(i, float(t))
        self.count.insert(i, self.count[max(i - 1, 0)])

    def intervals(self, start: float, end: float) -> list[tuple[float, float, int]]:
        """``(from, to, free)`` pieces covering [start, end)."""
        self.split(start)
        self.split(end)
        i = self._index(start)
        out = []
        while i < len(self.key) and self.key[i] < end:
            out.append((self.key[i], self.key[i + 1], self.count[i]))
            i += 1
        return out

    def _index(self, t: float) -> int:
        """Position of the breakpoint ``t`` (which must exist)."""
        return bisect.bisect_left(self.key, t)

    def subtract(self, start: float, end: float, gpus: int) -> None:
        """Take ``gpus`` over [start, end) (a negative count gives them back)."""
        if gpus == 0 or end <= start:
            return
        self.split(start)
        self.split(end)
        lo, hi = self._index(start), self._index(end)
        count = self.count
        for i in range(lo, hi):
            count[i] -= gpus
            if count[i] < 0:
                raise ValueError(f"plan takes more GPUs than free at t={self.key[i]}")
        # Only the two edges can have become redundant: pieces inside moved together.
        for i in (hi, lo):
            if 0 < i < len(count) and count[i] == count[i - 1]:
                del self.key[i]
                del count[i]

    def tidy(self, *times: float) -> None:
        """Drop the breakpoints at ``times`` where the count does not change (splits made for a
        computation), so the timeline stays merged without a pass over all of it."""
        for t in times:
            i = self._index(t)
            if 0 < i < len(self.key) and self.key[i] == t and self.count[i] == self.count[i - 1]:
                del self.key[i]
                del self.count[i]


@dataclass
class Plan:
    """GPU counts over time for one job; ``real_end`` is when its work is done (ρ), ``end`` the
    slot-aligned end the timeline reserves until (E)."""

    share: int  # the level q that made the deadline (0: infeasible)
    segments: list[tuple[float, float, int]] = field(default_factory=list)  # (from, to, gpus)
    real_end: float = math.inf
    end: float = math.inf
    feasible: bool = True

    def gpus_at(self, t: float) -> int:
        for start, stop, n in self.segments:
            if start <= t < stop:
                return n
        return 0


def slot_ceil(origin: float, t: float, slot: float) -> float:
    """The first point of the grid ``origin + k · slot`` at or after ``t``."""
    return origin + slot * math.ceil((t - origin) / slot - 1e-12)


def minimum_satisfactory_share(
    timeline: FreeTimeline,
    now: float,
    deadline: float,
    remaining: float,
    rate: Rate,
    levels: Sequence[int],
    slot: float,
    reserve: bool = True,
) -> Plan:
    """Plan one job on ``timeline`` (which it then holds, unless ``reserve`` is False: a what-if
    plan that leaves the timeline as it was) as ElasticFlow does.

    For q = each level in turn, run the job as late as possible before its deadline using
    min(q, what is free) GPUs per interval; the first q whose work covers ``remaining`` is the
    share. The plan is then laid forwards from ``now``: the level below q until the point where
    the backward walk needed q, q from there. A job no level can finish in time gets a best-effort
    plan (``feasible`` False): the largest level free in every interval until its work is done.
    """
    total_gpus = max(timeline.count)
    aligned = slot_ceil(now, deadline, slot)
    timeline.split(aligned)
    pieces = timeline.intervals(now, aligned)
    share, start_full = 0, None
    for q in levels:
        if q > total_gpus:
            break
        done = 0.0
        for k, k_next, free in reversed(pieces):
            a = min(q, fit(levels, free))
            if a == 0:
                continue
            length = (min(deadline, k_next) if k_next == aligned else k_next) - k
            done += max(length, 0.0) * rate(a)
            if done >= remaining - 1e-9:
                share, start_full = q, k
                break
        if share:
            break
    if share:
        below = max((lv for lv in levels if lv < share), default=0)
        plan = lay_forward(
            timeline,
            now,
            remaining,
            rate,
            levels,
            slot,
            lambda k: share if k >= start_full else below,
            reserve,
        )
        plan.share = share
        plan.feasible = plan.real_end <= deadline + 1e-9
        timeline.tidy(aligned, now)
        return plan
    top = max((lv for lv in levels if lv <= total_gpus), default=0)
    plan = lay_forward(timeline, now, remaining, rate, levels, slot, lambda k: top, reserve)
    plan.share, plan.feasible = 0, False
    timeline.tidy(aligned, now)
    return plan


def lay_forward(
    timeline: FreeTimeline,
    now: float,
    remaining: float,
    rate: Rate,
    levels: Sequence[int],
    slot: float,
    level_from: Callable[[float], int],
    reserve: bool = True,
) -> Plan:
    """Run from ``now`` at min(level_from(k), largest free level) per interval until the work is
    done; reserve the GPUs on ``timeline`` until the slot-aligned end (if ``reserve``)."""
    plan = Plan(share=0)
    left = remaining
    timeline.split(now)
    i = timeline._index(now)
    while left > 1e-9:
        k = timeline.key[i]
        k_next = timeline.key[i + 1] if i + 1 < len(timeline.key) else math.inf
        n = min(level_from(k), fit(levels, timeline.count[i]))
        if n > 0:
            r = rate(n)
            if k + left / r <= k_next:
                real_end = k + math.ceil(left / r - 1e-9)
                plan.real_end = real_end
                plan.end = slot_ceil(k, real_end, slot)
                plan.segments.append((k, plan.end, n))
                left = 0.0
                break
            left -= (k_next - k) * r
            plan.segments.append((k, k_next, n))
        if k_next == math.inf:
            break  # nothing free forever: cannot finish
        i += 1
    if reserve:
        for start, stop, n in plan.segments:
            timeline.subtract(start, stop, n)
    timeline.tidy(now)
    plan.segments = _merged(plan.segments)
    return plan


def _merged(segments: list[tuple[float, float, int]]) -> list[tuple[float, float, int]]:
    """Consecutive segments with the same GPU count as one."""
    out: list[tuple[float, float, int]] = []
    for start, stop, n in segments:
        if out and out[-1][1] == start and out[-1][2] == n:
            out[-1] = (out[-1][0], stop, n)
        else:
            out.append((start, stop, n))
    return out
