"""Tenancy measures of a run, from the recorder's timeline and the per-job table.

Every queue is judged against a reference entitlement ``e_q(t)`` that does not depend on the
policy: KAI's division with ``k = 0``, one priority, no rounding, over the demand ``D_q =
alloc + pending``, with deserved floors and limits (weights as the queue file gives them). GPUs
unless stated. The timeline is a step function: a row holds until the next one, the last until
the run's end.

* ``twd`` (per queue): time-weighted deviation ``(1/T)∫|a_q − e_q| dt``; ``unfairness``:
  ``(1/T)∫ Σ_q |a_q − e_q| / (2C) dt`` in [0, 1];
* ``jain``: time mean of ``(Σx)²/(nΣx²)``, ``x_q = a_q/e_q`` over queues with ``e_q > 0``, where
  ``n ≥ 2``;
* ``starved_share`` (queues with a deserved quota): time with ``D_q > a_q`` and ``a_q <
  min(d_q, D_q)`` over time with ``D_q > a_q``; ``starved_share_entitled``: the same with
  ``a_q < e_q − 1``;
* reclaims: count and GPU-hours lost, by preemptor queue, victim queue and reason;
* per queue: jobs, completed, mean/p50/p95 JCT, mean first wait, mean total queued time
  (including after evictions), mean bounded slowdown.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from schedlab.tenancy.recorder import TenancyRecorder
from schedlab.tenancy.tree import ROOT, QueueTree

BISECTION_STEPS = 60


def _water_fill(
    total: np.ndarray, floor: np.ndarray, need: np.ndarray, weight: np.ndarray
) -> np.ndarray:
    """Per row: ``floor + min(need, λ·w)`` with ``λ`` such that the row sums to ``total``
    (or everything if the demand is smaller): the continuous division, vectorised over rows
    (``[rows, queues]``; ``total`` ``[rows]``)."""
    left = total - floor.sum(axis=1)
    out = floor.copy()
    full = need.sum(axis=1) <= left + 1e-9
    out[full] += need[full]
    rest = ~full & (left > 0)
    if not rest.any():
        return out
    n, w, lf = need[rest], weight[None, :].repeat(rest.sum(), axis=0), left[rest]
    with np.errstate(divide="ignore", invalid="ignore"):
        hi = np.where(w > 0, n / np.where(w > 0, w, 1), 0).max(axis=1)
    lo = np.zeros_like(hi)
    for _ in range(BISECTION_STEPS):
        mid = (lo + hi) / 2
        given = np.minimum(n, mid[:, None] * w).sum(axis=1)
        over = given > lf
        hi = np.where(over, mid, hi)
        lo = np.where(over, lo, mid)
    out[rest] += np.minimum(n, lo[:, None] * w)
    return out


def entitlement(
    tree: QueueTree,
    demand: np.ndarray,
    capacity: float,
    resource: int = 0,
    deserved: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """``e_q(t)`` of every node for every timeline row: ``[rows, nodes]`` (one resource)."""
    rows = demand.shape[0]
    d = tree.deserved[:, resource] if deserved is None else deserved
    d = np.where(d < 0, capacity, d)
    w = tree.weight if weights is None else weights
    lim = tree.limit[:, resource]
    out = np.zeros((rows, len(tree)))
    out[:, ROOT] = capacity
    for parent in tree.preorder():
        kids = tree.children[parent]
        if not kids:
            continue
        req = np.minimum(demand[:, kids, resource], lim[kids][None, :])
        floor = np.minimum(d[kids][None, :], req)
        floor_sum = floor.sum(axis=1)
        total = out[:, parent]
        scale = np.where(floor_sum > total, total / np.where(floor_sum > 0, floor_sum, 1), 1.0)
        floor = floor * scale[:, None]  # oversubscribed deserved: floors shrink together
        out[:, kids] = _water_fill(total, floor, req - floor, w[kids].astype(np.float64))
    return out


def _durations(times: np.ndarray, end: float) -> np.ndarray:
    nxt = np.append(times[1:], max(end, times[-1] if len(times) else end))
    return np.maximum(0.0, nxt - times)


def timeline_frame(recorder: TenancyRecorder, end: float) -> pd.DataFrame:
    """``tenancy_timeline``: ``t, queue, resource, alloc, fair_share, entitled, demand,
    deserved, usage`` (one row per timeline row, queue and resource)."""
    tree = recorder.tree
    arr = recorder.arrays()
    rows, n, r = arr["alloc"].shape
    if rows == 0:
        return pd.DataFrame(
            columns=[
                "t",
                "queue",
                "resource",
                "alloc",
                "fair_share",
                "entitled",
                "demand",
                "deserved",
                "usage",
            ]
        )
    ent = np.zeros((rows, n, r))
    for k in range(r):
        ent[:, :, k] = entitlement(tree, arr["demand"], float(recorder.capacity[k]), k)
    nodes = np.arange(1, n)
    usage = arr["usage"] if len(arr["usage"]) == rows else np.full((rows, n, r), np.nan)
    frame = pd.DataFrame(
        {
            "t": np.repeat(arr["time"], (n - 1) * r),
            "queue": np.tile(np.repeat(np.asarray(tree.names, dtype=object)[nodes], r), rows),
            "resource": np.tile(np.asarray(tree.resources, dtype=object), rows * (n - 1)),
            "alloc": arr["alloc"][:, 1:, :].reshape(-1),
            "fair_share": arr["fair"][:, 1:, :].reshape(-1),
            "entitled": ent[:, 1:, :].reshape(-1),
            "demand": arr["demand"][:, 1:, :].reshape(-1),
            "deserved": np.tile(np.clip(tree.deserved[1:], 0, None).reshape(-1), rows),
            "usage": usage[:, 1:, :].reshape(-1),
        }
    )
    return frame


def fairness(recorder: TenancyRecorder, end: float, queues: np.ndarray) -> dict[str, Any]:
    """The time-weighted measures over ``queues`` (node indices), GPUs."""
    tree = recorder.tree
    arr = recorder.arrays()
    times = arr["time"]
    if not len(times):
        return {"unfairness": None, "jain": None, "twd": {}, "starved_share": {}}
    cap = float(recorder.capacity[0])
    alloc = arr["alloc"][:, :, 0]
    demand = arr["demand"][:, :, 0]
    ent = entitlement(tree, arr["demand"], cap, 0)
    dt = _durations(times, end)
    span = float(dt.sum())
    a, e, dm = alloc[:, queues], ent[:, queues], demand[:, queues]
    dev = np.abs(a - e)
    twd = (dev * dt[:, None]).sum(axis=0) / span if span > 0 else np.zeros(len(queues))
    unfair = float((dev.sum(axis=1) / (2 * cap) * dt).sum() / span) if span > 0 and cap else None
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(e > 0, a / np.where(e > 0, e, 1), np.nan)
    counted = ~np.isnan(x)
    k = counted.sum(axis=1)
    s1 = np.nansum(x, axis=1)
    s2 = np.nansum(x * x, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        j = np.where((k >= 2) & (s2 > 0), s1 * s1 / (k * s2), np.nan)
    ok = ~np.isnan(j)
    jain = float((j[ok] * dt[ok]).sum() / dt[ok].sum()) if dt[ok].sum() > 0 else None
    d = np.clip(tree.deserved[queues, 0], 0, None)
    waiting = dm > a + 1e-9
    starved = waiting & (a < np.minimum(d[None, :], dm) - 1e-9)
    starved_e = waiting & (a < e - 1 - 1e-9)
    wait_time = (waiting * dt[:, None]).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(wait_time > 0, (starved * dt[:, None]).sum(axis=0) / wait_time, np.nan)
        share_e = np.where(wait_time > 0, (starved_e * dt[:, None]).sum(axis=0) / wait_time, np.nan)
    names = [tree.label(q) for q in queues]
    return {
        "unfairness": unfair,
        "jain": jain,
        "twd": dict(zip(names, twd.tolist(), strict=True)),
        "starved_share": {
            n: (None if np.isnan(v) or d[i] <= 0 else float(v))
            for i, (n, v) in enumerate(zip(names, share.tolist(), strict=True))
        },
        "starved_share_entitled": {
            n: (None if np.isnan(v) else float(v))
            for n, v in zip(names, share_e.tolist(), strict=True)
        },
        "mean_alloc": dict(
            zip(
                names,
                ((a * dt[:, None]).sum(axis=0) / span if span > 0 else a[0]).tolist(),
                strict=True,
            )
        ),
        "mean_entitled": dict(
            zip(
                names,
                ((e * dt[:, None]).sum(axis=0) / span if span > 0 else e[0]).tolist(),
                strict=True,
            )
        ),
    }


def reclaim_frame(recorder: TenancyRecorder) -> pd.DataFrame:
    """Reclaims by (preemptor queue, victim queue, reason): count, GPUs and GPU-hours lost."""
    tree = recorder.tree
    rows = [
        (
            tree.label(r.preemptor_queue),
            tree.label(r.victim_queue),
            r.reason,
            r.gpus,
            r.lost_gpu_seconds,
        )
        for r in recorder.reclaims
    ]
    frame = pd.DataFrame(rows, columns=["preemptor", "victim", "reason", "gpus", "lost"])
    if frame.empty:
        return pd.DataFrame(
            columns=["preemptor", "victim", "reason", "count", "gpus", "lost_gpu_hours"]
        )
    out = frame.groupby(["preemptor", "victim", "reason"], sort=True).agg(
        count=("gpus", "size"), gpus=("gpus", "sum"), lost=("lost", "sum")
    )
    out["lost_gpu_hours"] = out.pop("lost") / 3600.0
    return out.reset_index()


def queue_jobs(jobs: pd.DataFrame, queue_of: np.ndarray, tree: QueueTree) -> pd.DataFrame:
    """Per-queue job outcomes from the per-job table (``jct``, ``queue_delay``, ...)."""
    frame = jobs.assign(queue=[tree.label(int(q)) for q in queue_of])
    executed = frame["gpu_seconds"] / frame["num_gpus"].where(frame["num_gpus"] > 0)
    queued = (frame["end_time"] - frame["submit_time"]) - executed
    frame = frame.assign(queued_total=queued.where(frame["status"] == "completed"))
    groups = frame.groupby("queue", sort=False)
    out = pd.DataFrame(
        {
            "jobs": groups.size(),
            "completed": groups["status"].apply(lambda s: int((s == "completed").sum())),
            "mean_jct": groups["jct"].mean(),
            "p50_jct": groups["jct"].median(),
            "p95_jct": groups["jct"].quantile(0.95),
            "mean_first_wait": groups["queue_delay"].mean(),
            "mean_queued_total": groups["queued_total"].mean(),
            "mean_slowdown": groups["bounded_slowdown"].mean(),
            "preemptions": groups["preemptions"].sum(),
        }
    )
    return out
