"""Titan on the Microsoft ITP trace (ICNP '24, Fig. 2a / 4b / 5a; docs/network.md "Titan on ITP").

The ten clusters of ``elasticflow-itp/simulation/`` merged by submission time (job ids prefixed
with their cluster) on the ``titan`` topology (64 racks × 8 machines × 8 GPUs, one 100 Gbps NIC
each), every job data-parallel with halving-doubling all-reduce of its model's gradient (models
from the trace), trace durations as run times alone on a compact placement (a job runs at
T_ref/T of its trace speed, see :mod:`schedlab.network.reference`), random-phase sharing, ECMP,
FIFO order without backfill. Each placement is one replay.

Measures (spec §6), every placement over the same window: machines used and machine
fragmentation are averaged over the arrival span (first to last submission: the work offered is
the same for every placement there, whatever its tail), and machines are also summed over the
whole run in machine-days; cross-machine traffic is Titan's count (each exchanging pair once per
stage: half the sender-side bytes), as the run's total and as the mean per iteration of the jobs
that span machines. The metric functions are :mod:`schedlab.network.metrics`'.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.engines.replay import ReplayConfig, ReplayEngine, ReplayRecord
from schedlab.experiments.live_progress import reporter
from schedlab.experiments.parallel import run_all
from schedlab.experiments.replay_network import network_model
from schedlab.model.cluster import Cluster
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import DONE
from schedlab.network.generators import parse_topology
from schedlab.network.metrics import DAY, machine_days, titan_pair_bytes, window_mean
from schedlab.network.replay_state import NetworkModel
from schedlab.network.topology import cluster_for
from schedlab.perf.models import TraceDuration
from schedlab.policies.api import REPLAY
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.results import write_csv
from schedlab.traces.elasticflow import read_elasticflow_itp

#: ``progress(done, total)`` of a replay.
Progress = Callable[[int, int], None]

#: (placement, what the paper calls it), in the paper's column order; ``hived`` is HiveD's own
#: cell allocation, run beside fragments-first (HiveD as Titan describes it).
RUNS: tuple[tuple[str, str], ...] = (
    ("titan", "Titan"),
    ("fragments-first", "HiveD"),
    ("hived", "HiveD (cells)"),
    ("bestfit-machine", "ElasticFlow"),
    ("tiresias-skew", "Tiresias"),
)
#: The paper's values: average machines used (Fig. 2a, ITP), machine fragmentation rate in %
#: (Fig. 4b, the Acme trace, not shipped), cross-machine traffic in GB (Fig. 5a, unit unstated).
PAPER: dict[str, tuple[float, float, float | None]] = {
    "Titan": (174, 11.7, 1.65),
    "HiveD": (168, 10.0, 7.03),
    "ElasticFlow": (334, 38.1, None),
    "Tiresias": (207, 19.4, 2.78),
}
TOPOLOGY = "titan"
SHARING = "random-phase"
ROUTING = "ecmp"
COLLECTIVE = "hd"
#: Jobs in the ``--quick`` run (the first by submission time).
QUICK_JOBS = 400


def itp_files(shared: Path) -> list[Path]:
    """The ten enriched cluster files (not the 195-job testbed trace)."""
    folder = shared / "traces" / "elasticflow-itp" / "simulation"
    return sorted(folder.glob("cluster[0-9][0-9].csv"))


def merged_itp(files: list[Path], limit: int | None = None) -> JobTable:
    """The clusters' jobs as one trace, by submission time (ties: cluster, then file order);
    ``limit`` keeps the first jobs only."""
    parts = []
    for path in files:
        jobs = read_elasticflow_itp(path).jobs
        cols = jobs.columns()
        cols["job_id"] = np.array([f"{path.stem}-{j}" for j in jobs.job_id], dtype=object)
        parts.append(cols)
    merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    order = np.argsort(merged["submit_time"], kind="stable")
    if limit is not None:
        order = order[:limit]
    return JobTable.from_columns(
        source="elasticflow-itp (merged)", **{k: v[order] for k, v in merged.items()}
    )


@dataclass(frozen=True)
class ItpRun:
    placement: str
    jobs: JobTable
    seed: int = 0


def replay_itp(run: ItpRun, progress: Progress | None = None) -> ReplayRecord:
    """One placement over the merged trace."""
    topo = parse_topology(TOPOLOGY)
    cluster = cluster_for(topo)
    jobs = run.jobs.sorted_by_submit()
    model = network_model(
        topo,
        jobs,
        TraceDuration(),
        rule=SHARING,
        routing=ROUTING,
        seed=run.seed,
        trace=None,
        fmt=None,
        builtin=False,
    )
    hd = np.full(len(jobs), COLLECTIVE, dtype=object)
    model = replace(model, comm=replace(model.comm, collective=hd))
    choice = PolicyChoice("fifo", placement=run.placement)
    return observed_replay(cluster, jobs, choice, model, run.seed, None, progress)


def observed_replay(
    cluster: Cluster,
    jobs: JobTable,
    choice: PolicyChoice,
    network: NetworkModel,
    seed: int,
    observer: object,
    progress: Progress | None = None,
) -> ReplayRecord:
    """One replay of ``jobs`` under ``choice`` with a network, ``observer`` hearing every
    placement and release (None: nobody), ``progress(jobs arrived, jobs)`` now and then."""
    policies = build(REPLAY, choice)
    assert policies.scheduler is not None
    engine = ReplayEngine(
        cluster,
        jobs,
        policies.scheduler,
        policies.placement,
        TraceDuration(),
        ReplayConfig(seed),
        network=network,
        observer=observer,
    )
    return engine.run(progress)


def measure(run: ItpRun) -> dict[str, object]:
    """One row of the study's table (run in a worker: reports its progress if asked)."""
    began, cpu = time.perf_counter(), time.process_time()
    record = replay_itp(run, reporter(f"titan-itp/{run.placement}"))
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    return row_of(run.placement, record) | {"wall_s": wall, "cpu_s": cpu}


