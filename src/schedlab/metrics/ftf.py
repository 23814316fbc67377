"""Finish-time fairness ρ (Themis, NSDI '20; Gavel's Fig. 10): how much longer a job took under a
policy than it would have with its fair slice of the cluster to itself.

Per job, ``ρ = JCT under the policy / JCT of the same job under the isolated policy``: every
active job an equal share ``1/m`` of every GPU type (``x_jk = N_k / (m s_j)``, the row capped at
a total share of 1), on the same trace and cluster — Gavel's definition. ρ ≤ 1: the job did at
least as well as on its fair share; the policies that are fair in this sense keep the largest ρ
small.

Two references:

* :func:`isolated_completion` — the isolated policy *as a fluid* (Gavel's ``--ideal`` mode: no
  rounds, every job progresses continuously at its share's speed). It depends only on the trace,
  the cluster and the speeds, so every replay run reports ρ against it (``jobs.csv`` columns
  ``isolated_jct`` and ``ftf_rho``; ``summary.json`` ``ftf_rho_*``).
* the isolated policy run round by round (``gavel-isolated``), which is what Gavel's figures
  divide by; :func:`ftf_rho` takes the JCTs of any two runs.

Under the fluid reference a job with ``s_j`` GPUs and throughput ``T_jk`` on type k runs, while
m jobs are active, at ``c_j / max(m·s_j, N)`` work units per second, with ``c_j = Σ_k T_jk N_k``
and N the cluster's GPUs: its share ``N/(m s_j)`` of the cluster, or all of its own ``s_j`` GPUs'
worth once the share exceeds them. Jobs of one GPU count therefore progress alike, in
``u_j = W_j / c_j``, so each GPU count is one processor-sharing queue with its own virtual clock
and the whole trace is replayed in ``O(n log n)``.
"""

from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING

import numpy as np

from schedlab.model.cluster import Cluster
from schedlab.model.jobs import JobTable
from schedlab.perf.models import PerfModel, TraceDuration

if TYPE_CHECKING:  # pandas only for the two-run comparison, never on a replay's path
    import pandas as pd


def ftf_rho(jct: pd.Series, isolated_jct: pd.Series) -> pd.Series:
    """ρ per job id (the index of both series); NaN where either run did not finish the job."""
    ref = isolated_jct.reindex(jct.index)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = jct.astype(float) / ref.astype(float)
    return rho.where(ref > 0)


def ftf_summary(rho: pd.Series) -> dict[str, float]:
    """Mean, median, 90th percentile and largest ρ, and the share of jobs with ρ > 1."""
    values = rho.dropna().to_numpy(dtype=np.float64)
    if len(values) == 0:
        return {"jobs": 0}
    return {
        "jobs": len(values),
        "mean": float(values.mean()),
        "p50": float(np.percentile(values, 50)),
        "p90": float(np.percentile(values, 90)),
        "max": float(values.max()),
        "share_above_1": float((values > 1.0).mean()),
    }


def share_capacity(jobs: JobTable, cluster: Cluster, perf: PerfModel) -> np.ndarray:
    """``c_j = Σ_k T_jk N_k``: each job's work units per second if it held every GPU of the
    cluster at its own speed per GPU-group (0 where it can run on no type: no GPUs asked for, a
    type it may not use, more GPUs than the type has, or 0 speed)."""
    models, counts = _gpu_types(cluster)
    n = len(jobs)
    scale = jobs.num_gpus.astype(np.int64)
    out = np.zeros(n)
    if n == 0 or len(models) == 0:
        return out
    fast = isinstance(perf, TraceDuration)
    for model, count in zip(models, counts, strict=True):
        allowed = ((jobs.gpu_model_mask >> model) & 1).astype(bool) & (scale > 0)
        allowed &= scale <= count
        if fast:  # a trace duration runs at its speed factor at the requested size
            rate = np.full(n, _speed(perf, model))
        else:
            rate = np.zeros(n)
            for j in np.flatnonzero(allowed).tolist():
                rate[j] = perf.rate(jobs, j, int(scale[j]), model)
        out += np.where(allowed, np.maximum(rate, 0.0), 0.0) * count
    return out


def _speed(perf: TraceDuration, model: int) -> float:
    return float(perf.speed.get(model, 1.0))


