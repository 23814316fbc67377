"""Figures of pack experiments, in PNG and SVG, sized for a paper column or a wiki page.

Input is the long table of binned curves (policy, seed, bin, measure columns) that sweeps and
single runs both produce, so a figure can be redrawn from saved results without re-running. It
is any mapping of column name to values: a pandas DataFrame (a pack grid's ``curves.csv``) or the
plain arrays :func:`curve_columns` makes from run summaries, so that one ``schedlab pack`` run
draws its figures without loading pandas.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.report.colours import Look, figure_looks

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn (schedlab.report.mpl)
    import matplotlib.pyplot as plt
    import pandas as pd

MEASURES = ("unallocated_gpu_pct", "frag_amount_pct", "frag_ratio_pct")
LABELS = {
    "unallocated_gpu_pct": "Unallocated GPU (%)",
    "frag_amount_pct": "Fragmented GPU (% of capacity)",
    "frag_ratio_pct": "Fragmentation ratio (% of idle)",
}
#: The columns of a curve table, in order.
COLUMNS = ("policy", "seed", "bin", *MEASURES)

#: A curve table: column name → values (a DataFrame is one).
Curves = Mapping[str, Any]


def curve_columns(runs: Iterable[Mapping[str, object]]) -> dict[str, np.ndarray]:
    """The long table of binned curves from run summaries (``summary.json`` dicts), a row per
    (run, bin) in the summaries' order, as arrays: policy (str), seed and bin (int), measures
    (float)."""
    cells: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    for run in runs:
        binned = {m: run[m] for m in MEASURES}
        for b in binned["unallocated_gpu_pct"]:  # type: ignore[union-attr]
            cells["policy"].append(run["policy"])
            cells["seed"].append(run["seed"])
            cells["bin"].append(int(b))
            for m in MEASURES:
                cells[m].append(binned[m][b])  # type: ignore[index]
    out = {c: np.array(cells[c], dtype=object) for c in ("policy", "seed")}
    out["bin"] = np.array(cells["bin"], dtype=np.int64)
    out.update({m: np.array(cells[m], dtype=np.float64) for m in MEASURES})
    return out


def curves_frame(runs: Iterable[Mapping[str, object]]) -> pd.DataFrame:
    """:func:`curve_columns` as a DataFrame (for the grid's ``curves.csv``)."""
    import pandas as pd

    rows = [
        dict(zip(COLUMNS, row, strict=True))
        for row in zip(*curve_columns(runs).values(), strict=True)
    ]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def curve_column(curves: Curves, name: str) -> np.ndarray:
    """One column of a curve table as an array (a DataFrame's or a dict's alike)."""
    return np.asarray(curves[name])


def curve_rows(curves: Curves, mask: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of ``curves`` where ``mask`` holds, every column."""
    return {name: curve_column(curves, name)[mask] for name in curves}


def _looks(policies: Sequence[str]) -> dict[str, Look]:
    """Each placement policy's look, the same in every figure and report."""
    return figure_looks(policies, "placement")


def _save(fig: plt.Figure, stem: Path) -> list[Path]:
    from schedlab.report.mpl import plt

    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.savefig(paths[0], dpi=200, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return paths


def _band(curves: Curves, measure: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Median and inter-quartile range over seeds at each bin: (bins ascending, median, q25,
    q75), missing values left out (NaN where a bin has none). The quartiles interpolate linearly
    between the two nearest order statistics as ``a + (b − a)·frac`` (Hyndman and Fan's type 7,
    as pandas computes it)."""
    bins, values = curve_column(curves, "bin"), curve_column(curves, measure).astype(np.float64)
    order = np.lexsort((values, bins))  # by bin, then value with NaN last
    bins, values = bins[order], values[order]
    starts = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]]) if len(bins) else bins[:0]
    ends = np.r_[starts[1:], len(bins)]
    median, q25, q75 = (np.full(len(starts), np.nan) for _ in range(3))
    for i, (lo, hi) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        group = values[lo:hi]
        group = group[~np.isnan(group)]
        if len(group):
            median[i], q25[i] = _median(group), _quantile(group, 0.25)
            q75[i] = _quantile(group, 0.75)
    return bins[starts], median, q25, q75


def _median(ordered: np.ndarray) -> float:
    """The median of ascending values: the middle one, or the mean of the middle two."""
    n = len(ordered)
    if n % 2:
        return float(ordered[n // 2])
    return float((ordered[n // 2] + ordered[n // 2 - 1]) / 2)


def _quantile(ordered: np.ndarray, q: float) -> float:
    """Quantile ``q`` of ascending values, linear between order statistics (type 7)."""
    position = q * (len(ordered) - 1)
    below = int(position)
    frac = position % 1
    low = float(ordered[below])
    if frac == 0.0:
        return low
    return low + (float(ordered[below + 1]) - low) * frac


def _plot_measure(ax: plt.Axes, curves: Curves, measure: str, policies: Sequence[str]) -> None:
    looks = _looks(policies)
    names = curve_column(curves, "policy")
    for policy in policies:
        x, median, q25, q75 = _band(curve_rows(curves, names == policy), measure)
        if not len(x):
            continue
        ax.plot(x, median, lw=1.6, label=policy, **looks[policy].line)
        ax.fill_between(x, q25, q75, color=looks[policy].colour, alpha=0.25, lw=0)
    ax.set_xlabel("Arrived workload (% of GPU capacity)")
    ax.set_ylabel(LABELS[measure])
    ax.grid(True, alpha=0.3)


def plot_unallocated(
    curves: Curves, policies: Sequence[str], stem: Path, title: str = ""
) -> list[Path]:
    """Unallocated GPU % against arrived %, with the ideal max(0, 100 − arrived)."""
    return _save(draw_unallocated(curves, policies, title), stem)


def draw_unallocated(curves: Curves, policies: Sequence[str], title: str = "") -> Any:
    """The figure of :func:`plot_unallocated` (a matplotlib Figure, not saved)."""
    from schedlab.report.mpl import plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    _plot_measure(ax, curves, "unallocated_gpu_pct", policies)
    bins = curve_column(curves, "bin")
    x = np.arange(0, int(bins.max()) + 1) if len(bins) else np.arange(0, 131)
    ax.plot(x, np.maximum(0, 100 - x), color="grey", ls="--", lw=1.0, label="ideal")
    lo = max(0, int(bins.max()) - 50) if len(bins) else 0
    ax.set_xlim(lo, x[-1])
    visible = curve_column(curves, "unallocated_gpu_pct")[bins >= lo].astype(np.float64)
    visible = visible[~np.isnan(visible)]
    if len(visible):
        ax.set_ylim(0, max(5.0, float(visible.max()) * 1.1))
    ax.legend(frameon=False, fontsize=8, ncol=2)
    ax.set_title(title or "Unallocated GPU share as the workload arrives", fontsize=10)
    return fig


def plot_fragmentation(
    curves: Curves, policies: Sequence[str], stem: Path, title: str = ""
) -> list[Path]:
    """Fragmentation amount and ratio against arrived %, side by side."""
    return _save(draw_fragmentation(curves, policies, title), stem)


def draw_fragmentation(curves: Curves, policies: Sequence[str], title: str = "") -> Any:
    """The figure of :func:`plot_fragmentation` (not saved)."""
    from schedlab.report.mpl import plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.0))
    for ax, measure in zip(axes, ("frag_amount_pct", "frag_ratio_pct"), strict=True):
        _plot_measure(ax, curves, measure, policies)
    axes[0].legend(frameon=False, fontsize=8, ncol=2)
    fig.suptitle(title or "GPU fragmentation as the workload arrives", fontsize=10)
    return fig


def plot_bars_at(
    curves: Curves,
    policies: Sequence[str],
    stem: Path,
    bin_pct: int = 100,
    reference: Mapping[str, float] | None = None,
    title: str = "",
) -> list[Path]:
    """Unallocated GPU % at one arrived bin: mean bar, seed-to-seed spread, one dot per seed,
    and an optional published reference value per policy."""
    return _save(draw_bars_at(curves, policies, bin_pct, reference, title), stem)


def draw_bars_at(
    curves: Curves,
    policies: Sequence[str],
    bin_pct: int = 100,
    reference: Mapping[str, float] | None = None,
    title: str = "",
) -> Any:
    """Unallocated GPU % at one arrived bin: mean bar, seed-to-seed spread, one dot per seed,
    and an optional published reference value per policy."""
    from schedlab.report.mpl import plt

    at = curve_rows(curves, curve_column(curves, "bin") == bin_pct)
    looks = _looks(policies)
    published = False
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for i, policy in enumerate(policies):
        vals = at["unallocated_gpu_pct"][at["policy"] == policy].astype(np.float64)
        if len(vals) == 0:
            continue
        mean = float(vals.mean())
        err = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
        # ± sd, clipped at 0: a share of GPUs is never negative.
        spread = [[min(err, mean)], [err]]
        ax.bar(i, mean, color=looks[policy].colour, alpha=0.85, yerr=spread, capsize=4)
        ax.scatter(
            np.full(len(vals), i) + np.linspace(-0.2, 0.2, len(vals)),
            vals,
            s=8,
            color="black",
            zorder=3,
        )
        if reference and policy in reference:
            ax.plot(
                [i - 0.4, i + 0.4],
                [reference[policy]] * 2,
                color="red",
                lw=1.5,
                label=None if published else "published",
            )
            published = True
    ax.set_xticks(range(len(policies)), policies, rotation=20)
    ax.set_ylabel(f"Unallocated GPU (%) at arrived {bin_pct}%")
    ax.grid(True, axis="y", alpha=0.3)
    if published:
        ax.legend(frameon=False, fontsize=8)
    ax.set_title(
        title or f"Unallocated GPU at {bin_pct}% arrived (mean ± sd over seeds)", fontsize=10
    )
    return fig


def write_pack_figures(
    curves: Curves,
    policies: Sequence[str],
    folder: Path,
    title: str = "",
    reference: Mapping[str, float] | None = None,
) -> list[Path]:
    """The standard set: unallocated curve, fragmentation curves, bars at 100 %."""
    suffix = f" — {title}" if title else ""
    out = plot_unallocated(
        curves, policies, folder / "unallocated_gpu", f"Unallocated GPU share{suffix}"
    )
    out += plot_fragmentation(
        curves, policies, folder / "fragmentation", f"GPU fragmentation{suffix}"
    )
    if (curve_column(curves, "bin") == 100).any():
        out += plot_bars_at(
            curves,
            policies,
            folder / "unallocated_at_100",
            100,
            reference,
            f"Unallocated GPU at 100% arrived{suffix}",
        )
    return out
