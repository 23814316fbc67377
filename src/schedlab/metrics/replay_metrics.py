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

A table is columns by name: a dict of numpy arrays (what a run builds, so measuring it needs no
pandas) or a pandas DataFrame (what a report reads back from a run's files). Each function
returns the kind of table it was given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.errors import InputError
from schedlab.metrics.timeline import step_integral, time_weighted_mean  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    import pandas as pd

#: Columns by name: a dict of equal-length arrays, or a pandas DataFrame.
Table = Mapping[str, Any]

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


def _is_frame(table: Table) -> bool:
    return hasattr(table, "iloc")


def _names(table: Table) -> list[str]:
    return list(table.columns) if _is_frame(table) else list(table)  # type: ignore[attr-defined]


def n_rows(table: Table) -> int:
    """Rows of a table (a dict's length counts its columns, not its rows)."""
    if _is_frame(table):
        return len(table)
    return len(next(iter(table.values()))) if table else 0


def _assign(table: Table, **columns: Any) -> Table:
    """A copy of ``table`` with ``columns`` added (or replaced), of the same kind."""
    if _is_frame(table):
        out = table.copy()  # type: ignore[attr-defined]
        for name, values in columns.items():
            out[name] = values
        return out
    return {**table, **columns}


def _with_columns(frame: Table, columns: tuple[str, ...], what: str) -> Table:
    """The table, or an :class:`InputError` naming the first missing column.

    A table with no rows may lack columns (``pd.DataFrame()``): it gets them empty, so that an
    empty run summarises instead of crashing.
    """
    present = _names(frame)
    missing = [c for c in columns if c not in present]
    if not missing:
        return frame
    if n_rows(frame) == 0:
        if _is_frame(frame):
            return frame.reindex(columns=[*present, *missing])  # type: ignore[attr-defined]
        return _assign(frame, **{c: np.full(0, np.nan) for c in missing})
    raise InputError(f"{what} lacks column {missing[0]!r}", column=missing[0])


def as_numbers(frame: Table, column: str) -> np.ndarray:
    """A column as float64 (blank → NaN); a non-number is an error echoing the value."""
    col = frame[column]
    values = np.asarray(col)
    if values.dtype.kind in "iuf":
        return values.astype(np.float64, copy=False)  # the usual case: no text to check
    import pandas as pd  # a column of text: only a table read from a file has one

    col = col if _is_frame(frame) else pd.Series(values, dtype=object)
    numbers = pd.to_numeric(col, errors="coerce")
    suspect = numbers.isna() & col.notna()  # only these few cells need a look as text
    if suspect.any():
        text = col[suspect].astype(str).str.strip()
        bad = text[(text != "") & (text.str.lower() != "nan")]
        if len(bad):
            raise InputError(f"not a number: {col[bad.index[0]]!r}", column=column)
    return numbers.to_numpy(dtype=np.float64, na_value=np.nan)


def as_text(frame: Table, column: str) -> np.ndarray:
    """A text column as an object array, missing cells (None, NaN) as ""."""
    values = np.asarray(frame[column], dtype=object)
    isna = getattr(frame[column], "isna", None)
    if callable(isna):
        missing = np.asarray(isna(), dtype=bool)
    else:
        items = values.tolist()
        if set(map(type, items)) <= {str}:  # text only (the usual column): nothing missing
            return values
        missing = np.fromiter(
            (x is None or (isinstance(x, float) and x != x) for x in items),
            dtype=bool,
            count=len(values),
        )
    if missing.any():
        values = values.copy()
        values[missing] = ""
    return values


def ftf_rho_values(jct: np.ndarray, isolated_jct: np.ndarray) -> np.ndarray:
    """``jct / isolated_jct`` per job: NaN where the job did not complete (NaN JCT) or has no
    positive reference JCT."""
    jct = np.asarray(jct, dtype=np.float64)
    isolated = np.asarray(isolated_jct, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(isolated > 0, jct / isolated, np.nan)


def job_metrics(jobs: Table, slowdown_floor: float = DEFAULT_SLOWDOWN_FLOOR) -> Table:
    """A copy of ``jobs`` with ``jct``, ``queue_delay``, ``bounded_slowdown``, ``met_deadline``.

    ``bounded_slowdown`` is ``max(1, jct / max(duration, slowdown_floor))`` and NaN where the job
    did not complete or its duration is unknown (a guessed duration would make the mean
    meaningless).
    ``met_deadline`` is False for jobs without a deadline: read it only where ``deadline`` is set.
    ``ftf_rho`` (finish-time fairness, only when the table has ``isolated_jct``: the job's JCT
    under the fluid isolated share, :mod:`schedlab.metrics.ftf`) is ``jct / isolated_jct``, NaN
    where the job did not complete or could not run in the reference.
    """
    if "deadline" not in _names(jobs):  # written only when the trace has deadlines
        jobs = _assign(jobs, deadline=np.full(n_rows(jobs), np.nan))
    jobs = _with_columns(jobs, JOB_COLUMNS, "jobs table")
    status = as_text(jobs, "status")
    for value in status.tolist():  # in row order, so the first unknown one is named
        if value not in STATUSES:
            raise InputError(
                f"unknown status {value!r} (allowed: {', '.join(STATUSES)})", column="status"
            )
    submit = as_numbers(jobs, "submit_time")
    start = as_numbers(jobs, "start_time")
    end = as_numbers(jobs, "end_time")
    duration = as_numbers(jobs, "duration")
    deadline = as_numbers(jobs, "deadline")
    completed = (status == "completed") & ~np.isnan(end)

    jct = np.where(completed, end - submit, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        slowdown = np.maximum(1.0, jct / np.maximum(duration, slowdown_floor))
    with np.errstate(invalid="ignore"):
        met = completed & ~np.isnan(deadline) & (end <= deadline)
    extra = {}
    if "isolated_jct" in _names(jobs):  # finish-time fairness against the isolated share
        extra["ftf_rho"] = ftf_rho_values(jct, as_numbers(jobs, "isolated_jct"))
    return _assign(
        jobs,
        jct=jct,
        queue_delay=start - submit,
        bounded_slowdown=slowdown,
        met_deadline=met,
        **extra,
    )


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


def _sorted_series(timeseries: Table) -> Table:
    """The series by time (stable: among rows at the same time the order is kept)."""
    if _is_frame(timeseries):
        return timeseries.sort_values("time", kind="stable")  # type: ignore[attr-defined]
    times = as_numbers(timeseries, "time")
    if len(times) < 2 or bool((times[1:] >= times[:-1]).all()):
        return timeseries  # a run writes its series in time order already
    order = np.argsort(times, kind="stable")
    return {name: np.asarray(values)[order] for name, values in timeseries.items()}


def utilization_series(timeseries: Table) -> tuple[np.ndarray, np.ndarray]:
    """``(time, busy_gpus / total_gpus)`` sorted by time; a cluster with no GPUs counts as idle."""
    ts = _sorted_series(_with_columns(timeseries, TIMESERIES_COLUMNS, "time series"))
    busy = as_numbers(ts, "busy_gpus")
    total = as_numbers(ts, "total_gpus")
    with np.errstate(invalid="ignore", divide="ignore"):
        util = np.where(total > 0, busy / total, 0.0)
    return as_numbers(ts, "time"), util


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


def _user_groups(m: Table) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Users in the order per-user tables list them (most jobs first, then by name), each
    user's job count, and each job's position in that order."""
    users = [str(u) for u in as_text(m, "user").tolist()]
    names = sorted(set(users))
    code = {u: k for k, u in enumerate(names)}
    codes = np.fromiter((code[u] for u in users), dtype=np.int64, count=len(users))
    counts = np.bincount(codes, minlength=len(names))
    order = sorted(range(len(names)), key=lambda k: (-int(counts[k]), names[k]))
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    return [names[k] for k in order], counts[order], rank[codes] if len(codes) else codes


def _group_means(groups: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Mean of each group's non-NaN values (NaN for a group with none), summed in row order
    with Kahan's compensation: the figures pandas' grouped mean gives, to the last bit."""
    total = [0.0] * n_groups
    carry = [0.0] * n_groups
    count = [0] * n_groups
    for g, v in zip(groups.tolist(), values.tolist(), strict=True):
        if v != v:
            continue
        count[g] += 1
        y = v - carry[g]
        t = total[g] + y
        c = t - total[g] - y
        carry[g] = 0.0 if c != c else c  # an infinite value makes the carry NaN: drop it
        total[g] = t
    return np.array([t / k if k else math.nan for t, k in zip(total, count, strict=True)])


def per_user(jobs: Table, slowdown_floor: float = DEFAULT_SLOWDOWN_FLOOR) -> pd.DataFrame:
    """One row per user: ``user, jobs, mean_jct, mean_queue_delay, mean_bounded_slowdown``.

    Sorted by job count (most first), then user, so "top N users" is ``head(N)``. Means skip jobs
    where the value is undefined (a user with no completed job has NaN mean JCT).
    """
    import pandas as pd  # a report's table

    m = job_metrics(jobs, slowdown_floor)
    users, counts, groups = _user_groups(m)
    means = {
        f"mean_{name}": _group_means(groups, as_numbers(m, name), len(users))
        for name in ("jct", "queue_delay", "bounded_slowdown")
    }
    return pd.DataFrame({"user": users, "jobs": counts, **means})


def jct_cdf(jobs: Table) -> pd.DataFrame:
    """Empirical CDF of JCT over completed jobs: ``jct`` ascending, ``fraction`` = i/n, i ≥ 1."""
    import pandas as pd  # a report's table

    jct = as_numbers(job_metrics(jobs), "jct")
    jct = np.sort(jct[~np.isnan(jct)])
    n = len(jct)
    return pd.DataFrame({"jct": jct, "fraction": np.arange(1, n + 1, dtype=np.float64) / max(n, 1)})


def summarize(
    jobs: Table,
    timeseries: Table,
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
    status = as_text(m, "status")
    jct = as_numbers(m, "jct")
    queue_delay = as_numbers(m, "queue_delay")
    slowdown = as_numbers(m, "bounded_slowdown")
    submit = as_numbers(m, "submit_time")
    end = np.where(np.isnan(jct), np.nan, as_numbers(m, "end_time"))
    deadline = as_numbers(m, "deadline")
    preemptions = as_numbers(m, "preemptions")

    first_submit = float(np.nanmin(submit)) if np.isfinite(submit).any() else math.nan
    last_end = float(np.nanmax(end)) if np.isfinite(end).any() else math.nan

    ts = _sorted_series(_with_columns(timeseries, TIMESERIES_COLUMNS, "time series"))
    times, util = utilization_series(ts)
    window = (first_submit, last_end)

    users, _, groups = _user_groups(m)
    summary: dict[str, Any] = {
        "jobs": n_rows(m),
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
        "avg_queue_length": time_weighted_mean(times, as_numbers(ts, "queue_length"), *window),
        "cluster_efficiency": (
            time_weighted_mean(times, as_numbers(ts, "efficiency"), *window)
            if "efficiency" in _names(ts)
            else None
        ),
        "preemptions": int(np.nansum(preemptions)),
        "jain_fairness": jain_index(_group_means(groups, slowdown, len(users))),
    }
    if "ftf_rho" in _names(m):
        rho = as_numbers(m, "ftf_rho")
        summary.update(
            ftf_rho_mean=_mean(rho),
            ftf_rho_p50=_quantile(rho, 0.50),
            ftf_rho_p90=_quantile(rho, 0.90),
            ftf_rho_max=_float(np.nanmax(rho)) if np.isfinite(rho).any() else None,
        )
    has_deadline = ~np.isnan(deadline)
    if has_deadline.any():
        met = np.asarray(m["met_deadline"], dtype=bool)
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
