"""One self-contained HTML page comparing replay runs: a summary table and four figures.

The page must open anywhere (an e-mail attachment, a CI artefact, an air-gapped laptop), so it
loads nothing: figures are inline SVG, styles are inline CSS, there is no script, and a
Content-Security-Policy forbids any fetch so that a stray external reference fails loudly in a
browser instead of silently leaking a request.

Figures are drawn from ``jobs.csv``/``timeseries.csv`` and the table from ``summary.json`` (the
recorded result), with any metric the summary lacks recomputed from the CSVs. The same folders
give byte-identical HTML: no timestamps, stable SVG ids.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

from schedlab.errors import InputError
from schedlab.metrics.replay_metrics import (
    TIMESERIES_COLUMNS,
    jct_cdf,
    job_metrics,
    per_user,
    step_integral,
    summarize,
    utilization_series,
)
from schedlab.report import mpl  # noqa: F401 - the Agg backend and svg.hashsalt for every figure
from schedlab.report.colours import Look, figure_looks, policy_look
from schedlab.report.page import best_cells, html_page, inline_svg
from schedlab.report.run_checks import check_run
from schedlab.report.sharing_report import is_sharing_run, render_sharing_page
from schedlab.results import atomic_write

#: Points per run and per time-series figure; keeps a month-long trace's page to a few MB.
MAX_POINTS = 2000
#: Users shown in the per-user figure (by job count over all runs).
TOP_USERS = 20
#: Inches; every figure has the same width so that text is the same size in all of them.
FIG_WIDTH = 8.4


@dataclass(frozen=True)
class Run:
    """One run folder as read: what the table and figures need, nothing else."""

    folder: Path
    label: str
    summary: dict[str, Any]
    jobs: pd.DataFrame  # with job_metrics columns
    timeseries: pd.DataFrame | None  # None when the folder has no timeseries.csv
    #: How the run is drawn in every figure of the page (its policy's look).
    look: Look = field(default_factory=lambda: policy_look(""))


# --------------------------------------------------------------------------------------- input


def _read_csv(path: Path, dtype: dict[str, str] | None = None) -> pd.DataFrame:
    try:
        return pd.read_csv(path, dtype=dtype)
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror}", path=str(path)) from None
    except pd.errors.EmptyDataError:
        raise InputError("file is empty (not even a header row)", path=str(path)) from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"cannot read CSV ({exc})", path=str(path)) from None


def _at(path: Path, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` and re-raise an InputError from it with the file it came from."""
    try:
        return fn()
    except InputError as exc:
        raise InputError(exc.message, path=str(path), column=exc.column) from None


def _read_run(folder: Path) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame | None]:
    """Check a folder has what a report needs before anything is drawn or written."""
    if not folder.is_dir():
        raise InputError("run folder not found", path=str(folder))
    for name in ("jobs.csv", "summary.json"):
        if not (folder / name).is_file():
            raise InputError(f"run folder has no {name}", path=str(folder))
    summary = check_run(folder)  # every row and field, with its file and line
    jobs_path = folder / "jobs.csv"
    jobs = _read_csv(jobs_path, dtype={"job_id": "str", "user": "str", "status": "str"})
    jobs = _at(jobs_path, lambda: job_metrics(jobs))
    ts_path = folder / "timeseries.csv"
    ts = None
    if ts_path.is_file():
        ts = _read_csv(ts_path)
        _at(ts_path, lambda: utilization_series(ts))  # validates columns and numbers
        ts = (
            ts.sort_values("time", kind="stable")
            if len(ts)
            else ts.reindex(columns=list(TIMESERIES_COLUMNS))
        )
    return summary, jobs, ts


def _labels(folders: Sequence[Path], summaries: Sequence[dict[str, Any]]) -> list[str]:
    """``policy/placement``; the folder name is added only where two runs would look the same."""
    base = []
    for folder, s in zip(folders, summaries, strict=True):
        parts = [str(s[k]) for k in ("policy", "placement") if s.get(k) not in (None, "")]
        base.append("/".join(parts) or folder.name)
    labels = [
        f"{b} · {f.name}" if base.count(b) > 1 and b != f.name else b
        for b, f in zip(base, folders, strict=True)
    ]
    seen: dict[str, int] = {}
    out = []
    for label in labels:  # same label and same folder name (different parents): number them
        seen[label] = seen.get(label, 0) + 1
        out.append(label if labels.count(label) == 1 else f"{label} #{seen[label]}")
    return out


