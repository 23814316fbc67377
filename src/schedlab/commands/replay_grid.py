"""Writing and printing replay grids; shared by ``sweep`` and ``demo``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from rich.table import Table

from schedlab import __version__
from schedlab.commands.common import stdout
from schedlab.errors import InputError
from schedlab.experiments.grid_dir import MANIFEST
from schedlab.experiments.replay_sweep import KEY_COLUMNS, RESULT_FIELDS, WRITTEN_TO, results_table
from schedlab.experiments.seed_stats import (
    add_clipped_intervals,
    mean_ci,
    seed_stats,
    time_unit,
)
from schedlab.report.grid_report import build_grid_report, make_grid
from schedlab.report.html_report import build_report
from schedlab.results import write_config, write_csv


def write_replay_grid(
    out: Path, summaries: Sequence[dict[str, object]], config: dict[str, object]
) -> pd.DataFrame:
    """results.csv (a row per run), aggregate.csv (statistics over seeds per cell), config.toml,
    and report-<trace>.html per trace."""
    table = results_table(summaries)
    aggregate = replay_aggregate(table)
    write_csv(out / "aggregate.csv", aggregate)
    written = {str(s["run_dir"]): str(s.get(WRITTEN_TO, s["run_dir"])) for s in summaries}
    for trace, rows in table.groupby("trace", sort=False):
        rows = rows.assign(**{WRITTEN_TO: [written[str(d)] for d in rows["run_dir"]]})
        trace_report(rows, aggregate, out / f"report-{trace}.html")
    write_config(out / "config.toml", config, f"schedlab {__version__} replay grid")
    write_csv(out / "results.csv", table)  # last: its presence marks a complete grid
    return table


def done_line(
    what: str, ran: int, done: int, wall: float, workers: int, out: Path, table: pd.DataFrame
) -> str:
    """The last line of a grid: what ran, in how long, and the files it wrote (each report by
    its name)."""
    reports = ", ".join(f"report-{trace}.html" for trace in dict.fromkeys(table["trace"]))
    return (
        f"{ran} {what} in {wall:.1f} s with {workers} worker(s)"
        + (f" ({done} done before)" if done else "")
        + f"; wrote {out}/results.csv, aggregate.csv and {reports}"
    )


def trace_report(
    rows: pd.DataFrame, aggregate: pd.DataFrame, report: Path, title: str = ""
) -> Path:
    """The page of one trace of a grid (``rows``: its results.csv rows, with where each run
    folder is now): a page per policy over seeds or loads, else the run report."""
    trace = str(rows["trace"].iloc[0])
    title = title or f"schedlab replay — {trace}"
    if rows["seed"].nunique() > 1 or rows["load"].nunique() > 1:
        cells = aggregate[aggregate["trace"] == trace]
        return build_grid_report(make_grid(trace, rows, cells), report, title)
    return build_report([Path(str(d)) for d in rows[WRITTEN_TO]], report, title)


def is_replay_grid(folder: Path) -> bool:
    """Whether ``folder`` is a finished replay grid (a sweep's --out with --cluster)."""
    return (
        (folder / MANIFEST).is_file()
        and (folder / "results.csv").is_file()
        and (folder / "aggregate.csv").is_file()
        and "run_dir" in _header(folder / "results.csv")
    )


def _header(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return fh.readline().strip().split(",")


def report_replay_grid(folder: Path, out: Path, title: str | None = None) -> Path:
    """The report of a finished replay grid, again, into ``out`` (the grid has one trace; with
    several, the error names the page the sweep wrote for each)."""
    table = pd.read_csv(folder / "results.csv", dtype={"variant": "str"}, keep_default_na=False)
    for column in ("load", *RESULT_FIELDS):
        if column in table:
            table[column] = pd.to_numeric(table[column], errors="coerce")
    traces = list(dict.fromkeys(table["trace"].astype(str)))
    if len(traces) != 1:
        pages = ", ".join(str(folder / f"report-{t}.html") for t in traces)
        raise InputError(
            f"the grid holds {len(traces)} traces; its pages are {pages} (or give the run "
            f"folders under {folder}/runs/<trace>/)",
            path=str(folder),
        )
    table = table.assign(**{WRITTEN_TO: table["run_dir"].astype(str)})
    missing = [d for d in table[WRITTEN_TO] if not Path(d).is_dir()]
    if missing:
        raise InputError("a run folder the grid lists is gone", path=missing[0])
    return trace_report(table, replay_aggregate(table), out, title or "")


#: Columns of the terminal table: (heading, summary field, scale, digits); a scale of None is a
#: duration, shown in s, min or h, whichever suits the column.
TABLE_COLUMNS: tuple[tuple[str, str, float | None, int], ...] = (
    ("avg JCT", "avg_jct", None, 2),
    ("queue", "avg_queue_delay", None, 2),
    ("wait", "avg_total_wait", None, 2),
    ("util %", "gpu_utilization", 100, 1),
    ("steady %", "steady_gpu_utilization", 100, 1),
    ("dsr", "dsr", 1, 3),
    ("energy kWh", "energy_kwh", 1, 0),
    ("carbon kg", "carbon_kg", 1, 1),
)


def replay_aggregate(table: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd and 95 % CI over seeds of every summary measure, one row per grid cell."""
    metrics = [f for f in RESULT_FIELDS if f not in ("steady_window_start", "steady_window_end")]
    agg = seed_stats(table, KEY_COLUMNS, [*metrics, "steady_window_start", "steady_window_end"])
    drop = [c for c in agg.columns if c.startswith("steady_window_") and not c.endswith("_mean")]
    return add_clipped_intervals(agg.drop(columns=drop), metrics)


def print_replay_table(table: pd.DataFrame) -> None:
    """Per trace: a row per cell with mean ± 95 % CI over seeds (the CI only with ≥ 2 seeds)."""
    agg = replay_aggregate(table)
    for trace, rows in agg.groupby("trace", sort=False):
        seeds = sorted(set(rows["seeds"]))
        t = Table(
            title=f"{trace}: mean ± 95 % CI over {'/'.join(map(str, seeds))} seed(s)",
            title_justify="left",
            caption="offered: GPU time the jobs ask for ÷ the cluster's over their arrival "
            "window; wait: queue delay plus time preempted; steady: utilisation from the "
            "first 10 % of arrivals to the last arrival",
            caption_justify="left",
        )
        keys = ["policy"]
        if rows["placement"].nunique() > 1:
            keys.append("placement")
        if rows["variant"].astype(str).str.len().any():
            keys.append("variant")
        if rows["load"].notna().any():
            keys.append("load")
        for col in keys:
            t.add_column(col, no_wrap=True)
        # The load the runs were offered, measured over their arrival windows (mean over seeds).
        offered = "offered_load_mean" in rows and rows["offered_load_mean"].notna().any()
        if offered:
            t.add_column("offered", justify="right", no_wrap=True)
        columns = []
        for heading, field, scale, digits in TABLE_COLUMNS:
            if not rows[f"{field}_mean"].notna().any():
                continue
            if scale is None:  # a duration: the unit that suits this column
                divide, unit = time_unit(rows[f"{field}_mean"].tolist())
                heading, scale = f"{heading} ({unit})", 1 / divide
            columns.append((heading, field, scale, digits))
            t.add_column(heading, justify="right", no_wrap=True)
        for _, r in rows.iterrows():
            cells = [str(r[k]) if k != "load" or pd.notna(r[k]) else "—" for k in keys]
            if offered:
                cells.append(mean_ci(r["offered_load_mean"], math.nan, 1, 3))
            for _heading, field, scale, digits in columns:
                cells.append(mean_ci(r[f"{field}_mean"], r[f"{field}_ci95"], scale, digits, field))
            t.add_row(*cells)
        stdout.print(t)
