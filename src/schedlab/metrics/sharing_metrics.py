"""Measures of a sharing-engine run: per class, over time, and the run summary (spec A.7).

Per QoS class: queueing delay (first start − arrival) mean / p50 / p90 / p99 over the pods that
started, total pending time including re-queues, evictions and the eviction rate (evictions per
started pod), completed and unfinished pods, GPU-hours held, mean speed of opportunistic pods
(work done ÷ time held). Over time (one row per event time): allocation rate (allocated share as a
% of capacity; above 100 % under overcommit) split guaranteed / opportunistic, unallocated GPU %,
FGD fragmentation amount and ratio, pending pods per class. Percentiles are numpy's default
(linear), as in the spec's tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from schedlab.engines.pack import NO_NODE
from schedlab.engines.shared_time import DONE, PACK_MODE, STATE_NAMES, SharingResult
from schedlab.metrics.pack_curves import binned_means
from schedlab.model.cluster import GPU_MILLI
from schedlab.model.gpu_models import mask_to_models
from schedlab.model.shared_pods import LEVEL_BURSTABLE, QOS_ORDER


def _stats(values: np.ndarray) -> dict[str, float | None]:
    if len(values) == 0:
        return {"mean": None, "p50": None, "p90": None, "p99": None}
    return {
        "mean": round(float(values.mean()), 3),
        "p50": round(float(np.percentile(values, 50)), 3),
        "p90": round(float(np.percentile(values, 90)), 3),
        "p99": round(float(np.percentile(values, 99)), 3),
    }


def class_table(result: SharingResult) -> dict[str, dict[str, object]]:
    """The per-class table of spec A.7 (classes with no pods are left out)."""
    w = result.workload
    started = ~np.isnan(result.first_start)
    delay = result.first_start - w.arrival
    level = w.level
    table: dict[str, dict[str, object]] = {}
    for q in QOS_ORDER:
        sel = w.qos == q
        if not sel.any():
            continue
        n_started = int((sel & started).sum())
        evictions = int(result.evictions[sel].sum())
        held = result.held_milli_seconds[sel]
        row: dict[str, object] = {
            "pods": int(sel.sum()),
            "started": n_started,
            "completed": int((sel & (result.state == DONE)).sum()),
            "unfinished": int((sel & (result.state != DONE)).sum()),
            "queueing_delay_s": _stats(delay[sel & started]),
            "pending_s_total": round(float(result.pending_seconds[sel].sum()), 3),
            "evictions": evictions,
            "eviction_rate": round(evictions / n_started, 6) if n_started else None,
            "gpu_hours": round(float(held.sum()) / GPU_MILLI / 3600.0, 3),
        }
        if (level[sel] < LEVEL_BURSTABLE).all():
            row["mean_speed"] = _mean_speed(result, sel)
        table[q] = row
    return table


def _mean_speed(result: SharingResult, sel: np.ndarray) -> float | None:
    """Work done ÷ share-time held, over the completed pods of ``sel`` that hold GPU share."""
    w = result.workload
    done = sel & (result.state == DONE) & (result.held_milli_seconds > 0)
    if not done.any():
        return None
    work = (w.pods.gpu_request_milli * w.work)[done].sum()
    return round(float(work / result.held_milli_seconds[done].sum()), 6)


def timeseries_frame(result: SharingResult) -> pd.DataFrame:
    """One row per recorded instant (per event time; per pod in pack mode)."""
    s = result.series
    cap = result.capacity_milli
    allocated = s["allocated_milli"].astype(np.float64)
    idle = s["idle_milli"].astype(np.float64)
    frame = {
        "time": s["time"],
        "arrived_pct": 100.0 * s["arrived_milli"] / cap,
        "allocation_pct": 100.0 * allocated / cap,
        "guaranteed_pct": 100.0 * s["guaranteed_milli"] / cap,
        "opportunistic_pct": 100.0 * (allocated - s["guaranteed_milli"] - s["filler_milli"]) / cap,
        "filler_pct": 100.0 * s["filler_milli"] / cap,
        "allocated_gpus": allocated / GPU_MILLI,
        "unallocated_gpu_pct": 100.0 - 100.0 * allocated / cap,
        "frag_amount_pct": 100.0 * s["frag_milli"] / cap,
        "frag_ratio_pct": np.divide(
            100.0 * s["frag_milli"], idle, out=np.zeros(len(idle)), where=idle > 0
        ),
    }
    for q in QOS_ORDER:
        frame[f"pending_{q}"] = s[f"pending_{q}"].astype(np.int64)
    return pd.DataFrame(frame)


def pods_frame(result: SharingResult) -> pd.DataFrame:
    """One row per pod: its request and class, where it ran, and its times."""
    w, cluster = result.workload, result.cluster
    placed = result.node != NO_NODE
    return pd.DataFrame(
        {
            "pod": w.pods.name,
            "qos": w.qos,
            "cpu_milli": w.pods.cpu_milli,
            "memory_mib": w.pods.memory_mib,
            "num_gpu": w.pods.num_gpu,
            "gpu_milli": w.pods.gpu_milli,
            "gpu_spec": ["|".join(mask_to_models(int(m))) for m in w.pods.model_mask],
            "arrival": w.arrival,
            "work": w.work,
            "first_start": result.first_start,
            "end": result.end,
            "state": [STATE_NAMES[s] for s in result.state.tolist()],
            "node": np.where(placed, cluster.names[np.maximum(result.node, 0)], ""),
            "gpus": ["|".join(str(g) for g in gs) for gs in result.gpus],
            "evictions": result.evictions,
            "pending_s": result.pending_seconds,
            "gpu_hours": result.held_milli_seconds / GPU_MILLI / 3600.0,
        }
    )


def _time_weighted(times: np.ndarray, values: np.ndarray) -> float | None:
    """Mean of a step function that holds values[k] on [times[k], times[k+1])."""
    if len(times) < 2 or times[-1] <= times[0]:
        return None
    return float((values[:-1] * np.diff(times)).sum() / (times[-1] - times[0]))


def cluster_summary(result: SharingResult) -> dict[str, object]:
    """Cluster-wide figures: peak allocated GPUs and when, GPU-hours, time-weighted means."""
    ts = timeseries_frame(result)
    out: dict[str, object] = {
        "peak_allocated_gpus": result.peak_milli / GPU_MILLI,
        "peak_time": result.peak_time,
        "gpu_hours": round(float(result.held_milli_seconds.sum()) / GPU_MILLI / 3600.0, 3),
        "pods_by_state": {
            name: int((result.state == i).sum())
            for i, name in enumerate(STATE_NAMES)
            if (result.state == i).any()
        },
    }
    if result.config.mode == PACK_MODE:
        arrived = ts["arrived_pct"].to_numpy()
        out["unallocated_gpu_pct"] = binned_means(arrived, ts["unallocated_gpu_pct"].to_numpy())
        out["frag_amount_pct"] = binned_means(arrived, ts["frag_amount_pct"].to_numpy())
        return out
    t = ts["time"].to_numpy()
    for col in (
        "allocation_pct",
        "guaranteed_pct",
        "opportunistic_pct",
        "filler_pct",
        "frag_ratio_pct",
    ):
        mean = _time_weighted(t, ts[col].to_numpy())
        out[f"mean_{col}"] = None if mean is None else round(mean, 4)
    mean_gpus = _time_weighted(t, ts["allocated_gpus"].to_numpy())
    out["mean_allocated_gpus"] = None if mean_gpus is None else round(mean_gpus, 4)
    return out


def run_summary(result: SharingResult) -> dict[str, object]:
    """``summary.json`` of a sharing run."""
    c = result.config
    return {
        "engine": "sharing",
        "mode": c.mode,
        "placement": c.policy,
        "seed": c.seed,
        "overcommit": c.overcommit,
        "interference": c.interference,
        "nodes": result.cluster.size,
        "gpus": result.cluster.total_gpus,
        "pods": len(result.workload),
        "pods_dropped": dict(result.workload.dropped),
        "pods_copied": result.copies,
        "wall_seconds": round(result.wall_seconds, 3),
        "cluster": cluster_summary(result),
        "classes": class_table(result),
        "filler": result.filler,
    }
