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
import itertools
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

    The plan is computed on a read-only view of the timeline from ``now`` (see :func:`view_from`)
    and only its segments are taken from the timeline: the hand-out asks for many what-if plans
    per round, and splitting and tidying the shared timeline for each cost more than the planning.
    :func:`minimum_satisfactory_share_stepwise` is the plain form it must agree with.
    """
    aligned = slot_ceil(now, deadline, slot)
    if min(now, aligned) < timeline.key[0]:
        # A breakpoint before the timeline's first would stay behind: keep the plain form's way.
        return minimum_satisfactory_share_stepwise(
            timeline, now, deadline, remaining, rate, levels, slot, reserve
        )
    key, count = view_from(timeline.key, timeline.count, now, aligned)
    plan = plan_on_view(
        key, count, deadline, aligned, remaining, rate, levels, slot, max(timeline.count)
    )
    if reserve:
        for start, stop, n in plan.segments:
            timeline.subtract(start, stop, n)
        timeline.tidy(aligned, now)
    plan.segments = _merged(plan.segments)
    return plan


def view_from(
    key: list[float], count: list[int], now: float, aligned: float = math.inf
) -> tuple[list[float], list[int]]:
    """The timeline from ``now`` on as fresh lists, with breakpoints at ``now`` and ``aligned``
    (if it is later) put in as :meth:`FreeTimeline.split` would: planning must see exactly the
    pieces the stepwise form sees, because a plan's slot-aligned end is counted from the start of
    the piece it ends in. ``now`` must not precede ``key[0]``."""
    i = bisect.bisect_right(key, now)
    ks = key[i - 1 :]
    cs = count[i - 1 :]
    ks[0] = float(now)
    if aligned > now and aligned != math.inf:
        j = bisect.bisect_left(ks, aligned)
        if j == len(ks) or ks[j] != aligned:
            ks.insert(j, float(aligned))
            cs.insert(j, cs[j - 1])
    return ks, cs


def fitter(levels: Sequence[int]) -> Callable[[int], int]:
    """:func:`fit` for ``levels``: by bisection when they ascend (as every job's table does)."""
    if all(a <= b for a, b in itertools.pairwise(levels)):
        lv = list(levels)
        right = bisect.bisect_right

        def fast(x: float) -> int:
            i = right(lv, x)
            return lv[i - 1] if i else 0

        return fast
    return lambda x: fit(levels, x)


def plan_on_view(
    key: list[float],
    count: list[int],
    deadline: float,
    aligned: float,
    remaining: float,
    rate: Rate,
    levels: Sequence[int],
    slot: float,
    total_gpus: int,
) -> Plan:
    """:func:`minimum_satisfactory_share` on a view from :func:`view_from` (``key[0]`` is now,
    ``aligned`` a breakpoint of it if later); the segments are returned unmerged, as laid."""
    fitf = fitter(levels)
    now = key[0]
    pieces = bisect.bisect_left(key, aligned) if aligned > now else 0
    last = pieces - 1
    last_stop = min(deadline, aligned)
    # Fits are found lazily from the back: the walk for the smallest level often stops early.
    fits: list[int | None] = [None] * pieces
    share, start_full = 0, 0.0
    goal = remaining - 1e-9
    for q in levels:
        if q > total_gpus:
            break
        done = 0.0
        for p in range(last, -1, -1):
            f = fits[p]
            if f is None:
                f = fits[p] = fitf(count[p])
            a = min(q, f)
            if a == 0:
                continue
            length = (last_stop if p == last else key[p + 1]) - key[p]
            done += max(length, 0.0) * rate(a)
            if done >= goal:
                share, start_full = q, key[p]
                break
        if share:
            break
    if share:
        below = max((lv for lv in levels if lv < share), default=0)
        plan = lay_on_view(key, count, remaining, rate, fitf, slot, share, below, start_full)
        plan.share = share
        plan.feasible = plan.real_end <= deadline + 1e-9
        return plan
    top = max((lv for lv in levels if lv <= total_gpus), default=0)
    plan = lay_on_view(key, count, remaining, rate, fitf, slot, top, top, now)
    plan.share, plan.feasible = 0, False
    return plan


def lay_on_view(
    key: list[float],
    count: list[int],
    remaining: float,
    rate: Rate,
    fitf: Callable[[int], int],
    slot: float,
    level: int,
    before: int,
    switch: float,
) -> Plan:
    """:func:`lay_forward` on a view from :func:`view_from`, with ``level_from(k)`` being
    ``level`` for k ≥ ``switch`` and ``before`` earlier; nothing is reserved and the segments are
    returned unmerged."""
    plan = Plan(share=0)
    segments = plan.segments
    left = remaining
    last = len(key) - 1
    i = 0
    if before <= 0 and switch > key[0]:
        i = bisect.bisect_left(key, switch)  # no GPUs before the switch: nothing to lay there
    while left > 1e-9:
        k = key[i]
        k_next = key[i + 1] if i < last else math.inf
        n = min(level if k >= switch else before, fitf(count[i]))
        if n > 0:
            r = rate(n)
            if k + left / r <= k_next:
                real_end = k + math.ceil(left / r - 1e-9)
                plan.real_end = real_end
                plan.end = slot_ceil(k, real_end, slot)
                segments.append((k, plan.end, n))
                break
            left -= (k_next - k) * r
            segments.append((k, k_next, n))
        if k_next == math.inf:
            break  # nothing free forever: cannot finish
        i += 1
    return plan


def minimum_satisfactory_share_stepwise(
    timeline: FreeTimeline,
    now: float,
    deadline: float,
    remaining: float,
    rate: Rate,
    levels: Sequence[int],
    slot: float,
    reserve: bool = True,
) -> Plan:
    """:func:`minimum_satisfactory_share` computed by splitting the timeline itself (and tidying
    it afterwards): the plain form, for timelines that start after ``now`` and for tests."""
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
