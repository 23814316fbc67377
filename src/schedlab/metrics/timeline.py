"""Step series over time: exact integrals and window means, with numpy alone.

A series is rows (time, value), each value holding from its time to the next row's, the last one
on. Replay summaries, network metrics and the studies all average their series here, so a window
means the same thing everywhere.
"""

from __future__ import annotations

import math

import numpy as np


def step_integral(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """∫ from −∞ to each ``at`` of the step function the rows describe (0 before the first row).

    Rows must be sorted by time (stably). Among rows at the same time the last one holds, since
    each row is the state right after its decision. Exact, with no resampling: the integral is
    piecewise linear, so it is evaluated at any point from the cumulative sums at breakpoints.
    """
    times = np.asarray(times, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    at = np.asarray(at, dtype=np.float64)
    if len(times) == 0:
        return np.zeros_like(at)
    cum = np.concatenate(([0.0], np.cumsum(values[:-1] * np.diff(times))))
    k = np.searchsorted(times, at, side="right") - 1
    kc = np.maximum(k, 0)
    return np.where(k < 0, 0.0, cum[kc] + values[kc] * (at - times[kc]))


def time_weighted_mean(times: np.ndarray, values: np.ndarray, t0: float, t1: float) -> float | None:
    """Mean of the step function over ``[t0, t1]``; None for an empty or zero-length window or a
    value that is not finite."""
    if len(times) == 0 or not (t1 > t0):
        return None
    lo, hi = step_integral(times, values, np.array([t0, t1]))
    mean = float((hi - lo) / (t1 - t0))
    return mean if math.isfinite(mean) else None
