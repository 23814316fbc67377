"""Crux's priority reasoning on one link: who should send first so that GPUs idle least.

:func:`simulate_link` runs jobs on a single link under strict preemptive priority: each iteration
computes C, starts sending at (1 − o)·C, needs ``send`` seconds of exclusive link time and ends at
max(compute end, send end); the next iteration starts then. :func:`priority_factors` turns two
such runs per job pair into Crux's correction factors k_j (GPU intensity × k_j = priority).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

_EPS = 1e-9
#: Clamp of the priority correction factor (ours).
FACTOR_RANGE = (0.1, 10.0)
#: Horizon of the pairwise runs, in isolated iteration times of the slower job (ours).
HORIZON_ITERATIONS = 3


@dataclass(frozen=True)
class LinkJob:
    """A job as the link sees it: ``send`` = exclusive link seconds per iteration."""

    compute: float
    send: float
    overlap: float = 0.0
    gpus: int = 1

    @property
    def isolated_time(self) -> float:
        return self.compute + max(0.0, self.send - self.overlap * self.compute)


@dataclass(frozen=True)
class LinkRun:
    """What :func:`simulate_link` observed up to its horizon."""

    horizon: float
    iterations: tuple[int, ...]  # completed by the horizon
    compute_spans: tuple[tuple[tuple[float, float], ...], ...]  # per job, [start, end)

    def link_seconds(self, jobs: Sequence[LinkJob]) -> list[float]:
        return [n * j.send for n, j in zip(self.iterations, jobs, strict=True)]

    def idle_seconds(self, jobs: Sequence[LinkJob]) -> list[float]:
        """Horizon minus the compute time of completed iterations, per job."""
        return [self.horizon - n * j.compute for n, j in zip(self.iterations, jobs, strict=True)]

    def utilisation(self, jobs: Sequence[LinkJob]) -> float:
        """Σ GPUs × compute time of completed iterations / (all GPUs × horizon)."""
        done = sum(j.gpus * j.compute * n for n, j in zip(self.iterations, jobs, strict=True))
        return done / (sum(j.gpus for j in jobs) * self.horizon)

    def not_computing(self, job: int, window: float) -> float:
        """Seconds of [0, window] during which ``job``'s GPUs are not computing."""
        busy = sum(max(0.0, min(b, window) - a) for a, b in self.compute_spans[job] if a < window)
        return window - busy


def simulate_link(jobs: Sequence[LinkJob], order: Sequence[int], horizon: float) -> LinkRun:
    """Strict preemptive priority on one link, ``order[0]`` highest; all jobs start at 0."""
    n = len(jobs)
    start = [0.0] * n
    remaining = [j.send for j in jobs]
    done = [0] * n
    spans: list[list[tuple[float, float]]] = [[] for _ in range(n)]
    for i, j in enumerate(jobs):
        spans[i].append((0.0, j.compute))
    now = 0.0
    while now < horizon - _EPS:
        # Finish iterations whose compute and send are both over; start the next at once.
        for i, j in enumerate(jobs):
            while now >= start[i] + j.compute - _EPS and remaining[i] <= _EPS:
                end = max(start[i] + j.compute, now)
                if end <= horizon + _EPS:
                    done[i] += 1
                start[i] = end
                remaining[i] = j.send
                spans[i].append((end, end + j.compute))
                if j.compute <= 0 and j.send <= 0:
                    raise ValueError("a job with neither compute nor send never ends")
        ready = [
            i
            for i in order
            if remaining[i] > _EPS
            and now >= start[i] + (1 - jobs[i].overlap) * jobs[i].compute - _EPS
        ]
        served = ready[0] if ready else None
        events = [horizon]
        for i, j in enumerate(jobs):
            send_at = start[i] + (1 - j.overlap) * j.compute
            if send_at > now + _EPS:
                events.append(send_at)
            if start[i] + j.compute > now + _EPS:
                events.append(start[i] + j.compute)
        if served is not None:
            events.append(now + remaining[served])
        nxt = min(events)
        if served is not None:
            remaining[served] -= nxt - now
        now = nxt
    for i, j in enumerate(jobs):  # the last iteration may end exactly at the horizon
        if now >= start[i] + j.compute - _EPS and remaining[i] <= _EPS:
            done[i] += 1
    return LinkRun(horizon, tuple(done), tuple(tuple(s) for s in spans))


def _ratio(delta_job: float, delta_ref: float, high: float) -> float:
    """Δ_j / Δ_r; when the reference gains nothing from going first: 1 if j gains nothing
    either, else the ceiling."""
    if delta_ref > 0:
        return delta_job / delta_ref
    return 1.0 if delta_job == 0 else high


def priority_factors(jobs: Sequence[LinkJob], reference: int) -> list[float]:
    """Crux's k_j against the reference job r (k_r = 1): simulate each pair (r, j) with r high,
    then with j high, over 3 × the slower isolated iteration; Δ_x = (iterations of x when high −
    when low) × send_x; k_j = Δ_j / Δ_r, clamped to [0.1, 10]."""
    lo, hi = FACTOR_RANGE
    out = []
    ref = jobs[reference]
    for j, job in enumerate(jobs):
        if j == reference:
            out.append(1.0)
            continue
        pair = [ref, job]
        horizon = HORIZON_ITERATIONS * max(ref.isolated_time, job.isolated_time)
        ref_high = simulate_link(pair, [0, 1], horizon).iterations
        job_high = simulate_link(pair, [1, 0], horizon).iterations
        delta_ref = (ref_high[0] - job_high[0]) * ref.send
        delta_job = (job_high[1] - ref_high[1]) * job.send
        out.append(min(hi, max(lo, _ratio(delta_job, delta_ref, hi))))
    return out