def row_of(placement: str, record: ReplayRecord) -> dict[str, object]:
    """The study's measures of one replay (see the module's docstring)."""
    net = record.network
    assert net is not None
    t = record.ts_time
    submit = record.jobs.submit_time
    window = (float(submit.min()), float(submit.max()))
    end = float(np.nanmax(record.end_time))
    machines = net.ts_machines_used.astype(np.float64)
    pairs = titan_pair_bytes(net.cross_host_per_iteration)
    multi = pairs > 0
    done = record.status == DONE
    jct = record.end_time - submit
    gpu_s = float((record.jobs.duration * record.jobs.num_gpus).sum())
    per_host = int(net.topology.host_gpus.max())
    return {
        "placement": placement,
        "jobs": len(record.jobs),
        "completed": int(done.sum()),
        "machines_used": window_mean(t, machines, *window),
        "machine_days": machine_days(t, machines, end),
        "machines_used_own_span": window_mean(t, machines, float(t[0]), end),
        "machine_frag_rate": window_mean(t, net.ts_machine_frag_rate, *window),
        "machine_frag_share": window_mean(t, net.ts_machine_frag_share, *window),
        "machine_frag_rate_own_span": window_mean(t, net.ts_machine_frag_rate, float(t[0]), end),
        # the trace's GPU-time on whole machines: over the arrival span (the spec's bound, if
        # all the work fell inside it) and in machine-days (a bound on the whole run)
        "lower_bound_machines": gpu_s / per_host / (window[1] - window[0]),
        "lower_bound_machine_days": gpu_s / per_host / DAY,
        "multi_machine_jobs": int(multi.sum()),
        "cross_TB_total": float(titan_pair_bytes(np.nansum(net.cross_host_bytes))) / 1e12,
        "cross_GB_per_multi_job": float(pairs[multi].mean()) / 1e9 if multi.any() else 0.0,
        "cross_GB_per_job": float(pairs.mean()) / 1e9,
        "mean_jct_h": float(np.nanmean(np.where(done, jct, np.nan))) / 3600,
        "mean_wait_h": float(np.nanmean(record.first_start - submit)) / 3600,
        "makespan_days": (end - window[0]) / DAY,
        "net_slowdown": float(np.nanmean(net.net_slowdown)),
    }


def run_study(
    shared: Path,
    quick: bool = False,
    workers: int = 2,
    limit: int | None = None,
    mapper: Callable[..., list[dict[str, object]]] | None = None,
) -> pd.DataFrame:
    """Every placement of :data:`RUNS` over the merged trace (its first ``limit`` jobs if
    given, :data:`QUICK_JOBS` if ``quick``); one row each, with the paper's values. ``mapper``
    runs the replays (default: :func:`run_all` on ``workers``)."""
    jobs = merged_itp(itp_files(shared), QUICK_JOBS if quick else limit)
    tasks = [ItpRun(p, jobs) for p, _ in RUNS]
    if mapper is None:
        rows = run_all(measure, tasks, workers)
    else:
        rows = mapper(measure, tasks, f"{len(tasks)} replays of {len(jobs):,} jobs")
    table = pd.DataFrame(rows)
    names = dict(RUNS)
    table.insert(1, "paper_name", [names[p] for p in table["placement"]])
    for k, column in enumerate(PAPER_COLUMNS):
        table[column] = [PAPER.get(n, (None,) * 3)[k] for n in table["paper_name"]]
        table[column] = table[column].astype(np.float64)
    return table


