"""Writing and printing replay grids; shared by ``sweep`` and ``demo``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from rich.table import Table

from schedlab import __version__
from schedlab.commands.common import stdout
from schedlab.experiments.replay_sweep import KEY_COLUMNS, RESULT_FIELDS, WRITTEN_TO, results_table
from schedlab.experiments.seed_stats import mean_ci, seed_stats
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
        report = out / f"report-{trace}.html"
        title = f"schedlab replay — {trace}"
        if rows["seed"].nunique() > 1 or rows["load"].nunique() > 1:  # a page per policy
            rows = rows.assign(**{WRITTEN_TO: [written[str(d)] for d in rows["run_dir"]]})
            cells = aggregate[aggregate["trace"] == trace]
            build_grid_report(make_grid(str(trace), rows, cells), report, title)
        else:  # a run per policy: the run report, with its time series
            build_report([Path(written[str(d)]) for d in rows["run_dir"]], report, title)
    write_config(out / "config.toml", config, f"schedlab {__version__} replay grid")
    write_csv(out / "results.csv", table)  # last: its presence marks a complete grid
    return table


#: Columns of the terminal table: (heading, summary field, scale, digits).
TABLE_COLUMNS = (
    ("avg JCT (h)", "avg_jct", 1 / 3600, 2),
    ("queue (h)", "avg_queue_delay", 1 / 3600, 2),
    ("wait (h)", "avg_total_wait", 1 / 3600, 2),
    ("util %", "gpu_utilization", 100, 1),
    ("steady %", "steady_gpu_utilization", 100, 1),
    ("dsr", "dsr", 1, 3),
)


def replay_aggregate(table: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd and 95 % CI over seeds of every summary measure, one row per grid cell."""
    metrics = [f for f in RESULT_FIELDS if f not in ("steady_window_start", "steady_window_end")]
    metrics += [c for c in table.columns if c.startswith("tenancy_")]
    agg = seed_stats(table, KEY_COLUMNS, [*metrics, "steady_window_start", "steady_window_end"])
    drop = [c for c in agg.columns if c.startswith("steady_window_") and not c.endswith("_mean")]
    return agg.drop(columns=drop)


def print_replay_table(table: pd.DataFrame) -> None:
    """Per trace: a row per cell with mean ± 95 % CI over seeds (the CI only with ≥ 2 seeds)."""
    agg = replay_aggregate(table)
    for trace, rows in agg.groupby("trace", sort=False):
        seeds = sorted(set(rows["seeds"]))
        t = Table(
            title=f"{trace}: mean ± 95 % CI over {'/'.join(map(str, seeds))} seed(s)",
            title_justify="left",
            caption="wait: queue delay plus time preempted; steady: utilisation from the "
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
        columns = [c for c in TABLE_COLUMNS if rows[f"{c[1]}_mean"].notna().any()]
        for heading, *_ in columns:
            t.add_column(heading, justify="right", no_wrap=True)
        for _, r in rows.iterrows():
            cells = [str(r[k]) if k != "load" or pd.notna(r[k]) else "—" for k in keys]
            for _heading, field, scale, digits in columns:
                cells.append(mean_ci(r[f"{field}_mean"], r[f"{field}_ci95"], scale, digits))
            t.add_row(*cells)
        stdout.print(t)
