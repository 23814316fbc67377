"""Statistics over seeds for grid tables: mean, standard deviation and a 95 % confidence interval.

Every cell of a grid (everything but the seed fixed) is run once per seed; its runs are a sample
of what the cell does under chance (tie-breaks, and for generated workloads the workload itself).
The interval is the Student-t one for the mean of that sample: ``mean ± t(0.975, n-1) · sd / √n``,
with ``sd`` the sample standard deviation (n-1). A cell with one seed has a mean but no spread:
its sd and interval are blank, never 0, so a single run cannot pass for a certain one.

The t interval is symmetric, and with few seeds and skewed values (preemptions 0, 0, 0, 16) it
reaches outside what the quantity can be (a negative count, a Jain index above 1). Tables and
figures show it clipped to the quantity's range (:data:`RANGES`): ``2.0 (0.0–7.1)`` instead of
``2.0 ± 5.1``, and ``aggregate.csv`` has the clipped ends (``<m>_ci_low``, ``<m>_ci_high``) beside
the half-width. Clipping keeps the interval's coverage (the true mean is always inside the
range); it only stops the interval from claiming impossible values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # tables are only made by the grids; a single run's page needs none
    import pandas as pd

#: Confidence level of the interval written to aggregate.csv.
CONFIDENCE = 0.95

INF = math.inf
#: What each summary measure can be: intervals are clipped to it (others are not clipped).
RANGES: dict[str, tuple[float, float]] = {
    **{
        f: (0.0, INF)
        for f in (
            "jobs", "completed", "rejected", "unfinished", "avg_jct", "p50_jct", "p95_jct",
            "p99_jct", "avg_queue_delay", "p99_queue_delay", "avg_total_wait", "makespan",
            "preemptions", "wall_seconds", "offered_load", "deadline_jobs",
            "best_effort_avg_jct", "steady_window_start", "steady_window_end",
            "unallocated_gpu_pct_100", "unallocated_gpu_pct_130", "energy_kwh", "carbon_kg",
        )
    },
    **{
        f: (0.0, 1.0)
        for f in ("gpu_utilization", "steady_gpu_utilization", "jain_fairness", "dsr")
    },
    "avg_bounded_slowdown": (1.0, INF),
}  # fmt: skip

#: (below this many seconds, divide by, unit): the unit a column of durations is shown in.
TIME_UNITS = ((120.0, 1.0, "s"), (2 * 3600.0, 60.0, "min"), (INF, 3600.0, "h"))


def ci_half_width(sd: float, n: int, confidence: float = CONFIDENCE) -> float:
    """Half-width of the Student-t interval for a mean of ``n`` values with sample sd ``sd``."""
    if n < 2 or not math.isfinite(sd):
        return math.nan
    from scipy.stats import t  # heavy: only when a table is aggregated

    return float(t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n))


def seed_stats(table: pd.DataFrame, keys: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    """One row per ``keys`` cell (first-appearance order): ``seeds`` (runs in the cell) and, per
    metric, ``<m>_mean``, ``<m>_sd``, ``<m>_ci95`` over the runs where it is defined, plus
    ``<m>_n`` when that is fewer than the cell's runs."""
    import pandas as pd

    rows = []
    groups = table.groupby(list(keys), sort=False, dropna=False)
    for cell, runs in groups:
        row: dict[str, object] = dict(
            zip(keys, cell if isinstance(cell, tuple) else (cell,), strict=False)
        )
        row["seeds"] = len(runs)
        for m in metrics:
            values = pd.to_numeric(runs[m], errors="coerce").to_numpy(dtype=np.float64)
            values = values[np.isfinite(values)]
            n = len(values)
            mean = float(values.mean()) if n else math.nan
            sd = float(values.std(ddof=1)) if n >= 2 else math.nan
            row[f"{m}_mean"] = mean
            row[f"{m}_sd"] = sd
            row[f"{m}_ci95"] = ci_half_width(sd, n)
            if n != len(runs):
                row[f"{m}_n"] = n
        rows.append(row)
    return pd.DataFrame(rows)


def mean_ci(
    mean: float, ci: float, scale: float = 1.0, digits: int = 2, field: str | None = None
) -> str:
    """``12.30 ± 0.45`` (or ``12.30`` with one seed, ``—`` when undefined) for tables; where the
    interval leaves ``field``'s range, its clipped ends instead: ``2.00 (0.00–7.10)``."""
    if mean is None or not math.isfinite(mean):
        return "—"
    text = f"{mean * scale:.{digits}f}"
    if ci is None or not math.isfinite(ci):
        return text
    lo, hi = interval(mean, ci, field)
    if lo > mean - ci or hi < mean + ci:
        return f"{text} ({lo * scale:.{digits}f}–{hi * scale:.{digits}f})"
    return text + f" ± {ci * scale:.{digits}f}"


def interval(mean: float, half: float, field: str | None = None) -> tuple[float, float]:
    """The interval ``mean ± half`` clipped to ``field``'s range (NaN ends without a half)."""
    if half is None or not math.isfinite(half):
        return math.nan, math.nan
    lo, hi = RANGES.get(field or "", (-INF, INF))
    return max(lo, mean - half), min(hi, mean + half)


def add_clipped_intervals(agg: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """``<m>_ci_low`` and ``<m>_ci_high`` (the interval clipped to the range) per metric."""
    out = agg.copy()
    for m in metrics:
        if f"{m}_ci95" not in out:
            continue
        ends = [
            interval(float(mean), float(half), m)
            for mean, half in zip(out[f"{m}_mean"], out[f"{m}_ci95"], strict=True)
        ]
        out[f"{m}_ci_low"] = [e[0] for e in ends]
        out[f"{m}_ci_high"] = [e[1] for e in ends]
    return out


def time_unit(seconds: Sequence[float]) -> tuple[float, str]:
    """(divide by, unit) that shows these durations with small numbers: s, min or h."""
    finite = [abs(float(v)) for v in seconds if v is not None and math.isfinite(v)]
    top = max(finite, default=0.0)
    for limit, scale, unit in TIME_UNITS:
        if top < limit:
            return scale, unit
    return TIME_UNITS[-1][1], TIME_UNITS[-1][2]
