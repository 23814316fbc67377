"""AcmeTrace (Shanghai AI Lab, NSDI '24; CC BY 4.0): ``trace_seren.csv`` and ``trace_kalos.csv``.

Not shipped (see ``shared/data/acme/README.md``): a user who has the files reads them with
``--trace-format acme`` (detected from the header). Columns (Seren 13; Kalos adds four):
``job_id, user, node_num, gpu_num, cpu_num, type, state, submit_time, start_time, end_time,
duration, queue, gpu_time`` (+ ``mem_per_pod_GB, shared_mem_per_pod, fail_time, stop_time``).

Conversions, and why:

* Times carry their offsets (Seren ``+08:00``, Kalos ``+00:00``): they are parsed as aware
  datetimes and ``submit_time`` counts seconds from the earliest submit of the file.
* ``num_gpus = gpu_num``, ``num_nodes = node_num``, ``gpus_per_node = gpu_num / node_num`` when
  that is a whole number (otherwise any split); ``duration`` is the trace's run time (s);
  ``cpu_milli = 1000 × cpu_num``; ``memory_mib = 1024 × mem_per_pod_GB`` (Kalos).
* Side columns kept for reports: ``job_type`` (``type``), ``final_state`` (``state``), and
  ``fail_after = fail_time − start_time`` (Kalos; blank otherwise).
* CPU-only jobs (``gpu_num`` 0) and zero durations are dropped and counted, as in every reader.

:func:`acme_stats` computes the trace's published statistics from every row (CPU jobs included;
TIMEOUT and NODE_FAIL count as failed, as the authors count them).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.traces.columns import (
    fail_at_first,
    float_column,
    int_column,
    read_text_table,
    unique_names,
)
from schedlab.traces.job_common import MAX_GPUS_PER_JOB, ReadResult, finish, text_column

FORMAT = "acme"
COLUMNS = ["job_id", "gpu_num", "node_num", "type", "state", "submit_time", "duration"]
OPTIONAL = [
    "user",
    "cpu_num",
    "start_time",
    "end_time",
    "queue",
    "gpu_time",
    "mem_per_pod_GB",
    "shared_mem_per_pod",
    "fail_time",
    "stop_time",
]
FAILED_STATES = ("FAILED", "TIMEOUT", "NODE_FAIL")
STATES = ("COMPLETED", "CANCELLED", *FAILED_STATES)
JOB_TYPES = ("Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other")


def aware_seconds(frame: pd.DataFrame, column: str, path: Path, allow_blank: bool = False):
    """Seconds since the epoch of offset-carrying ISO times (``2023-03-01 08:00:00+08:00``)."""
    text = frame[column].astype(str).str.strip()
    blank = (text == "") | (text.str.lower() == "nan")
    parsed = pd.to_datetime(text.where(~blank), format="ISO8601", errors="coerce", utc=True)
    bad = parsed.isna().to_numpy() & ~(blank.to_numpy() & allow_blank)
    fail_at_first(
        frame,
        bad,
        path,
        column,
        lambda i: f"'{column}' is not a date-time with an offset (got {frame[column].iloc[i]!r})",
    )
    epoch = pd.Timestamp(0, tz="UTC")
    return (parsed - epoch).dt.total_seconds().to_numpy(dtype=np.float64, na_value=np.nan)


def _states(frame: pd.DataFrame, path: Path) -> np.ndarray:
    state = frame["state"].astype(str).str.strip().str.upper().to_numpy(dtype=object)
    fail_at_first(
        frame,
        ~np.isin(state, STATES),
        path,
        "state",
        lambda i: f"state must be one of {', '.join(STATES)} (got {frame['state'].iloc[i]!r})",
    )
    return state


def read_acme(path: str | Path, *, drop_zero: bool = True, min_duration: float = 0.0) -> ReadResult:
    path = Path(path)
    frame = read_text_table(path, COLUMNS, OPTIONAL)
    job_id = unique_names(frame, "job_id", path)
    gpus = int_column(frame, "gpu_num", path, low=0, high=MAX_GPUS_PER_JOB)
    nodes = int_column(frame, "node_num", path, low=0)
    submit = aware_seconds(frame, "submit_time", path)
    duration = float_column(frame, "duration", path)
    state = _states(frame, path)
    job_type = text_column(frame, "type")
    per_node = np.where(
        (nodes > 0) & (gpus % np.maximum(nodes, 1) == 0), gpus // np.maximum(nodes, 1), 0
    )
    fail_after = np.full(len(frame), np.nan)
    if "fail_time" in frame.columns and "start_time" in frame.columns:
        fail = aware_seconds(frame, "fail_time", path, allow_blank=True)
        start = aware_seconds(frame, "start_time", path, allow_blank=True)
        fail_after = fail - start
    cols: dict[str, object] = {
        "job_id": job_id,
        "submit_time": submit - np.nanmin(submit) if len(submit) else submit,
        "num_gpus": gpus,
        "duration": duration,
        "user": text_column(frame, "user"),
        "gpus_per_node": per_node,
        "num_nodes": np.where(per_node > 0, nodes, 0),
    }
    if "cpu_num" in frame.columns:
        cols["cpu_milli"] = 1000 * int_column(frame, "cpu_num", path, low=0)
    if "mem_per_pod_GB" in frame.columns:
        mem = float_column(frame, "mem_per_pod_GB", path, allow_blank=True)
        cols["memory_mib"] = np.where(np.isfinite(mem), np.rint(mem * 1024), 0).astype(np.int64)
    result = finish(path, FORMAT, frame, cols, drop_zero=drop_zero, min_duration=min_duration)
    keep = np.flatnonzero(np.isin(job_id, result.jobs.job_id))
    from dataclasses import replace

    extra = {"job_type": job_type[keep], "final_state": state[keep], "fail_after": fail_after[keep]}
    return ReadResult(
        jobs=replace(result.jobs, extra=extra),
        dropped=result.dropped,
        format=FORMAT,
        rows=result.rows,
    )


def acme_stats(path: str | Path) -> dict[str, object]:
    """The statistics of the repository's ``cluster_summary.csv`` and job-type figure, from
    every row of a trace file (GPU jobs unless stated; seconds)."""
    path = Path(path)
    frame = read_text_table(path, COLUMNS, OPTIONAL)
    gpus = int_column(frame, "gpu_num", path, low=0, high=MAX_GPUS_PER_JOB)
    duration = float_column(frame, "duration", path)
    queue = (
        float_column(frame, "queue", path, allow_blank=True)
        if "queue" in frame.columns
        else np.full(len(frame), np.nan)
    )
    gpu_time = (
        float_column(frame, "gpu_time", path, allow_blank=True)
        if "gpu_time" in frame.columns
        else duration * gpus
    )
    state = _states(frame, path)
    kind = frame["type"].astype(str).str.strip().to_numpy(dtype=object)
    gpu = gpus > 0
    g_state, g_time = state[gpu], gpu_time[gpu]
    total_time = float(g_time.sum())
    classes = {
        "completed": g_state == "COMPLETED",
        "cancelled": g_state == "CANCELLED",
        "failed": np.isin(g_state, FAILED_STATES),
    }
    n_gpu = int(gpu.sum())
    out: dict[str, object] = {
        "jobs": len(frame),
        "cpu_jobs": int((~gpu).sum()),
        "gpu_jobs": n_gpu,
        "mean_run_time": float(duration[gpu].mean()) if n_gpu else None,
        "median_run_time": float(np.median(duration[gpu])) if n_gpu else None,
        "mean_queue": float(np.nanmean(queue[gpu])) if n_gpu else None,
        "median_queue": float(np.nanmedian(queue[gpu])) if n_gpu else None,
        "mean_gpus": float(gpus[gpu].mean()) if n_gpu else None,
        "median_gpus": float(np.median(gpus[gpu])) if n_gpu else None,
        "max_gpus": int(gpus.max()) if len(gpus) else 0,
        "max_run_time": float(duration[gpu].max()) if n_gpu else None,
    }
    for name, mask in classes.items():
        out[f"{name}_rate"] = float(mask.mean()) if n_gpu else None
        out[f"{name}_gpu_time"] = float(g_time[mask].sum())
        out[f"{name}_gpu_time_rate"] = (
            float(g_time[mask].sum() / total_time) if total_time else None
        )
    shares = {}
    for t in sorted(set(kind[gpu].tolist())):
        mine = kind[gpu] == t
        shares[t] = {
            "job_pct": 100.0 * float(mine.mean()),
            "gpu_time_pct": 100.0 * float(g_time[mine].sum() / total_time) if total_time else None,
        }
    out["job_types"] = shares
    return out
