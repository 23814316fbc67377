"""One federated replay: read the file and trace, build every site, run the manager, and turn
what it and the engines recorded into ``jobs.csv``, ``sites.csv`` and ``summary.json``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from schedlab.energy.meter import J_PER_KWH
from schedlab.energy.spec import EnergySpec
from schedlab.engines.replay import ReplayConfig, ReplayRecord
from schedlab.errors import InputError
from schedlab.experiments.replay_run import ReplaySpec, check_runnable, jobs_frame, load_perf
from schedlab.federation.config import Federation, check_settings_read, read_federation
from schedlab.federation.sim import Manager, Outcome, job_data
from schedlab.federation.site import Site, build_site, describe
from schedlab.metrics.ftf import isolated_jct
from schedlab.model.jobs import JobTable

INF = math.inf
#: The columns ``jobs.csv`` gains under ``--federation``.
FEDERATION_JOB_COLUMNS = (
    "site", "data_site", "data_gb", "transfer_s", "queue_s", "egress_gb", "egress_usd",
    "compute_usd", "nominated", "moves", "hold_gpu_s",
)  # fmt: skip


@dataclass(frozen=True)
class FederationOptions:
    """The replay options that apply to every site."""

    trace: str
    trace_format: str | None = None
    seed: int = 0
    throughputs: str | None = None
    speed: dict[int, float] | None = None
    restart_overhead: float = 0.0
    until: float | None = None
    power_model: str = "binary"
    gpu_power: str = ""
    node_base_w: float = 0.0


@dataclass
class FederationResult:
    fed: Federation
    sites: list[Site]
    records: list[ReplayRecord]
    outcome: Outcome
    jobs: JobTable
    data_site: list[str]
    data_gb: np.ndarray


def run_federation(
    federation: str | Path | Federation, options: FederationOptions, jobs: JobTable | None = None
) -> FederationResult:
    if not isinstance(federation, Federation):
        federation = read_federation(federation)
        check_settings_read(federation, [federation.dispatcher])
    fed = federation
    if options.power_model == "measured":
        raise InputError("'--power-model measured' does not apply to a federation (binary, linear)")
    if jobs is None:
        from schedlab.traces.formats import read_jobs

        jobs = read_jobs(options.trace, options.trace_format).jobs
    jobs = jobs.sorted_by_submit()
    spec = ReplaySpec(
        cluster="", trace=options.trace, policy="fifo", throughputs=options.throughputs,
        speed=options.speed or {},
    )  # fmt: skip
    perf = load_perf(spec)
    check_runnable(jobs, perf, options.trace)
    data = job_data(fed, jobs)
    config = ReplayConfig(seed=options.seed, restart_overhead=options.restart_overhead)
    energy = EnergySpec(
        power_model=options.power_model, gpu_power=options.gpu_power,
        node_base_w=options.node_base_w,
    )  # fmt: skip
    sites = [build_site(i, p, fed, jobs, perf, config, energy) for i, p in enumerate(fed.sites)]
    until = options.until if options.until is not None else INF
    manager = Manager(fed, jobs, sites, data, until)
    end = manager.run()
    records = []
    for s in sites:
        record = s.run.end(end)
        record.observer = s.observer.meter  # the energy columns read the meter
        record.isolated_jct = _isolated_at_site(jobs, manager.out.site, s)
        records.append(record)
    if fed.wan_kwh_per_gb > 0:
        ends = np.stack([r.end_time for r in records])
        site_of = np.maximum(manager.out.site, 0)
        manager.output_wan_energy(ends[site_of, np.arange(len(jobs))])
    _check_carbon_span(fed, sites, records, manager)
    return FederationResult(fed, sites, records, manager.out, jobs, data.data_site, data.data_gb)


def _isolated_at_site(jobs: JobTable, site_of: np.ndarray, site: Site) -> np.ndarray:
    """Finish-time fairness's reference for the jobs a site ran: each job's JCT under the fluid
    isolated share of that site's cluster among the jobs dispatched there (from their submit
    times, as their JCT is counted); NaN for the jobs of other sites."""
    out = np.full(len(jobs), np.nan)
    mine = np.flatnonzero(site_of == site.index)
    if len(mine):
        out[mine] = isolated_jct(jobs.take(mine), site.cluster, site.perf)
    return out


def _check_carbon_span(
    fed: Federation, sites: list[Site], records: list[ReplayRecord], manager: Manager
) -> None:
    """A site's carbon series must cover the run there (and what dispatch asked of it)."""
    for s, record in zip(sites, records, strict=True):
        ci = s.ci
        if ci.wrap:
            continue
        last = float(record.ts_time[-1]) if len(record.ts_time) else 0.0
        ends = record.end_time[np.isfinite(record.end_time)]
        last = max(last, float(ends.max()) if len(ends) else 0.0, manager.ci_until[s.index])
        first, stop = float(ci.times[0]), float(ci.end)
        if first > 0 or last > stop:
            raise InputError(
                f"{fed.path}: [[site]] {s.name!r}, key 'ci': the carbon series covers "
                f"{first + fed.ci_offset_s:.0f}–{stop + fed.ci_offset_s:.0f} s of its own time, "
                f"but the run needs {fed.ci_offset_s:.0f}–{last + fed.ci_offset_s:.0f} s "
                "(ci_offset_s shifts it; nothing is extrapolated)"
            )


