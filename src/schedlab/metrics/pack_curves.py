"""Curves of a pack run against "arrived workload" and their binned means.

The FGD paper plots every measure against arrived GPU request as a % of capacity, binned by
rounding to the nearest integer percent and averaged within each bin; the headline figures are
the bins at 100 % and 130 %.
"""

from __future__ import annotations

import numpy as np


def arrived_bins(arrived_pct: np.ndarray) -> np.ndarray:
    """Integer bin of each point (round half up, so 99.5 belongs to bin 100)."""
    return np.floor(np.asarray(arrived_pct, dtype=np.float64) + 0.5).astype(np.int64)


def binned_means(arrived_pct: np.ndarray, values: np.ndarray) -> dict[str, float]:
    """Mean of ``values`` within each non-empty arrived-% bin, keyed by the bin as a string."""
    bins = arrived_bins(arrived_pct)
    if len(bins) == 0:
        return {}
    counts = np.bincount(bins)
    sums = np.bincount(bins, weights=np.asarray(values, dtype=np.float64))
    return {str(b): float(sums[b] / counts[b]) for b in np.flatnonzero(counts)}


def value_at(binned: dict[str, float], bin_pct: int) -> float | None:
    """The binned mean at ``bin_pct``, or None if the run never got there."""
    return binned.get(str(bin_pct))
