"""The GreenFlow study: average JCT against carbon for carbon-agnostic, lcs, carbon-scaler and
greenflow at several budgets, on the ElasticFlow 195-job trace and a synthetic deadline trace.

Every run uses the ``measured`` power model (so greenflow can lower power limits) and the
``synth:gb2020`` carbon series. Workloads: the 195-job trace and a 200-job synthetic trace on
16 × 8 A100 with the artifact's A100 tables (power-limit curves: Zeus's A40, which the A100 maps
to), and the synthetic trace on 16 × 8 V100 with schedlab's builtin scaling model (Zeus's V100
curves). The carbon-agnostic baseline is FIFO at the requested sizes and the top power limit;
greenflow's budgets are fractions of that baseline's job carbon. Carbon is compared as the jobs'
carbon (GPU power × PUE × intensity while they hold GPUs), the quantity the budget limits;
cluster carbon (idle GPUs and CPU sockets included) is reported beside it. Unfinished jobs are
counted, and the mean JCT over all jobs counts each unfinished one as running to the end of the
run (a lower bound, marked ≥) beside the mean over the finished ones.
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
from schedlab.experiments.live_progress import reporter
from schedlab.experiments.parallel import run_all
from schedlab.experiments.replay_run import (
    ReplaySpec,
    jobs_frame,
    replay_summary,
    run_replay,
    timeseries_frame,
)
from schedlab.reproduce.checks import Reproduction, at_most, direction, order, reported
from schedlab.reproduce.context import StudyContext
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


def workloads(shared: Path, quick: bool = False) -> list[tuple[str, str, str, str]]:
    """(label, trace, cluster, throughputs) of the study's workloads."""
    a100 = str(shared / "traces" / "elasticflow-artifact" / "throughputs_A100")
    trace = str(shared / "traces" / "elasticflow-itp" / "simulation" / "195job.csv")
    if quick:
        return [("synthetic-quick", "synthetic:0:40", "4x8:A100", a100)]
    return [
        ("195job", trace, "16x8:A100", a100),
        ("synthetic-0", "synthetic:0:200", "16x8:A100", a100),
        ("synthetic-0 V100", "synthetic:0:200", "16x8:V100", "builtin"),
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
    label = f"greenflow/{run.workload}/{run.policy}" + (f"@{run.budget}" if run.budget else "")
    record = run_replay(spec, parse_cluster_spec(run.cluster), jobs, progress=reporter(label))
    frame = jobs_frame(record)
    summary = replay_summary(spec, record, frame, timeseries_frame(record))
    energy = summary["energy"]
    label = "carbon-agnostic" if run.policy == "fifo" else run.policy
    end = float(np.nanmax(record.ts_time)) if len(record.ts_time) else 0.0
    done = np.isfinite(record.end_time)
    upto = np.where(done, record.end_time, end) - record.jobs.submit_time
    return {
        "workload": run.workload,
        "policy": label,
        "budget": run.budget,
        "budget_kg": (run.budget * agnostic_kg) if run.budget and agnostic_kg else np.nan,
        "jobs": summary["jobs"],
        "completed": summary["completed"],
        "unfinished": int(summary["jobs"]) - int(summary["completed"]),
        "avg_jct_h": (summary["avg_jct"] or np.nan) / 3600,
        # unfinished jobs counted until the end of the run: a lower bound on the mean JCT
        "avg_jct_all_h": float(upto.mean()) / 3600 if len(upto) else np.nan,
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
    mapper: Callable[..., list[dict[str, object]]] | None = None,
    quick: bool = False,
) -> pd.DataFrame:
    """The baselines first (the agnostic one sets the budgets), then greenflow per budget;
    ``mapper(fn, tasks, what)`` runs each stage (default: :func:`run_all` on ``workers``)."""

    def run(fn: Callable, tasks: list, what: str) -> list[dict[str, object]]:
        if mapper is not None:
            return mapper(fn, tasks, what)
        return run_all(fn, tasks, workers)

    loads = workloads(shared, quick)
    base = [StudyRun(w, t, c, th, p) for w, t, c, th in loads for p in BASELINES]
    base += [StudyRun(w, t, c, th, "greenflow") for w, t, c, th in loads]
    rows = run(_baseline_task, base, f"{len(base)} baseline runs")
    agnostic = {
        r["workload"]: float(r["job_carbon_kg"]) for r in rows if r["policy"] == "carbon-agnostic"
    }
    tasks = [
        (StudyRun(w, t, c, th, "greenflow", budget=f), agnostic[w])
        for w, t, c, th in loads
        for f in budgets
    ]
    rows += run(_budget_task, tasks, f"{len(tasks)} runs under a budget")
    return pd.DataFrame(rows)


def jct_at_same_carbon(table: pd.DataFrame) -> pd.DataFrame:
    """For each baseline, greenflow's average JCT at the baseline's job carbon and the ratio.

    Linear interpolation along greenflow's budget curve (its runs that finish every job). A
    run under a budget spends at most the budget, so the run whose budget is the baseline's
    carbon lands just below it, past the curve's end: when the baseline spent more than every
    point of the curve, greenflow's JCT is that of the curve's last point — greenflow with no
    more carbon than the baseline (``greenflow_job_carbon_kg`` says how much). Below the curve
    (no budget low enough finished everything): blank.
    """
    out = []
    for workload, group in table.groupby("workload", sort=False):
        curve = group[group["budget"].notna() & (group["policy"] == "greenflow")]
        curve = curve[curve["completed"] == curve["jobs"]].sort_values("job_carbon_kg")
        xs = curve["job_carbon_kg"].to_numpy(dtype=np.float64)
        ys = curve["avg_jct_h"].to_numpy(dtype=np.float64)
        for _, row in group[group["budget"].isna()].iterrows():
            c = float(row["job_carbon_kg"])
            if len(xs) and c >= xs[-1]:
                gf, at = float(ys[-1]), float(xs[-1])
            elif len(xs) >= 2 and xs[0] <= c:
                gf, at = float(np.interp(c, xs, ys)), c
            else:
                gf, at = np.nan, np.nan
            out.append(
                {
                    "workload": workload,
                    "policy": row["policy"],
                    "job_carbon_kg": c,
                    "avg_jct_h": row["avg_jct_h"],
                    "greenflow_job_carbon_kg": at,
                    "greenflow_avg_jct_h": gf,
                    "jct_ratio": float(row["avg_jct_h"]) / gf if gf > 0 else np.nan,
                }
            )
    return pd.DataFrame(out)


# -- schedlab reproduce greenflow -----------------------------------------------------------------

#: The published direction [paper]: GreenFlow up to 2.15× lower mean JCT at equal carbon.
PUBLISHED_JCT_RATIO = 2.15
QUICK_BUDGETS = (0.7, 1.0)


def figure(table: pd.DataFrame, path: Path) -> None:
    """Average JCT against job carbon per workload: greenflow's budget curve and the others."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loads = list(dict.fromkeys(table["workload"]))
    fig, axes = plt.subplots(1, len(loads), figsize=(5.2 * len(loads), 3.8), squeeze=False)
    for ax, workload in zip(axes[0], loads, strict=True):
        group = table[table["workload"] == workload]
        curve = group[group["budget"].notna()].sort_values("job_carbon_kg")
        ax.plot(curve["job_carbon_kg"], curve["avg_jct_all_h"], "o-", label="greenflow (budgets)")
        for _, row in group[group["budget"].isna()].iterrows():
            ax.scatter(row["job_carbon_kg"], row["avg_jct_all_h"], marker="s", zorder=3)
            ax.annotate(row["policy"], (row["job_carbon_kg"], row["avg_jct_all_h"]), fontsize=8)
        ax.set_title(workload)
        ax.set_xlabel("job carbon (kg CO2e)")
        ax.set_ylabel("average JCT, unfinished to the end (h)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _cells(table: pd.DataFrame) -> pd.DataFrame:
    """The README's columns: done / jobs, JCT over all (≥ when some are unfinished)."""
    out = pd.DataFrame(
        {
            "workload": table["workload"],
            "policy": table["policy"],
            "budget": [("—" if pd.isna(b) else f"{b:.2f}") for b in table["budget"]],
            "done": [f"{c} / {j}" for c, j in zip(table["completed"], table["jobs"], strict=True)],
            "avg JCT all (h)": [
                ("≥ " if u else "") + f"{v:.2f}"
                for u, v in zip(table["unfinished"], table["avg_jct_all_h"], strict=True)
            ],
            "avg JCT done (h)": [f"{v:.2f}" for v in table["avg_jct_h"]],
            "job carbon (kg)": [f"{v:,.1f}" for v in table["job_carbon_kg"]],
            "cluster carbon (kg)": [f"{v:,.0f}" for v in table["cluster_carbon_kg"]],
            "mean limit (× top)": [f"{v:.2f}" for v in table["mean_power_limit"]],
        }
    )
    return out


def reproduce(ctx: StudyContext) -> Reproduction:
    from schedlab.report.deadline_figures import markdown_table

    result = Reproduction("greenflow", "GreenFlow under a carbon budget", "TPDS 36(2), 2025")
    budgets = QUICK_BUDGETS if ctx.quick else BUDGETS
    table = run_study(ctx.shared, ctx.workers, budgets, mapper=ctx.map, quick=ctx.quick)
    table.to_csv(ctx.out / "table.csv", index=False)
    same = jct_at_same_carbon(table)
    same.to_csv(ctx.out / "same_carbon.csv", index=False)
    figure(table, ctx.out / "jct_vs_carbon.png")
    for r in table[table["budget"].notna()].to_dict("records"):
        result.checks.append(
            at_most(
                f"{r['workload']}, budget {r['budget']:.2f}: job carbon (kg) within it",
                float(r["job_carbon_kg"]),
                float(r["budget_kg"]) * (1 + 1e-6),
                fmt="{:,.2f}",
            )
        )
    for r in same.to_dict("records"):
        if r["policy"] != "carbon-agnostic":
            continue
        result.checks.append(
            direction(
                f"{r['workload']}: FIFO's JCT / greenflow's at ≤ FIFO's carbon, above 1",
                float(r["jct_ratio"]) - 1.0,
                f"up to {PUBLISHED_JCT_RATIO} − 1",
                expect=1.0,
                fmt="{:+.2f}",
            )
        )
        result.checks.append(
            reported(
                f"{r['workload']}: FIFO's JCT / greenflow's at ≤ FIFO's carbon",
                float(r["jct_ratio"]),
                PUBLISHED_JCT_RATIO,
            )
        )
    for workload, group in table[table["budget"].isna()].groupby("workload", sort=False):
        carbon = dict(zip(group["policy"], group["job_carbon_kg"].astype(float), strict=True))
        expected = {"carbon-agnostic": 3.0, "lcs": 2.0, "carbon-scaler": 1.0}
        result.checks.append(
            order(f"{workload}: job carbon, most first (spec's expected order)", carbon, expected)
        )
    result.tables.append(("Runs", markdown_table(_cells(table))))
    result.tables.append(
        (
            "Greenflow's mean JCT at each baseline's job carbon (interpolated along its budgets "
            "that finish every job; past their end, the last: no more carbon than the baseline)",
            markdown_table(same, floats="{:.2f}"),
        )
    )
    return result
