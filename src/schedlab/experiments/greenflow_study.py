"""The GreenFlow study: average JCT against carbon for carbon-agnostic, lcs, carbon-scaler and
greenflow at several budgets, on the ElasticFlow 195-job trace and a synthetic deadline trace.

Every run uses the ``measured`` power model (so greenflow can lower power limits) and the
``synth:gb2020`` carbon series. The carbon-agnostic baseline is FIFO at the requested sizes and
the top power limit; greenflow's budgets are fractions of that baseline's job carbon. Carbon is
compared as the jobs' carbon (GPU power × PUE × intensity while they hold GPUs), the quantity the
budget limits; cluster carbon (idle GPUs and CPU sockets included) is reported beside it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.energy.replay import EnergySpec
from schedlab.experiments.deadline_study import DeadlineRun, jobs_for
from schedlab.experiments.parallel import run_all
from schedlab.experiments.replay_run import (
    ReplaySpec,
    jobs_frame,
    replay_summary,
    run_replay,
    timeseries_frame,
)
from schedlab.traces.cluster_spec import parse_cluster_spec

#: Fractions of the carbon-agnostic run's job carbon given to greenflow as budgets.
BUDGETS = (0.4, 0.55, 0.7, 0.85, 1.0)
BASELINES = ("fifo", "lcs", "carbon-scaler")
CI = "synth:gb2020"
POWER_MODEL = "measured"


@dataclass(frozen=True)
class StudyRun:
    """One policy (and budget) on one workload."""

    workload: str  # label
    trace: str  # path or synthetic:SEED[:JOBS[:RUNTIMES]]
    cluster: str
    throughputs: str
    policy: str
    params: dict[str, str] = field(default_factory=dict)
    budget: float | None = None  # fraction of the agnostic run's job carbon


def workloads(shared: Path) -> list[tuple[str, str, str, str]]:
    """(label, trace, cluster, throughputs) of the study's two workloads."""
    a100 = str(shared / "traces" / "elasticflow-artifact" / "throughputs_A100")
    trace = str(shared / "traces" / "elasticflow-itp" / "simulation" / "195job.csv")
    return [
        ("195job", trace, "16x8:A100", a100),
        ("synthetic-0", "synthetic:0:200", "16x8:A100", a100),
    ]


def run_one(run: StudyRun, agnostic_kg: float | None = None) -> dict[str, object]:
    """Replay one study run and return its row."""
    jobs = jobs_for(
        DeadlineRun(
            "greenflow", run.trace, run.workload, run.cluster, run.policy, 240.0, run.throughputs
        )
    )
    params = dict(run.params)
    if run.budget is not None and agnostic_kg is not None:
        params["budget_kg"] = repr(run.budget * agnostic_kg)
    spec = ReplaySpec(
        cluster=run.cluster,
        trace=run.trace,
        policy=run.policy,
        throughputs=run.throughputs,
        params=params,
        energy=EnergySpec(power_model=POWER_MODEL, ci=CI),
    )
    started = time.perf_counter()
    record = run_replay(spec, parse_cluster_spec(run.cluster), jobs)
    frame = jobs_frame(record)
    summary = replay_summary(spec, record, frame, timeseries_frame(record))
    energy = summary["energy"]
    label = "carbon-agnostic" if run.policy == "fifo" else run.policy
    return {
        "workload": run.workload,
        "policy": label,
        "budget": run.budget,
        "jobs": summary["jobs"],
        "completed": summary["completed"],
        "avg_jct_h": (summary["avg_jct"] or np.nan) / 3600,
        "job_carbon_kg": energy["jobs_carbon_kg"],  # type: ignore[index]
        "cluster_carbon_kg": energy["carbon_kg"],  # type: ignore[index]
        "energy_kwh": energy["energy_kwh"],  # type: ignore[index]
        "mean_power_limit": float(np.nanmean(frame["power_limit"])),
        "wall_seconds": round(time.perf_counter() - started, 2),
    }


def _baseline_task(run: StudyRun) -> dict[str, object]:
    return run_one(run)


def _budget_task(args: tuple[StudyRun, float]) -> dict[str, object]:
    return run_one(*args)


def run_study(
    shared: Path,
    workers: int = 2,
    budgets: tuple[float, ...] = BUDGETS,
    on_done: Callable[[dict[str, object]], None] | None = None,
) -> pd.DataFrame:
    """The baselines first (the agnostic one sets the budgets), then greenflow per budget."""
    rows: list[dict[str, object]] = []
    base = [StudyRun(w, t, c, th, p) for w, t, c, th in workloads(shared) for p in BASELINES]
    base += [StudyRun(w, t, c, th, "greenflow") for w, t, c, th in workloads(shared)]
    rows += run_all(_baseline_task, base, workers, on_done=on_done)
    agnostic = {
        r["workload"]: float(r["job_carbon_kg"]) for r in rows if r["policy"] == "carbon-agnostic"
    }
    tasks = [
        (StudyRun(w, t, c, th, "greenflow", budget=f), agnostic[w])
        for w, t, c, th in workloads(shared)
        for f in budgets
    ]
    rows += run_all(_budget_task, tasks, workers, on_done=on_done)
    return pd.DataFrame(rows)


def jct_at_same_carbon(table: pd.DataFrame) -> pd.DataFrame:
    """For each baseline, greenflow's average JCT at the baseline's job carbon (linear
    interpolation along greenflow's budget curve; blank outside it) and the ratio."""
    out = []
    for workload, group in table.groupby("workload", sort=False):
        curve = group[group["budget"].notna() & (group["policy"] == "greenflow")]
        curve = curve[curve["completed"] == curve["jobs"]].sort_values("job_carbon_kg")
        for _, row in group[group["budget"].isna()].iterrows():
            c = float(row["job_carbon_kg"])
            xs = curve["job_carbon_kg"].to_numpy(dtype=np.float64)
            ys = curve["avg_jct_h"].to_numpy(dtype=np.float64)
            inside = len(xs) >= 2 and xs[0] <= c <= xs[-1]
            gf = float(np.interp(c, xs, ys)) if inside else np.nan
            out.append(
                {
                    "workload": workload,
                    "policy": row["policy"],
                    "job_carbon_kg": c,
                    "avg_jct_h": row["avg_jct_h"],
                    "greenflow_avg_jct_h": gf,
                    "jct_ratio": float(row["avg_jct_h"]) / gf if gf > 0 else np.nan,
                }
            )
    return pd.DataFrame(out)
