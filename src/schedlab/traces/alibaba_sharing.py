"""Alibaba GPU-2023 pod lists read with their real times and GPU shares, for the sharing engine.

Unlike the job reader (:mod:`schedlab.traces.alibaba_jobs`, whole GPUs for replay), shares are
kept as they are, CPU-only pods are kept (they hold CPU and memory), and each pod keeps its ``qos``
class. Times and resources are checked by the same code as the job reader.

* arrival = ``creation_time``; work = ``deletion_time − scheduled_time`` at full speed;
* pods with a blank ``scheduled_time`` (deleted while pending: they never ran) are dropped and
  counted as ``unscheduled``; ``keep_unscheduled`` keeps them with work = deletion − creation.

Load modes (spec A.6) act on the result: :func:`window` keeps the pods created in [start, end),
:func:`compress` divides the inter-arrival gaps by k.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.model.shared_pods import QOS_LEVELS, SharedWorkload
from schedlab.traces.alibaba_jobs import read_pod_times
from schedlab.traces.columns import line_of


def read_shared_pods(path: str | Path, *, keep_unscheduled: bool = False) -> SharedWorkload:
    """Read an ``openb_pod_list_*.csv`` file with times and ``qos`` (see the module docstring)."""
    path = Path(path)
    pods, frame, created, scheduled, deleted = read_pod_times(path, ("qos",))
    qos = frame.stripped("qos")
    for i, q in enumerate(qos.tolist()):
        if q not in QOS_LEVELS:
            raise InputError(
                f"unknown qos {q!r} (known: {', '.join(QOS_LEVELS)})",
                path=str(path),
                row=line_of(frame, i),
                column="qos",
            )
    never_ran = np.isnan(scheduled)
    work = deleted - np.where(never_ran, created, scheduled)
    workload = SharedWorkload(pods, created, work, qos)
    if keep_unscheduled:
        return workload
    kept = workload.select(~never_ran)
    kept.dropped["unscheduled"] = int(never_ran.sum())
    return kept


def parse_window(text: str) -> tuple[float, float]:
    """``START:END`` in seconds, either side may be blank (open)."""
    start_text, sep, end_text = text.partition(":")
    if not sep:
        raise InputError(f"'--window' must look like START:END (got {text!r})")
    try:
        start = float(start_text) if start_text.strip() else -np.inf
        end = float(end_text) if end_text.strip() else np.inf
    except ValueError:
        raise InputError(f"'--window' must hold numbers (got {text!r})") from None
    if not start < end:
        raise InputError(f"'--window' START must be before END (got {text!r})")
    return start, end


def window(workload: SharedWorkload, start: float, end: float) -> SharedWorkload:
    """The pods created in [start, end); the rest are counted as ``outside_window``."""
    keep = (workload.arrival >= start) & (workload.arrival < end)
    if not keep.any():
        raise InputError(
            f"no pod is created in the window [{start:g}, {end:g})", path=workload.pods.source
        )
    out = workload.select(keep)
    out.dropped["outside_window"] = int((~keep).sum())
    return out


def compress(workload: SharedWorkload, k: float) -> SharedWorkload:
    """Arrivals a' = a₀ + (a − a₀)/k with a₀ the first arrival; work unchanged."""
    if not k >= 1 or not np.isfinite(k):
        raise InputError(f"compression factor must be a number ≥ 1 (got {k})")
    a0 = float(workload.arrival.min())
    arrival = a0 + (workload.arrival - a0) / k
    return SharedWorkload(workload.pods, arrival, workload.work, workload.qos, workload.dropped)


def offered_load(workload: SharedWorkload, total_gpus: int) -> float:
    """ρ = Σ GPUs·work / (GPUs of the cluster × arrival span); 0 for a single instant."""
    span = float(workload.arrival.max() - workload.arrival.min())
    if span <= 0 or total_gpus <= 0:
        return 0.0
    gpu_seconds = float((workload.pods.gpu_request_milli / 1000.0 * workload.work).sum())
    return gpu_seconds / (total_gpus * span)
