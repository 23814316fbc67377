"""Measures of a replay run, computed only from what the engine recorded (jobs.csv, timeseries.csv).

Keeping these independent of the engine means a run can be re-measured from its saved folder, and
a change to a metric never needs a re-run. Everything is vectorised: a million-job trace with a
two-million-row series is summarised in under a second.

Conventions (chosen so that every number has one obvious reading):

* JCT, bounded slowdown and the JCT percentiles are over **completed** jobs only; a job that
  never finished has no completion time, and silently counting it at the end of the run would make
  short runs look good.
* Queue delay is over every job that **started** (completed or still running at the end).
* A job with a deadline that was rejected or did not finish has **missed** it.
* Time-weighted means use the time series as a step function: a row holds from its ``time`` until
  the next row; before the first row the cluster is idle (nothing busy, nothing queued).
* Undefined statistics (no completed jobs, an empty window) are ``None``, never NaN, so that
  ``summary.json`` is strict JSON.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from schedlab.errors import InputError
from schedlab.metrics.timeline import step_integral, time_weighted_mean  # noqa: F401 (re-exported)

#: Runtimes shorter than this count as this long in the bounded slowdown, so that a 1-second job
#: that waited 1 minute does not dominate the mean with a slowdown of 60.
DEFAULT_SLOWDOWN_FLOOR = 10.0

STATUSES = ("completed", "unfinished", "rejected", "timeout")
JOB_NUMERIC_COLUMNS = (
    "submit_time",
    "start_time",
    "end_time",
    "num_gpus",
    "duration",
    "deadline",
    "preemptions",
    "resizes",
    "gpu_seconds",
)
JOB_COLUMNS = ("job_id", "user", *JOB_NUMERIC_COLUMNS, "status")
TIMESERIES_COLUMNS = ("time", "queue_length", "running_jobs", "busy_gpus", "total_gpus")


def _with_columns(frame: pd.DataFrame, columns: tuple[str, ...], what: str) -> pd.DataFrame:
    """The frame, or an :class:`InputError` naming the first missing column.

    A frame with no rows may lack columns (``pd.DataFrame()``): it gets them empty, so that an
    empty run summarises instead of crashing.
    """
    missing = [c for c in columns if c not in frame.columns]
    if not missing:
        return frame
    if len(frame) == 0:
        return frame.reindex(columns=[*frame.columns, *missing])
    raise InputError(f"{what} lacks column {missing[0]!r}", column=missing[0])


def _numeric(frame: pd.DataFrame, column: str) -> np.ndarray:
    """A column as float64 (blank → NaN); a non-number is an error echoing the value."""
    col = frame[column]
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        return col.to_numpy(dtype=np.float64, na_value=np.nan)  # the usual case: no text to check
    values = pd.to_numeric(col, errors="coerce")
    suspect = values.isna() & col.notna()  # only these few cells need a look as text
    if suspect.any():
        text = col[suspect].astype(str).str.strip()
        bad = text[(text != "") & (text.str.lower() != "nan")]
        if len(bad):
            raise InputError(f"not a number: {col[bad.index[0]]!r}", column=column)
    return values.to_numpy(dtype=np.float64, na_value=np.nan)


def ftf_rho_values(jct: np.ndarray, isolated_jct: np.ndarray) -> np.ndarray:
    """``jct / isolated_jct`` per job: NaN where the job did not complete (NaN JCT) or has no
    positive reference JCT."""
    jct = np.asarray(jct, dtype=np.float64)
    isolated = np.asarray(isolated_jct, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(isolated > 0, jct / isolated, np.nan)


def job_metrics(jobs: pd.DataFrame, slowdown_floor: float = DEFAULT_SLOWDOWN_FLOOR) -> pd.DataFrame:
    """A copy of ``jobs`` with ``jct``, ``queue_delay``, ``bounded_slowdown``, ``met_deadline``.

    ``bounded_slowdown`` is ``max(1, jct / max(duration, slowdown_floor))`` and NaN where the job
    did not complete or its duration is unknown (a guessed duration would make the mean
    meaningless).
    ``met_deadline`` is False for jobs without a deadline: read it only where ``deadline`` is set.
    ``ftf_rho`` (finish-time fairness, only when the table has ``isolated_jct``: the job's JCT
    under the fluid isolated share, :mod:`schedlab.metrics.ftf`) is ``jct / isolated_jct``, NaN
    where the job did not complete or could not run in the reference.
    """
    if "deadline" not in jobs.columns:  # written only when the trace has deadlines
        jobs = jobs.assign(deadline=np.nan)
    jobs = _with_columns(jobs, JOB_COLUMNS, "jobs table")
    status = jobs["status"].astype("object").where(jobs["status"].notna(), "")
    unknown = ~status.isin(STATUSES)
    if unknown.any():
        raise InputError(
            f"unknown status {status[unknown].iloc[0]!r} (allowed: {', '.join(STATUSES)})",
            column="status",
        )
    submit = _numeric(jobs, "submit_time")
    start = _numeric(jobs, "start_time")
    end = _numeric(jobs, "end_time")
    duration = _numeric(jobs, "duration")
    deadline = _numeric(jobs, "deadline")
    completed = (status == "completed").to_numpy() & ~np.isnan(end)

    jct = np.where(completed, end - submit, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        slowdown = np.maximum(1.0, jct / np.maximum(duration, slowdown_floor))
    out = jobs.copy()
    out["jct"] = jct
    out["queue_delay"] = start - submit
    out["bounded_slowdown"] = slowdown
    with np.errstate(invalid="ignore"):
        out["met_deadline"] = completed & ~np.isnan(deadline) & (end <= deadline)
    if "isolated_jct" in jobs.columns:  # finish-time fairness against the isolated share
        out["ftf_rho"] = ftf_rho_values(jct, _numeric(jobs, "isolated_jct"))
    return out


def _float(value: Any) -> float | None:
    """A plain float for JSON, or None where the statistic is undefined (NaN/inf/None)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _mean(values: np.ndarray) -> float | None:
    values = values[~np.isnan(values)]
    return _float(values.mean()) if len(values) else None


