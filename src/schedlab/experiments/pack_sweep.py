"""A grid of pack runs (workloads × policies × seeds) in parallel worker processes.

Each run is independent and seeded, so the grid's results do not depend on the number of workers
or the order runs finish in: rows are sorted by (workload, policy order, seed) before writing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from schedlab.engines.pack import PackConfig, run_pack
from schedlab.experiments.parallel import run_all
from schedlab.experiments.workloads import Workload
from schedlab.metrics.pack_curves import value_at


@dataclass(frozen=True)
class PackTask:
    workload: Workload
    policy: str
    seed: int
    inflate: float
    plugins: tuple[str, ...] = ()


def run_task(task: PackTask) -> dict[str, object]:
    """Run one cell of the grid; returns its summary with the workload label added."""
    cluster, pods = task.workload.load()
    result = run_pack(cluster, pods, PackConfig(task.policy, task.seed, task.inflate, task.plugins))
    return {"workload": task.workload.label, **result.summary()}


def run_grid(
    tasks: Sequence[PackTask],
    workers: int,
    on_done: Callable[[dict[str, object]], None] | None = None,
) -> list[dict[str, object]]:
    """Run every task, ``workers`` at a time (1 = in this process); summaries in task order.

    fgd runs take longest, so they are started first."""
    return run_all(run_task, tasks, workers, on_done, slow_first=lambda t: t.policy == "fgd")


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def results_table(summaries: Sequence[dict[str, object]], policies: Sequence[str]) -> pd.DataFrame:
    """One row per run, in (workload, policy, seed) order."""
    rows = []
    for s in summaries:
        unalloc = s["unallocated_gpu_pct"]
        frag = s["frag_amount_pct"]
        rows.append(
            {
                "pods": s["workload"],
                "policy": s["policy"],
                "seed": s["seed"],
                "inflate": s["inflate"],
                "unallocated_gpu_pct_100": value_at(unalloc, 100),  # type: ignore[arg-type]
                "unallocated_gpu_pct_130": value_at(unalloc, 130),  # type: ignore[arg-type]
                "frag_amount_pct_100": value_at(frag, 100),  # type: ignore[arg-type]
                "pods_total": s["pods_total"],
                "pods_failed": s["pods_failed"],
                "wall_seconds": s["wall_seconds"],
            }
        )
    table = pd.DataFrame(rows)
    rank = {p: i for i, p in enumerate(policies)}
    table["_rank"] = table["policy"].map(rank)
    return table.sort_values(["pods", "_rank", "seed"]).drop(columns="_rank").reset_index(drop=True)


def aggregate(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and seed-to-seed standard deviation per (pods, policy), policy order kept."""
    measures = ["unallocated_gpu_pct_100", "unallocated_gpu_pct_130", "frag_amount_pct_100"]
    g = table.groupby(["pods", "policy"], sort=False)
    out = g[measures].agg(["mean", "std"])
    out.columns = [f"{m}_{stat}" for m, stat in out.columns]
    out["runs"] = g.size()
    out["wall_seconds_mean"] = g["wall_seconds"].mean()
    return out.reset_index().replace({np.nan: None})
