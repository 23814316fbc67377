"""Writing and printing replay grids; shared by ``sweep`` and ``demo``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from rich.table import Table

from schedlab import __version__
from schedlab.commands.common import stdout
from schedlab.experiments.replay_sweep import WRITTEN_TO, results_table
from schedlab.report.html_report import build_report
from schedlab.results import write_config, write_csv


def write_replay_grid(
    out: Path, summaries: Sequence[dict[str, object]], config: dict[str, object]
) -> pd.DataFrame:
    """results.csv (a row per run), config.toml, and report-<trace>.html per trace."""
    table = results_table(summaries)
    written = {str(s["run_dir"]): str(s.get(WRITTEN_TO, s["run_dir"])) for s in summaries}
    for trace, rows in table.groupby("trace", sort=False):
        build_report(
            [Path(written[str(d)]) for d in rows["run_dir"]],
            out / f"report-{trace}.html",
            f"schedlab replay — {trace}",
        )
    write_config(out / "config.toml", config, f"schedlab {__version__} replay grid")
    write_csv(out / "results.csv", table)  # last: its presence marks a complete grid
    return table


def print_replay_table(table: pd.DataFrame) -> None:
    for trace, rows in table.groupby("trace", sort=False):
        t = Table(title=f"{trace}: mean over seeds", title_justify="left")
        for col in (
            "policy",
            "placement",
            "avg JCT (h)",
            "p99 JCT (h)",
            "queue (h)",
            "GPU util",
            "preempt.",
            "dsr",
        ):
            t.add_column(
                col, justify="left" if col in ("policy", "placement") else "right", no_wrap=True
            )
        agg = rows.groupby(["policy", "placement"], sort=False).mean(numeric_only=True)
        for (policy, placement), r in agg.iterrows():
            t.add_row(
                str(policy),
                str(placement),
                _h(r["avg_jct"]),
                _h(r["p99_jct"]),
                _h(r["avg_queue_delay"]),
                "—" if pd.isna(r["gpu_utilization"]) else f"{100 * r['gpu_utilization']:.1f}%",
                "—" if pd.isna(r["preemptions"]) else f"{r['preemptions']:.0f}",
                "—" if pd.isna(r["dsr"]) else f"{r['dsr']:.3f}",
            )
        stdout.print(t)


def _h(seconds: float) -> str:
    return "—" if pd.isna(seconds) else f"{seconds / 3600:.2f}"
