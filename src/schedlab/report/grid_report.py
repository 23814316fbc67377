"""One self-contained HTML page for a replay grid: policies compared over seeds (and loads).

A grid of 10 seeds × 4 policies is 40 runs, but a reader compares 4 policies: the page is built
around them. Every figure gives a policy the same colour (:func:`policy_colour`, fixed by the
policy's name, so also the same colour in every other report), seeds appear as small dots or thin
lines around their policy's mean instead of as legend entries, and the summary table has a column
per policy with ``mean ± 95 % CI`` cells.

The page is a list of sections (:data:`SECTIONS`); each is a function of the grid that returns
its HTML or None when it does not apply (no deadlines: no DSR view; one load: no load curves), so
adding a section is adding a function to that list. Like the run report it loads nothing: inline
SVG and CSS, a Content-Security-Policy that forbids fetches, byte-identical output for the same
inputs.
"""

from __future__ import annotations

import html
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from schedlab import __version__
from schedlab.experiments.seed_stats import mean_ci
from schedlab.metrics.replay_metrics import jct_cdf
from schedlab.report.html_report import _empty_note, _figure, _svg, page_head
from schedlab.results import atomic_write

#: Twelve colours told apart with common colour-vision deficiencies (Okabe–Ito, then Tol's).
COLOURS = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9",
    "#332288", "#882255", "#117733", "#999933", "#AA4499", "#000000",
)  # fmt: skip
#: Built-in policies in a fixed order: each keeps its colour in every report.
KNOWN = (
    "fifo", "sjf", "srtf", "tiresias", "edf", "edf-greedy", "elasticflow", "edf-ac",
    "edf-elastic", "gandiva", "themis", "chronus",
)  # fmt: skip

#: (summary field, label, scale, digits, higher is better) of the table and figures.
METRICS = (
    ("avg_jct", "Mean JCT (h)", 1 / 3600, 2, False),
    ("p99_jct", "p99 JCT (h)", 1 / 3600, 2, False),
    ("avg_queue_delay", "Mean queue delay (h)", 1 / 3600, 2, False),
    ("avg_total_wait", "Mean total wait (h)", 1 / 3600, 2, False),
    ("avg_bounded_slowdown", "Mean bounded slowdown", 1, 2, False),
    ("gpu_utilization", "GPU utilisation (%)", 100, 1, True),
    ("steady_gpu_utilization", "Steady-state utilisation (%)", 100, 1, True),
    ("preemptions", "Preemptions", 1, 0, False),
    ("jain_fairness", "Jain fairness", 1, 3, True),
    ("dsr", "Deadline satisfactory ratio", 1, 3, True),
    ("completed", "Completed jobs", 1, 0, True),
)
#: The metrics drawn per seed and against load.
FIGURE_METRICS = ("avg_jct", "avg_total_wait", "steady_gpu_utilization")


def policy_colour(label: str) -> str:
    """The colour of a policy: fixed for the built-ins, from a hash of the name otherwise (never
    from the order policies happen to appear in)."""
    base = label.split(" ")[0].split("/")[0].removesuffix("+backfill")
    if base in KNOWN and label == base:
        return COLOURS[KNOWN.index(base)]
    return COLOURS[zlib.crc32(label.encode()) % len(COLOURS)]


@dataclass(frozen=True)
class Grid:
    """One trace's part of a grid: a row per run (results.csv) and a row per cell."""

    trace: str
    runs: pd.DataFrame  # with a "label" column naming the policy cell
    cells: pd.DataFrame  # aggregate.csv rows, with "label"
    labels: list[str]

    @property
    def loads(self) -> list[float]:
        return sorted(self.runs["load"].dropna().unique().tolist())


def _label(frame: pd.DataFrame, several_placements: bool) -> pd.Series:
    label = frame["policy"].astype(str)
    if several_placements:
        label = label + "/" + frame["placement"].astype(str)
    variant = frame["variant"].fillna("").astype(str)
    return label.where(variant == "", label + " " + variant)


def make_grid(trace: str, runs: pd.DataFrame, cells: pd.DataFrame) -> Grid:
    several = runs["placement"].nunique() > 1
    runs = runs.assign(label=_label(runs, several))
    cells = cells.assign(label=_label(cells, several))
    return Grid(trace, runs, cells, list(dict.fromkeys(runs["label"])))


def _metric(field: str) -> tuple[str, str, float, int, bool]:
    return next(m for m in METRICS if m[0] == field)


def _defined(grid: Grid, field: str) -> bool:
    return field in grid.runs and grid.runs[field].notna().any()


# ------------------------------------------------------------------------------------ sections


