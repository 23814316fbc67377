"""One replay run from a config: load the trace and cluster, run, and turn the record into the
per-job table, the time series and the summary that metrics and reports read."""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab import __version__
from schedlab.energy.spec import EnergySpec, config_entries
from schedlab.engines.replay import ReplayConfig, ReplayEngine, ReplayRecord
from schedlab.errors import InputError
from schedlab.experiments.load_scaling import offered_load
from schedlab.metrics.ftf import isolated_jct
from schedlab.metrics.replay_metrics import (
    Table,
    as_numbers,
    ftf_rho_values,
    job_metrics,
    json_ready,
    summarize,
)
from schedlab.metrics.steady_state import steady_state
from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import GPU_MODELS
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import DONE, REJECTED
from schedlab.perf.models import (
    PerfModel,
    ThroughputTable,
    TraceDuration,
    read_throughput_files,
    table_gaps,
)
from schedlab.perf.scaling import throughput_table
from schedlab.perf.throughput_matrix import (
    MatrixPerf,
    check_matrix_columns,
    is_matrix_file,
    matrix_gaps,
    read_throughput_matrix,
    unrunnable_jobs,
)
from schedlab.policies.api import REPLAY
from schedlab.policies.protection import check_min_runtime
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.results import write_config, write_csv, write_json
from schedlab.tenancy.spec import TenancySpec
from schedlab.tenancy.spec import config_entries as tenancy_entries
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs
from schedlab.traces.job_common import dropped_note

if TYPE_CHECKING:
    import pandas as pd

    from schedlab.energy.meter import EnergyMeter


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
    #: ``--apps``: a folder of measured application tables (goodput-aware replay).
    apps: str | None = None
    speed: dict[int, float] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    restart_overhead: float = 0.0
    resize_overhead: float = 0.0
    #: Seconds a run lasts before the policy may preempt it (as ``serve slurm --min-runtime``).
    min_runtime: float = 0.0
    #: Seconds between a preemption's signal and the preemption (as ``serve slurm --grace``).
    grace: float = 0.0
    #: Seconds a run of a job without its own ``time_limit`` may last (Slurm's DefaultTime;
    #: None: no limit).
    time_limit: float | None = None
    slot: float | None = None
    #: ``module:Class`` plugins to load before the policy is looked up.
    plugins: tuple[str, ...] = ()
    #: What to do with jobs the throughput tables do not cover: None refuses the run, "linear"
    #: runs them on their trace duration with linear scaling after a one-line warning.
    throughputs_fallback: str | None = None
    #: ``--topology``: a network under the cluster (None: no network model, as before).
    topology: str | None = None
    net_sharing: str = "random-phase"
    net_routing: str = "ecmp"
    #: ``--net-control``: "" (the routing decides), or ``crux`` (see resolve_net_control).
    net_control: str = ""
    #: Power and carbon accounting (off unless ``--power-model`` or ``--ci`` is given).
    energy: EnergySpec = field(default_factory=EnergySpec)
    #: Queues, quotas and a share policy (off unless ``--tenancy`` or ``--queues`` is given).
    tenancy: TenancySpec = field(default_factory=TenancySpec)
    #: ``--failures``, ``--checkpoint``, ``--failure-reaction`` (None: no failures, as before).
    failures: str | None = None
    checkpoint: str | None = None
    failure_reaction: str | None = None
    #: ``--until``: stop simulating at this time (jobs still active are unfinished); None: never.
    until: float | None = None
    #: ``--models``: a TOML file of extra models for an ``llm`` trace.
    models: str | None = None
    #: ``--llm-profile``: the planner's calibration profile for LLM jobs that name none.
    llm_profile: str | None = None

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
#: ``--throughputs-fallback`` values.
FALLBACKS = ("linear",)


