"""One self-contained HTML page for a replay grid: policies compared over seeds (and loads).

A grid of 10 seeds × 4 policies is 40 runs, but a reader compares 4 policies: the page is built
around them. Every figure gives a policy the same look (:mod:`schedlab.report.colours`, fixed by
the policy's name, so also the same in every other report), seeds appear as small dots or a band
around their policy's line instead of as legend entries, and the summary table has a column per
policy with ``mean ± 95 % CI`` cells.

The page is a list of sections (:data:`SECTIONS`); each is a function of the grid that returns
its HTML or None when it does not apply (no deadlines: no DSR view; one load: no load curves), so
adding a section is adding a function to that list. Like the run report it loads nothing: inline
SVG and CSS, a Content-Security-Policy that forbids fetches, byte-identical output for the same
inputs.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from schedlab import __version__
from schedlab.experiments.seed_stats import mean_ci, time_unit
from schedlab.metrics.replay_metrics import jct_cdf
from schedlab.report.colours import Look, figure_looks
from schedlab.report.html_report import _empty_note, _figure
from schedlab.report.page import best_cells, inline_svg, page_head
from schedlab.results import atomic_write

#: (summary field, label, scale, digits, higher is better) of the table and figures; a scale
#: of None is a duration, shown in s, min or h, whichever suits the values drawn.
METRICS: tuple[tuple[str, str, float | None, int, bool], ...] = (
    ("avg_jct", "Mean JCT", None, 2, False),
    ("p99_jct", "p99 JCT", None, 2, False),
    ("avg_queue_delay", "Mean queue delay", None, 2, False),
    ("avg_total_wait", "Mean total wait", None, 2, False),
    ("avg_bounded_slowdown", "Mean bounded slowdown", 1, 2, False),
    ("gpu_utilization", "GPU utilisation (%)", 100, 1, True),
    ("steady_gpu_utilization", "Steady-state utilisation (%)", 100, 1, True),
    ("preemptions", "Preemptions", 1, 1, False),
    ("jain_fairness", "Jain fairness", 1, 3, True),
    ("dsr", "Deadline satisfactory ratio", 1, 3, True),
    ("completed", "Completed jobs", 1, 0, True),
    ("energy_kwh", "Facility energy (kWh)", 1, 0, False),
    ("carbon_kg", "Carbon (kg CO2e)", 1, 1, False),
)
#: The metrics drawn per seed and against load.
FIGURE_METRICS = ("avg_jct", "avg_total_wait", "steady_gpu_utilization")


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


def _metric(field: str, values: Sequence[float] = ()) -> tuple[str, str, float, int, bool]:
    """A metric's row, with a duration's label and scale in the unit that suits ``values``
    (seconds)."""
    field, name, scale, digits, higher = next(m for m in METRICS if m[0] == field)
    if scale is None:
        divide, unit = time_unit(values)
        name, scale = f"{name} ({unit})", 1 / divide
    return field, name, scale, digits, higher


def looks(grid: Grid) -> dict[str, Look]:
    """Each policy label's look on this page (fixed by its name: the same in every report)."""
    return figure_looks(grid.labels)


def _defined(grid: Grid, field: str) -> bool:
    return field in grid.runs and grid.runs[field].notna().any()


# ------------------------------------------------------------------------------------ sections


def summary_section(grid: Grid) -> str:
    """Metrics as rows, policies as columns, ``mean ± CI`` cells; one table per load."""
    e = html.escape
    colour = looks(grid)
    out = ['<h2 id="summary">Summary</h2>']
    for load in grid.loads or [None]:
        cells = grid.cells if load is None else grid.cells[grid.cells["load"] == load]
        by_label = {r["label"]: r for _, r in cells.iterrows()}
        head = "".join(
            f'<th><span class="swatch" style="background:{colour[lb].colour}"></span>{e(lb)}</th>'
            for lb in grid.labels
        )
        rows = []
        for field, *_ in METRICS:
            if f"{field}_mean" not in cells or not cells[f"{field}_mean"].notna().any():
                continue
            means = [
                by_label[lb][f"{field}_mean"] if lb in by_label else math.nan for lb in grid.labels
            ]
            _, name, scale, digits, higher = _metric(field, means)
            texts = [
                "—"
                if lb not in by_label
                else mean_ci(m, by_label[lb][f"{field}_ci95"], scale, digits, field)
                for lb, m in zip(grid.labels, means, strict=True)
            ]
            shown = [t.split(" ")[0] for t in texts]  # the means as displayed
            bold = best_cells(shown, means, higher)
            best = ' class="best"'
            tds = "".join(
                f"<td{best if b else ''}>{e(t)}</td>" for t, b in zip(texts, bold, strict=True)
            )
            rows.append(f"<tr><th>{e(name)}</th>{tds}</tr>")
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
        "interval with one seed); where that interval leaves what the quantity can be (a "
        "negative count or wait, a share above 1), its ends clipped to that range are shown in "
        "brackets instead. Best mean as shown in <b>bold</b> (every one of a tie; none when all "
        "show the same). Durations in s, min or h by their size. Total wait: queue delay plus time "
        "spent preempted. Steady-state utilisation: from the arrival of the first 10 % of jobs "
        "to the last arrival (warm-up and drain left out).</p>"
    )
    return "".join(out)