def federation_jobs(result: FederationResult) -> pd.DataFrame:
    """Every job's row from the site that ran it, with the federation's columns."""
    out = result.outcome
    frames = [jobs_frame(r) for r in result.records]
    columns = list(frames[0].columns)
    for f in frames[1:]:
        columns += [c for c in f.columns if c not in columns]
    where = np.where(out.site >= 0, out.site, 0)
    # each job's row from its site's table (a column only some sites have is blank elsewhere)
    parts = [f.iloc[np.flatnonzero(where == k)] for k, f in enumerate(frames)]
    frame = pd.concat(parts).sort_index().reindex(columns=columns).reset_index(drop=True)
    unplaced = out.site < 0
    if unplaced.any():
        frame.loc[unplaced, "status"] = "unplaceable"
    names = [s.name for s in result.sites]
    # a job's GPU time is billed at every site it held GPUs at (one, unless it moved running)
    cost = np.stack([s.observer.compute_usd for s in result.sites]).sum(axis=0)
    start = frame["start_time"].to_numpy(dtype=np.float64)
    queue_s = start - out.arrived
    moved = np.flatnonzero(out.moves > 0)
    if len(moved):
        _add_earlier_sites(frame, frames, moved)
        queue_s[moved] = out.wait_before[moved] + (out.visit_start[moved] - out.arrived[moved])
    frame["site"] = [names[k] if k >= 0 else "" for k in out.site.tolist()]
    frame["data_site"] = result.data_site
    frame["data_gb"] = result.data_gb
    frame["transfer_s"] = out.transfer_s
    frame["queue_s"] = queue_s
    frame["egress_gb"] = out.egress_gb
    frame["egress_usd"] = out.egress_usd
    frame["compute_usd"] = np.where(unplaced, 0.0, cost)
    frame["nominated"] = out.nominated
    frame["moves"] = out.moves
    if result.fed.wan_kwh_per_gb > 0:
        frame["wan_kwh"] = out.wan_kwh
        frame["wan_carbon_kg"] = out.wan_g / 1000.0
    frame["hold_gpu_s"] = out.hold_gpu_s
    return frame


#: Per-job columns a moved job adds up over the sites it ran at.
ADDED_OVER_SITES = ("gpu_seconds", "energy_kwh", "carbon_kg", "preemptions")


def _add_earlier_sites(frame: pd.DataFrame, frames: list[pd.DataFrame], moved: np.ndarray) -> None:
    """The rows of moved jobs (taken from the site they ended at) made whole: their first start
    anywhere, and the GPU time, energy, carbon and preemptions of every site they ran at."""
    starts = np.stack([f["start_time"].to_numpy(dtype=np.float64)[moved] for f in frames])
    earliest = np.where(np.isnan(starts), np.inf, starts).min(axis=0)
    first = np.where(np.isinf(earliest), np.nan, earliest)
    frame.loc[moved, "start_time"] = first
    frame.loc[moved, "queue_delay"] = first - frame["submit_time"].to_numpy(dtype=np.float64)[moved]
    for column in ADDED_OVER_SITES:
        if column in frame:
            total = sum(f[column].to_numpy()[moved] for f in frames if column in f)
            frame.loc[moved, column] = total


