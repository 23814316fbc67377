"""Running a pack grid with progress and writing its outputs; shared by ``sweep`` and ``demo``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from rich.table import Table

from schedlab import __version__
from schedlab.commands.common import progress_bar, stdout
from schedlab.experiments.pack_sweep import PackTask, aggregate, results_table, run_grid
from schedlab.experiments.published import reference_for
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
) -> tuple[list[dict[str, object]], float]:
    """Every (workload, policy, seed) once; returns the summaries and the wall time."""
    tasks = [
        PackTask(w, p, s, inflate, tuple(plugins))
        for w in workloads
        for p in policies
        for s in seeds
    ]
    started = time.perf_counter()
    with progress_bar(transient=False) as bar:
        job = bar.add_task(f"{len(tasks)} runs on {workers} worker(s)", total=len(tasks))
        summaries = run_grid(tasks, workers, on_done=lambda _s: bar.advance(job))
    return summaries, time.perf_counter() - started


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
    write_csv(out / "curves.csv", pd.concat(curves, ignore_index=True))
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
        table.add_column("@100", justify="right")
        table.add_column("sd", justify="right")
        table.add_column("@130", justify="right")
        table.add_column("frag@100", justify="right")
        if reference:
            table.add_column("paper@100", justify="right")
        table.add_column("runs", justify="right")
        table.add_column("s/run", justify="right")
        for _, r in rows.iterrows():
            cells = [
                str(r["policy"]),
                _fmt(r["unallocated_gpu_pct_100_mean"]),
                _fmt(r["unallocated_gpu_pct_100_std"]),
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