def load_perf(spec: ReplaySpec) -> PerfModel:
    if spec.apps:
        from schedlab.perf.goodput.applications import read_applications
        from schedlab.perf.goodput.perf import GoodputPerf

        return GoodputPerf(read_applications(spec.apps), speed=spec.speed, source=spec.apps)
    if spec.throughputs == BUILTIN_THROUGHPUTS:
        return ThroughputTable(throughput_table(), spec.speed)
    if is_matrix_file(spec.throughputs):
        if spec.speed:
            raise InputError(
                "'--speed' does not apply to a throughput matrix: it has a column per GPU model "
                f"already ({spec.throughputs})"
            )
        return MatrixPerf(read_throughput_matrix(spec.throughputs))  # type: ignore[arg-type]
    if spec.throughputs:
        table, measured = read_throughput_files(spec.throughputs)
        return ThroughputTable(table, spec.speed, measured)
    return TraceDuration(spec.speed)


def warn(message: str) -> None:
    """One line on stderr: the run goes on, but the user should know."""
    print(f"schedlab: warning: {message}", file=sys.stderr)


def check_table_coverage(
    jobs: JobTable, perf: PerfModel, spec: ReplaySpec, notify: Callable[[str], None] = warn
) -> None:
    """Jobs the throughput tables do not cover would run on linear scaling of their trace
    duration: an error naming the first of them, or with ``throughputs_fallback="linear"`` one
    warning that counts them."""
    if spec.throughputs_fallback not in (None, *FALLBACKS):
        raise InputError(
            f"'--throughputs-fallback' must be one of {', '.join(FALLBACKS)} "
            f"(got {spec.throughputs_fallback!r})"
        )
    if spec.apps:
        from schedlab.perf.goodput.perf import check_goodput_jobs

        check_goodput_jobs(jobs, perf)  # type: ignore[arg-type]
        return
    if isinstance(perf, MatrixPerf):
        gaps, source = matrix_gaps(jobs, perf.matrix), "throughput matrix"
    elif isinstance(perf, ThroughputTable):
        gaps, source = table_gaps(jobs, perf.table, perf.measured), "throughput tables"
    else:
        return
    if not gaps:
        return
    job, reason = gaps[0]
    what = (
        f"{len(gaps)} of {len(jobs)} jobs are not covered by the {source} "
        f"(first: job {jobs.job_id[job]!r}, which {reason})"
    )
    if spec.throughputs_fallback is None:
        raise InputError(
            f"{what}; pass --throughputs-fallback linear to run them on linear scaling of their "
            f"trace duration",
            path=spec.trace,
        )
    notify(f"{what}; they run on linear scaling of their trace duration")


def check_matrix_runnable(
    jobs: JobTable, perf: MatrixPerf, cluster: Cluster, spec: ReplaySpec, scheduler: object
) -> None:
    """A job the throughput matrix runs at 0 steps/s on every GPU model of the cluster — at its
    own GPU count, or at every count the matrix has when the policy sizes jobs itself — would
    hold its GPUs, or wait, forever: refuse the run, naming the policy, the job and why."""
    elastic = bool(getattr(scheduler, "elastic", False))
    bad = unrunnable_jobs(perf, jobs, cluster, elastic)
    if not bad:
        return
    j, reason = bad[0]
    more = f" ({len(bad)} jobs like it)" if len(bad) > 1 else ""
    raise InputError(
        f"policy {spec.policy!r} on cluster {spec.cluster!r}: job {jobs.job_id[j]!r} "
        f"({jobs.model_name[j]}, {int(jobs.num_gpus[j])} GPU(s)) {reason}, "
        f"according to the throughput matrix {perf.matrix.source}{more}",
        path=spec.trace,
    )


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


def check_speed_models(
    spec: ReplaySpec, cluster: Cluster, notify: Callable[[str], None] = warn
) -> None:
    """A speed factor for a GPU model the cluster does not have changes nothing: most likely a
    typo or the wrong cluster, so say so (the run itself is still what was asked)."""
    present = set(cluster.model[cluster.num_gpus > 0].tolist())
    unused = [GPU_MODELS[m] for m in spec.speed if m not in present]
    if unused:
        notify(
            f"'--speed' names {', '.join(unused)}, which the cluster {spec.cluster!r} has none of"
        )