def _dots(ax: object, grid: Grid, runs: pd.DataFrame, field: str) -> None:
    """Per policy: each seed a small dot (jittered sideways), the mean and its 95 % interval
    (clipped to what the quantity can be) a diamond and bar."""
    from schedlab.experiments.seed_stats import RANGES, ci_half_width, interval

    _, name, scale, _, _ = _metric(field, runs[field].tolist())
    look = looks(grid)
    for i, label in enumerate(grid.labels):
        raw = runs.loc[runs["label"] == label, field].to_numpy(dtype=np.float64)
        raw = raw[np.isfinite(raw)]
        if len(raw) == 0:
            continue
        colour = look[label].colour
        jitter = np.linspace(-0.18, 0.18, len(raw)) if len(raw) > 1 else np.zeros(1)
        ax.scatter(i + jitter, raw * scale, s=10, color=colour, alpha=0.55, lw=0)  # type: ignore[attr-defined]
        mean = float(raw.mean())
        lo = hi = mean
        if len(raw) > 1:
            lo, hi = interval(mean, ci_half_width(float(raw.std(ddof=1)), len(raw)), field)
        below, above = (mean - lo) * scale, (hi - mean) * scale
        ax.errorbar(  # type: ignore[attr-defined]
            [i], [mean * scale], yerr=[[below], [above]], fmt="D", ms=5, color=colour, capsize=4
        )
    low, high = RANGES.get(field, (-math.inf, math.inf))
    if math.isfinite(low):
        ax.set_ylim(bottom=low * scale - 0.02 * abs(ax.get_ylim()[1] - low * scale))  # type: ignore[attr-defined]
    if math.isfinite(high) and ax.get_ylim()[1] > high * scale:  # type: ignore[attr-defined]
        ax.set_ylim(top=high * scale * 1.02)  # type: ignore[attr-defined]
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
    caption = f"Share of jobs with a deadline that finished by it, a dot per seed{where}."
    return _figure_html("Deadlines met", fig, caption)


def load_section(grid: Grid) -> str | None:
    """Metric against offered load: each policy's mean as a line, its 95 % interval (clipped to
    what the quantity can be) a band."""
    if len(grid.loads) < 2:
        return None
    from schedlab.experiments.seed_stats import interval

    fields = [f for f in (*FIGURE_METRICS, "dsr") if _defined(grid, f)]
    look = looks(grid)
    fig, axes = _small_multiples(len(fields))
    for ax, field in zip(axes, fields, strict=True):
        _, name, scale, _, _ = _metric(field, grid.cells[f"{field}_mean"].tolist())
        for label in grid.labels:
            rows = grid.cells[grid.cells["label"] == label].sort_values("load")
            x = rows["load"].to_numpy(dtype=np.float64)
            mean = rows[f"{field}_mean"].to_numpy(dtype=np.float64)
            half = np.nan_to_num(rows[f"{field}_ci95"].to_numpy(dtype=np.float64))
            ends = np.array([interval(m, h, field) for m, h in zip(mean, half, strict=True)])
            ax.plot(x, mean * scale, marker="o", ms=3, lw=1.6, label=label, **look[label].line)
            ax.fill_between(
                x,
                ends[:, 0] * scale,
                ends[:, 1] * scale,
                color=look[label].colour,
                alpha=0.15,
                lw=0,
            )
        ax.set_xlabel("Offered load", fontsize=9)
        ax.set_ylabel(name, fontsize=9)
    axes[0].legend(frameon=False, fontsize=7)
    caption = "Mean over seeds per load; the band is the 95 % interval, clipped to the range."
    return _figure_html("Against offered load", fig, caption)


#: Points of each policy's JCT quantile curve.
CDF_POINTS = 200


def _quantiles(path: Path, q: np.ndarray) -> np.ndarray | None:
    """A run's JCT at the cumulative fractions ``q`` (None: no completed job, or unreadable)."""
    try:
        jobs = pd.read_csv(path / "jobs.csv")
    except (OSError, pd.errors.ParserError):
        return None
    jct = jct_cdf(jobs)["jct"].to_numpy(dtype=np.float64)
    jct = jct[jct > 0]
    return np.quantile(jct, q) if len(jct) else None


def cdf_section(grid: Grid) -> str:
    """JCT CDF per policy: the median over seeds of each JCT quantile as a line, the range
    over seeds as a light band (40 seed lines in one figure blend into a blur)."""
    from schedlab.report.html_report import duration_axis

    runs, where = _last_load(grid)
    look = looks(grid)
    fig, ax = _figure()
    q = np.linspace(0.0, 1.0, CDF_POINTS)
    lo, hi = math.inf, 0.0
    for label in grid.labels:
        mine = runs[runs["label"] == label]
        curves = [_quantiles(Path(str(d)), q) for d in mine.get("written_to", [])]
        stack = np.array([c for c in curves if c is not None])
        if not len(stack):
            continue
        median = np.median(stack, axis=0)
        if len(stack) > 1:
            band = (stack.min(axis=0), stack.max(axis=0))
            ax.fill_betweenx(q, *band, color=look[label].colour, alpha=0.12, lw=0)
        ax.plot(median, q, lw=1.6, label=f"{label} ({len(stack)} seeds)", **look[label].line)
        lo, hi = min(lo, float(stack.min())), max(hi, float(stack.max()))
    if hi > 0:
        ax.set_xscale("log")
        duration_axis(ax, lo, hi)
        ax.legend(frameon=False, fontsize=8, loc="lower right")
    else:
        _empty_note(ax, "no completed jobs")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("Job completion time (log scale)")
    ax.set_ylabel("Fraction of completed jobs")
    caption = (
        f"Per policy, the median over seeds of each JCT quantile; the band spans the seeds{where}."
    )
    return _figure_html("JCT distribution", fig, caption)


def _figure_html(name: str, fig: Figure, caption: str) -> str:
    """A section's figure with its caption; the SVG's ids and the anchor come from ``name``."""
    e = html.escape
    anchor = e(name.lower().replace(" ", "-").replace("'", ""))
    fig.tight_layout()
    svg = inline_svg(fig, f"fig-{anchor}", f"{name}. {caption}")
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