def _quantile(values: np.ndarray, q: float) -> float | None:
    """Linear-interpolated quantile (numpy's default), so p50 of an even count is a midpoint."""
    values = values[~np.isnan(values)]
    return _float(np.quantile(values, q)) if len(values) else None


def _sorted_series(timeseries: pd.DataFrame) -> pd.DataFrame:
    return timeseries.sort_values("time", kind="stable")


def utilization_series(timeseries: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``(time, busy_gpus / total_gpus)`` sorted by time; a cluster with no GPUs counts as idle."""
    ts = _sorted_series(_with_columns(timeseries, TIMESERIES_COLUMNS, "time series"))
    busy = _numeric(ts, "busy_gpus")
    total = _numeric(ts, "total_gpus")
    with np.errstate(invalid="ignore", divide="ignore"):
        util = np.where(total > 0, busy / total, 0.0)
    return _numeric(ts, "time"), util


def jain_index(values: np.ndarray) -> float | None:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one takes everything."""
    values = np.asarray(values, dtype=np.float64)
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return None
    squares = float(np.sum(values**2))
    if squares == 0.0:
        return 1.0  # everyone at zero is perfectly even
    return _float(min(1.0, float(np.sum(values)) ** 2 / (len(values) * squares)))


def per_user(jobs: pd.DataFrame, slowdown_floor: float = DEFAULT_SLOWDOWN_FLOOR) -> pd.DataFrame:
    """One row per user: ``user, jobs, mean_jct, mean_queue_delay, mean_bounded_slowdown``.

    Sorted by job count (most first), then user, so "top N users" is ``head(N)``. Means skip jobs
    where the value is undefined (a user with no completed job has NaN mean JCT).
    """
    m = job_metrics(jobs, slowdown_floor)
    users = m["user"].astype("object").where(m["user"].notna(), "").astype(str)
    g = m.assign(user=users).groupby("user", sort=True)
    out = pd.DataFrame(
        {
            "jobs": g.size(),
            "mean_jct": g["jct"].mean(),
            "mean_queue_delay": g["queue_delay"].mean(),
            "mean_bounded_slowdown": g["bounded_slowdown"].mean(),
        }
    ).reset_index()
    out = out.sort_values(["jobs", "user"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)


def jct_cdf(jobs: pd.DataFrame) -> pd.DataFrame:
    """Empirical CDF of JCT over completed jobs: ``jct`` ascending, ``fraction`` = i/n, i ≥ 1."""
    jct = job_metrics(jobs)["jct"].to_numpy(dtype=np.float64)
    jct = np.sort(jct[~np.isnan(jct)])
    n = len(jct)
    return pd.DataFrame({"jct": jct, "fraction": np.arange(1, n + 1, dtype=np.float64) / max(n, 1)})


def summarize(
    jobs: pd.DataFrame,
    timeseries: pd.DataFrame,
    slowdown_floor: float = DEFAULT_SLOWDOWN_FLOOR,
) -> dict[str, Any]:
    """The run's headline numbers as a JSON-ready dict (plain ints, floats and None only).

    The time window for ``makespan``, ``gpu_utilization`` and ``avg_queue_length`` is
    [first submit, last completion]: the span in which the workload was being served, so that
    idle time after the last job (or a long tail of rejected submissions) does not dilute it.
    ``dsr`` and ``deadline_jobs`` appear only when some job has a deadline, and
    ``best_effort_avg_jct`` only when some jobs have one and others do not; ``ftf_rho_mean``,
    ``ftf_rho_p50``, ``ftf_rho_p90`` and ``ftf_rho_max`` over completed jobs when the table has
    ``isolated_jct``.
    """
    m = job_metrics(jobs, slowdown_floor)
    status = m["status"].astype(str)
    jct = m["jct"].to_numpy(dtype=np.float64)
    queue_delay = m["queue_delay"].to_numpy(dtype=np.float64)
    slowdown = m["bounded_slowdown"].to_numpy(dtype=np.float64)
    submit = _numeric(m, "submit_time")
    end = np.where(np.isnan(jct), np.nan, _numeric(m, "end_time"))
    deadline = _numeric(m, "deadline")
    preemptions = _numeric(m, "preemptions")

    first_submit = float(np.nanmin(submit)) if np.isfinite(submit).any() else math.nan
    last_end = float(np.nanmax(end)) if np.isfinite(end).any() else math.nan

    ts = _sorted_series(_with_columns(timeseries, TIMESERIES_COLUMNS, "time series"))
    times, util = utilization_series(ts)
    window = (first_submit, last_end)

    users = per_user(m, slowdown_floor)
    summary: dict[str, Any] = {
        "jobs": len(m),
        "completed": int((status == "completed").sum()),
        "rejected": int((status == "rejected").sum()),
        "unfinished": int((status == "unfinished").sum()),
        # runs killed at their time limit (only when some were)
        **({"timeouts": int(n)} if (n := (status == "timeout").sum()) else {}),
        "users": len(users),
        "avg_jct": _mean(jct),
        "p50_jct": _quantile(jct, 0.50),
        "p95_jct": _quantile(jct, 0.95),
        "p99_jct": _quantile(jct, 0.99),
        "avg_queue_delay": _mean(queue_delay),
        "p99_queue_delay": _quantile(queue_delay, 0.99),
        "avg_bounded_slowdown": _mean(slowdown),
        "makespan": _float(last_end - first_submit),
        "gpu_utilization": time_weighted_mean(times, util, *window),
        "avg_queue_length": time_weighted_mean(times, _numeric(ts, "queue_length"), *window),
        "cluster_efficiency": (
            time_weighted_mean(times, _numeric(ts, "efficiency"), *window)
            if "efficiency" in ts.columns
            else None
        ),
        "preemptions": int(np.nansum(preemptions)),
        "jain_fairness": jain_index(users["mean_bounded_slowdown"].to_numpy(dtype=np.float64)),
    }
    if "ftf_rho" in m.columns:
        rho = m["ftf_rho"].to_numpy(dtype=np.float64)
        summary.update(
            ftf_rho_mean=_mean(rho),
            ftf_rho_p50=_quantile(rho, 0.50),
            ftf_rho_p90=_quantile(rho, 0.90),
            ftf_rho_max=_float(np.nanmax(rho)) if np.isfinite(rho).any() else None,
        )
    has_deadline = ~np.isnan(deadline)
    if has_deadline.any():
        met = m["met_deadline"].to_numpy(dtype=bool)
        summary["deadline_jobs"] = int(has_deadline.sum())
        summary["dsr"] = _float(met[has_deadline].sum() / has_deadline.sum())
        if not has_deadline.all():
            summary["best_effort_avg_jct"] = _mean(jct[~has_deadline])
    return summary


def json_ready(data: Mapping[str, Any]) -> dict[str, Any]:
    """Copy of a summary with numpy scalars made plain and NaN/inf made None (strict JSON)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        out[key] = value
    return out