def run_replay(
    spec: ReplaySpec,
    cluster: Cluster | None = None,
    jobs: JobTable | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayRecord:
    """Run ``spec``; ``cluster``/``jobs`` may be passed in to skip loading (sweeps, demo);
    ``progress(jobs arrived, jobs)`` is called now and then if given."""
    if cluster is None and (spec.cluster or spec.topology is None):
        cluster = parse_cluster_spec(spec.cluster)
    fmt = spec.trace_format
    if jobs is None:
        options = {"models": spec.models} if spec.models else {}
        read = read_jobs(spec.trace, spec.trace_format, **options)
        jobs, fmt = read.jobs, read.format
        note = dropped_note(jobs, "; summary.json counts them under 'dropped_jobs'")
        if note is not None:
            warn(note)
    if spec.topology is not None and (
        spec.apps or spec.throughputs not in (None, BUILTIN_THROUGHPUTS)
    ):
        from schedlab.experiments.replay_network import MEASURED_TABLES_WITH_TOPOLOGY

        raise InputError(MEASURED_TABLES_WITH_TOPOLOGY)  # before the tables are judged
    perf = load_perf(spec)
    llm_perf: PerfModel | None = None
    check_table_coverage(jobs, perf, spec)
    if jobs.llm is not None:  # LLM jobs: tokens of work, speed from the planner
        nic_gbps = None
        if spec.topology is not None:  # the planner sees the topology's hosts and their NICs
            from schedlab.experiments.replay_network import topology_cluster

            topo, cluster = topology_cluster(spec.topology, cluster)
            nic_gbps = float((topo.host_nics * topo.host_nic_gbps).min())
        perf = llm_perf = _llm_perf(spec, perf, cluster, nic_gbps)
    elif spec.llm_profile is not None:
        raise InputError("'--llm-profile' needs a trace of LLM jobs (format llm)")
    check_runnable(jobs, perf, spec.trace)
    network = None
    if spec.topology is not None:  # the network model, imported only for a run with one
        from schedlab.experiments.replay_network import network_model, topology_cluster

        topo, cluster = topology_cluster(spec.topology, cluster)
        network = network_model(
            topo,
            jobs.sorted_by_submit(),  # the engine's order
            perf,
            rule=spec.net_sharing,
            routing=spec.net_routing,
            seed=spec.seed,
            trace=spec.trace,
            fmt=spec.trace_format,
            builtin=spec.throughputs == BUILTIN_THROUGHPUTS,
            control=spec.net_control,
            planned=getattr(llm_perf, "planned_comm", None),
        )
    assert cluster is not None
    if isinstance(perf, MatrixPerf):
        check_matrix_columns(perf.matrix, cluster, spec.cluster)
    check_speed_models(spec, cluster)
    policies = build(REPLAY, spec.choice)
    assert policies.scheduler is not None
    if isinstance(perf, MatrixPerf):
        check_matrix_runnable(jobs, perf, cluster, spec, policies.scheduler)
    if network is not None and spec.topology is not None:
        from schedlab.experiments.replay_network import check_static_wiring

        check_static_wiring(network.topology, spec.topology, policies.placement)
    check_min_runtime(spec.policy, policies.scheduler, spec.min_runtime, spec.grace)
    config = ReplayConfig(
        seed=spec.seed,
        restart_overhead=spec.restart_overhead,
        resize_overhead=spec.resize_overhead,
        min_runtime=spec.min_runtime,
        grace=spec.grace,
        **({"until": spec.until} if spec.until is not None else {}),
    )
    meter = None
    if spec.energy.enabled:  # energy accounting, imported only for a run with it
        from schedlab.energy import replay as energy

        jobs = jobs.sorted_by_submit()  # the meter numbers jobs as the engine does
        run = energy.prepare(spec.energy, cluster, jobs, perf)
        perf, meter = run.perf, run.meter
        energy.attach_policy(policies.scheduler, run)
    failures = None
    if spec.failures is not None:
        from schedlab.failures.options import failure_model

        failures = failure_model(
            spec.failures,
            spec.checkpoint,
            spec.failure_reaction,
            spec.restart_overhead,
            spec.seed,
            **(_llm_failure_hooks(llm_perf) if llm_perf is not None else {}),
        )
    gate = None
    if needs_gate(jobs, spec.time_limit):  # Slurm's habits, imported only when used
        from schedlab.engines.job_gate import JobGate

        jobs = jobs.sorted_by_submit()  # the gate numbers jobs as the engine does
        gate = JobGate(jobs, spec.time_limit)
    scheduler, run = policies.scheduler, None
    if spec.tenancy.enabled:
        from schedlab.tenancy import replay as tenancy

        scheduler, recorder = tenancy.wrap(
            spec.tenancy,
            scheduler,
            jobs,
            cluster,
            spec.trace,
            fmt or _format_of(spec.trace),
            spec.backfill,
        )
        run = tenancy.TenancyRun(scheduler, recorder)
    engine = ReplayEngine(
        cluster, jobs, scheduler, policies.placement, perf, config, network, meter,
        gate=gate, failures=failures,
    )  # fmt: skip
    record = engine.run(progress)
    record.isolated_jct = isolated_jct(record.jobs, record.cluster, perf)
    if run is not None:
        record.tenancy = run
    return record if llm_perf is None else dataclasses.replace(record, llm=llm_perf)


def _format_of(trace: str) -> str | None:
    """The trace's format as detected from its header (None if it cannot be read)."""
    from schedlab.traces.formats import detect_format

    try:
        return detect_format(trace)
    except (InputError, OSError):
        return None


def needs_gate(jobs: JobTable, time_limit: float | None) -> bool:
    """Whether the run needs the gate: a time limit, a dependency or a throttled array."""
    return bool(
        time_limit is not None
        or np.isfinite(jobs.time_limit).any()
        or (jobs.dependency != "").any()
        or (jobs.array_throttle > 0).any()
    )


def _llm_perf(
    spec: ReplaySpec, base: PerfModel, cluster: Cluster | None, nic_gbps: float | None = None
) -> PerfModel:
    from schedlab.failures.options import check_failure_options
    from schedlab.perf.llm.perfmodel import DEFAULT_PROFILE, LLMPlanner
    from schedlab.perf.llm.profile import get_profile

    if cluster is None:
        raise InputError("LLM jobs need --cluster or --topology")
    profile = spec.llm_profile or DEFAULT_PROFILE
    get_profile(profile)  # an unknown name fails before the run
    parsed = check_failure_options(spec.failures, spec.checkpoint, spec.failure_reaction)
    return LLMPlanner(
        base=base,
        cluster=cluster,
        profile=profile,
        nic_gbps=nic_gbps,
        resize_fixed=spec.resize_overhead if spec.resize_overhead > 0 else None,
        checkpoint=parsed[1] if parsed is not None else None,
    )


def _llm_failure_hooks(perf: PerfModel) -> dict[str, object]:
    """What the failure model asks the planner: checkpoint size, step time, the job's own
    checkpoint policy and restart, and on how many surviving nodes a shrunk job still runs."""
    from schedlab.perf.llm.perfmodel import LLMPlanner

    planner = perf
    assert isinstance(planner, LLMPlanner)
    from schedlab.failures.runtime import JobFailureInfo

    def job_info(jobs: JobTable, job: int, allocation: object) -> JobFailureInfo:
        if jobs.llm is None or jobs.llm.model[job] is None:
            return JobFailureInfo()
        return JobFailureInfo(
            ckpt_bytes=planner.ckpt_bytes(jobs, job),
            step_seconds=planner.step_seconds(jobs, job, allocation),
            policy=str(jobs.llm.ckpt_policy[job]),
            restart=float(jobs.llm.restart_s[job]),
        )

    def shrink_to(jobs: JobTable, job: int, counts: list[int]) -> int:
        if jobs.llm is None or jobs.llm.model[job] is None:
            return len(counts)
        return planner.largest_feasible_prefix(jobs, job, counts)

    return {"job_info": job_info, "shrink_to": shrink_to}


def jobs_table(record: ReplayRecord) -> Table:
    """The per-job table, columns by name: what each job asked for and what happened to it (a
    dict of arrays; a DataFrame for a run with LLM jobs or failures)."""
    j = record.jobs
    status = np.where(
        record.status == DONE,
        "completed",
        np.where(record.status == REJECTED, "rejected", "unfinished"),
    )
    gate = record.gate
    if gate is not None:  # a run killed at its time limit ended, but did not complete
        status = np.where(gate.timed_out, "timeout", status)
    table: dict[str, Any] = {
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
    table = dict(job_metrics(table))
    if record.isolated_jct is not None:  # after the metrics, before the columns options add
        table["isolated_jct"] = record.isolated_jct
        table["ftf_rho"] = ftf_rho_values(as_numbers(table, "jct"), record.isolated_jct)
    if record.network is not None:
        from schedlab.experiments.replay_network import add_job_columns

        table = add_job_columns(table, record)  # type: ignore[arg-type]
    if record.reject_reason:  # why each rejected job was turned away (blank for the others)
        reasons = [record.reject_reason.get(i, "") for i in range(len(j))]
        table["reason"] = np.array(reasons, dtype=object)
    if gate is not None:
        if np.isfinite(gate.limit).any():
            table["time_limit"] = gate.limit
        if (j.dependency != "").any() or (j.array_throttle > 0).any():
            table["eligible_time"] = gate.eligible_at  # when it joined the queue
    meter = energy_meter(record)
    if meter is not None:
        from schedlab.energy.replay import add_job_columns as add_energy_columns

        table = add_energy_columns(table, meter)  # type: ignore[arg-type]
    if record.llm is None and record.failures is None:
        return table
    # LLM and failure columns are added as pandas adds them (their cells' types as before).
    import pandas as pd

    frame = pd.DataFrame(table)
    if record.llm is not None:
        frame = _llm_columns(frame, record)
    if record.failures is not None:
        from schedlab.failures.report import add_job_columns as add_failure_columns

        frame = add_failure_columns(frame, record.failures)
        if record.llm is not None:
            frame["tokens_lost"] = record.failures.lost_units
    return frame


def jobs_frame(record: ReplayRecord) -> pd.DataFrame:
    """:func:`jobs_table` as a DataFrame (for studies that go on with pandas)."""
    import pandas as pd

    return pd.DataFrame(jobs_table(record))


def energy_meter(record: ReplayRecord) -> EnergyMeter | None:
    """The run's energy meter (None: the run had no energy accounting, and the meter's module
    need not be imported to tell)."""
    if record.observer is None:
        return None
    from schedlab.energy.meter import EnergyMeter

    return record.observer if isinstance(record.observer, EnergyMeter) else None


def jobs_for_csv(jobs: Table) -> Table:
    """Deadline columns only where the trace has deadlines (otherwise they would be all blank)."""
    if not np.isnan(as_numbers(jobs, "deadline")).all():
        return jobs
    if hasattr(jobs, "drop"):
        return jobs.drop(columns=["deadline", "met_deadline"])  # type: ignore[attr-defined]
    return {k: v for k, v in jobs.items() if k not in ("deadline", "met_deadline")}


def timeseries_table(record: ReplayRecord) -> dict[str, Any]:
    """The time series, columns by name: one row per decision point."""
    table = _base_series(record)
    if record.network is not None:
        from schedlab.experiments.replay_network import add_series_columns

        table = add_series_columns(table, record)  # type: ignore[arg-type]
    meter = energy_meter(record)
    if meter is not None:
        from schedlab.energy.replay import add_series_columns as add_energy_series

        table = add_energy_series(table, meter)  # type: ignore[arg-type]
    return table


def timeseries_frame(record: ReplayRecord) -> pd.DataFrame:
    """:func:`timeseries_table` as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(timeseries_table(record))


def _base_series(record: ReplayRecord) -> dict[str, Any]:
    return {
        "time": record.ts_time,
        "queue_length": record.ts_queue,
        "running_jobs": record.ts_running,
        "busy_gpus": record.ts_busy,
        "efficiency": record.ts_efficiency,
        "total_gpus": np.full(len(record.ts_time), record.cluster.total_gpus, dtype=np.int64),
    }


def replay_summary(
    spec: ReplaySpec, record: ReplayRecord, jobs: Table, series: Table
) -> dict[str, object]:
    summary = summarize(jobs, series)
    return json_ready(
        {
            "policy": spec.policy + ("+backfill" if spec.backfill else ""),
            "placement": spec.placement,
            "trace": spec.label,
            "seed": spec.seed,
            "cluster": Path(spec.cluster).name if _is_file(spec.cluster) else spec.cluster,
            "gpus": record.cluster.total_gpus,
            # GPU time asked for ÷ the cluster's over the arrival window (NaN → null when the
            # jobs have no durations or all arrive at once).
            "offered_load": offered_load(record.jobs, record.cluster.total_gpus),
            **summary,
            # Jobs of the trace file the reader left out (jobs.csv has no row for them).
            **({"dropped_jobs": dict(record.jobs.dropped)} if record.jobs.dropped else {}),
            **steady_state(jobs, series),
            **_energy_block(record),
            **(
                {"rejected_reasons": dict(Counter(record.reject_reason.values()).most_common())}
                if record.reject_reason
                else {}
            ),
            **({"policy_report": record.policy_report} if record.policy_report else {}),
            "decision_points": record.decision_points,
            "wall_seconds": round(record.wall_seconds, 3),
            "jobs_per_second": round(len(record.jobs) / record.wall_seconds, 1)
            if record.wall_seconds > 0
            else None,
            **_network_block(record, jobs, series),
            **({"llm": _llm_block(jobs, record)} if record.llm is not None else {}),
            **({"failures": _failure_block(record, jobs)} if record.failures is not None else {}),
        }
    )


def _llm_columns(frame: pd.DataFrame, record: ReplayRecord) -> pd.DataFrame:
    """The model, tokens and job type of every LLM job, its first plan, the plans it ran with
    and its MFU (weighted by GPU-seconds over the plans)."""
    horizon = float(record.ts_time[-1]) if len(record.ts_time) else 0.0
    cols = record.llm.job_columns(record.jobs, record.end_time, horizon)
    out = frame.copy()
    for name, values in cols.items():
        out[name] = values
    return out


def _llm_block(jobs: pd.DataFrame, record: ReplayRecord) -> dict[str, object]:
    """Tokens trained per second of the whole run, and MFU weighted by GPU-seconds."""
    tokens = record.jobs.llm.tokens
    done = np.asarray(jobs["status"]) == "completed"
    span = float(record.ts_time[-1] - record.ts_time[0]) if len(record.ts_time) > 1 else 0.0
    mfu = np.asarray(jobs["mfu_mean"], dtype=np.float64)
    weight = record.gpu_seconds * np.isfinite(mfu)
    return {
        "llm_jobs": int(sum(m is not None for m in record.jobs.llm.model)),
        "tokens_completed": float(tokens[done].sum()),
        "tokens_per_second": float(tokens[done].sum()) / span if span > 0 else None,
        "mfu_gpu_weighted": float(np.nansum(mfu * weight) / weight.sum())
        if weight.sum() > 0
        else None,
    }


def _failure_block(record: ReplayRecord, jobs: pd.DataFrame) -> dict[str, object]:
    from schedlab.failures.report import summary_block

    return summary_block(record.failures, jobs, float(record.gpu_seconds.sum()))


def _energy_block(record: ReplayRecord) -> dict[str, object]:
    meter = energy_meter(record)
    if meter is None:
        return {}
    from schedlab.energy.replay import summary_block

    return {"energy": summary_block(meter, float(record.gpu_seconds.sum()))}


def _network_block(record: ReplayRecord, jobs: Table, series: Table) -> dict[str, object]:
    if not record.network:
        return {}
    import pandas as pd  # the network block is measured with pandas

    from schedlab.experiments.replay_network import network_block

    return {"network": network_block(record, pd.DataFrame(jobs), pd.DataFrame(series))}


def write_run(out: Path, spec: ReplaySpec, record: ReplayRecord) -> dict[str, object]:
    """jobs.csv, timeseries.csv, config.toml, then summary.json (its presence marks a complete
    run); returns the summary."""
    jobs = jobs_table(record)
    series = timeseries_table(record)
    summary = {**replay_summary(spec, record, jobs, series), "schedlab_version": __version__}
    write_csv(out / "jobs.csv", jobs_for_csv(jobs))
    write_csv(out / "timeseries.csv", series)
    config = {
        "cluster": str(Path(spec.cluster).resolve()) if _is_file(spec.cluster) else spec.cluster,
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
        **({"min_runtime": spec.min_runtime} if spec.min_runtime else {}),
        **({"grace": spec.grace} if spec.grace else {}),
        **({"until": spec.until} if spec.until is not None else {}),
        **({"time_limit": spec.time_limit} if spec.time_limit is not None else {}),
        "slot": spec.slot if spec.slot is not None else 0.0,
        "throughputs_fallback": spec.throughputs_fallback or "",
        **({"apps": str(Path(spec.apps).resolve())} if spec.apps else {}),
        **({"plugin": list(spec.plugins)} if spec.plugins else {}),
        **(
            {
                "topology": _path_or_spec(spec.topology),
                "net_sharing": spec.net_sharing,
                # Crux chooses the paths: a routing beside it would contradict it on repeat.
                **({"net_routing": spec.net_routing} if spec.net_control != "crux" else {}),
                **({"net_control": spec.net_control} if spec.net_control else {}),
            }
            if spec.topology is not None
            else {}
        ),
        **config_entries(spec.energy),
        **tenancy_entries(spec.tenancy),
        **{
            key: value
            for key, value in (
                ("failures", spec.failures),
                ("checkpoint", spec.checkpoint),
                ("failure_reaction", spec.failure_reaction),
                ("models", str(Path(spec.models).resolve()) if spec.models else None),
                ("llm_profile", spec.llm_profile),
            )
            if value
        },
    }
    write_config(
        out / "config.toml",
        config,
        f"schedlab {__version__} replay run; "
        "repeat: schedlab replay --config config.toml --out DIR",
    )
    if record.tenancy is not None:
        import pandas as pd  # the tenancy files are written with pandas

        from schedlab.tenancy import replay as tenancy

        times = as_numbers(series, "time")
        end = float(times[-1]) if len(times) else 0.0
        summary["tenancy"] = tenancy.write_outputs(
            out, record.tenancy, pd.DataFrame(jobs), end, record.jobs
        )
    write_json(out / "summary.json", summary)  # last: its presence marks a complete run
    return summary


def _path_or_spec(topology: str) -> str:
    """A TOML topology file as an absolute path (so the config repeats from anywhere)."""
    return str(Path(topology).resolve()) if Path(topology).is_file() else topology


def _is_file(spec: str) -> bool:
    """A cluster given as a file (not a NODESxGPUS spec, and not left out for a topology)."""
    return bool(spec) and Path(spec).exists()