def load_runs(run_dirs: Sequence[Path]) -> list[Run]:
    """Read and check every folder; the first bad one raises :class:`InputError`."""
    if not run_dirs:
        raise InputError("no run folders given")
    folders = [Path(d) for d in run_dirs]
    read = [_read_run(f) for f in folders]
    labels = _labels(folders, [r[0] for r in read])
    looks = figure_looks(labels)
    runs = []
    for folder, label, (summary, jobs, ts) in zip(folders, labels, read, strict=True):
        computed = summarize(jobs, ts if ts is not None else pd.DataFrame())
        if ts is None:  # no series: do not show zeros computed from nothing
            computed["gpu_utilization"] = computed["avg_queue_length"] = None
        runs.append(Run(folder, label, {**computed, **summary}, jobs, ts, looks[label]))
    return runs


# ------------------------------------------------------------------------------------- figures


def _style(run: Run) -> dict[str, Any]:
    """The run's policy look (:mod:`schedlab.report.colours`): the same in every figure."""
    return dict(run.look.line)


def _figure(width: float = FIG_WIDTH, height: float = 3.6) -> tuple[Figure, Any]:
    fig = Figure(figsize=(width, height))
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def _empty_note(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="#666")


#: Log-axis ticks a person reads at a glance.
_DURATION_TICKS = (
    (1, "1 s"),
    (10, "10 s"),
    (60, "1 min"),
    (600, "10 min"),
    (3600, "1 h"),
    (36_000, "10 h"),
    (86_400, "1 d"),
    (864_000, "10 d"),
    (8_640_000, "100 d"),
)


