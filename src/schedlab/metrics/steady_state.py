"""Summary measures a grid compares across loads: steady-state utilisation and total waiting.

Whole-run utilisation mixes the warm-up (an empty cluster filling) and the drain (the last jobs
finishing with nothing left to start) into the figure, and both shrink or grow with the trace
length rather than with the policy. The steady-state window leaves them out: it starts when
:data:`WARMUP_FRACTION` of the jobs have arrived and ends at the last arrival, and the summary
states it (``steady_window_start`` / ``steady_window_end``) so a reader knows what was averaged.

Queue delay counts only the wait before a job's first start; a preemptive policy can look good on
it while jobs sit suspended for hours. Total waiting is the time a job spent in the system without
running: its completion time minus the time its GPU-seconds take at its requested GPU count.
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.metrics.replay_metrics import (
    Table,
    as_numbers,
    as_text,
    time_weighted_mean,
    utilization_series,
)

#: Share of the jobs whose arrival ends the warm-up.
WARMUP_FRACTION = 0.1


def steady_window(jobs: Table) -> tuple[float, float] | None:
    """[arrival of the first WARMUP_FRACTION of jobs, last arrival]; None if it is empty."""
    submit = as_numbers(jobs, "submit_time")
    submit = np.sort(submit[~np.isnan(submit)])
    if len(submit) == 0:
        return None
    start = float(submit[math.floor(WARMUP_FRACTION * (len(submit) - 1))])
    end = float(submit[-1])
    return (start, end) if end > start else None


def steady_state(jobs: Table, series: Table) -> dict[str, float | None]:
    """``steady_gpu_utilization`` over :func:`steady_window`, the window itself, and
    ``avg_total_wait`` over completed jobs (queue delay plus time spent preempted)."""
    window = steady_window(jobs)
    util = None
    if window is not None:
        times, busy = utilization_series(series)
        util = time_weighted_mean(times, busy, *window)
    return {
        "steady_gpu_utilization": util,
        "steady_window_start": None if window is None else window[0],
        "steady_window_end": None if window is None else window[1],
        "avg_total_wait": _avg_total_wait(jobs),
    }


def _avg_total_wait(jobs: Table) -> float | None:
    gpus = as_numbers(jobs, "num_gpus")
    done = (as_text(jobs, "status") == "completed") & (gpus > 0)
    if not done.any():
        return None
    submit = as_numbers(jobs, "submit_time")[done]
    end = as_numbers(jobs, "end_time")[done]
    running = as_numbers(jobs, "gpu_seconds")[done] / gpus[done]
    wait = np.maximum(end - submit - running, 0.0)
    return float(np.mean(wait))
