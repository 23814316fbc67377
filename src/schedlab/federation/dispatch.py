"""The dispatchers' scores: where a job should go, given the sites as they are now.

Every score-based dispatcher takes the argmin over the feasible sites with ties to the site
listed first. The estimates (``R_k`` run time, ``T_x(k)`` transfer on an idle link, ``W_k``
earliest start from the site's profile, kept between dispatches by
:mod:`schedlab.federation.plan`) are made per job and site by the manager.
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
