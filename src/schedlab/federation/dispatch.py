"""The dispatchers' scores: where a job should go, given the sites as they are now.

Every score-based dispatcher takes the argmin over the feasible sites with ties to the site
listed first. The estimates (``R_k`` run time, ``T_x(k)`` transfer on an idle link, ``W_k``
earliest start from the site's profile) are computed once per job and site by
:class:`Estimates`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from schedlab.energy.meter import J_PER_KWH
from schedlab.federation.site import Site

INF = math.inf


@dataclass(frozen=True)
class Estimate:
    """What a site would give the job: start and finish (absolute), compute and egress $,
    carbon in grams."""

    start: float
    finish: float
    cost: float
    carbon_g: float


def carbon_g(site: Site, watts: float, start: float, seconds: float) -> float:
    """``P·PUE·∫CI dt`` over ``[start, start + seconds]`` in grams (exact on the step series)."""
    if not (math.isfinite(seconds) and math.isfinite(start)):
        return INF
    return watts * site.pue * site.ci.integral(start, start + seconds) / J_PER_KWH


def wan_carbon_g(site: Site, kwh: float, start: float, seconds: float) -> float:
    """Grams of ``kwh`` spent by the WAN over ``[start, start + seconds]``, at the mean carbon
    intensity of ``site`` (the site that runs the job) over that span; a transfer of no
    duration takes the intensity at ``start``."""
    if not (math.isfinite(start) and math.isfinite(seconds)):
        return INF
    if seconds <= 0:
        return kwh * site.ci.at(start)
    return kwh * site.ci.integral(start, start + seconds) / seconds


def argmin(scores: list[float]) -> int:
    """The first index of the smallest score (ties to the site listed first)."""
    best = 0
    for i, s in enumerate(scores):
        if s < scores[best]:
            best = i
    return best


def joint_scores(estimates: list[Estimate], now: float, weights: tuple[float, float, float]):
    """``w_t·F/F* + w_c·C/C* + w_g·G/G*``, each term over its minimum among the sites; a zero
    minimum (or a zero weight) drops the term."""
    finish = np.array([e.finish - now for e in estimates])
    cost = np.array([e.cost for e in estimates])
    carbon = np.array([e.carbon_g for e in estimates])
    total = np.zeros(len(estimates))
    for w, values in zip(weights, (finish, cost, carbon), strict=True):
        low = float(values.min())
        if w > 0 and low > 0 and math.isfinite(low):
            total += w * values / low
    return total.tolist()


def earliest_start(
    free: int,
    releases: list[tuple[float, int]],
    queued: list[tuple[int, float]],
    need: int,
    seconds: float,
    now: float,
) -> float:
    """``W_k``: when ``need`` GPUs are free for ``seconds`` if the ``queued`` jobs (GPUs,
    seconds; in queue order) start first-come-first-served — each as soon as its GPUs are free
    throughout its run, and not before the one ahead — with ``free`` GPUs now and ``releases``
    (time, GPUs) of the running jobs (a count profile, as EASY backfill reserves)."""
    times = np.array([t for t, _ in releases], dtype=np.float64)
    deltas = np.array([g for _, g in releases], dtype=np.float64)
    t_prev = now
    for size, run in queued:
        start = _fits_from(free, times, deltas, size, t_prev, run)
        if not math.isfinite(start):
            return INF
        times = np.append(times, [start, start + run])
        deltas = np.append(deltas, [-size, size])
        t_prev = start
    return _fits_from(free, times, deltas, need, t_prev, seconds)


def _fits_from(
    free: int, times: np.ndarray, deltas: np.ndarray, size: int, t0: float, seconds: float
) -> float:
    """The first time ``t ≥ t0`` with ``size`` GPUs free throughout ``[t, t + seconds)``."""
    order = np.lexsort((-deltas, times))  # at one instant, releases before takes
    t_sorted, levels = times[order], free + np.cumsum(deltas[order])
    i0 = int(np.searchsorted(t_sorted, t0, side="right"))
    level0 = float(levels[i0 - 1]) if i0 > 0 else float(free)
    cand_t = np.concatenate(([t0], t_sorted[i0:]))
    # the level once every event of an instant is applied
    settled = levels[np.searchsorted(t_sorted, t_sorted, side="right") - 1]
    cand_level = np.concatenate(([level0], settled[i0:]))
    for c in np.flatnonzero(cand_level >= size).tolist():
        t = float(cand_t[c])
        k0 = int(np.searchsorted(t_sorted, t, side="right"))
        k1 = int(np.searchsorted(t_sorted, t + seconds, side="left"))
        if k1 <= k0 or float(settled[k0:k1].min()) >= size:
            return t
    return INF