def _cdf_points(jct: np.ndarray, fraction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At most MAX_POINTS points of the CDF, evenly spaced in fraction (keeps both tails)."""
    if len(jct) <= MAX_POINTS:
        return jct, fraction
    idx = np.unique(np.linspace(0, len(jct) - 1, MAX_POINTS).round().astype(int))
    return jct[idx], fraction[idx]


def duration_axis(ax: Any, lo: float, hi: float) -> None:
    """A log x axis over [lo, hi] seconds with ticks a person reads (1 min, 1 h, 1 d …)."""
    ticks = [(v, t) for v, t in _DURATION_TICKS if lo / 10 <= v <= hi * 10]
    if len(ticks) >= 2:
        ax.xaxis.set_major_locator(FixedLocator([v for v, _ in ticks]))
        ax.set_xticklabels([t for _, t in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(lo / 1.2, hi * 1.2)


def figure_jct_cdf(runs: Sequence[Run]) -> str:
    curves = []
    for run in runs:
        cdf = jct_cdf(run.jobs)
        cdf = cdf[cdf["jct"] > 0]  # a log axis cannot show zero
        curves.append((run.label, cdf["jct"].to_numpy(), cdf["fraction"].to_numpy(), _style(run)))
    return jct_cdf_figure(curves, "fig-jct-cdf", "CDF of job completion time per run")


def jct_cdf_figure(
    curves: Sequence[tuple[str, np.ndarray, np.ndarray, dict[str, Any]]], name: str, alt: str
) -> str:
    """JCT CDFs on a log axis: one (label, JCTs ascending and > 0, fractions, line style) per
    curve; an empty one is left out."""
    fig, ax = _figure()
    lo, hi, drawn = math.inf, 0.0, False
    for label, jct, fraction, style in curves:
        if not len(jct):
            continue
        x, y = _cdf_points(jct, fraction)
        ax.step(x, y, where="post", lw=1.6, label=label, **style)
        lo, hi, drawn = min(lo, float(x[0])), max(hi, float(x[-1])), True
    ax.set_xscale("log")
    if drawn:
        duration_axis(ax, lo, hi)
        ax.legend(frameon=False, fontsize=8, loc="lower right")
    else:
        ax.set_xlim(1, 86_400)
        _empty_note(ax, "no completed jobs")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("Job completion time (log scale)")
    ax.set_ylabel("Fraction of completed jobs")
    return inline_svg(fig, name, alt)


def _time_unit(runs: Sequence[Run]) -> tuple[float, str]:
    """Minutes, hours or days, whichever keeps the axis numbers small but not fractional."""
    span = 0.0
    for run in runs:
        if run.timeseries is not None and len(run.timeseries):
            t = run.timeseries["time"].to_numpy(dtype=np.float64)
            span = max(span, float(np.nanmax(t) - np.nanmin(t)))
    if span <= 3 * 3600:
        return 60.0, "min"
    if span <= 3 * 86_400:
        return 3600.0, "h"
    return 86_400.0, "days"


def downsample_step(
    times: np.ndarray, values: np.ndarray, max_points: int = MAX_POINTS
) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(x, y, is_step)``: the series itself when short, else time-weighted bin means.

    Picking every k-th row of a step function drops short spikes and distorts averages; the mean
    of each of ``max_points`` equal time bins keeps the area (so the eye-balled average matches
    the table) and is exact, computed from the step integral.
    """
    if len(times) <= max_points:
        return times, values, True
    edges = np.linspace(times[0], times[-1], max_points + 1)
    integral = step_integral(times, values, edges)
    means = np.diff(integral) / np.diff(edges)
    return (edges[:-1] + edges[1:]) / 2, means, False


def _figure_series(
    runs: Sequence[Run], name: str, ylabel: str, alt: str, series: Callable[[Run], np.ndarray]
) -> str:
    fig, ax = _figure()
    scale, unit = _time_unit(runs)
    drawn = False
    for run in runs:
        if run.timeseries is None or run.timeseries.empty:
            continue
        times = run.timeseries["time"].to_numpy(dtype=np.float64)
        x, y, step = downsample_step(times, series(run))
        ax.plot(
            x / scale,
            y,
            lw=1.3,
            label=run.label,
            drawstyle="steps-post" if step else "default",
            **_style(run),
        )
        drawn = True
    if drawn:
        ax.legend(frameon=False, fontsize=8)
    else:
        _empty_note(ax, "no time series recorded")
    ax.set_xlabel(f"Time ({unit})")
    ax.set_ylabel(ylabel)
    return inline_svg(fig, name, alt)


def figure_queue_length(runs: Sequence[Run]) -> str:
    return _figure_series(
        runs,
        "fig-queue",
        "Jobs waiting in the queue",
        "Queue length over time per run",
        lambda r: r.timeseries["queue_length"].to_numpy(dtype=np.float64),  # type: ignore[index]
    )


def figure_utilization(runs: Sequence[Run]) -> str:
    svg = _figure_series(
        runs,
        "fig-util",
        "Busy GPUs (% of cluster)",
        "GPU utilisation over time per run",
        lambda r: 100 * utilization_series(r.timeseries)[1],  # type: ignore[arg-type]
    )
    return svg


def figure_per_user(runs: Sequence[Run]) -> str:
    """Mean JCT of the busiest users (by job count over all runs), one bar per run."""
    tables = [per_user(run.jobs).set_index("user") for run in runs]
    counts = pd.concat([t["jobs"] for t in tables], axis=1).fillna(0).sum(axis=1)
    counts = counts.reset_index().set_axis(["user", "jobs"], axis=1)
    top = counts.sort_values(["jobs", "user"], ascending=[False, True], kind="stable")
    users = top["user"].head(TOP_USERS).tolist()
    fig, ax = _figure(height=3.9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.grid(False, axis="x")
    means = [t["mean_jct"].reindex(users).to_numpy(dtype=np.float64) for t in tables]
    finite = np.concatenate(means) if means else np.array([])
    finite = finite[np.isfinite(finite)]
    if len(users) == 0 or len(finite) == 0:
        _empty_note(ax, "no completed jobs")
    else:
        peak = float(finite.max())
        scale, unit = (3600.0, "h") if peak >= 2 * 3600 else (60.0, "min")
        width = 0.8 / len(runs)
        x = np.arange(len(users))
        for i, (run, m) in enumerate(zip(runs, means, strict=True)):
            ax.bar(
                x - 0.4 + width * (i + 0.5),
                m / scale,
                width=width,
                label=run.label,
                color=run.look.colour,
                alpha=0.9,
            )
        ax.set_xticks(x, [u or "(no user)" for u in users], rotation=45, ha="right", fontsize=8)
        ax.set_ylabel(f"Mean JCT ({unit})")
        ax.legend(frameon=False, fontsize=8)
    ax.set_xlabel(f"User (top {min(TOP_USERS, len(users))} by job count)")
    return inline_svg(fig, "fig-users", "Mean job completion time per user and run")


# --------------------------------------------------------------------------------------- table


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 2 * 86_400:
        return f"{seconds / 3600:.2f} h"
    return f"{seconds / 86_400:.2f} d"


def _int(v: float) -> str:
    return f"{int(v):,}"


def _num(v: float) -> str:
    return f"{v:,.2f}"


def _pct(v: float) -> str:
    return f"{100 * v:.1f} %"


#: key → (row label, formatter, which way is better: -1 lower, +1 higher, 0 neither)
METRIC_ROWS: tuple[tuple[str, str, Callable[[float], str], int], ...] = (
    ("jobs", "Jobs", _int, 0),
    ("completed", "Completed", _int, 0),
    ("rejected", "Rejected", _int, -1),
    ("unfinished", "Unfinished at end", _int, -1),
    ("users", "Users", _int, 0),
    ("avg_jct", "Mean JCT", _duration, -1),
    ("p50_jct", "Median JCT", _duration, -1),
    ("p95_jct", "p95 JCT", _duration, -1),
    ("p99_jct", "p99 JCT", _duration, -1),
    ("avg_queue_delay", "Mean queue delay", _duration, -1),
    ("p99_queue_delay", "p99 queue delay", _duration, -1),
    ("avg_bounded_slowdown", "Mean bounded slowdown", _num, -1),
    ("makespan", "Makespan", _duration, -1),
    ("gpu_utilization", "GPU utilisation", _pct, +1),
    ("cluster_efficiency", "Cluster efficiency (speed-up per GPU)", _pct, +1),
    ("avg_queue_length", "Mean queue length", _num, -1),
    ("preemptions", "Preemptions", _int, -1),
    ("jain_fairness", "Jain fairness (per-user slowdown)", lambda v: f"{v:.3f}", +1),
    ("deadline_jobs", "Jobs with a deadline", _int, 0),
    ("dsr", "Deadline satisfactory ratio", _pct, +1),
    ("best_effort_avg_jct", "Mean JCT, jobs without deadline", _duration, -1),
    ("wall_seconds", "Wall time of the replay", _duration, 0),
)
#: Rows shown only when some run has the key (deadline metrics exist only with deadlines).
OPTIONAL_ROWS = {
    "deadline_jobs",
    "dsr",
    "best_effort_avg_jct",
    "wall_seconds",
    "cluster_efficiency",
}


def _value(summary: dict[str, Any], key: str) -> float | None:
    v = summary.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def summary_table(runs: Sequence[Run]) -> str:
    """Metrics as rows and runs as columns (reads well for the usual 2–8 runs); best in bold."""
    e = html.escape
    head = "".join(f'<th scope="col">{e(r.label)}</th>' for r in runs)
    rows = []
    for key in ("trace", "seed"):
        if any(r.summary.get(key) not in (None, "") for r in runs):
            cells = "".join(f"<td>{e(str(r.summary.get(key, '')))}</td>" for r in runs)
            rows.append(f'<tr class="meta"><th scope="row">{key.title()}</th>{cells}</tr>')
    for key, label, fmt, better in METRIC_ROWS:
        values = [_value(r.summary, key) for r in runs]
        if key in OPTIONAL_ROWS and all(v is None for v in values):
            continue
        texts = ["—" if v is None else fmt(v) for v in values]
        bold = best_cells(texts, values, better > 0) if better else [False] * len(values)
        cells = []
        for v, text, b in zip(values, texts, bold, strict=True):
            if v is None:
                cells.append('<td class="na">—</td>')
            else:
                cls = ' class="best"' if b else ""
                cells.append(f'<td{cls} title="{v:g}">{e(text)}</td>')
        rows.append(f'<tr><th scope="row">{e(label)}</th>{"".join(cells)}</tr>')
    return (
        '<div class="table-wrap"><table class="summary">'
        f'<thead><tr><th scope="col">Metric</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


# ---------------------------------------------------------------------------------------- page

DEFINITIONS = (
    ("JCT", "job completion time: end − submit, completed jobs only."),
    ("Queue delay", "first start − submit, over jobs that started."),
    (
        "Bounded slowdown",
        "max(1, JCT ÷ max(duration, 10 s)); jobs with unknown duration are left out.",
    ),
    (
        "GPU utilisation, queue length",
        "time-weighted means over [first submit, last completion].",
    ),
    ("Jain fairness", "(Σx)² ÷ (n·Σx²) over each user's mean bounded slowdown; 1 is even."),
    ("Deadline satisfactory ratio", "jobs done by their deadline ÷ jobs with a deadline."),
)


def render_html(runs: Sequence[Run], title: str | None = None) -> str:
    """The whole page as a string (no I/O), so it can be tested and written atomically."""
    e = html.escape
    title = title or f"Replay report: {len(runs)} run{'s' if len(runs) != 1 else ''}"
    figures = (
        ("JCT distribution", figure_jct_cdf(runs), "Cumulative share of completed jobs."),
        ("Queue length over time", figure_queue_length(runs), "Jobs waiting to start."),
        (
            "GPU utilisation over time",
            figure_utilization(runs),
            "Busy GPUs as a share of the cluster.",
        ),
        (
            "Mean JCT per user",
            figure_per_user(runs),
            f"The {TOP_USERS} users with the most jobs; a missing bar is a user with no "
            "completed job in that run.",
        ),
    )
    from schedlab.report.energy_figures import energy_figures  # it imports this module

    figures += energy_figures(runs)
    long_series = any(r.timeseries is not None and len(r.timeseries) > MAX_POINTS for r in runs)
    fig_html = "".join(
        f'<figure id="{e(name.lower().replace(" ", "-"))}">{svg}'
        f"<figcaption><b>{e(name)}.</b> {e(caption)}"
        + (
            f" Series longer than {MAX_POINTS:,} points are shown as time-weighted means of "
            f"{MAX_POINTS:,} equal bins."
            if long_series and "over time" in name
            else ""
        )
        + "</figcaption></figure>"
        for name, svg, caption in figures
    )
    has_dsr = any(_value(r.summary, "dsr") is not None for r in runs)
    defs = "".join(
        f"<dt>{e(k)}</dt><dd>{e(v)}</dd>"
        for k, v in DEFINITIONS
        if has_dsr or not k.startswith("Deadline")
    )
    body = f"""<p class="lead">{len(runs)} replay run{"s" if len(runs) != 1 else ""} compared.
The best value of each row as shown is in <b>bold</b> (every one of a tie; none when all runs show
the same); — means undefined (e.g. no completed job).</p>
<h2 id="summary">Summary</h2>
{summary_table(runs)}
<dl class="defs">{defs}</dl>
<h2 id="figures">Figures</h2>
<div class="figures">{fig_html}</div>
{_network_section(runs)}{_tenancy_section(runs)}"""
    return html_page(title, body, [(r.label, r.folder) for r in runs])


def _network_section(runs: Sequence[Run]) -> str:
    from schedlab.report.network_section import network_section  # it imports this module

    return network_section(runs)


def _tenancy_section(runs: Sequence[Run]) -> str:
    from schedlab.report.tenancy_figures import tenancy_section  # it imports this module

    return tenancy_section(runs)


def build_report(run_dirs: list[Path], out: Path, title: str | None = None) -> Path:
    """Read the run folders and write one self-contained HTML page to ``out``.

    Every folder is read and checked before anything is written, and the page is written
    atomically, so a bad folder leaves no file (and an old report at ``out`` untouched).
    """
    if run_dirs and all(is_sharing_run(Path(d)) for d in run_dirs):
        page = render_sharing_page([Path(d) for d in run_dirs], title)
    else:
        page = render_html(load_runs(run_dirs), title)
    out = Path(out)
    if out.is_dir():
        raise InputError("'--out' must be a file, but it is a folder", path=str(out))
    atomic_write(out, lambda fh: fh.write(page))
    return out
