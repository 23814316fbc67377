"""Titan on the Microsoft ITP trace (ICNP '24, Fig. 2a / 4b / 5a; docs/network.md "Titan on ITP").

The ten clusters of ``elasticflow-itp/simulation/`` merged by submission time (job ids prefixed
with their cluster) on the ``titan`` topology (64 racks × 8 machines × 8 GPUs, one 100 Gbps NIC
each), every job data-parallel with halving-doubling all-reduce of its model's gradient (models
from the trace), trace durations as compute time (a job runs at C/T of its trace speed),
random-phase sharing, ECMP, FIFO order without backfill. Each placement is one replay; the
metrics are those of spec §6: time-average machines used, machine fragmentation rate (idle GPUs
on non-idle machines / GPUs of non-idle machines), and cross-machine traffic in Titan's count
(each exchanging pair once per stage: half the sender-side bytes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.engines.replay import ReplayConfig, ReplayEngine, ReplayRecord
from schedlab.experiments.parallel import run_all
from schedlab.experiments.replay_network import network_model
from schedlab.experiments.titan_toy import paper_bars
from schedlab.model.cluster import Cluster
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import DONE, Allocation
from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import footprint
from schedlab.network.generators import parse_topology
from schedlab.network.replay_state import NetworkModel
from schedlab.network.routing import Routing
from schedlab.network.topology import cluster_for
from schedlab.perf.models import TraceDuration
from schedlab.policies.api import REPLAY
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.results import write_csv
from schedlab.traces.elasticflow import read_elasticflow_itp

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


class FirstPlacements:
    """Replay observer keeping each job's allocation (FIFO without preemption: its only one)."""

    def __init__(self) -> None:
        self.allocation: dict[int, Allocation] = {}

    def placed(self, now: float, job: int, allocation: Allocation) -> None:
        self.allocation.setdefault(job, allocation)

    def released(self, now: float, job: int, allocation: Allocation) -> None:
        pass

    def tick(self, now: float) -> None:
        pass

    def finish(self, end: float) -> None:
        pass


@dataclass(frozen=True)
class ItpRun:
    placement: str
    jobs: JobTable
    seed: int = 0


def _time_average(t: np.ndarray, v: np.ndarray) -> float:
    if len(t) < 2 or t[-1] <= t[0]:
        return float("nan")
    return float((v[:-1] * np.diff(t)).sum() / (t[-1] - t[0]))


def replay_itp(run: ItpRun) -> tuple[ReplayRecord, FirstPlacements]:
    """One placement over the merged trace; the record and every job's allocation."""
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
    seen = FirstPlacements()
    record = observed_replay(
        cluster, jobs, PolicyChoice("fifo", placement=run.placement), model, run.seed, seen
    )
    return record, seen


def observed_replay(
    cluster: Cluster,
    jobs: JobTable,
    choice: PolicyChoice,
    network: NetworkModel,
    seed: int,
    observer: object,
) -> ReplayRecord:
    """One replay of ``jobs`` under ``choice`` with a network, ``observer`` hearing every
    placement and release."""
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
    return engine.run()


def pair_traffic(record: ReplayRecord, seen: FirstPlacements) -> np.ndarray:
    """Per job, Titan's cross-machine count per iteration (bytes): half the sender-side bytes
    of its HD all-reduce on the allocation it ran on (0 on one machine)."""
    net = record.network
    assert net is not None
    out = np.zeros(len(record.jobs))
    topo = net.topology
    routing = Routing(ROUTING)
    for job, allocation in seen.allocation.items():
        if len({node for node, _ in allocation}) < 2:
            continue
        size = float(gradient_of(record, job))
        fp = footprint(CommSpec(COLLECTIVE, size), allocation, topo, routing, job)
        out[job] = fp.cross_host_bytes / 2
    return out


def gradient_of(record: ReplayRecord, job: int) -> float:
    """The job's gradient bytes, as the network model gave them (its trace model's size)."""
    from schedlab.network.collectives import gradient_bytes

    return gradient_bytes(str(record.jobs.model_name[job]))


