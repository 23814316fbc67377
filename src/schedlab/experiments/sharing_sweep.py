"""A grid of ``replay --sharing`` runs (pod lists × placements × sharing and energy variants ×
seeds) in worker processes, each run folder written as ``replay --sharing`` writes it.

A task carries the options of one ``replay --sharing`` command line; the run is made by the same
functions that command uses, so a grid's run folder equals the one the command would write. Run
folders appear whole or not at all, so a rerun of the grid takes the ones it finds as done.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.experiments.parallel import run_all
from schedlab.model.shared_pods import QOS_ORDER
from schedlab.output_dir import staged_dir

#: What identifies a cell apart from its seed.
KEY_COLUMNS = ("trace", "placement", "variant")
#: Per-run fields of results.csv: (column, path into summary.json).
RESULT_PATHS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pods", ("pods",)),
    ("peak_allocated_gpus", ("cluster", "peak_allocated_gpus")),
    ("gpu_hours", ("cluster", "gpu_hours")),
    ("mean_allocation_pct", ("cluster", "mean_allocation_pct")),
    ("mean_frag_ratio_pct", ("cluster", "mean_frag_ratio_pct")),
    *(
        item
        for q in QOS_ORDER
        for item in (
            (f"{q}_wait_mean", ("classes", q, "queueing_delay_s", "mean")),
            (f"{q}_wait_p99", ("classes", q, "queueing_delay_s", "p99")),
            (f"{q}_evictions", ("classes", q, "evictions")),
        )
    ),
    ("offered_load", ("offered_load",)),
    ("energy_kwh", ("energy", "energy_kwh")),
    ("carbon_kg", ("energy", "carbon_kg")),
    ("wall_seconds", ("wall_seconds",)),
)
RESULT_FIELDS = tuple(name for name, _ in RESULT_PATHS)

#: Every option ``replay --sharing`` reads, at its default (a task overrides some).
SHARING_DEFAULTS: dict[str, Any] = {
    **dict.fromkeys(
        (
            "topology", "net_sharing", "net_routing", "net_control", "policy", "slot",
            "throughputs", "throughputs_fallback", "speed", "resize_overhead", "min_runtime",
            "grace", "time_limit", "trace_format", "config", "mode", "window", "scale_gpus",
            "overcommit", "interference", "split_cap", "inflate", "sample", "filler",
            "restart_overhead", "seed", "power_model", "ci", "ci_start", "ci_wrap", "pue",
            "node_base_w", "gpu_power", "power_limit", "energy_data",
        )
    ),
    "backfill": False,
    "keep_unscheduled": False,
    "plugin": [],
    "param": [],
}  # fmt: skip


@dataclass(frozen=True)
class SharingTask:
    """One run: ``options`` are ``replay --sharing``'s (cluster, trace, placement, seed, …)."""

    options: dict[str, Any]
    out: str
    variant: str = ""
    run_dir: str = field(default="")

    def namespace(self, out: Path) -> argparse.Namespace:
        return argparse.Namespace(**{**SHARING_DEFAULTS, **self.options, "out": out})


def run_task(task: SharingTask) -> dict[str, Any]:
    """Make the run (as ``replay --sharing`` would) and return its results.csv row."""
    from schedlab.commands.replay_sharing import (
        config_from_args,
        energy_meter,
        load,
        sharing_energy,
        write_sharing_run,
    )
    from schedlab.engines.shared_time import PACK_MODE, run_sharing
    from schedlab.traces import alibaba_sharing as sharing_trace

    args = task.namespace(Path(task.out))
    config, k = config_from_args(args)
    energy = sharing_energy(args, config.mode)
    cluster, workload = load(args, config.mode, k)
    meter = energy_meter(energy, cluster, workload)
    rho = None
    if config.mode != PACK_MODE:
        rho = sharing_trace.offered_load(workload, cluster.total_gpus)
    result = run_sharing(cluster, workload, config, observer=meter)
    with staged_dir(Path(task.out), "run folder") as folder:
        summary = write_sharing_run(folder, args, result, k, rho, energy, meter)
    return result_row(summary, task)


def result_row(summary: dict[str, Any], task: SharingTask) -> dict[str, Any]:
    row: dict[str, Any] = {
        "trace": Path(str(task.options["trace"])).stem,
        "placement": task.options["placement"],
        "variant": task.variant,
        "seed": task.options["seed"],
    }
    for name, path in RESULT_PATHS:
        value: Any = summary
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        row[name] = value
    row["run_dir"] = task.run_dir or task.out
    return row


def finished_run(task: SharingTask) -> dict[str, Any] | None:
    """The row of a run an earlier sweep finished (its folder is complete), else None."""
    try:
        summary = json.loads((Path(task.out) / "summary.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return result_row(summary, task)


def run_grid(
    tasks: Sequence[SharingTask],
    workers: int,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    progress: Any = None,
) -> list[dict[str, Any]]:
    return run_all(run_task, tasks, workers, on_done, progress=progress)


def results_table(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    table = pd.DataFrame(rows, columns=[*KEY_COLUMNS, "seed", *RESULT_FIELDS, "run_dir"])
    for name in RESULT_FIELDS:
        table[name] = pd.to_numeric(table[name], errors="coerce")
    return table
