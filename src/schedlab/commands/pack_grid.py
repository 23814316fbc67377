"""Running a pack grid with progress and writing its outputs; shared by ``sweep`` and ``demo``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd
from rich.table import Table

from schedlab import __version__
from schedlab.commands.common import run_resumable, stdout
from schedlab.experiments.pack_sweep import (
    PackTask,
    aggregate,
    finished_run,
    results_table,
    run_file,
    run_grid,
)
from schedlab.experiments.published import reference_for
from schedlab.experiments.seed_stats import mean_ci
from schedlab.experiments.workloads import Workload
from schedlab.report.pack_figures import curves_frame, write_pack_figures
from schedlab.results import write_config, write_csv


def run_pack_grid(
    workloads: Sequence[Workload],
    policies: Sequence[str],
    seeds: Sequence[int],
    inflate: float,
    workers: int,
    plugins: Sequence[str] = (),
    keep: Path | None = None,
    runner: Callable[..., list[dict[str, object]]] = run_grid,
) -> tuple[list[dict[str, object]], float]:
    """Every (workload, policy, seed) once; returns the summaries and the wall time.

    With ``keep`` (a resumable grid folder) each run's summary is kept under it as it finishes,
    and runs kept there by an earlier sweep are not run again. ``runner`` runs the tasks (the
    local process pool unless told otherwise)."""
    tasks = [
        PackTask(
            w,
            p,
            s,
            inflate,
            tuple(plugins),
            None if keep is None else str(run_file(keep, w.label, p, s)),
        )
        for w in workloads
        for p in policies
        for s in seeds
    ]
    summaries, _, wall = run_resumable(tasks, finished_run, runner, workers, "runs", keep)
    return summaries, wall


def write_grid_outputs(
    out: Path,
    summaries: Sequence[dict[str, object]],
    policies: Sequence[str],
    inflate: float,
    config: dict[str, object],
    figures: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """results.csv (a row per run), aggregate.csv, curves.csv, config.toml, figures/<workload>/."""
    table = results_table(summaries, policies)
    agg = aggregate(table)
    curves = []
    for label in table["pods"].unique():
        runs = [s for s in summaries if s["workload"] == label]
        frame = curves_frame(runs)
        if figures:
            write_pack_figures(
                frame,
                policies,
                out / "figures" / str(label),
                str(label),
                reference_for(str(label), inflate),
            )
        curves.append(frame.assign(pods=label))
    all_curves = pd.concat(curves, ignore_index=True)
    write_csv(out / "curves.csv", all_curves)
    if figures:
        from schedlab.report.pack_report import render_pack_page, write_page

        title = f"Pack grid — {', '.join(map(str, table['pods'].unique()))}"
        rows = table.to_dict("records")
        page = render_pack_page(all_curves, rows, policies, inflate, title, [("grid", out)])
        write_page(page, out / "report.html")
    write_csv(out / "aggregate.csv", agg)
    write_config(out / "config.toml", config, f"schedlab {__version__} pack grid")
    write_csv(out / "results.csv", table)  # last: its presence marks a complete grid
    return table, agg


def print_aggregate(agg: pd.DataFrame, inflate: float) -> None:
    """The comparison table a user reads first: unallocated GPU at 100 % per policy."""
    for label, rows in agg.groupby("pods", sort=False):
        reference = reference_for(str(label), inflate)
        table = Table(
            title=f"{label}, inflate {inflate:g}: unallocated GPU % at arrived 100 % / 130 %",
            title_justify="left",
        )
        table.add_column("policy", no_wrap=True)
        table.add_column("@100 ± 95 % CI", justify="right")
        table.add_column("@130", justify="right")
        table.add_column("frag@100", justify="right")
        if reference:
            table.add_column("paper@100", justify="right")
        table.add_column("runs", justify="right")
        table.add_column("s/run", justify="right")
        for _, r in rows.iterrows():
            cells = [
                str(r["policy"]),
                mean_ci(
                    r["unallocated_gpu_pct_100_mean"],
                    r["unallocated_gpu_pct_100_ci95"],
                    field="unallocated_gpu_pct_100",
                ),
                _fmt(r["unallocated_gpu_pct_130_mean"]),
                _fmt(r["frag_amount_pct_100_mean"]),
            ]
            if reference:
                cells.append(_fmt(reference.get(str(r["policy"]))))
            cells += [str(r["runs"]), f"{r['wall_seconds_mean']:.2f}"]
            table.add_row(*cells)
        stdout.print(table)


def _fmt(value: object) -> str:
    return "—" if value is None else f"{float(value):.2f}"  # type: ignore[arg-type]
