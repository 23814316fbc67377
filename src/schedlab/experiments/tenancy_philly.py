"""Tenancy on Philly's 15 virtual clusters: every share policy over the same trace, ordering and
cluster, with deserved quotas derived from each VC's demand.

The condensed Philly trace (``philly-adaptdl``, 82,247 jobs) names each job's virtual cluster;
quotas were never published, so each VC's deserved GPUs are ⌊its share of the trace's GPU-time ×
cluster GPUs⌋ (``derive_deserved = "demand-share"``, marked synthetic). Every policy runs fifo
inside each queue with bestfit placement; ``none`` is the same replay without tenancy (one
queue). There is no published figure to match: the table compares the policies with each other
(``published`` and ``verdict`` stay empty). The run without tenancy is judged on the same VC
queues and quotas, from what its jobs held and asked for (:func:`one_queue_fairness`).

Measures per policy (see :mod:`schedlab.tenancy.metrics`): Jain's index of held / entitled over
the VCs, unfairness, the largest share of waiting time a VC spent below its deserved quota,
reclaims (and per hour of replay), mean and p95 JCT, mean first wait, and the replay's CPU time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.experiments.replay_run import ReplaySpec, jobs_frame, run_replay
from schedlab.model.jobs import JobTable
from schedlab.tenancy.metrics import fairness, observed_timeline
from schedlab.tenancy.registry import NONE, share_policy_names
from schedlab.tenancy.replay import TenancySpec, build_tenancy, summarize
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

#: The cluster of the README's Philly replays (640 V100s).
CLUSTER = "80x8:V100"
COLUMNS = [
    "policy",
    "jain",
    "unfairness",
    "starved_share_max",
    "reclaims",
    "reclaims_per_hour",
    "mean_jct_h",
    "p95_jct_h",
    "mean_wait_h",
    "completed",
    "rejected",
    "cpu_seconds",
    "published",
    "verdict",
]


def philly_trace(shared: Path) -> Path:
    return Path(shared) / "traces" / "philly-adaptdl" / "philly.csv"


def run_policy(
    policy: str, trace: Path, jobs: JobTable, cluster: str, seed: int = 0
) -> dict[str, object]:
    """One replay and its row of the table."""
    tenancy = TenancySpec(policy, derive_deserved="demand-share") if policy != NONE else None
    spec = ReplaySpec(
        cluster=cluster,
        trace=str(trace),
        policy="fifo",
        seed=seed,
        tenancy=tenancy or TenancySpec(),
    )
    started = time.process_time()
    record = run_replay(spec, parse_cluster_spec(cluster), jobs)
    cpu = time.process_time() - started
    frame = jobs_frame(record)
    done = frame[frame["status"] == "completed"]
    end = float(record.ts_time[-1]) if len(record.ts_time) else 0.0
    row: dict[str, object] = {
        "policy": policy,
        "mean_jct_h": float(done["jct"].mean()) / 3600 if len(done) else None,
        "p95_jct_h": float(done["jct"].quantile(0.95)) / 3600 if len(done) else None,
        "mean_wait_h": float(frame["queue_delay"].mean()) / 3600,
        "completed": len(done),
        # Turned away at arrival, with the reason: bigger than its queue could ever hold.
        "rejected": int((frame["status"] == "rejected").sum()),
        "cpu_seconds": round(cpu, 1),
        "published": "",
        "verdict": "",
    }
    if record.tenancy is not None:
        s = summarize(record.tenancy, frame, end)
        hours = end / 3600 if end > 0 else float("nan")
        row.update(
            jain=s["jain"],
            unfairness=s["unfairness"],
            starved_share_max=s["starved_share_max"],
            reclaims=s["reclaims"],
            reclaims_per_hour=s["reclaims"] / hours if hours == hours else None,
        )
    else:  # one queue: judged on the VCs' queues by the same measures
        fair = one_queue_fairness(trace, jobs, frame, cluster, end)
        row.update(
            jain=fair["jain"],
            unfairness=fair["unfairness"],
            starved_share_max=max(
                (v for v in fair["starved_share"].values() if v is not None), default=None
            ),
            reclaims=0,
            reclaims_per_hour=0.0,
        )
    return row


def one_queue_fairness(
    trace: Path, jobs: JobTable, frame: pd.DataFrame, cluster: str, end: float
) -> dict[str, object]:
    """The tenancy measures of a run without tenancy, over the queues (and demand-derived
    quotas) the share policies get: what each VC held and asked for, from its jobs."""
    spec = TenancySpec("kai", derive_deserved="demand-share")  # the policy does not matter
    total = parse_cluster_spec(cluster)
    _, tenancy = build_tenancy(spec, jobs, total, str(trace), "philly")
    timeline = observed_timeline(
        tenancy.tree,
        tenancy.leaf_of,
        frame["submit_time"].to_numpy(),
        frame["start_time"].to_numpy(),
        frame["end_time"].to_numpy(),
        frame["num_gpus"].to_numpy(),
        float(total.total_gpus),
    )
    return fairness(timeline, end, tenancy.tree.leaves)


def philly_tenancy_study(
    shared: Path,
    policies: Sequence[str] = (NONE, *share_policy_names()),
    cluster: str = CLUSTER,
    limit: int | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """The table: one row per policy (``limit``: only the first jobs by submit time)."""
    trace = philly_trace(shared)
    jobs = read_jobs(trace).jobs.sorted_by_submit()
    if limit is not None:
        jobs = jobs.take(np.arange(min(limit, len(jobs))))
    rows = []
    for policy in policies:
        if progress is not None:
            progress(policy)
        rows.append(run_policy(policy, trace, jobs, cluster, seed))
    return pd.DataFrame(rows, columns=COLUMNS)
