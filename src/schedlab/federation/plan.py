"""``W_k`` kept between dispatches: a site's queue placed first-come-first-served on its GPU-count
profile, re-used as long as it still holds.

Placing every queued job on the profile at every call costs O(queue) profile searches per
dispatch and site, slow once a site collects hundreds of jobs. :class:`QueuePlan` keeps those
placements and, at the next call, checks — exactly, on numbers, not on a list of events it was
told about — what it may keep:

- jobs that joined the back of the queue since (an arrival, a transfer that ended) are placed
  after the others, as a fresh placement would place them;
- jobs that left the head of the queue by starting as planned, and running jobs that ended
  when their release said, leave the profile from now on unchanged: the placements of the rest
  stand. The check is that the site's profile from now on (free GPUs, running jobs' releases)
  equals the kept profile with the started jobs' placements in it, as step functions, and that
  now lies between the last started job's planned start and the next one's;
- anything else (a job withdrawn, started out of turn or late, a release that moved) rebuilds
  the plan from scratch.

Why it is exact: a placement ("the first time ≥ t_prev with ``size`` GPUs free throughout the
run") depends only on the profile from t_prev on; and if the first queued job's placement from
an earlier t_prev is at or after now, no earlier time from now on fits either. So the kept
placements are the ones a fresh computation gives, number for number.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from schedlab.federation.profile import Profile

INF = math.inf


class QueuePlan:
    """One site's queue placed on its profile, kept between calls (see the module)."""

    def __init__(self) -> None:
        self.valid = False
        self.t0 = 0.0  # the placements hold for a call at any time from t0 to the first start
        self.free = 0
        self.rel_t = np.zeros(0)
        self.rel_g = np.zeros(0)
        self.jobs: list[int] = []
        self.pos: dict[int, int] = {}
        self.size: list[int] = []
        self.run: list[float] = []
        self.start: list[float] = []
        self.profile = Profile(0, [], [])  # the releases and placements
        #: calls that kept the plan (wholly or in part) and calls that rebuilt it
        self.kept = 0
        self.rebuilt = 0

    def wait(self, now: float, need: int, seconds: float) -> float:
        """``W`` (after :meth:`update`): when ``need`` GPUs are free for ``seconds`` behind the
        whole queue, each queued job placed in turn at the first time, not before the one
        ahead's start, with its GPUs free throughout its run."""
        t_prev = self.start[-1] if self.jobs else now
        if not math.isfinite(t_prev):
            return INF
        return self.profile.fits(need, t_prev, seconds)

    def start_of(self, job: int) -> float:
        """The planned start of a job of the queue last given (after :meth:`update`)."""
        return self.start[self.pos[job]]

    # -- keeping the plan up to date -----------------------------------------------------------
    def update(
        self,
        now: float,
        free: int,
        rel_t: np.ndarray,
        rel_g: np.ndarray,
        queue: list[int],
        entry: Callable[[int], tuple[int, float]],
    ) -> None:
        """Make the plan that of ``queue`` at ``now`` with these free GPUs and releases."""
        kept = self._keep(now, free, rel_t, rel_g, queue) if self.valid else None
        if kept is None:
            self._reset(now, free, rel_t, rel_g)
            self.rebuilt += 1
            kept = 0
        else:
            self.kept += 1
        for job in queue[kept:]:
            self._place(job, *entry(job))

    def _keep(
        self, now: float, free: int, rel_t: np.ndarray, rel_g: np.ndarray, queue: list[int]
    ) -> int | None:
        """How many of ``queue``'s jobs the plan keeps (then trimmed to them), or None."""
        n = len(self.jobs)
        m = self.pos[queue[0]] if queue and queue[0] in self.pos else n
        left = n - m
        if self.jobs[m:] != queue[:left]:
            return None
        before = self.start[m - 1] if m else self.t0
        after = self.start[m] if m < n else INF
        if not (before <= now <= after) or not math.isfinite(before):
            return None
        if m or free != self.free or not _same_events(rel_t, rel_g, self.rel_t, self.rel_g):
            gone_t = [self.start[k] for k in range(m)] + [self.start[k] + self.run[k]
                                                           for k in range(m)]  # fmt: skip
            gone_g = [-self.size[k] for k in range(m)] + self.size[:m]
            kept = Profile.from_events(
                self.free,
                np.concatenate((self.rel_t, np.array(gone_t, dtype=np.float64))),
                np.concatenate((self.rel_g, np.array(gone_g, dtype=np.float64))),
            ).from_time(now)
            fresh = Profile.from_events(free, rel_t, rel_g).from_time(now)
            if kept != fresh:
                return None
        # the profile from now on is the same: keep the placements of the jobs still queued
        self.t0, self.free = now, free
        self.rel_t, self.rel_g = rel_t, rel_g
        self.jobs, self.size, self.run, self.start = (
            self.jobs[m:], self.size[m:], self.run[m:], self.start[m:]
        )  # fmt: skip
        if m:
            self.pos = {job: i for i, job in enumerate(self.jobs)}
        runs = np.array(self.run, dtype=np.float64)
        starts = np.array(self.start, dtype=np.float64)
        sizes = np.array(self.size, dtype=np.float64)
        self.profile = Profile.from_events(
            free, np.concatenate((rel_t, starts, starts + runs)),
            np.concatenate((rel_g, -sizes, sizes)),
        )  # fmt: skip
        return left

    def _reset(self, now: float, free: int, rel_t: np.ndarray, rel_g: np.ndarray) -> None:
        self.valid = True
        self.t0, self.free = now, free
        self.rel_t, self.rel_g = rel_t, rel_g
        self.jobs, self.pos, self.size, self.run, self.start = [], {}, [], [], []
        self.profile = Profile.from_events(free, rel_t, rel_g)

    def _place(self, job: int, size: int, run: float) -> None:
        """``job`` at the back of the queue: the first time, not before the job ahead's start,
        with its GPUs free throughout its run."""
        t_prev = self.start[-1] if self.jobs else self.t0
        start = self.profile.fits(size, t_prev, run) if math.isfinite(t_prev) else INF
        self.pos[job] = len(self.jobs)
        self.jobs.append(job)
        self.size.append(size)
        self.run.append(run)
        self.start.append(start)
        if math.isfinite(start):
            self.profile.take(start, run, size)


def _same_events(t1: np.ndarray, g1: np.ndarray, t2: np.ndarray, g2: np.ndarray) -> bool:
    return len(t1) == len(t2) and np.array_equal(t1, t2) and np.array_equal(g1, g2)
