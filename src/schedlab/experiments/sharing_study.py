"""``schedlab reproduce sharing``: fractional GPUs over time on the openb trace (sharing spec A.8).

**Conservation** (exact, computed from the trace by the spec): with the trace's own times on the
full GPU-node cluster every one of the 7,255 scheduled pods starts at arrival, 51,470.67
GPU-hours with the class split of A.1, allocation peak 64.59 GPUs at 12,523,614 s and mean
35.99 GPUs over [9,936,000, 12,902,960] s.

**Placement in time** (ours; no published time replay of this trace exists): the pods created
after day 115 on the cluster scaled to 64 GPUs, arrivals compressed 2.5× (offered load ≈ 0.78),
fgd, bestfit and random with and without a ParaSet-like filler; LS and BE waits, BE evictions,
allocation and fragmentation rates. ``--quick``: the first 3 days of those pods, filler off.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedlab.reproduce.checks import Reproduction, exact, markdown_table
from schedlab.reproduce.context import StudyContext

POLICIES = ("fgd", "bestfit", "random")
WINDOW_START = 9_936_000
COMPRESS = 2.5
#: Conservation figures (spec A.1/A.8).
PODS, GPU_HOURS, PEAK, PEAK_AT, MEAN = 7255, 51_470.67, 64.59, 12_523_614, 35.99
CLASS_HOURS = {"LS": 41_413.4, "BE": 1_311.6, "Burstable": 7_459.2, "Guaranteed": 1_286.5}
WINDOW = (9_936_000, 12_902_960)


@dataclass(frozen=True)
class TimeRun:
    """One placement in time: policy, filler on or off, the scaled cluster's GPUs."""

    root: str  # the openb trace folder
    policy: str
    filler: bool
    gpus: int
    days: float = np.inf  # of arrivals kept from day 115 on
    seed: int = 42


def _inputs(root: Path, gpus: int | None, days: float = np.inf):
    """The GPU-node cluster and the scheduled pods; with ``gpus``, the cluster scaled to them
    and the pods created in the ``days`` after day 115, arrivals compressed."""
    from schedlab.model.cluster_scale import scale_cluster
    from schedlab.traces.alibaba import read_node_list
    from schedlab.traces.alibaba_sharing import compress, read_shared_pods, window

    cluster = read_node_list(root / "openb_node_list_gpu_node.csv")
    pods = read_shared_pods(root / "openb_pod_list_default.csv")
    if gpus is None:
        return cluster, pods
    kept = window(pods, WINDOW_START, WINDOW_START + days * 86_400.0)
    return scale_cluster(cluster, gpus), compress(kept, COMPRESS)


def run_time(task: TimeRun) -> dict[str, object]:
    """One placement-in-time run and its row."""
    from schedlab.engines.filler import FillerJob
    from schedlab.engines.shared_time import SharingConfig, run_sharing
    from schedlab.metrics.sharing_metrics import run_summary
    from schedlab.traces.alibaba_sharing import offered_load

    cluster, pods = _inputs(Path(task.root), task.gpus, task.days)
    filler = FillerJob("paraset", work=1e9, r_min=1, r_max=32, m_min=100, m_max=500, cpu_milli=1000)
    config = SharingConfig(
        task.policy,
        seed=task.seed,
        filler=(filler,) if task.filler else (),
        sample=60.0,
        filler_outlives_pods=False,
    )
    s = run_summary(run_sharing(cluster, pods, config))
    ls, be, cl = s["classes"]["LS"], s["classes"]["BE"], s["cluster"]
    return {
        "placement": task.policy,
        "filler": "on" if task.filler else "off",
        "gpus": cluster.total_gpus,
        "load": round(offered_load(pods, cluster.total_gpus), 2),
        "LS wait mean / p99 (s)": f"{ls['queueing_delay_s']['mean']:,.1f} / "
        f"{ls['queueing_delay_s']['p99']:,.0f}",
        "BE wait mean (s)": f"{be['queueing_delay_s']['mean']:,.1f}",
        "BE evictions": be["evictions"],
        "allocation rate": f"{cl['mean_allocation_pct']:.2f} %",
        "filler share": "—" if not task.filler else f"{cl['mean_filler_pct']:.2f} %",
        "fragmentation ratio": f"{cl['mean_frag_ratio_pct']:.1f} %",
        "unfinished": sum(c["unfinished"] for c in s["classes"].values()),
    }


def conservation(root: Path) -> dict[str, float]:
    """The conservation figures of the trace replayed on the full cluster under bestfit."""
    from schedlab.engines.shared_time import DONE, SharingConfig, run_sharing
    from schedlab.metrics.timeline import time_weighted_mean

    cluster, pods = _inputs(root, None)
    r = run_sharing(cluster, pods, SharingConfig("bestfit"))
    alloc = r.series["allocated_milli"] / 1000
    k = int(np.argmax(alloc))
    out = {
        "pods": float(len(pods)),
        "started late": float((r.first_start != pods.arrival).sum()),
        "not done": float((r.state != DONE).sum()),
        "evictions": float(r.evictions.sum()),
        "peak": float(alloc[k]),
        "peak at": float(r.series["time"][k]),
        "mean": float(time_weighted_mean(r.series["time"], alloc, *WINDOW) or np.nan),
    }
    for q in CLASS_HOURS:
        out[q] = float(r.held_milli_seconds[pods.qos == q].sum() / 3.6e6)
    out["gpu hours"] = sum(out[q] for q in CLASS_HOURS)
    return out


def reproduce(ctx: StudyContext) -> Reproduction:
    result = Reproduction("sharing", "GPU sharing over time", "sharing spec A.8")
    root = ctx.shared / "traces" / "alibaba-gpu-2023"
    got = ctx.step("conservation on the full cluster", lambda: conservation(root))
    add = result.checks.append
    add(exact("pods scheduled in the trace", got["pods"], PODS, fmt="{:,.0f}"))
    add(exact("pods not starting at their arrival", got["started late"], 0, fmt="{:.0f}"))
    add(exact("pods evicted or unfinished", got["evictions"] + got["not done"], 0, fmt="{:.0f}"))
    add(exact("GPU-hours", got["gpu hours"], GPU_HOURS, fmt="{:,.2f}"))
    for q, hours in CLASS_HOURS.items():
        add(exact(f"GPU-hours, {q}", got[q], hours, fmt="{:,.1f}"))
    add(exact("allocated GPUs at the peak", got["peak"], PEAK, fmt="{:.2f}"))
    add(exact("time of the peak (s)", got["peak at"], PEAK_AT, fmt="{:,.0f}"))
    add(exact("mean allocated GPUs, day 115 to the end", got["mean"], MEAN, fmt="{:.2f}"))
    gpus, days = 64, (3.0 if ctx.quick else np.inf)
    fillers = (False,) if ctx.quick else (False, True)
    tasks = [TimeRun(str(root), p, f, gpus, days) for p in POLICIES for f in fillers]
    rows = ctx.map(run_time, tasks, f"{len(tasks)} time runs", slow_first=lambda t: t.filler)
    result.tables.append(
        (
            "Placement in time: the pods created after day 115"
            + (f" (their first {days:g} days)" if np.isfinite(days) else "")
            + f" on {gpus} GPUs, arrivals compressed {COMPRESS}× (time-weighted means)",
            markdown_table(rows, list(rows[0])),
        )
    )
    return result