#: The paper's figures as table columns, in the order of :data:`PAPER`'s tuples.
PAPER_COLUMNS = ("paper_machines_used", "paper_frag_rate_pct", "paper_cross_GB")
#: (our measure, the paper's column it compares with, what) of the ratios to Titan.
RATIOS: tuple[tuple[str, str, str], ...] = (
    ("machines_used", "paper_machines_used", "machines used (arrival window)"),
    ("machine_days", "paper_machines_used", "machine-days (whole run)"),
    ("machine_frag_rate", "paper_frag_rate_pct", "machine fragmentation rate (arrival window)"),
    ("cross_GB_per_multi_job", "paper_cross_GB", "cross-machine traffic per multi-machine job"),
    ("cross_TB_total", "paper_cross_GB", "cross-machine traffic, total"),
)


def with_ratios(table: pd.DataFrame) -> pd.DataFrame:
    """Each measure over Titan's, beside the paper's ratio (the units and traces differ; ranks
    and ratios are what compares)."""
    out = table.copy()
    titan = out[out["placement"] == "titan"].iloc[0]
    for column in [r[0] for r in RATIOS] + list(PAPER_COLUMNS):
        base = float(titan[column])
        out[f"{column}_vs_titan"] = out[column] / base if base else np.nan
    return out


def _num(v: object, fmt: str) -> str:
    x = float(v)  # type: ignore[arg-type]
    return fmt.format(x) if np.isfinite(x) else "—"


def markdown(table: pd.DataFrame) -> str:
    """table.md: each measure and its ratio to Titan, the paper's ratio in brackets."""
    cols = [
        ("machines_used", "paper_machines_used", "{:.1f}", "machines used (window)"),
        ("machine_days", "paper_machines_used", "{:,.0f}", "machine-days"),
        ("machine_frag_rate", "paper_frag_rate_pct", "{:.1%}", "frag. rate (window)"),
        ("cross_GB_per_multi_job", "paper_cross_GB", "{:.2f}", "cross GB / multi-machine job-iter"),
        ("cross_TB_total", "paper_cross_GB", "{:,.0f}", "cross TB total"),
    ]
    head = "| placement | as | " + " | ".join(c[3] for c in cols) + " | multi-machine jobs |"
    lines = [head, "|---|---|" + "---|" * (len(cols) + 1)]
    for r in table.to_dict("records"):
        cells = []
        for ours, paper, fmt, _ in cols:
            ratio = _num(r[f"{ours}_vs_titan"], "{:.2f}")
            theirs = _num(r[f"{paper}_vs_titan"], "{:.2f}")
            cells.append(f"{_num(r[ours], fmt)} ({ratio}×; paper {theirs}×)")
        lines.append(
            f"| {r['placement']} | {r['paper_name']} | "
            + " | ".join(cells)
            + f" | {r['multi_machine_jobs']:,} |"
        )
    return "\n".join(lines) + "\n"


def figure(path: Path, table: pd.DataFrame) -> None:
    """One panel per measure: our ratio to Titan beside the paper's (only ratios compare: the
    paper's fragmentation is from another trace and its traffic unit is unstated)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(RATIOS), figsize=(3.6 * len(RATIOS), 3.4), squeeze=False)
    x = np.arange(len(table))
    for ax, (ours, paper, title) in zip(axes[0], RATIOS, strict=True):
        ax.bar(x - 0.2, table[f"{ours}_vs_titan"], 0.4, label="schedlab")
        ax.bar(x + 0.2, table[f"{paper}_vs_titan"].fillna(0), 0.4, label="paper (ICNP '24)")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xticks(x, table["placement"], rotation=30, ha="right", fontsize=7)
        ax.set_title(title + "\n(ratio to titan)", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_study(out: Path, table: pd.DataFrame) -> pd.DataFrame:
    """table.csv, table.md and titan_itp.png (ratios to Titan, ours beside the paper's)."""
    table = with_ratios(table)
    write_csv(out / "table.csv", table)
    (out / "table.md").write_text(markdown(table))
    figure(out / "titan_itp.png", table)
    return table
