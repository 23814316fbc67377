"""One replay run from a config: load the trace and cluster, run, and turn the record into the
per-job table, the time series and the summary that metrics and reports read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab import __version__
from schedlab.energy import replay as energy
from schedlab.engines.replay import ReplayConfig, ReplayEngine, ReplayRecord
from schedlab.errors import InputError
from schedlab.metrics.replay_metrics import job_metrics, json_ready, summarize
from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import GPU_MODELS
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import DONE, REJECTED
from schedlab.perf.models import PerfModel, ThroughputTable, TraceDuration, read_throughput_dir
from schedlab.perf.scaling import throughput_table
from schedlab.policies.api import REPLAY
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.results import write_config, write_csv, write_json
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs


@dataclass(frozen=True)
class ReplaySpec:
    """Everything that defines a replay run (what ``config.toml`` records)."""

    cluster: str
    trace: str
    policy: str
    placement: str = "bestfit"
    backfill: bool = False
    seed: int = 0
    trace_format: str | None = None
    throughputs: str | None = None
    speed: dict[int, float] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    restart_overhead: float = 0.0
    resize_overhead: float = 0.0
    slot: float | None = None
    #: ``module:Class`` plugins to load before the policy is looked up.
    plugins: tuple[str, ...] = ()
    #: Power and carbon accounting (off unless ``--power-model`` or ``--ci`` is given).
    energy: energy.EnergySpec = field(default_factory=energy.EnergySpec)

    @property
    def label(self) -> str:
        return Path(self.trace).stem

    @property
    def choice(self) -> PolicyChoice:
        return PolicyChoice(
            self.policy, self.placement, self.backfill, self.params, self.slot, self.plugins
        )


#: ``--throughputs builtin``: the analytic scaling model instead of measured tables.
BUILTIN_THROUGHPUTS = "builtin"


def load_perf(spec: ReplaySpec) -> PerfModel:
    if spec.throughputs == BUILTIN_THROUGHPUTS:
        return ThroughputTable(throughput_table(), spec.speed)
    if spec.throughputs:
        return ThroughputTable(read_throughput_dir(spec.throughputs), spec.speed)
    return TraceDuration(spec.speed)


def check_runnable(jobs: JobTable, perf: PerfModel, source: str) -> None:
    """Every job needs work the perf model can use: fail before the run, naming the job."""
    work = perf.work(jobs)
    bad = ~np.isfinite(work) | (work < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        hint = (
            " (it gives iterations: pass --throughputs with a table for its model)"
            if np.isfinite(jobs.iterations[i])
            else ""
        )
        raise InputError(f"job {jobs.job_id[i]!r} has no duration to replay{hint}", path=source)


def run_replay(
    spec: ReplaySpec, cluster: Cluster | None = None, jobs: JobTable | None = None
) -> ReplayRecord:
    """Run ``spec``; ``cluster``/``jobs`` may be passed in to skip loading (sweeps, demo)."""
    cluster = cluster if cluster is not None else parse_cluster_spec(spec.cluster)
    if jobs is None:
        jobs = read_jobs(spec.trace, spec.trace_format).jobs
    perf = load_perf(spec)
    check_runnable(jobs, perf, spec.trace)
    policies = build(REPLAY, spec.choice)
    assert policies.scheduler is not None
    config = ReplayConfig(
        seed=spec.seed, restart_overhead=spec.restart_overhead, resize_overhead=spec.resize_overhead
    )
    meter = None
    if spec.energy.enabled:
        jobs = jobs.sorted_by_submit()  # the meter numbers jobs as the engine does
        run = energy.prepare(spec.energy, cluster, jobs, perf)
        perf, meter = run.perf, run.meter
        energy.attach_policy(policies.scheduler, run)
    engine = ReplayEngine(
        cluster, jobs, policies.scheduler, policies.placement, perf, config, observer=meter
    )
    return engine.run()


def jobs_frame(record: ReplayRecord) -> pd.DataFrame:
    """The per-job table: what each job asked for and what happened to it."""
    j = record.jobs
    status = np.where(
        record.status == DONE,
        "completed",
        np.where(record.status == REJECTED, "rejected", "unfinished"),
    )
    frame = pd.DataFrame(
        {
            "job_id": j.job_id,
            "user": j.user,
            "submit_time": j.submit_time,
            "start_time": record.first_start,
            "end_time": record.end_time,
            "num_gpus": j.num_gpus,
            "duration": record.reference_seconds,
            "deadline": j.deadline,
            "preemptions": record.preemptions,
            "resizes": record.resizes,
            "gpu_seconds": record.gpu_seconds,
            "status": status,
        }
    )
    frame = job_metrics(frame)
    if isinstance(record.observer, energy.EnergyMeter):
        frame = energy.add_job_columns(frame, record.observer)
    return frame


def jobs_for_csv(jobs: pd.DataFrame) -> pd.DataFrame:
    """Deadline columns only where the trace has deadlines (otherwise they would be all blank)."""
    if jobs["deadline"].notna().any():
        return jobs
    return jobs.drop(columns=["deadline", "met_deadline"])


def timeseries_frame(record: ReplayRecord) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "time": record.ts_time,
            "queue_length": record.ts_queue,
            "running_jobs": record.ts_running,
            "busy_gpus": record.ts_busy,
            "efficiency": record.ts_efficiency,
            "total_gpus": np.full(len(record.ts_time), record.cluster.total_gpus, dtype=np.int64),
        }
    )
    if isinstance(record.observer, energy.EnergyMeter):
        frame = energy.add_series_columns(frame, record.observer)
    return frame


def replay_summary(
    spec: ReplaySpec, record: ReplayRecord, jobs: pd.DataFrame, series: pd.DataFrame
) -> dict[str, object]:
    summary = summarize(jobs, series)
    return json_ready(
        {
            "policy": spec.policy + ("+backfill" if spec.backfill else ""),
            "placement": spec.placement,
            "trace": spec.label,
            "seed": spec.seed,
            "cluster": spec.cluster if not Path(spec.cluster).exists() else Path(spec.cluster).name,
            "gpus": record.cluster.total_gpus,
            **summary,
            **(
                {"energy": energy.summary_block(record.observer, float(record.gpu_seconds.sum()))}
                if isinstance(record.observer, energy.EnergyMeter)
                else {}
            ),
            "decision_points": record.decision_points,
            "wall_seconds": round(record.wall_seconds, 3),
            "jobs_per_second": round(len(record.jobs) / record.wall_seconds, 1)
            if record.wall_seconds > 0
            else None,
        }
    )


def write_run(out: Path, spec: ReplaySpec, record: ReplayRecord) -> dict[str, object]:
    """jobs.csv, timeseries.csv, config.toml, then summary.json (its presence marks a complete
    run); returns the summary."""
    jobs = jobs_frame(record)
    series = timeseries_frame(record)
    summary = {**replay_summary(spec, record, jobs, series), "schedlab_version": __version__}
    write_csv(out / "jobs.csv", jobs_for_csv(jobs))
    write_csv(out / "timeseries.csv", series)
    config = {
        "cluster": spec.cluster
        if not Path(spec.cluster).exists()
        else str(Path(spec.cluster).resolve()),
        "trace": str(Path(spec.trace).resolve()) if Path(spec.trace).exists() else spec.trace,
        "trace_format": spec.trace_format or "",
        "policy": spec.policy,
        "placement": spec.placement,
        "backfill": spec.backfill,
        "seed": spec.seed,
        "throughputs": (
            str(Path(spec.throughputs).resolve())
            if spec.throughputs and spec.throughputs != BUILTIN_THROUGHPUTS
            else spec.throughputs or ""
        ),
        "speed": ",".join(f"{GPU_MODELS[m]}={f}" for m, f in spec.speed.items()),
        "params": [f"{k}={v}" for k, v in spec.params.items()],
        "restart_overhead": spec.restart_overhead,
        "resize_overhead": spec.resize_overhead,
        "slot": spec.slot if spec.slot is not None else 0.0,
        **({"plugin": list(spec.plugins)} if spec.plugins else {}),
        **energy.config_entries(spec.energy),
    }
    write_config(
        out / "config.toml",
        config,
        f"schedlab {__version__} replay run; "
        "repeat: schedlab replay --config config.toml --out DIR",
    )
    write_json(out / "summary.json", summary)  # last: its presence marks a complete run
    return summary
