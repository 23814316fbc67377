"""Statistics over seeds for grid tables: mean, standard deviation and a 95 % confidence interval.

Every cell of a grid (everything but the seed fixed) is run once per seed; its runs are a sample
of what the cell does under chance (tie-breaks, and for generated workloads the workload itself).
The interval is the Student-t one for the mean of that sample: ``mean ± t(0.975, n-1) · sd / √n``,
with ``sd`` the sample standard deviation (n-1). A cell with one seed has a mean but no spread:
its sd and interval are blank, never 0, so a single run cannot pass for a certain one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

#: Confidence level of the interval written to aggregate.csv.
CONFIDENCE = 0.95


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


def mean_ci(mean: float, ci: float, scale: float = 1.0, digits: int = 2) -> str:
    """``12.30 ± 0.45`` (or ``12.30`` with one seed, ``—`` when undefined) for tables."""
    if mean is None or not math.isfinite(mean):
        return "—"
    text = f"{mean * scale:.{digits}f}"
    if ci is not None and math.isfinite(ci):
        text += f" ± {ci * scale:.{digits}f}"
    return text
