"""A grid of pack runs (workloads × policies × seeds) in parallel worker processes.

Each run is independent and seeded, so the grid's results do not depend on the number of workers
or the order runs finish in: rows are sorted by (workload, policy order, seed) before writing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedlab.engines.pack import PackConfig, run_pack
from schedlab.experiments.live_progress import reporter
from schedlab.experiments.parallel import default_workers, run_all  # noqa: F401 (re-exported)
from schedlab.experiments.seed_stats import ci_half_width
from schedlab.experiments.workloads import Workload
from schedlab.metrics.pack_curves import value_at
from schedlab.results import write_json

if TYPE_CHECKING:  # tables are made only when a grid is aggregated
    import pandas as pd


@dataclass(frozen=True)
class PackTask:
    """One cell of the grid; with ``out`` its summary is also kept there (``<out>`` is a JSON
    file written atomically), so a resumed grid can skip it."""

    workload: Workload
    policy: str
    seed: int
    inflate: float
    plugins: tuple[str, ...] = ()
    out: str | None = None


def run_task(task: PackTask) -> dict[str, object]:
    """Run one cell of the grid; returns its summary with the workload label added."""
    cluster, pods = task.workload.load()
    config = PackConfig(task.policy, task.seed, task.inflate, task.plugins)
    label = f"{task.workload.label}/{task.policy}-s{task.seed}"
    report = reporter(label)
    result = run_pack(cluster, pods, config, progress=report)
    if report is not None:
        report(1, 1)  # done: its bar goes
    summary = {"workload": task.workload.label, **result.summary()}
    if task.out is not None:
        write_json(Path(task.out), summary)
    return summary


def run_task_files(task: PackTask) -> dict[str, object]:
    """Run ``task`` without writing (on another machine); :func:`land_run` keeps its summary."""
    return run_task(replace(task, out=None))


def land_run(task: PackTask, summary: dict[str, object]) -> dict[str, object]:
    if task.out is not None:
        write_json(Path(task.out), summary)
    return summary


def run_file(root: Path, label: str, policy: str, seed: int) -> Path:
    """Where a resumable grid keeps a run's summary."""
    return root / "runs" / label / f"{policy}-s{seed}.json"


def finished_run(task: PackTask) -> dict[str, object] | None:
    """The summary an earlier sweep kept for ``task``, or None."""
    if task.out is None:
        return None
    try:
        summary = json.loads(Path(task.out).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return summary if isinstance(summary, dict) else None


def run_grid(
    tasks: Sequence[PackTask],
    workers: int,
    on_done: Callable[[dict[str, object]], None] | None = None,
    progress: Any = None,
) -> list[dict[str, object]]:
    """Run every task, ``workers`` at a time (1 = in this process); summaries in task order.

    fgd runs take longest, so they are started first."""
    return run_all(
        run_task, tasks, workers, on_done, slow_first=lambda t: t.policy == "fgd", progress=progress
    )


def result_rows(
    summaries: Sequence[dict[str, object]], policies: Sequence[str]
) -> list[dict[str, object]]:
    """One row per run, in (workload, policy as listed, seed) order."""
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
    rank = {p: i for i, p in enumerate(policies)}
    return sorted(rows, key=lambda r: (r["pods"], rank[r["policy"]], r["seed"]))  # type: ignore[index]


def results_table(summaries: Sequence[dict[str, object]], policies: Sequence[str]) -> pd.DataFrame:
    """:func:`result_rows` as a table (``results.csv``)."""
    import pandas as pd

    return pd.DataFrame(result_rows(summaries, policies))


def aggregate(table: pd.DataFrame) -> pd.DataFrame:
    """Mean, seed-to-seed standard deviation and 95 % CI (Student t, ``_ci95``: the half-width)
    per (pods, policy), policy order kept; ``seeds`` counts the runs of each."""
    import numpy as np

    measures = ["unallocated_gpu_pct_100", "unallocated_gpu_pct_130", "frag_amount_pct_100"]
    g = table.groupby(["pods", "policy"], sort=False)
    out = g[measures].agg(["mean", "std", "count"])
    for m in measures:
        out[(m, "ci95")] = [
            ci_half_width(sd, int(n))
            for sd, n in zip(out[(m, "std")], out[(m, "count")], strict=True)
        ]
    out = out.drop(columns=[(m, "count") for m in measures])
    out = out[[(m, stat) for m in measures for stat in ("mean", "std", "ci95")]]
    out.columns = [f"{m}_{stat}" for m, stat in out.columns]
    out["runs"] = g.size()
    out["seeds"] = g["seed"].nunique()
    out["wall_seconds_mean"] = g["wall_seconds"].mean()
    return out.reset_index().replace({np.nan: None})
