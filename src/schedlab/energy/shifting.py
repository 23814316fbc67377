"""Carbon-aware choices over a carbon-intensity series: when to start, which steps to run in.

These are the exact planning rules behind ``lcs`` and ``suspend-resume``, kept apart from the
policies so the closed-form reproductions and the policies use the same arithmetic.
"""

from __future__ import annotations

import itertools

from schedlab.energy.carbon import CarbonSeries

#: Relative tolerance under which two carbon integrals are a tie (the earlier time wins).
TIE = 1e-12


def lowest_carbon_start(series: CarbonSeries, arrival: float, run: float, slack: float) -> float:
    """The start t ∈ {arrival} ∪ {CI steps in (arrival, arrival + slack]} minimising
    ∫_t^{t+run} CI (ties: earliest). A step series has its minimum at one of these starts or
    where the window's end meets a step; ``lcs`` deliberately uses only the listed starts."""
    best, best_c = arrival, series.integral(arrival, arrival + run)
    for t in series.steps_between(arrival, arrival + slack):
        c = series.integral(t, t + run)
        if c < best_c * (1 - TIE) - 1e-300:
            best, best_c = t, c
    return best


def cheapest_steps(
    series: CarbonSeries, arrival: float, run: float, slack: float
) -> list[tuple[float, float]]:
    """The cheapest CI steps in [arrival, arrival + run + slack] totalling ``run`` seconds
    (ties: earliest; the last one partial), as (start, end) intervals in time order."""
    horizon = arrival + run + slack
    edges = [arrival, *series.steps_between(arrival, horizon), horizon]
    steps = [(a, b) for a, b in itertools.pairwise(edges) if b > a]
    ranked = sorted(steps, key=lambda ab: (series.at(ab[0]), ab[0]))
    chosen: list[tuple[float, float]] = []
    left = run
    for a, b in ranked:
        if left <= 0:
            break
        take = min(b - a, left)
        chosen.append((a, a + take))
        left -= take
    return sorted(chosen)
