"""Tenancy in ``schedlab replay`` and sweeps: the options, the wrapping of the run's scheduler,
and the files a run with tenancy writes.

``--tenancy none`` (the default) changes nothing: no wrapping, no file, no config entry. With a
share policy, the run's ordering scheduler is wrapped in a :class:`TenantScheduler` and the run
folder gets ``tenancy_timeline.parquet`` (every queue's allocation, fair share, entitlement,
demand, deserved quota and usage over time), ``tenancy_queues.csv`` (one line per queue),
``tenancy_reclaims.csv``, ``tenancy_summary.json`` (scalars for sweeps) and the figure
``figures/tenancy.png`` / ``.svg``.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.errors import InputError
from schedlab.model.cluster import Cluster
from schedlab.model.jobs import JobTable
from schedlab.policies.ordering.queue_scheduler import QueueScheduler
from schedlab.policies.scheduler import SchedulingPolicy
from schedlab.tenancy.config import TenancyConfig, read_queue_file
from schedlab.tenancy.recorder import TenancyRecorder
from schedlab.tenancy.registry import (
    NONE,
    check_share_policy,
    make_share_policy,
    share_policy_names,
)
from schedlab.tenancy.scheduler import TenantScheduler
from schedlab.tenancy.spec import CONFIG_KEYS, TenancySpec, config_entries, spec_from  # noqa: F401
from schedlab.tenancy.tenants import DEFAULT_KEYS, Tenancy, resolve, trace_attributes

if TYPE_CHECKING:
    import pandas as pd


def config_of(spec: TenancySpec) -> TenancyConfig:
    """The queue file (if any) with the command line's overrides."""
    config = read_queue_file(spec.queues) if spec.queues is not None else TenancyConfig()
    policy = spec.policy if spec.policy != NONE else config.policy
    if policy == NONE:
        raise InputError(
            f"{config.source}: no share policy: set [tenancy] policy or pass '--tenancy'"
        )
    check_share_policy(policy)
    check_settings_tables(config)
    config = replace(
        config,
        policy=policy,
        tenant_key=spec.tenant_key or config.tenant_key,
        derive_deserved=spec.derive_deserved or config.derive_deserved,
        unknown_tenant=spec.unknown_tenant or config.unknown_tenant,
    )
    declared = {q.path for q in config.queues}
    if config.unknown_tenant == "default-queue" and config.default_queue not in declared:
        raise InputError(
            f"{config.source}: '--unknown-tenant default-queue' needs a queue file whose "
            f"[tenancy] field 'default_queue' names one of its queues (got "
            f"{config.default_queue!r})"
        )
    return config


def check_settings_tables(config: TenancyConfig) -> None:
    """Every ``[tenancy.<name>]`` table of the queue file names a share policy and holds
    settings it takes, whichever policy runs: a table the run does not use (a misspelt
    name, another policy's, a setting placed one level too high) is not passed over."""
    for name, settings in config.params.items():
        if name not in share_policy_names():
            near = difflib.get_close_matches(name, share_policy_names(), n=1)
            hint = f"; did you mean [tenancy.{near[0]}]?" if near else ""
            raise InputError(
                f"{config.source}: [tenancy.{name}] is not a share policy's settings table"
                f"{hint} (tables: one per policy, {', '.join(share_policy_names())})"
            )
        make_share_policy(name, settings, config.source)


def build_tenancy(
    spec: TenancySpec, jobs: JobTable, cluster: Cluster, trace: str | None, fmt: str | None
) -> tuple[TenancyConfig, Tenancy]:
    """Queues, tenants and each job's queue for a replay of ``jobs`` from ``trace``."""
    config = config_of(spec)
    if not config.tenant_key:
        key = DEFAULT_KEYS.get(fmt or "", ("user",))
        if fmt == "generic" and trace is not None and not _has_column(trace, "queue"):
            key = ("user",)
        config = replace(config, tenant_key=key)
    attrs = trace_attributes(jobs, config.tenant_key, trace, fmt)
    tenancy = resolve(config, jobs, attrs, cluster.total_gpus, where=trace or "")
    for message in tenancy.tree.warnings:
        print(f"schedlab: warning: {message}", file=sys.stderr)
    return config, tenancy


def _has_column(trace: str, column: str) -> bool:
    with open(trace, encoding="utf-8-sig") as fh:
        header = fh.readline()
    return column in [c.strip() for c in header.split(",")]


def wrap(
    spec: TenancySpec,
    scheduler: SchedulingPolicy,
    jobs: JobTable,
    cluster: Cluster,
    trace: str | None,
    fmt: str | None,
    backfill: bool = False,
) -> tuple[TenantScheduler, TenancyRecorder]:
    """The run's scheduler under the share policy, and the recorder it fills."""
    if not isinstance(scheduler, QueueScheduler):
        raise InputError(
            f"tenancy works over an ordering (fifo, sjf, srtf, tiresias, edf); "
            f"'{scheduler.name}' sizes or places its jobs itself"
        )
    if backfill:
        raise InputError("'--backfill' does not combine with tenancy (queues are best-effort)")
    config, tenancy = build_tenancy(spec, jobs, cluster, trace, fmt)
    share = make_share_policy(config.policy, config.params.get(config.policy), config.source)
    recorder = TenancyRecorder()
    return TenantScheduler(scheduler, share, tenancy, recorder), recorder