def _stats(values: pd.Series) -> dict[str, float | None]:
    v = values.dropna().to_numpy(dtype=np.float64)
    if not len(v):
        return {"mean": None, "p50": None, "p95": None, "p99": None}
    return {
        "mean": float(v.mean()),
        "p50": float(np.percentile(v, 50)),
        "p95": float(np.percentile(v, 95)),
        "p99": float(np.percentile(v, 99)),
    }


def _block(frame: pd.DataFrame, gpus: int, span: float) -> dict[str, Any]:
    done = frame[frame["status"] == "completed"]
    gpu_s = float(frame["gpu_seconds"].sum())
    block = {
        "jobs": len(frame),
        "completed": len(done),
        "gpu_hours": gpu_s / 3600.0,
        "utilisation": gpu_s / (gpus * span) if gpus and span > 0 else None,
        "jct": _stats(done["jct"]),
        "queue_s": _stats(done["queue_s"]),
        "transfer_s": float(frame["transfer_s"].sum()),
        "egress_gb": float(frame["egress_gb"].sum()),
        "egress_usd": float(frame["egress_usd"].sum()),
        "compute_usd": float(frame["compute_usd"].sum()),
        "energy_kwh": float(frame["energy_kwh"].sum()) if "energy_kwh" in frame else None,
        "carbon_kg": float(frame["carbon_kg"].sum()) if "carbon_kg" in frame else None,
    }
    if "wan_kwh" in frame:  # the WAN's energy and carbon count in the totals
        wan_kwh, wan_kg = float(frame["wan_kwh"].sum()), float(frame["wan_carbon_kg"].sum())
        block["wan_kwh"], block["wan_carbon_kg"] = wan_kwh, wan_kg
        block["energy_kwh"] = (block["energy_kwh"] or 0.0) + wan_kwh
        if block["carbon_kg"] is not None:
            block["carbon_kg"] += wan_kg
    return block


def federation_summary(result: FederationResult, frame: pd.DataFrame) -> dict[str, Any]:
    fed, out = result.fed, result.outcome
    submit = frame["submit_time"].to_numpy(dtype=np.float64)
    ends = frame["end_time"].to_numpy(dtype=np.float64)
    span = (float(np.nanmax(ends)) - float(submit.min())) if np.isfinite(ends).any() else 0.0
    per_site = {}
    for s in result.sites:
        rows = frame[frame["site"] == s.name]
        block = _block(rows, s.cluster.total_gpus, span)
        meter = s.observer.meter
        totals = meter.totals()
        block["site_energy_kwh"] = totals.facility_j / J_PER_KWH
        block["site_carbon_kg"] = totals.carbon_g / 1000.0
        block.update(describe(s))
        if fed.reconsider_s > 0:
            block["moves_in"] = sum(1 for m in out.move_log if m[3] == s.index)
            block["moves_out"] = sum(1 for m in out.move_log if m[2] == s.index)
        per_site[s.name] = block
    total_gpus = sum(s.cluster.total_gpus for s in result.sites)
    glob = _block(frame[frame["site"] != ""], total_gpus, span)
    glob["unplaceable"] = int(out.unplaceable)
    done = frame["status"] == "completed"
    kwh = frame.loc[done, "energy_kwh"].sum() if "energy_kwh" in frame else 0.0
    kg = frame.loc[done, "carbon_kg"].sum() if "carbon_kg" in frame else 0.0
    if "wan_kwh" in frame:  # the WAN's energy and carbon of the completed jobs too
        kwh += frame.loc[done, "wan_kwh"].sum()
        kg += frame.loc[done, "wan_carbon_kg"].sum()
    glob["carbon_g_per_kwh"] = (
        float(kg * 1000.0 / kwh) if "carbon_kg" in frame and kwh > 0 else None
    )
    moves = {}
    if fed.reconsider_s > 0:
        glob["moves"] = len(out.move_log)
        glob["running_moves"] = sum(1 for m in out.move_log if m[4])
        moves = {
            "reconsider": f"periodic:{fed.reconsider_s:g}",
            "move_running": fed.move_running,
            "move_margin": fed.move_margin,
        }
    return {
        "dispatcher": fed.dispatcher,
        "weights": dict(zip(("time", "cost", "carbon"), fed.weights, strict=True)),
        "runtime_estimate": fed.runtime_estimate,
        "stage_in": fed.stage_in,
        "wan_sharing": fed.wan_sharing,
        **moves,
        "origin": fed.origin,
        "defaults": {
            "data_site": fed.default_data_site,
            "data_gb": (
                f"per_gpu:{fed.default_data_gb:g}" if fed.data_gb_per_gpu else fed.default_data_gb
            ),
        },
        "global": glob,
        "sites": per_site,
        "wall_seconds": round(out.wall_seconds, 3),
    }


