"""``schedlab sweep --federation FILE ...``: federation files × traces × dispatchers × seeds of
``replay --federation`` runs, a folder per run under ``runs/``, ``results.csv`` (one row a run:
JCT, queueing, transfer, cost, carbon, each site's share of the GPU-hours) and
``aggregate.csv`` (means over seeds)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.commands.common import check_workers, console, parse_seeds, stdout
from schedlab.errors import InputError

KEYS = ["federation", "trace", "dispatcher", "seed"]


@dataclass(frozen=True)
class FederationTask:
    federation: str
    trace: str
    dispatcher: str
    seed: int
    out: str
    power_model: str


def run_task(task: FederationTask) -> dict[str, Any]:
    from schedlab.federation.config import read_federation, with_dispatcher
    from schedlab.federation.run import (
        FederationOptions,
        headline,
        run_federation,
        write_federation,
    )

    fed = with_dispatcher(read_federation(task.federation), task.dispatcher)
    options = FederationOptions(trace=task.trace, seed=task.seed, power_model=task.power_model)
    result = run_federation(fed, options)
    out = Path(task.out)
    out.mkdir(parents=True, exist_ok=True)
    config = {"federation": task.federation, "trace": task.trace, "dispatcher": task.dispatcher,
              "seed": task.seed, "power_model": task.power_model}  # fmt: skip
    data = write_federation(out, result, config)["federation"]
    return {
        "federation": Path(task.federation).stem,
        "trace": Path(task.trace).stem,
        "dispatcher": task.dispatcher,
        "seed": task.seed,
        **headline(data),
    }


def run_federation_grid(args: argparse.Namespace) -> int:
    from schedlab.experiments.parallel import run_all
    from schedlab.federation.config import (
        DISPATCHERS,
        check_settings_read,
        read_federation,
        with_dispatcher,
    )
    from schedlab.output_dir import staged_dir
    from schedlab.results import write_csv

    if not args.traces:
        raise InputError("a federation grid needs --traces")
    files = list(dict.fromkeys(args.federation))
    for f in files:
        read_federation(f)  # every file's refusals before any run
    dispatchers = list(dict.fromkeys(args.dispatchers or DISPATCHERS))
    unknown = [d for d in dispatchers if d not in DISPATCHERS]
    if unknown:
        raise InputError(
            f"'--dispatchers': unknown {unknown[0]!r} (known: {', '.join(DISPATCHERS)})"
        )
    for f in files:  # a dispatcher a file's settings refuse (moves need a score): before any run
        check_settings_read(read_federation(f), dispatchers)
        for d in dispatchers:
            with_dispatcher(read_federation(f), d)
    seeds = parse_seeds("0" if args.seeds is None else args.seeds)
    workers = check_workers(args.workers)
    power = args.power_model or ["binary"]
    if len(power) != 1:
        raise InputError("'--power-model' takes one value in a federation grid")
    stems = [Path(f).stem for f in files] + [Path(t).stem for t in args.traces]
    if len(set(Path(f).stem for f in files)) != len(files) or len(
        set(Path(t).stem for t in args.traces)
    ) != len(args.traces):
        raise InputError(
            "two '--federation' or '--traces' files share a file name; runs are keyed by it"
        )
    del stems
    with staged_dir(args.out) as out:
        tasks = [
            FederationTask(
                str(Path(f).resolve()),
                str(Path(t).resolve()),
                d,
                s,
                str(out / "runs" / Path(f).stem / Path(t).stem / d / f"seed{s}"),
                power[0],
            )
            for f in files
            for t in args.traces
            for d in dispatchers
            for s in seeds
        ]
        with console.status(f"{len(tasks)} federated replays"):
            rows = run_all(run_task, tasks, workers)
        results = pd.DataFrame(rows)
        write_csv(out / "results.csv", results)
        numeric = [c for c in results.columns if c not in KEYS]
        aggregate = results.groupby(KEYS[:3], sort=False)[numeric].mean().reset_index()
        aggregate.insert(3, "seeds", len(seeds))
        write_csv(out / "aggregate.csv", aggregate)
    for row in aggregate.to_dict(orient="records"):
        g = row["carbon_g_per_kwh"]  # NaN when no energy was used (as replay: n/a)
        carbon = "n/a" if g != g else f"{g:.1f}"
        stdout.print(
            f"{row['federation']}/{row['trace']} {row['dispatcher']}: mean JCT "
            f"{row['mean_jct_s']:,.0f} s, queue {row['mean_queue_s']:,.0f} s, "
            f"${row['compute_usd'] + row['egress_usd']:,.2f}, {carbon} g/kWh"
        )
    console.print(f"wrote {args.out}/results.csv, aggregate.csv and runs/")
    return 0
