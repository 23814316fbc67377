"""``schedlab sweep --sharing``: a grid of ``replay --sharing`` runs — pod lists × placements ×
``--mode`` and ``--overcommit`` values × ``--power-model``/``--ci`` values × seeds — resumable,
with results.csv, aggregate.csv (mean, sd and the clipped 95 % interval over seeds) and a report
page per pod list."""

from __future__ import annotations

import argparse
from itertools import product
from pathlib import Path

import pandas as pd
from rich.table import Table

from schedlab import __version__
from schedlab.commands.common import (
    check_workers,
    parse_seeds,
    run_resumable,
    stdout,
)
from schedlab.commands.replay_grid import done_line
from schedlab.commands.sweep_axes import variant_label
from schedlab.energy.options import ENERGY_OPTIONS, energy_variants
from schedlab.errors import InputError
from schedlab.experiments.grid_dir import open_grid
from schedlab.experiments.seed_stats import add_clipped_intervals, mean_ci, seed_stats
from schedlab.experiments.sharing_sweep import (
    KEY_COLUMNS,
    RESULT_FIELDS,
    SharingTask,
    finished_run,
    results_table,
    run_grid,
)
from schedlab.results import write_config, write_csv

#: Options of a sharing grid that other grids refuse.
SHARING_GRID_ONLY = ("sharing", "mode", "overcommit", "scale_gpus", "window")
#: Columns of the terminal table: (heading, field, digits).
TABLE_COLUMNS = (
    ("LS wait (s)", "LS_wait_mean", 1),
    ("LS p99 (s)", "LS_wait_p99", 0),
    ("BE wait (s)", "BE_wait_mean", 1),
    ("BE evictions", "BE_evictions", 1),
    ("alloc %", "mean_allocation_pct", 2),
    ("frag ratio %", "mean_frag_ratio_pct", 1),
    ("energy kWh", "energy_kwh", 0),
    ("carbon kg", "carbon_kg", 1),
)


def add_sharing_grid_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "sharing grid (--sharing: --cluster is a node list, --traces Alibaba pod lists with "
        "times, --placements the placement plugins; see 'replay --sharing')"
    )
    g.add_argument("--sharing", action="store_true", help="a grid of 'replay --sharing' runs")
    g.add_argument(
        "--mode", nargs="+", help="load modes, each a variant: trace, compressed:K (default trace)"
    )
    g.add_argument(
        "--overcommit", nargs="+", type=float, help="BE overcommit ratios, each a variant"
    )
    g.add_argument("--scale-gpus", type=int, help="scale the cluster down to about N GPUs")
    g.add_argument("--window", help="START:END: keep pods created in [START, END) seconds")


def run_sharing_grid(args: argparse.Namespace) -> int:
    if args.cluster is None or args.traces is None:
        raise InputError("a sharing grid needs --cluster (a node list) and --traces (pod lists)")
    seeds = parse_seeds("42" if args.seeds is None else args.seeds)
    workers = check_workers(args.workers)
    placements = list(dict.fromkeys(args.placements))
    modes = list(dict.fromkeys(args.mode or ["trace"]))
    overcommits = list(dict.fromkeys(args.overcommit or [1.0]))
    energies = energy_variants(args)
    labels = [Path(t).stem for t in args.traces]
    if len(set(labels)) != len(labels):
        raise InputError("two '--traces' files share a file name; results are keyed by it")
    shared = {
        "cluster": str(Path(args.cluster).resolve())
        if Path(args.cluster).exists()
        else args.cluster,
        **({"scale_gpus": args.scale_gpus} if args.scale_gpus is not None else {}),
        **({"window": args.window} if args.window is not None else {}),
        **({"plugin": list(args.plugin)} if args.plugin else {}),
    }
    tasks = []
    for trace, placement, mode, overcommit, (energy_name, energy) in product(
        args.traces, placements, modes, overcommits, energies
    ):
        axis = {
            **({"mode": mode} if len(modes) > 1 else {}),
            **({"overcommit": f"{overcommit:g}"} if len(overcommits) > 1 else {}),
            **energy_name,
        }
        variant = variant_label(axis)
        for seed in seeds:
            options = {
                **shared,
                "trace": str(Path(trace).resolve()),
                "placement": placement,
                "seed": seed,
                "mode": mode,
                "overcommit": overcommit,
                **{k: getattr(args, k) for k in ENERGY_OPTIONS if getattr(args, k) is not None},
                "power_model": energy.power_model,
                "ci": energy.ci,
            }
            name = (
                f"{placement}{'-' + variant.replace(';', '-').replace('/', '_') if variant else ''}"
            )
            out = args.out / "runs" / Path(trace).stem / f"{name}-s{seed}"
            tasks.append(SharingTask(options, str(out), variant, str(out)))
    _check_before_runs(tasks)
    config = {
        "engine": "sharing",
        **shared,
        "traces": [str(Path(t).resolve()) for t in args.traces],
        "placements": placements,
        "modes": modes,
        "overcommits": overcommits,
        "seeds": seeds,
        **{k: getattr(args, k) for k in ENERGY_OPTIONS if getattr(args, k) is not None},
    }
    open_grid(args.out, config, args.force)
    rows, done, wall = run_resumable(
        tasks, finished_run, run_grid, workers, "sharing runs", args.out
    )
    table = results_table(rows)
    aggregate = add_clipped_intervals(
        seed_stats(table, KEY_COLUMNS, RESULT_FIELDS), list(RESULT_FIELDS)
    )
    write_csv(args.out / "aggregate.csv", aggregate)
    from schedlab.report.html_report import build_report

    for trace, runs in table.groupby("trace", sort=False):
        title = f"schedlab replay --sharing — {trace}"
        build_report([Path(d) for d in runs["run_dir"]], args.out / f"report-{trace}.html", title)
    write_config(args.out / "config.toml", config, f"schedlab {__version__} sharing grid")
    write_csv(args.out / "results.csv", table)  # last: its presence marks a complete grid
    print_sharing_table(aggregate)
    stdout.print(done_line("sharing runs", len(tasks) - done, done, wall, workers, args.out, table))
    return 0


def _check_before_runs(tasks: list[SharingTask]) -> None:
    """Every refusal of every run (bad mode, placement, energy option …) before any run."""
    from schedlab.commands.replay_sharing import config_from_args, sharing_energy

    seen: set[str] = set()
    for task in tasks:
        key = repr(sorted((k, v) for k, v in task.options.items() if k != "seed"))
        if key in seen:
            continue
        seen.add(key)
        args = task.namespace(Path(task.out))
        config, _ = config_from_args(args)
        sharing_energy(args, config.mode)


def print_sharing_table(aggregate: pd.DataFrame) -> None:
    for trace, rows in aggregate.groupby("trace", sort=False):
        seeds = sorted(set(rows["seeds"]))
        t = Table(
            title=f"{trace}: mean ± 95 % CI over {'/'.join(map(str, seeds))} seed(s)",
            title_justify="left",
        )
        keys = ["placement"] + (["variant"] if rows["variant"].astype(str).str.len().any() else [])
        for key in keys:
            t.add_column(key, no_wrap=True)
        columns = [c for c in TABLE_COLUMNS if rows[f"{c[1]}_mean"].notna().any()]
        for heading, *_ in columns:
            t.add_column(heading, justify="right", no_wrap=True)
        for _, r in rows.iterrows():
            cells = [str(r[k]) for k in keys]
            cells += [
                mean_ci(r[f"{f}_mean"], r[f"{f}_ci95"], 1, digits, f) for _, f, digits in columns
            ]
            t.add_row(*cells)
        stdout.print(t)