@dataclass
class TenancyRun:
    """What a replay with tenancy leaves for its outputs."""

    scheduler: TenantScheduler
    recorder: TenancyRecorder
    extra: dict[str, Any] = field(default_factory=dict)


def _json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, float | np.floating):
        v = float(value)
        return None if not np.isfinite(v) else round(v, 6)
    if isinstance(value, np.integer):
        return int(value)
    return value


def summarize(run: TenancyRun, jobs: pd.DataFrame, end: float) -> dict[str, Any]:
    """``tenancy_summary.json``: the policy, the queues' measures, reclaims, synthetic flag."""
    from schedlab.tenancy.metrics import fairness, reclaim_frame  # measured with pandas

    sched, rec = run.scheduler, run.recorder
    tree = sched.tree
    leaves = tree.leaves
    fair = fairness(rec, end, leaves)
    reclaims = reclaim_frame(rec)
    return _json(
        {
            "policy": sched.share.name,
            "queues": len(leaves),
            "deserved_synthetic": sched.tenancy.synthetic_deserved,
            "unfairness": fair["unfairness"],
            "jain": fair["jain"],
            "reclaims": int(reclaims["count"].sum()) if len(reclaims) else 0,
            "reclaim_gpu_hours_lost": float(reclaims["lost_gpu_hours"].sum())
            if len(reclaims)
            else 0.0,
            "starved_share_max": max(
                (v for v in fair["starved_share"].values() if v is not None), default=None
            ),
            "twd": fair["twd"],
            "starved_share": fair["starved_share"],
            "starved_share_entitled": fair["starved_share_entitled"],
            "mean_alloc": fair["mean_alloc"],
            "mean_entitled": fair["mean_entitled"],
        }
    )


def queue_table(
    run: TenancyRun, jobs: pd.DataFrame, end: float, record_jobs: JobTable
) -> pd.DataFrame:
    """``tenancy_queues.csv``: one line per leaf queue."""
    import pandas as pd

    from schedlab.tenancy.metrics import fairness, queue_jobs, reclaim_frame

    sched, rec = run.scheduler, run.recorder
    tree = sched.tree
    leaves = tree.leaves
    fair = fairness(rec, end, leaves)
    per = queue_jobs(jobs, sched.tenancy.leaves_for(record_jobs.job_id), tree)
    reclaims = reclaim_frame(rec)
    out = pd.DataFrame({"queue": [tree.label(q) for q in leaves]})
    out["deserved_gpu"] = np.clip(tree.deserved[leaves, 0], 0, None)
    out["weight"] = tree.weight[leaves]
    out["mean_alloc_gpu"] = [fair["mean_alloc"][q] for q in out["queue"]]
    out["mean_entitled_gpu"] = [fair["mean_entitled"][q] for q in out["queue"]]
    out["twd_gpu"] = [fair["twd"][q] for q in out["queue"]]
    out["starved_share"] = [fair["starved_share"][q] for q in out["queue"]]
    lost = {}
    won = {}
    if len(reclaims):
        lost = reclaims.groupby("victim")["count"].sum().to_dict()
        won = reclaims.groupby("preemptor")["count"].sum().to_dict()
    out["reclaimed_from"] = [int(lost.get(q, 0)) for q in out["queue"]]
    out["reclaimed_for"] = [int(won.get(q, 0)) for q in out["queue"]]
    out = out.merge(per, left_on="queue", right_index=True, how="left")
    return out


def write_outputs(
    out: Path, run: TenancyRun, jobs: pd.DataFrame, end: float, record_jobs: JobTable
) -> dict[str, Any]:
    """The tenancy files of a run folder; returns the summary."""
    from schedlab.report.tenancy_figures import tenancy_figure
    from schedlab.results import write_csv, write_json
    from schedlab.tenancy.metrics import reclaim_frame, timeline_frame

    timeline = timeline_frame(run.recorder, end)
    timeline.to_parquet(out / "tenancy_timeline.parquet", index=False)
    write_csv(out / "tenancy_queues.csv", queue_table(run, jobs, end, record_jobs))
    write_csv(out / "tenancy_reclaims.csv", reclaim_frame(run.recorder))
    summary = summarize(run, jobs, end)
    write_json(out / "tenancy_summary.json", summary)
    tenancy_figure(out / "figures", run.recorder, timeline, end)
    return summary


def settings_of(config: TenancyConfig) -> Mapping[str, Any]:
    return config.params.get(config.policy, {})
