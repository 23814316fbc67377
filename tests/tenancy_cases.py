"""Tiny replays under a share policy, for the tenancy tests: jobs given as rows, queues as
specs, a fifo ordering with bestfit placement unless told otherwise."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from schedlab.engines.replay import ReplayConfig, ReplayEngine, ReplayRecord
from schedlab.model.cluster import Cluster
from schedlab.model.jobs import JobTable
from schedlab.perf.models import TraceDuration
from schedlab.policies.registry import make_scheduler
from schedlab.tenancy.config import TenancyConfig
from schedlab.tenancy.recorder import TenancyRecorder
from schedlab.tenancy.registry import make_share_policy
from schedlab.tenancy.scheduler import TenantScheduler
from schedlab.tenancy.tenants import resolve
from schedlab.tenancy.tree import QueueSpec
from schedlab.traces.cluster_spec import parse_cluster_spec


def jobs_of(rows: Sequence[tuple[str, str, float, int, float]], **extra: Any) -> JobTable:
    """Jobs from ``(id, queue, submit, gpus, duration)`` rows."""
    return JobTable.from_columns(
        job_id=[r[0] for r in rows],
        user=[r[1] for r in rows],
        submit_time=[r[2] for r in rows],
        num_gpus=[r[3] for r in rows],
        duration=[r[4] for r in rows],
        **extra,
    )


def run(
    rows: Sequence[tuple[str, str, float, int, float]],
    queues: Sequence[QueueSpec],
    policy: str,
    cluster: str | Cluster = "1x8:V100",
    settings: Mapping[str, Any] | None = None,
    ordering: str = "fifo",
    until: float = float("inf"),
    **extra: Any,
) -> tuple[ReplayRecord, TenancyRecorder, TenantScheduler]:
    jobs = jobs_of(rows, **extra)
    config = TenancyConfig(policy=policy, tenant_key=("user",), queues=tuple(queues))
    c = parse_cluster_spec(cluster) if isinstance(cluster, str) else cluster
    tenancy = resolve(config, jobs, {"user": np.asarray(jobs.user)}, c.total_gpus)
    inner, placement = make_scheduler(ordering, "bestfit", False, {}, None, "replay")
    recorder = TenancyRecorder()
    sched = TenantScheduler(inner, make_share_policy(policy, settings), tenancy, recorder)
    record = ReplayEngine(
        c, jobs, sched, placement, TraceDuration(), ReplayConfig(until=until)
    ).run()
    return record, recorder, sched


def held_at(recorder: TenancyRecorder, t: float, queue: str) -> float:
    """GPUs ``queue`` held just after the decision at or before ``t``."""
    i = int(np.searchsorted(recorder.times, t, side="right")) - 1
    return float(recorder.alloc[i][recorder.tree.index[queue], 0])