def summary_section(grid: Grid) -> str:
    """Metrics as rows, policies as columns, ``mean ± CI`` cells; one table per load."""
    e = html.escape
    out = ['<h2 id="summary">Summary</h2>']
    for load in grid.loads or [None]:
        cells = grid.cells if load is None else grid.cells[grid.cells["load"] == load]
        by_label = {r["label"]: r for _, r in cells.iterrows()}
        head = "".join(
            f'<th><span class="swatch" style="background:{policy_colour(lb)}"></span>{e(lb)}</th>'
            for lb in grid.labels
        )
        rows = []
        for field, name, scale, digits, higher in METRICS:
            if f"{field}_mean" not in cells or not cells[f"{field}_mean"].notna().any():
                continue
            means = [
                by_label[lb][f"{field}_mean"] if lb in by_label else math.nan for lb in grid.labels
            ]
            finite = [m for m in means if m is not None and math.isfinite(m)]
            best = (max if higher else min)(finite) if finite else None
            tds = []
            for lb, m in zip(grid.labels, means, strict=True):
                r = by_label.get(lb)
                text = "—" if r is None else mean_ci(m, r[f"{field}_ci95"], scale, digits)
                cls = (
                    ' class="best"'
                    if best is not None and m == best and len(set(finite)) > 1
                    else ""
                )
                tds.append(f"<td{cls}>{e(text)}</td>")
            rows.append(f"<tr><th>{e(name)}</th>{''.join(tds)}</tr>")
        seeds = "".join(
            f"<td>{int(by_label[lb]['seeds']) if lb in by_label else 0}</td>" for lb in grid.labels
        )
        rows.append(f'<tr class="meta"><th>Seeds</th>{seeds}</tr>')
        caption = "" if load is None else f"<h3>Offered load {load:g}</h3>"
        out.append(
            f'{caption}<div class="table-wrap"><table class="summary grid">'
            f"<thead><tr><th>metric</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table></div>"
        )
    out.append(
        '<p class="note">mean ± half-width of the 95 % Student-t interval over seeds (no '
        "interval with one seed); best mean in <b>bold</b>. Total wait: queue delay plus time "
        "spent preempted. Steady-state utilisation: from the arrival of the first 10 % of jobs "
        "to the last arrival (warm-up and drain left out).</p>"
    )
    return "".join(out)


def _dots(ax: object, grid: Grid, runs: pd.DataFrame, field: str) -> None:
    """Per policy: each seed a small dot (jittered sideways), the mean ± CI a bar."""
    _, name, scale, _, _ = _metric(field)
    for i, label in enumerate(grid.labels):
        values = runs.loc[runs["label"] == label, field].to_numpy(dtype=np.float64) * scale
        values = values[np.isfinite(values)]
        if len(values) == 0:
            continue
        colour = policy_colour(label)
        jitter = np.linspace(-0.18, 0.18, len(values)) if len(values) > 1 else np.zeros(1)
        ax.scatter(i + jitter, values, s=10, color=colour, alpha=0.55, lw=0)  # type: ignore[attr-defined]
        mean = float(values.mean())
        half = 0.0
        if len(values) > 1:
            from schedlab.experiments.seed_stats import ci_half_width

            half = ci_half_width(float(values.std(ddof=1)), len(values))
        ax.errorbar([i], [mean], yerr=[[half], [half]], fmt="D", ms=5, color=colour, capsize=4)  # type: ignore[attr-defined]
    ax.set_xticks(range(len(grid.labels)))  # type: ignore[attr-defined]
    ax.set_xticklabels(grid.labels, rotation=20, ha="right", fontsize=8)  # type: ignore[attr-defined]
    ax.set_ylabel(name, fontsize=9)  # type: ignore[attr-defined]


def _last_load(grid: Grid) -> tuple[pd.DataFrame, str]:
    if not grid.loads:
        return grid.runs, ""
    top = grid.loads[-1]
    return grid.runs[grid.runs["load"] == top], f" at offered load {top:g}"


def _small_multiples(n: int) -> tuple[Figure, Sequence[Any]]:
    """``n`` panels side by side in one figure of the report's width."""
    fig, _ = _figure(height=3.4)
    fig.clear()
    axes = fig.subplots(1, n, squeeze=False)[0]
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
    return fig, list(axes)


def seeds_section(grid: Grid) -> str:
    """Small multiples: each metric per policy, one dot per seed, mean ± CI."""
    fields = [f for f in FIGURE_METRICS if _defined(grid, f)]
    runs, where = _last_load(grid)
    fig, axes = _small_multiples(len(fields))
    for ax, field in zip(axes, fields, strict=True):
        _dots(ax, grid, runs, field)
    caption = (
        f"Each dot is one seed{where}; the diamond and bar are the mean and its 95 % interval."
    )
    return _figure_html("Seeds around each policy's mean", fig, caption)


def dsr_section(grid: Grid) -> str | None:
    """Deadline satisfactory ratio per policy (only when the trace has deadlines)."""
    if not _defined(grid, "dsr"):
        return None
    runs, where = _last_load(grid)
    fig, ax = _figure(height=3.2)
    _dots(ax, grid, runs, "dsr")
    ax.set_ylim(-0.02, 1.02)
    caption = f"Share of jobs with a deadline that finished by it, a dot per seed{where}."
    return _figure_html("Deadlines met", fig, caption)