def headline(summary: dict[str, Any]) -> dict[str, Any]:
    """One row of a run's global figures and each site's share of the GPU-hours (sweeps and
    the study tabulate runs by it)."""
    g = summary["global"]
    gpu_h = {name: b["gpu_hours"] for name, b in summary["sites"].items()}
    total = sum(gpu_h.values()) or 1.0
    return {
        "jobs": g["jobs"],
        "completed": g["completed"],
        "unplaceable": g["unplaceable"],
        "mean_jct_s": g["jct"]["mean"],
        "p99_jct_s": g["jct"]["p99"],
        "mean_queue_s": g["queue_s"]["mean"],
        "transfer_s": g["transfer_s"],
        "utilisation": g["utilisation"],
        "compute_usd": g["compute_usd"],
        "egress_usd": g["egress_usd"],
        "carbon_kg": g["carbon_kg"],
        "carbon_g_per_kwh": g["carbon_g_per_kwh"],
        **{f"share_{k}": v / total for k, v in gpu_h.items()},
    }


def sites_frame(summary: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for name, b in summary["sites"].items():
        rows.append(
            {
                "site": name,
                "gpus": b["gpus"],
                "jobs": b["jobs"],
                "completed": b["completed"],
                "gpu_hours": b["gpu_hours"],
                "utilisation": b["utilisation"],
                **{f"jct_{k}": v for k, v in b["jct"].items()},
                **{f"queue_{k}": v for k, v in b["queue_s"].items()},
                "transfer_s": b["transfer_s"],
                "egress_gb": b["egress_gb"],
                "egress_usd": b["egress_usd"],
                "compute_usd": b["compute_usd"],
                "energy_kwh": b["energy_kwh"],
                "carbon_kg": b["carbon_kg"],
                **{
                    k: b[k] for k in ("wan_kwh", "wan_carbon_kg", "moves_in", "moves_out") if k in b
                },
            }
        )
    return pd.DataFrame(rows)


def write_federation(out: Path, result: FederationResult, config: dict[str, Any]) -> dict:
    from schedlab import __version__
    from schedlab.experiments.replay_run import jobs_for_csv
    from schedlab.metrics.replay_metrics import json_ready
    from schedlab.results import write_config, write_csv, write_json

    frame = federation_jobs(result)
    summary = federation_summary(result, frame)
    write_csv(out / "jobs.csv", jobs_for_csv(frame))
    write_csv(out / "sites.csv", sites_frame(summary))
    series = []
    for s, record in zip(result.sites, result.records, strict=True):
        from schedlab.experiments.replay_run import timeseries_frame

        ts = timeseries_frame(record)
        ts.insert(0, "site", s.name)
        series.append(ts)
    write_csv(out / "timeseries.csv", pd.concat(series, ignore_index=True))
    data = json_ready({"trace": Path(config["trace"]).stem, "jobs": len(frame),
                       "federation": summary})  # fmt: skip
    write_json(out / "summary.json", data)
    write_config(out / "config.toml", config, f"schedlab {__version__} replay --federation")
    return data
