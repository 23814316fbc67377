"""Rescaling a trace's arrivals to a target offered load (``schedlab sweep --load``).

The offered load of a trace on a cluster is the GPU time its jobs ask for per second of arrivals,
as a fraction of the cluster's GPUs: ``Σ num_gpus × duration / (total_gpus × arrival span)``.
Scaling every inter-arrival gap by ``offered / target`` reaches ``target`` while keeping the
order of arrivals, the burst structure and every job's own demand, which is what a load sweep
means to vary. A deadline keeps its distance from its job's submit time (a job's slack is part of
the job, not of the arrival process).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from schedlab.errors import InputError
from schedlab.model.jobs import JobTable


def offered_load(jobs: JobTable, total_gpus: int) -> float:
    """GPU-seconds demanded per second of the arrival span, as a fraction of ``total_gpus``;
    NaN when it is undefined (no durations, or every job arrives at once)."""
    demand = jobs.num_gpus * jobs.duration
    if len(jobs) == 0 or not np.isfinite(demand).all():
        return math.nan
    span = float(np.max(jobs.submit_time) - np.min(jobs.submit_time))
    if span <= 0:
        return math.nan
    return float(demand.sum()) / (total_gpus * span)


def scale_to_load(jobs: JobTable, total_gpus: int, load: float, source: str) -> JobTable:
    """``jobs`` with inter-arrival gaps rescaled so the offered load is ``load``."""
    if not (math.isfinite(load) and load > 0):
        raise InputError(f"'--load' values must be numbers > 0 (got {load})")
    current = offered_load(jobs, total_gpus)
    if not math.isfinite(current) or current <= 0:
        raise InputError(
            "'--load' needs a trace whose jobs all have a duration and arrive over a time span "
            "(its offered load is otherwise undefined)",
            path=source,
        )
    first = float(np.min(jobs.submit_time))
    submit = first + (jobs.submit_time - first) * (current / load)
    deadline = jobs.deadline + (submit - jobs.submit_time)  # NaN (no deadline) stays NaN
    return replace(jobs, submit_time=submit, deadline=deadline)
