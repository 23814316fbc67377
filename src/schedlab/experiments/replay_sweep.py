"""A grid of replay runs (traces × policies × placements × variants × loads × seeds) in worker
processes.

Each run writes its own folder
(``runs/<trace>/<policy>-<placement>[-<variant>][-load<L>]-s<seed>/``)
exactly as ``schedlab replay`` would, so any of them can be opened, re-run from its
``config.toml`` or put in a report. A run folder appears whole or not at all (it is written under
a temporary name and renamed), so a stopped grid never leaves a run folder that looks complete but
is not, and a rerun can take the folders it finds as done. Rows are sorted before writing, so
results do not depend on the worker count.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from schedlab.experiments.live_progress import reporter
from schedlab.experiments.load_scaling import scale_to_load
from schedlab.experiments.parallel import run_all
from schedlab.experiments.replay_network import topology_cluster
from schedlab.experiments.replay_run import ReplaySpec, run_replay, write_run
from schedlab.experiments.shipped import local_path
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

#: What identifies a grid cell apart from its seed (aggregate.csv has one row per cell).
KEY_COLUMNS = ("trace", "policy", "placement", "variant", "load")

#: tenancy_summary.json fields copied into results.csv (as tenancy_<field>) for grids with
#: tenancy.
TENANCY_FIELDS = ("jain", "unfairness", "starved_share_max", "reclaims", "reclaim_gpu_hours_lost")

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
    "avg_total_wait",
    "avg_bounded_slowdown",
    "makespan",
    "gpu_utilization",
    "steady_gpu_utilization",
    "steady_window_start",
    "steady_window_end",
    "preemptions",
    "jain_fairness",
    "dsr",
    "offered_load",
    "energy_kwh",
    "carbon_kg",
    "wall_seconds",
    "ftf_rho_mean",
    "ftf_rho_max",
)
#: Result fields read from the summary's energy block (runs with --power-model or --ci).
ENERGY_FIELDS = ("energy_kwh", "carbon_kg")


#: The generated workload of ``sweep --synthetic``: Philly's GPU mix and median run time, with
#: daily ups and downs in arrivals and run times capped at 12 h (mean 4,000 s). A few thousand
#: jobs then arrive over a day or more, several times the longest run, so the cluster reaches the
#: load asked for and queues form at its busy hours — what ranks policies. Philly's own month-long
#: tail and constant arrival rate leave a run of a few thousand jobs on a few hundred GPUs
#: without any queue at loads up to 1 (every policy identical).
SWEEP_DURATION_MEAN = 4_000.0
SWEEP_DURATION_MAX = 43_200.0
SWEEP_ARRIVAL = "diurnal"


@dataclass(frozen=True)
class SyntheticJobs:
    """The embedded Philly-like job generator at a target load of a cluster.

    The load is delivered over the arrival window: the drawn inter-arrival gaps are rescaled so
    that ``Σ GPUs × run time ÷ (cluster GPUs × (last − first arrival))`` is ``load`` exactly (a
    few thousand heavy-tailed draws otherwise land anywhere from 0.7 to 1.1 of it), as
    ``sweep --load`` does to a trace."""

    jobs: int
    load: float
    seed: int = 0
    duration_mean: float = SWEEP_DURATION_MEAN
    duration_max: float = SWEEP_DURATION_MAX
    arrival: str = SWEEP_ARRIVAL

    @property
    def label(self) -> str:
        return f"synthetic-{self.jobs}-load{round(100 * self.load)}pct"

    def load_jobs(self, total_gpus: int) -> JobTable:
        return _synthetic(
            self.jobs,
            self.load,
            self.seed,
            total_gpus,
            self.duration_mean,
            self.duration_max,
            self.arrival,
        )

    def arrival_span(self, total_gpus: int) -> float:
        """Seconds the arrivals are expected to span on ``total_gpus`` at this load."""
        spec = self.spec(total_gpus)
        return spec.mean_interarrival * max(0, self.jobs - 1)

    def spec(self, total_gpus: int) -> SyntheticJobSpec:
        base = SyntheticJobSpec(
            jobs=self.jobs,
            duration_mean=self.duration_mean,
            duration_max=self.duration_max,
            arrival=self.arrival,
        )
        return load_for_gpus(base, total_gpus, self.load)


@dataclass(frozen=True)
class ReplayTask:
    """One run: written to ``out``; ``run_dir`` is the name results.csv records for it, when
    the grid itself is written under a temporary name first (default: ``out``).

    ``variant`` names the ``--param`` combination (empty: the policy's defaults); ``load`` is the
    offered load the trace's arrivals were rescaled to (None: as recorded)."""

    spec: ReplaySpec
    out: str
    synthetic: SyntheticJobs | None = None
    run_dir: str | None = None
    variant: str = ""
    load: float | None = None


@cache
def _cluster(spec: str, topology: str | None = None) -> Cluster:
    """The run's cluster: ``--cluster``, else (as in replay) the topology's hosts."""
    if not spec and topology is not None:
        return topology_cluster(topology, None)[1]
    return parse_cluster_spec(spec)


@cache
def _trace(path: str, trace_format: str | None) -> JobTable:
    return read_jobs(local_path(path), trace_format).jobs


@cache
def _synthetic(
    jobs: int,
    load: float,
    seed: int,
    total_gpus: int,
    duration_mean: float,
    duration_max: float,
    arrival: str,
) -> JobTable:
    source = SyntheticJobs(jobs, load, seed, duration_mean, duration_max, arrival)
    drawn = generate_jobs(source.spec(total_gpus), np.random.default_rng(seed))
    return scale_to_load(drawn, total_gpus, load, source.label)


def run_task(task: ReplayTask) -> dict[str, object]:
    cluster = _cluster(task.spec.cluster, task.spec.topology)
    if task.synthetic is not None:
        jobs = task.synthetic.load_jobs(cluster.total_gpus)
    else:
        jobs = _trace(task.spec.trace, task.spec.trace_format)
        if task.load is not None:
            jobs = _scaled(task.spec.trace, task.spec.trace_format, cluster.total_gpus, task.load)
    report = reporter(f"{task.spec.label}/{Path(task.out).name}")
    record = run_replay(task.spec, cluster, jobs, report)
    if report is not None:
        report(len(jobs), len(jobs))  # done: its bar goes
    with staged_dir(Path(task.out), "run folder") as folder:
        summary = write_run(folder, task.spec, record)
    return with_task(summary, task)


def with_task(summary: dict[str, object], task: ReplayTask) -> dict[str, object]:
    """A run's summary with what the grid knows of it: where it is, its variant and load."""
    return {
        **summary,
        "variant": task.variant,
        "load": task.load,
        "run_dir": task.run_dir or task.out,
        WRITTEN_TO: task.out,
    }


@cache
def _scaled(path: str, trace_format: str | None, total_gpus: int, load: float) -> JobTable:
    return scale_to_load(_trace(path, trace_format), total_gpus, load, path)


def run_task_files(task: ReplayTask) -> tuple[dict[str, object], dict[str, bytes]]:
    """Run ``task`` into a scratch folder and return its summary and files, for a run on
    another machine (:mod:`schedlab.experiments.ray_engine`) whose folder the parent writes."""
    with tempfile.TemporaryDirectory(prefix="schedlab-run-") as scratch:
        local = replace(task, out=str(Path(scratch) / "run"))
        run_task(local)
        files = {f.name: f.read_bytes() for f in Path(local.out).iterdir()}
    return json.loads(files["summary.json"]), files


def land_run(task: ReplayTask, returned: tuple[dict[str, object], dict[str, bytes]]) -> dict:
    """Write the files of a run made elsewhere into its folder (whole or not at all)."""
    summary, files = returned
    with staged_dir(Path(task.out), "run folder") as folder:
        for name, data in files.items():
            if name != "summary.json":
                (folder / name).write_bytes(data)
        (folder / "summary.json").write_bytes(files["summary.json"])  # last, as locally
    return with_task(summary, task)


def finished_run(task: ReplayTask) -> dict[str, object] | None:
    """The summary of ``task``'s run if an earlier sweep finished it (its folder is complete:
    folders appear whole), else None."""
    try:
        summary = json.loads((Path(task.out) / "summary.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return with_task(summary, task)


def run_grid(
    tasks: Sequence[ReplayTask],
    workers: int,
    on_done: Callable[[dict[str, object]], None] | None = None,
    progress: Any = None,
) -> list[dict[str, object]]:
    """Every task, ``workers`` at a time (1: in this process); summaries in task order.

    Preemptive orderings take longest under contention, so they are started first."""
    return run_all(
        run_task,
        tasks,
        workers,
        on_done,
        slow_first=lambda t: t.spec.policy in PREEMPTIVE_FIRST,
        progress=progress,
    )


def run_folder(
    root: Path, spec: ReplaySpec, trace_label: str, variant: str = "", load: float | None = None
) -> Path:
    name = f"{spec.policy}{'+backfill' if spec.backfill else ''}-{spec.placement}"
    if variant:
        name += "-" + variant.replace("/", "_").replace(";", "-")
    if load is not None:
        name += f"-load{load:g}"
    return root / "runs" / trace_label / f"{name}-s{spec.seed}"


def staged_task(
    spec: ReplaySpec,
    staging: Path,
    final: Path,
    synthetic: SyntheticJobs | None = None,
    variant: str = "",
    load: float | None = None,
) -> ReplayTask:
    """A task writing its run folder under ``staging``, while results.csv records where the
    folder will be once the grid is at ``final`` (the same folder for a resumable grid)."""
    return ReplayTask(
        spec,
        str(run_folder(staging, spec, spec.label, variant, load)),
        synthetic,
        run_dir=str(run_folder(final, spec, spec.label, variant, load)),
        variant=variant,
        load=load,
    )


def results_table(summaries: Sequence[dict[str, object]]) -> pd.DataFrame:
    rows = [
        {
            "trace": s["trace"],
            "policy": s["policy"],
            "placement": s["placement"],
            "variant": s.get("variant") or "",
            "load": s.get("load"),
            "seed": s["seed"],
            **{f: s.get(f) for f in RESULT_FIELDS},
            **{f: (s.get("energy") or {}).get(f) for f in ENERGY_FIELDS},  # type: ignore[attr-defined]
            "run_dir": s["run_dir"],
        }
        for s in summaries
    ]
    table = pd.DataFrame(rows, columns=[*KEY_COLUMNS, "seed", *RESULT_FIELDS, "run_dir"])
    table["load"] = pd.to_numeric(table["load"], errors="coerce")
    for f in RESULT_FIELDS:  # None (undefined, e.g. dsr without deadlines) becomes NaN
        table[f] = pd.to_numeric(table[f], errors="coerce")
    if any(s.get("tenancy") for s in summaries):  # only grids with tenancy get these columns
        at = table.columns.get_loc("run_dir")
        for k, field in enumerate(TENANCY_FIELDS):
            values = [(s.get("tenancy") or {}).get(field) for s in summaries]
            table.insert(at + k, f"tenancy_{field}", pd.to_numeric(values, errors="coerce"))
    return table
