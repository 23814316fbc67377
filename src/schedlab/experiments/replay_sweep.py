"""A grid of replay runs (traces × orderings × placements × seeds) in worker processes.

Each run writes its own folder (``runs/<trace>/<policy>-<placement>-s<seed>/``) exactly as
``schedlab replay`` would, so any of them can be opened, re-run from its ``config.toml`` or put
in a report. A run folder appears whole or not at all (it is written under a temporary name and
renamed), so a stopped grid never leaves a run folder that looks complete but is not. Rows are
sorted before writing, so results do not depend on the worker count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.experiments.parallel import run_all
from schedlab.experiments.replay_run import ReplaySpec, run_replay, write_run
from schedlab.model.cluster import Cluster
from schedlab.model.jobs import JobTable
from schedlab.output_dir import staged_dir
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs
from schedlab.traces.synthetic_jobs import SyntheticJobSpec, generate_jobs, load_for_gpus

#: Summary key of where a run folder was written (not a results.csv column).
WRITTEN_TO = "written_to"

#: Orderings whose runs take longest under contention (started first).
PREEMPTIVE_FIRST = ("tiresias", "srtf")

#: Summary fields copied into results.csv, in this order.
RESULT_FIELDS = (
    "jobs",
    "completed",
    "rejected",
    "unfinished",
    "avg_jct",
    "p50_jct",
    "p95_jct",
    "p99_jct",
    "avg_queue_delay",
    "avg_bounded_slowdown",
    "makespan",
    "gpu_utilization",
    "preemptions",
    "jain_fairness",
    "dsr",
    "wall_seconds",
)


@dataclass(frozen=True)
class SyntheticJobs:
    """The embedded Philly-like job generator at a target load of a cluster."""

    jobs: int
    load: float
    seed: int = 0
    duration_mean: float = SyntheticJobSpec.duration_mean
    duration_max: float = SyntheticJobSpec.duration_max

    @property
    def label(self) -> str:
        return f"synthetic-{self.jobs}-load{round(100 * self.load)}pct"

    def load_jobs(self, total_gpus: int) -> JobTable:
        return _synthetic(
            self.jobs, self.load, self.seed, total_gpus, self.duration_mean, self.duration_max
        )


@dataclass(frozen=True)
class ReplayTask:
    """One run: written to ``out``; ``run_dir`` is the name results.csv records for it, when
    the grid itself is written under a temporary name first (default: ``out``)."""

    spec: ReplaySpec
    out: str
    synthetic: SyntheticJobs | None = None
    run_dir: str | None = None


@cache
def _cluster(spec: str) -> Cluster:
    return parse_cluster_spec(spec)


@cache
def _trace(path: str, trace_format: str | None) -> JobTable:
    return read_jobs(path, trace_format).jobs


@cache
def _synthetic(
    jobs: int, load: float, seed: int, total_gpus: int, duration_mean: float, duration_max: float
) -> JobTable:
    base = SyntheticJobSpec(jobs=jobs, duration_mean=duration_mean, duration_max=duration_max)
    spec = load_for_gpus(base, total_gpus, load)
    return generate_jobs(spec, np.random.default_rng(seed))


def run_task(task: ReplayTask) -> dict[str, object]:
    cluster = _cluster(task.spec.cluster)
    if task.synthetic is not None:
        jobs = task.synthetic.load_jobs(cluster.total_gpus)
    else:
        jobs = _trace(task.spec.trace, task.spec.trace_format)
    record = run_replay(task.spec, cluster, jobs)
    with staged_dir(Path(task.out), "run folder") as folder:
        summary = write_run(folder, task.spec, record)
    return {**summary, "run_dir": task.run_dir or task.out, WRITTEN_TO: task.out}


def run_grid(
    tasks: Sequence[ReplayTask],
    workers: int,
    on_done: Callable[[dict[str, object]], None] | None = None,
) -> list[dict[str, object]]:
    """Every task, ``workers`` at a time (1: in this process); summaries in task order.

    Preemptive orderings take longest under contention, so they are started first."""
    return run_all(
        run_task, tasks, workers, on_done, slow_first=lambda t: t.spec.policy in PREEMPTIVE_FIRST
    )


def run_folder(root: Path, spec: ReplaySpec, trace_label: str) -> Path:
    return (
        root
        / "runs"
        / trace_label
        / f"{spec.policy}{'+backfill' if spec.backfill else ''}-{spec.placement}-s{spec.seed}"
    )


def staged_task(
    spec: ReplaySpec, staging: Path, final: Path, synthetic: SyntheticJobs | None = None
) -> ReplayTask:
    """A task writing its run folder under a grid's temporary folder ``staging``, while
    results.csv records where the folder will be once the grid is renamed to ``final``."""
    return ReplayTask(
        spec,
        str(run_folder(staging, spec, spec.label)),
        synthetic,
        run_dir=str(run_folder(final, spec, spec.label)),
    )


def results_table(summaries: Sequence[dict[str, object]]) -> pd.DataFrame:
    rows = [
        {
            "trace": s["trace"],
            "policy": s["policy"],
            "placement": s["placement"],
            "seed": s["seed"],
            **{f: s.get(f) for f in RESULT_FIELDS},
            "run_dir": s["run_dir"],
        }
        for s in summaries
    ]
    table = pd.DataFrame(
        rows, columns=["trace", "policy", "placement", "seed", *RESULT_FIELDS, "run_dir"]
    )
    for f in RESULT_FIELDS:  # None (undefined, e.g. dsr without deadlines) becomes NaN
        table[f] = pd.to_numeric(table[f], errors="coerce")
    return table