def _gpu_types(cluster: Cluster) -> tuple[list[int], list[int]]:
    """GPU models of the cluster and the GPUs of each."""
    models: dict[int, int] = {}
    for m, g in zip(cluster.model.tolist(), cluster.num_gpus.tolist(), strict=True):
        if m >= 0 and g > 0:
            models[int(m)] = models.get(int(m), 0) + int(g)
    ordered = sorted(models)
    return ordered, [models[m] for m in ordered]


def isolated_completion(
    submit: np.ndarray,
    work: np.ndarray,
    capacity: np.ndarray,
    scale: np.ndarray,
    total_gpus: int,
) -> np.ndarray:
    """Completion time of every job under the fluid isolated policy (NaN for a job that cannot
    run: no work, no capacity, no GPUs).

    ``capacity``: :func:`share_capacity`; a job progresses at ``capacity / max(m·scale,
    total_gpus)`` while m jobs are active (arrived, not finished)."""
    submit = np.asarray(submit, dtype=np.float64)
    work = np.asarray(work, dtype=np.float64)
    capacity = np.asarray(capacity, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.int64)
    n = len(submit)
    done = np.full(n, np.nan)
    valid = np.isfinite(submit) & np.isfinite(work) & (work > 0) & (capacity > 0) & (scale > 0)
    if total_gpus <= 0 or not valid.any():
        return done
    order = np.flatnonzero(valid)
    order = order[np.argsort(submit[order], kind="stable")]
    size = (work[order] / capacity[order]).tolist()  # u_j: work over c_j
    arrivals = submit[order].tolist()
    sizes, group_of = np.unique(scale[order], return_inverse=True)
    groups = group_of.tolist()
    scales = [float(s) for s in sizes.tolist()]
    n_total = float(total_gpus)
    clocks = [0.0] * len(scales)
    heaps: list[list[tuple[float, int]]] = [[] for _ in scales]
    # Each count's head (its earliest virtual finish; inf: none) and its divisor at the current
    # number of active jobs, kept beside the heaps so that the per-event passes over the busy
    # counts read one list item each: at a million jobs this loop is most of the metric's time.
    heads = [math.inf] * len(scales)
    divisors = [n_total] * len(scales)
    busy: dict[int, None] = {}  # GPU counts with active jobs (only their clocks move)
    finish = [math.nan] * len(order)
    active, i, count = 0, 0, len(order)
    now = arrivals[0]
    heappush, heappop, inf = heapq.heappush, heapq.heappop, math.inf
    while i < count or active:
        arrival = arrivals[i] if i < count else inf
        # The next completion: per GPU count, its head's virtual distance at that count's pace.
        soonest, group = inf, -1
        for g in busy:
            pace = active * scales[g]
            divisor = divisors[g] = pace if pace > n_total else n_total
            dt = (heads[g] - clocks[g]) * divisor
            if dt < soonest:
                soonest, group = dt, g
        step = arrival - now
        if step <= soonest:  # the next event is an arrival: land on its time exactly
            if step > 0:  # every active count's virtual clock moves on at its pace
                for g in busy:
                    clocks[g] += step / divisors[g]
            now = arrival
            while i < count and arrivals[i] <= now:
                g = groups[i]
                if g not in busy:  # an idle count's clock starts again from 0
                    busy[g], clocks[g] = None, 0.0
                heap = heaps[g]
                heappush(heap, (clocks[g] + size[i], i))
                heads[g] = heap[0][0]
                active += 1
                i += 1
            continue
        step = soonest if soonest > 0.0 else 0.0
        if step > 0:
            for g in busy:
                clocks[g] += step / divisors[g]
        now += step
        if heads[group] > clocks[group]:
            clocks[group] = heads[group]
        for g in list(busy):  # every job due by now (ties finish together)
            due = clocks[g] * (1 + 1e-12)
            if heads[g] > due:
                continue
            heap = heaps[g]
            while heap and heap[0][0] <= due:
                finish[heappop(heap)[1]] = now
                active -= 1
            if heap:
                heads[g] = heap[0][0]
            else:
                heads[g] = inf
                del busy[g]
    done[order] = finish
    return done


def isolated_jct(jobs: JobTable, cluster: Cluster, perf: PerfModel) -> np.ndarray:
    """Each job's JCT under the fluid isolated policy on ``cluster`` (NaN: it cannot run)."""
    end = isolated_completion(
        jobs.submit_time,
        perf.work(jobs),
        share_capacity(jobs, cluster, perf),
        jobs.num_gpus,
        sum(_gpu_types(cluster)[1]),
    )
    return end - jobs.submit_time.astype(np.float64)