def measure(run: ItpRun) -> dict[str, object]:
    """One row of the study's table."""
    began, cpu = time.perf_counter(), time.process_time()
    record, seen = replay_itp(run)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    net = record.network
    assert net is not None
    t = record.ts_time
    pairs = pair_traffic(record, seen)
    multi = np.array([len({n for n, _ in a}) > 1 for a in seen.allocation.values()])
    done = record.status == DONE
    jct = record.end_time - record.jobs.submit_time
    return {
        "placement": run.placement,
        "jobs": len(record.jobs),
        "completed": int(done.sum()),
        "machines_used": _time_average(t, net.ts_machines_used.astype(np.float64)),
        "machine_frag_rate": _time_average(t, net.ts_machine_frag_rate),
        "machine_frag_share": _time_average(t, net.ts_machine_frag_share),
        "multi_machine_jobs": int(multi.sum()),
        "cross_GB_per_iteration": float(pairs.mean()) / 1e9,
        "cross_GB_per_iteration_multi": float(pairs[pairs > 0].mean()) / 1e9
        if (pairs > 0).any()
        else 0.0,
        "cross_PB_total": float(np.nansum(net.cross_host_bytes)) / 2 / 1e15,
        "mean_jct_h": float(np.nanmean(np.where(done, jct, np.nan))) / 3600,
        "mean_wait_h": float(np.nanmean(record.first_start - record.jobs.submit_time)) / 3600,
        "net_slowdown": float(np.nanmean(net.net_slowdown)),
        "wall_s": wall,
        "cpu_s": cpu,  # the replay's CPU time in its worker (comparable on a shared machine)
    }


def run_study(
    shared: Path, quick: bool = False, workers: int = 2, limit: int | None = None
) -> pd.DataFrame:
    """Every placement of :data:`RUNS` over the merged trace (its first ``limit`` jobs if
    given, :data:`QUICK_JOBS` if ``quick``); one row each, with the paper's values."""
    jobs = merged_itp(itp_files(shared), QUICK_JOBS if quick else limit)
    rows = run_all(measure, [ItpRun(p, jobs) for p, _ in RUNS], workers)
    table = pd.DataFrame(rows)
    names = dict(RUNS)
    table.insert(1, "paper_name", [names[p] for p in table["placement"]])
    base = PAPER.get
    table["paper_machines_used"] = [base(n, (np.nan,) * 3)[0] for n in table["paper_name"]]
    table["paper_frag_rate_pct"] = [base(n, (np.nan,) * 3)[1] for n in table["paper_name"]]
    table["paper_cross_GB"] = [
        np.nan if base(n) is None or base(n)[2] is None else base(n)[2]  # type: ignore[index]
        for n in table["paper_name"]
    ]
    return table


def with_ratios(table: pd.DataFrame) -> pd.DataFrame:
    """Each measure over Titan's, beside the paper's ratio (the units differ; ranks and ratios
    are what compares)."""
    out = table.copy()
    titan = out[out["placement"] == "titan"].iloc[0]
    pairs = (
        ("machines_used", "paper_machines_used"),
        ("machine_frag_rate", "paper_frag_rate_pct"),
        ("cross_GB_per_iteration", "paper_cross_GB"),
    )
    for ours, paper in pairs:
        out[f"{ours}_vs_titan"] = out[ours] / titan[ours] if titan[ours] else np.nan
        out[f"{paper}_vs_titan"] = out[paper] / titan[paper]
    return out


def markdown(table: pd.DataFrame) -> str:
    """table.md: ours beside the paper's, with ratios to Titan."""
    head = (
        "| placement | as | machines used | paper | ratio (paper) | frag. rate % | paper "
        "| ratio (paper) | cross GB/iter | paper | ratio (paper) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n"
    )

    def num(v: float, fmt: str = "{:.1f}") -> str:
        return "—" if v is None or not np.isfinite(v) else fmt.format(v)

    lines = []
    for r in table.itertuples(index=False):
        lines.append(
            f"| {r.placement} | {r.paper_name} | {num(r.machines_used)} | "
            f"{num(r.paper_machines_used, '{:.0f}')} | {num(r.machines_used_vs_titan, '{:.2f}')} "
            f"({num(r.paper_machines_used_vs_titan, '{:.2f}')}) | "
            f"{num(100 * r.machine_frag_rate)} | {num(r.paper_frag_rate_pct)} | "
            f"{num(r.machine_frag_rate_vs_titan, '{:.2f}')} "
            f"({num(r.paper_frag_rate_pct_vs_titan, '{:.2f}')}) | "
            f"{num(r.cross_GB_per_iteration, '{:.3f}')} | {num(r.paper_cross_GB, '{:.2f}')} | "
            f"{num(r.cross_GB_per_iteration_vs_titan, '{:.2f}')} "
            f"({num(r.paper_cross_GB_vs_titan, '{:.2f}')}) |"
        )
    return head + "\n".join(lines) + "\n"


def write_study(out: Path, table: pd.DataFrame) -> pd.DataFrame:
    """table.csv, table.md and titan_itp.png (three panels, ours beside the paper's) in ``out``."""
    table = with_ratios(table)
    write_csv(out / "table.csv", table)
    (out / "table.md").write_text(markdown(table))
    panels = [
        ("machines_used", "paper_machines_used", 1.0, "average machines used"),
        ("machine_frag_rate", "paper_frag_rate_pct", 100.0, "machine fragmentation rate (%)"),
        ("cross_GB_per_iteration", "paper_cross_GB", 1.0, "cross-machine GB per job-iteration"),
    ]
    paper_bars(out / "titan_itp.png", table, "placement", panels)
    return table
