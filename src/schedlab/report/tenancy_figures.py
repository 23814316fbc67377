"""Tenancy figures and the report section: who held the GPUs against what each queue was
entitled to.

F1 (one run, shared time axis): (a) GPUs held per top-level queue, stacked (ten colours, the
rest as "other"), with each queue's entitlement dashed; (b) a heat strip of ``log2(alloc /
entitled)`` clipped to ±2, grey where the queue wants nothing; (c) cumulative reclaims by victim
queue. The report section lists, for every run with tenancy, one line per queue.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from schedlab.report.colours import COLOURS as PALETTE  # queues: the policies' colour list

if TYPE_CHECKING:
    from schedlab.report.html_report import Run
    from schedlab.tenancy.recorder import TenancyRecorder

TOP = 10
#: Points per queue in the figure (time-weighted bins beyond that).
MAX_POINTS = 800
DPI = 120


def _save(fig: Any, stem: Path) -> list[Path]:
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.savefig(paths[0], dpi=DPI, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None})
    return paths


def _bins(t: np.ndarray, values: np.ndarray, end: float) -> tuple[np.ndarray, np.ndarray]:
    """A step series ``[rows, k]`` as time-weighted means over at most MAX_POINTS bins."""
    if len(t) <= MAX_POINTS:
        return t, values
    edges = np.linspace(t[0], max(end, t[-1]), MAX_POINTS + 1)
    nxt = np.append(t[1:], max(end, t[-1]))
    out = np.zeros((MAX_POINTS, values.shape[1]))
    for k in range(values.shape[1]):
        area = np.concatenate([[0.0], np.cumsum((nxt - t) * values[:, k])])
        at = np.interp(edges, np.append(t, nxt[-1]), area)
        out[:, k] = np.diff(at) / np.diff(edges)
    return edges[:-1], out


def tenancy_figure(
    folder: Path, recorder: TenancyRecorder, timeline: pd.DataFrame, end: float
) -> list[Path]:
    """Write F1 as ``tenancy.png`` and ``tenancy.svg`` under ``folder``."""
    from schedlab.report.mpl import plt  # the Agg backend, set up once

    folder.mkdir(parents=True, exist_ok=True)
    tree = recorder.tree
    gpu = timeline[timeline["resource"] == "gpu"]
    top = [tree.names[q] for q in tree.top_level()]
    fig, axes = plt.subplots(
        3, 1, figsize=(8.4, 7.2), sharex=True, gridspec_kw={"height_ratios": [3, 1.4, 1.4]}
    )
    if gpu.empty:
        for ax in axes:
            ax.text(0.5, 0.5, "no decisions recorded", ha="center", transform=ax.transAxes)
        return _save(fig, folder / "tenancy")
    wide = {
        col: gpu.pivot(index="t", columns="queue", values=col)[top]
        for col in ("alloc", "entitled", "demand")
    }
    t = wide["alloc"].index.to_numpy(dtype=np.float64)
    hours = 3600.0
    mean = wide["alloc"].to_numpy().mean(axis=0)
    order = [top[i] for i in np.argsort(-mean, kind="stable")]
    shown, other = order[:TOP], order[TOP:]

    def series(col: str, names: list[str]) -> np.ndarray:
        return wide[col][names].to_numpy(dtype=np.float64) if names else np.zeros((len(t), 0))

    alloc = series("alloc", shown)
    if other:
        alloc = np.column_stack([alloc, series("alloc", other).sum(axis=1)])
    tb, ab = _bins(t, alloc, end)
    labels = [*shown, *(["other"] if other else [])]
    colours = [PALETTE[i % len(PALETTE)] for i in range(len(shown))] + (
        ["#bbbbbb"] if other else []
    )
    axes[0].stackplot(tb / hours, ab.T, labels=labels, colors=colours, step="post", alpha=0.85)
    _, eb = _bins(t, series("entitled", shown), end)
    stacked = np.cumsum(eb, axis=1)  # each dashed line: the stack's edge if all held e_q
    for k in range(eb.shape[1]):
        axes[0].step(tb / hours, stacked[:, k], where="post", ls="--", lw=0.8, color=colours[k])
    axes[0].set_ylabel("GPUs held")
    axes[0].legend(fontsize=7, ncol=4, loc="upper right")
    axes[0].set_title(
        "GPUs held per queue, stacked (dashed: the stack's edges at the entitlements)", fontsize=9
    )
    e = series("entitled", shown)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(e > 0, np.log2(np.maximum(series("alloc", shown), 1e-9) / e), np.nan)
    ratio = np.clip(ratio, -2, 2)
    tb2, rb = _bins(t, np.nan_to_num(ratio, nan=0.0), end)
    _, want = _bins(t, (series("demand", shown) > 0).astype(float), end)
    rb = np.where(want > 0.5, rb, np.nan)
    cmap = plt.get_cmap("coolwarm").with_extremes(bad="#dddddd")
    extent = (tb2[0] / hours, max(end, t[-1]) / hours, len(shown) - 0.5, -0.5)
    axes[1].imshow(
        np.ma.masked_invalid(rb.T),
        aspect="auto",
        cmap=cmap,
        vmin=-2,
        vmax=2,
        extent=extent,
        interpolation="nearest",
    )
    axes[1].set_yticks(range(len(shown)), [s[:12] for s in shown], fontsize=6)
    axes[1].set_title("log2(held / entitled), clipped to ±2; grey: no demand", fontsize=9)
    victims = pd.DataFrame(
        [(r.time, tree.names[tree.top_of(r.victim_queue)]) for r in recorder.reclaims],
        columns=["t", "queue"],
    )
    if victims.empty:
        axes[2].text(0.5, 0.5, "no reclaims", ha="center", va="center", transform=axes[2].transAxes)
    else:
        for k, name in enumerate(victims["queue"].value_counts().index[:TOP]):
            times = np.sort(victims.loc[victims["queue"] == name, "t"].to_numpy())
            axes[2].step(
                times / hours,
                np.arange(1, len(times) + 1),
                where="post",
                color=colours[shown.index(name)] if name in shown else PALETTE[k],
                label=name,
            )
        axes[2].legend(fontsize=7, ncol=4)
    axes[2].set_ylabel("reclaims")
    axes[2].set_xlabel("time (h)")
    fig.tight_layout()
    paths = _save(fig, folder / "tenancy")
    plt.close(fig)
    return paths


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "—"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return html.escape(str(v))


def tenancy_section(runs: Sequence[Run]) -> str:
    """One table per run with tenancy: a line per queue (nothing when no run has tenancy)."""
    parts = []
    for run in runs:
        path = Path(run.folder) / "tenancy_queues.csv"
        if not path.is_file():
            continue
        table = pd.read_csv(path, dtype={"queue": str})
        head = (
            "<tr><th>queue</th><th>deserved</th><th>mean held</th><th>mean entitled</th>"
            "<th>deviation</th><th>starved</th><th>lost to reclaim</th><th>won by reclaim</th>"
            "<th>jobs</th><th>mean JCT (h)</th><th>mean wait (h)</th></tr>"
        )

        def hours(v: Any) -> str:
            return _fmt(None if pd.isna(v) else float(v) / 3600, 2)

        rows = "".join(
            "<tr>"
            f"<td>{html.escape(str(r.queue))}</td><td>{_fmt(float(r.deserved_gpu), 0)}</td>"
            f"<td>{_fmt(float(r.mean_alloc_gpu))}</td><td>{_fmt(float(r.mean_entitled_gpu))}</td>"
            f"<td>{_fmt(float(r.twd_gpu))}</td>"
            f"<td>{_fmt(None if pd.isna(r.starved_share) else 100 * float(r.starved_share))}%</td>"
            f"<td>{int(r.reclaimed_from)}</td><td>{int(r.reclaimed_for)}</td>"
            f"<td>{_fmt(r.jobs if pd.isna(r.jobs) else int(r.jobs))}</td>"
            f"<td>{hours(r.mean_jct)}</td><td>{hours(r.mean_first_wait)}</td>"
            "</tr>"
            for r in table.itertuples()
        )
        parts.append(
            f'<h3>{html.escape(run.label)}</h3><table class="tenancy">{head}{rows}</table>'
        )
    if not parts:
        return ""
    return (
        '<h2 id="tenancy">Tenancy</h2><p>One line per queue: GPUs deserved, held and entitled '
        "(time means; entitled is the policy-independent reference division of demand), the "
        "time-weighted deviation |held − entitled|, the share of waiting time spent below the "
        "deserved quota, reclaims, and the queue's jobs.</p>" + "".join(parts)
    )