def load_section(grid: Grid) -> str | None:
    """Metric against offered load: each policy's mean as a line, its 95 % interval a band."""
    if len(grid.loads) < 2:
        return None
    fields = [f for f in (*FIGURE_METRICS, "dsr") if _defined(grid, f)]
    fig, axes = _small_multiples(len(fields))
    for ax, field in zip(axes, fields, strict=True):
        _, name, scale, _, _ = _metric(field)
        for label in grid.labels:
            rows = grid.cells[grid.cells["label"] == label].sort_values("load")
            x = rows["load"].to_numpy(dtype=np.float64)
            y = rows[f"{field}_mean"].to_numpy(dtype=np.float64) * scale
            half = np.nan_to_num(rows[f"{field}_ci95"].to_numpy(dtype=np.float64) * scale)
            colour = policy_colour(label)
            ax.plot(x, y, marker="o", ms=3, lw=1.6, color=colour, label=label)
            ax.fill_between(x, y - half, y + half, color=colour, alpha=0.15, lw=0)
        ax.set_xlabel("Offered load", fontsize=9)
        ax.set_ylabel(name, fontsize=9)
    axes[0].legend(frameon=False, fontsize=7)
    caption = "Mean over seeds per load; the band is the 95 % interval."
    return _figure_html("Against offered load", fig, caption)


def cdf_section(grid: Grid) -> str:
    """JCT CDF: one thin line per seed in its policy's colour, one legend entry per policy."""
    runs, where = _last_load(grid)
    fig, ax = _figure()
    drawn: set[str] = set()
    for _, run in runs.iterrows():
        try:
            jobs = pd.read_csv(Path(str(run["written_to"])) / "jobs.csv")
        except (OSError, KeyError, pd.errors.ParserError):
            continue
        cdf = jct_cdf(jobs)
        cdf = cdf[cdf["jct"] > 0]
        if cdf.empty:
            continue
        label = str(run["label"])
        ax.step(
            cdf["jct"].to_numpy(),
            cdf["fraction"].to_numpy(),
            where="post",
            lw=1.0,
            alpha=0.6,
            color=policy_colour(label),
            label=None if label in drawn else label,
        )
        drawn.add(label)
    if drawn:
        ax.set_xscale("log")
        ax.legend(frameon=False, fontsize=8, loc="lower right")
    else:
        _empty_note(ax, "no completed jobs")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("Job completion time (s, log scale)")
    ax.set_ylabel("Fraction of completed jobs")
    return _figure_html(
        "JCT distribution", fig, f"A thin line per seed, in its policy's colour{where}."
    )


def _figure_html(name: str, fig: Figure, caption: str) -> str:
    """A section's figure with its caption; the SVG's ids and the anchor come from ``name``."""
    e = html.escape
    anchor = e(name.lower().replace(" ", "-").replace("'", ""))
    fig.tight_layout()
    svg = _svg(fig, f"fig-{anchor}", f"{name}. {caption}")
    caption_html = f"<figcaption><b>{e(name)}.</b> {e(caption)}</figcaption>"
    return f'<figure id="{anchor}">{svg}{caption_html}</figure>'


#: The page, in order; each returns its HTML, or None when it does not apply to the grid.
SECTIONS: tuple[Callable[[Grid], str | None], ...] = (
    summary_section,
    seeds_section,
    dsr_section,
    load_section,
    cdf_section,
)

GRID_CSS = """
main { max-width: 1400px; }
table.grid th, table.grid td { white-space: normal; padding: 5px 8px; font-size: 0.85rem; }
table.grid thead th { vertical-align: bottom; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
          margin-right: 5px; vertical-align: baseline; }
p.note { color: var(--muted); font-size: 0.85rem; }
h3 { font-size: 1rem; margin: 16px 0 6px; }
"""


def render_grid(
    grid: Grid, title: str, sections: Sequence[Callable[[Grid], str | None]] = SECTIONS
) -> str:
    e = html.escape
    parts = [html_part for section in sections if (html_part := section(grid)) is not None]
    n = len(grid.runs)
    seeds = grid.runs["seed"].nunique()
    policies = f"{len(grid.labels)} polic{'ies' if len(grid.labels) != 1 else 'y'}"
    return f"""{page_head(title, GRID_CSS)}
<p class="lead">{n} runs: {policies} × {seeds}
seed{"s" if seeds != 1 else ""}{f" × {len(grid.loads)} loads" if grid.loads else ""}.
Each run's own folder is listed in results.csv.</p>
{"".join(parts)}
</main>
<footer><p>Made by schedlab {e(__version__)}.</p></footer>
</body>
</html>
"""


def build_grid_report(grid: Grid, out: Path, title: str) -> Path:
    page = render_grid(grid, title)
    atomic_write(out, lambda fh: fh.write(page))
    return out
