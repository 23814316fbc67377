"""Figures of pack experiments, in PNG and SVG, sized for a paper column or a wiki page.

Input is the long table of binned curves (policy, seed, bin, measure columns) that sweeps and
single runs both produce, so a figure can be redrawn from saved results without re-running.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from schedlab.report.colours import Look, figure_looks

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn (schedlab.report.mpl)
    import matplotlib.pyplot as plt

MEASURES = ("unallocated_gpu_pct", "frag_amount_pct", "frag_ratio_pct")
LABELS = {
    "unallocated_gpu_pct": "Unallocated GPU (%)",
    "frag_amount_pct": "Fragmented GPU (% of capacity)",
    "frag_ratio_pct": "Fragmentation ratio (% of idle)",
}


def curves_frame(runs: Iterable[Mapping[str, object]]) -> pd.DataFrame:
    """Long table of binned curves from run summaries (``summary.json`` dicts)."""
    rows = []
    for run in runs:
        binned = {m: run[m] for m in MEASURES}
        for b in binned["unallocated_gpu_pct"]:  # type: ignore[union-attr]
            rows.append(
                {
                    "policy": run["policy"],
                    "seed": run["seed"],
                    "bin": int(b),
                    **{m: binned[m][b] for m in MEASURES},  # type: ignore[index]
                }
            )
    return pd.DataFrame(rows, columns=["policy", "seed", "bin", *MEASURES])


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


def _band(curves: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Median and inter-quartile range over seeds at each bin."""
    g = curves.groupby("bin")[measure]
    return pd.DataFrame({"median": g.median(), "q25": g.quantile(0.25), "q75": g.quantile(0.75)})


def _plot_measure(
    ax: plt.Axes, curves: pd.DataFrame, measure: str, policies: Sequence[str]
) -> None:
    looks = _looks(policies)
    for policy in policies:
        band = _band(curves[curves["policy"] == policy], measure)
        if band.empty:
            continue
        x = band.index.to_numpy()
        ax.plot(x, band["median"], lw=1.6, label=policy, **looks[policy].line)
        ax.fill_between(x, band["q25"], band["q75"], color=looks[policy].colour, alpha=0.25, lw=0)
    ax.set_xlabel("Arrived workload (% of GPU capacity)")
    ax.set_ylabel(LABELS[measure])
    ax.grid(True, alpha=0.3)


def plot_unallocated(
    curves: pd.DataFrame, policies: Sequence[str], stem: Path, title: str = ""
) -> list[Path]:
    """Unallocated GPU % against arrived %, with the ideal max(0, 100 − arrived)."""
    return _save(draw_unallocated(curves, policies, title), stem)


def draw_unallocated(curves: pd.DataFrame, policies: Sequence[str], title: str = "") -> Any:
    """The figure of :func:`plot_unallocated` (a matplotlib Figure, not saved)."""
    from schedlab.report.mpl import plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    _plot_measure(ax, curves, "unallocated_gpu_pct", policies)
    x = np.arange(0, int(curves["bin"].max()) + 1) if len(curves) else np.arange(0, 131)
    ax.plot(x, np.maximum(0, 100 - x), color="grey", ls="--", lw=1.0, label="ideal")
    lo = max(0, int(curves["bin"].max()) - 50) if len(curves) else 0
    ax.set_xlim(lo, x[-1])
    visible = curves[curves["bin"] >= lo]["unallocated_gpu_pct"]
    if len(visible):
        ax.set_ylim(0, max(5.0, float(visible.max()) * 1.1))
    ax.legend(frameon=False, fontsize=8, ncol=2)
    ax.set_title(title or "Unallocated GPU share as the workload arrives", fontsize=10)
    return fig


def plot_fragmentation(
    curves: pd.DataFrame, policies: Sequence[str], stem: Path, title: str = ""
) -> list[Path]:
    """Fragmentation amount and ratio against arrived %, side by side."""
    return _save(draw_fragmentation(curves, policies, title), stem)


def draw_fragmentation(curves: pd.DataFrame, policies: Sequence[str], title: str = "") -> Any:
    """The figure of :func:`plot_fragmentation` (not saved)."""
    from schedlab.report.mpl import plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.0))
    for ax, measure in zip(axes, ("frag_amount_pct", "frag_ratio_pct"), strict=True):
        _plot_measure(ax, curves, measure, policies)
    axes[0].legend(frameon=False, fontsize=8, ncol=2)
    fig.suptitle(title or "GPU fragmentation as the workload arrives", fontsize=10)
    return fig


def plot_bars_at(
    curves: pd.DataFrame,
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
    curves: pd.DataFrame,
    policies: Sequence[str],
    bin_pct: int = 100,
    reference: Mapping[str, float] | None = None,
    title: str = "",
) -> Any:
    """Unallocated GPU % at one arrived bin: mean bar, seed-to-seed spread, one dot per seed,
    and an optional published reference value per policy."""
    from schedlab.report.mpl import plt

    at = curves[curves["bin"] == bin_pct]
    looks = _looks(policies)
    published = False
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for i, policy in enumerate(policies):
        vals = at[at["policy"] == policy]["unallocated_gpu_pct"].to_numpy()
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
    curves: pd.DataFrame,
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
    if (curves["bin"] == 100).any():
        out += plot_bars_at(
            curves,
            policies,
            folder / "unallocated_at_100",
            100,
            reference,
            f"Unallocated GPU at 100% arrived{suffix}",
        )
    return out
