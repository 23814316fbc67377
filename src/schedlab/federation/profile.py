"""A site's GPU-count profile: how many GPUs are free from each instant on, as a step function.

``W_k`` (docs/federation.md) places the queued jobs on it one after the other, each at the first
time with its GPUs free throughout its run. The profile is kept as its change points (sorted,
each once) and the level from each, in plain lists: a placement looks at the points from its
earliest time on and stops at the first that fits (it skips past any point that blocks a run,
since every time before it would be blocked too), and adding a placement is two insertions —
no sort, and no work on the part of the profile before the placement.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

import numpy as np

INF = math.inf


class Profile:
    """Free GPUs over time: ``base`` before the first change point, ``levels[i]`` from
    ``times[i]`` on (every event of that instant applied)."""

    def __init__(self, base: float, times: list[float], levels: list[float]) -> None:
        self.base = float(base)
        self.times = times
        self.levels = levels

    @classmethod
    def from_events(cls, free: float, times: np.ndarray, deltas: np.ndarray) -> Profile:
        """``free`` GPUs, and ``deltas[i]`` more from ``times[i]`` on (in any order)."""
        order = np.argsort(times, kind="stable")
        t = times[order]
        levels = free + np.cumsum(deltas[order], dtype=np.float64)
        last = np.empty(len(t), dtype=bool)
        if len(t):
            last[:-1] = t[1:] != t[:-1]
            last[-1] = True
        return cls(free, t[last].tolist(), levels[last].tolist())

    def level_at(self, t: float) -> float:
        i = bisect_right(self.times, t)
        return self.levels[i - 1] if i else self.base

    def fits(self, size: int, t0: float, seconds: float) -> float:
        """The first time ``t ≥ t0`` with ``size`` GPUs free throughout ``[t, t + seconds)``:
        ``t0`` itself or a change point after it (INF: never)."""
        times, levels = self.times, self.levels
        n = len(times)
        j = bisect_right(times, t0)  # the first change point after the candidate
        t, level = t0, (levels[j - 1] if j else self.base)
        while True:
            if level >= size:
                end = t + seconds
                k = j
                while k < n and times[k] < end and levels[k] >= size:
                    k += 1
                if k == n or times[k] >= end:
                    return t
                j = k + 1  # every time up to times[k] would run into it
            if j >= n:
                return INF
            t, level = times[j], levels[j]
            j += 1

    def _point(self, t: float) -> int:
        """The index of the change point at ``t`` (made, at the level holding there, if there
        is none)."""
        times, levels = self.times, self.levels
        i = bisect_left(times, t)
        if i == len(times) or times[i] != t:
            times.insert(i, t)
            levels.insert(i, levels[i - 1] if i else self.base)
        return i

    def take(self, start: float, seconds: float, size: int) -> None:
        """``size`` GPUs held over ``[start, start + seconds)``."""
        i = self._point(start)
        k = self._point(start + seconds)
        levels = self.levels
        for x in range(i, k):
            levels[x] -= size

    def from_time(self, now: float) -> tuple[float, list[float], list[float]]:
        """The profile from ``now`` on: the level at ``now``, then each later time where the
        level changes and the level from there (a point where it stays the same is dropped)."""
        i = bisect_right(self.times, now)
        level = self.level_at(now)
        times: list[float] = []
        levels: list[float] = []
        for t, v in zip(self.times[i:], self.levels[i:], strict=True):
            if v != level:
                times.append(t)
                levels.append(v)
                level = v
        return self.level_at(now), times, levels
