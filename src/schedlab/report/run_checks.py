"""Checks of a replay run folder before a report is drawn from it.

A report is read by people who did not make the run, so a folder that was cut short (a truncated
row), edited by hand (``inf``, ``nan``, a negative time) or put together from two runs (a summary
that counts jobs ``jobs.csv`` does not have) must stop the report with the file and line, not
quietly become a figure. ``jobs.csv`` and ``timeseries.csv`` are read as text row by row (so a
short row is caught, which a data-frame reader would pad with blanks); ``summary.json`` must be
strict JSON with no ``NaN`` or ``Infinity`` and no negative number.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import InputError
from schedlab.input_files import read_text
from schedlab.metrics.replay_metrics import JOB_COLUMNS, STATUSES, TIMESERIES_COLUMNS
from schedlab.traces.columns import (
    TextTable,
    fail_at_first,
    float_column,
    int_column,
    read_text_table,
)

#: jobs.csv columns that may be blank (a job that never started or ended, no deadline), and
#: the derived ones a run writes (checked where present).
BLANK_OK = ("start_time", "end_time", "duration", "deadline")
DERIVED = ("jct", "queue_delay", "bounded_slowdown")
WHOLE = ("num_gpus", "preemptions", "resizes")
#: summary.json counts that must agree with the rows of jobs.csv (status → summary key).
COUNTS = {"completed": "completed", "rejected": "rejected", "unfinished": "unfinished"}


def check_jobs_csv(path: Path) -> TextTable:
    """Every row of ``jobs.csv`` whole and sane; returns it as text (one row a job)."""
    required = [c for c in JOB_COLUMNS if c != "deadline"]
    frame = read_text_table(path, required, ["deadline", *DERIVED], allow_empty=True)
    values: dict[str, np.ndarray] = {}
    for column in frame.columns:
        if column in ("job_id", "user", "status"):
            continue
        if column in WHOLE:
            int_column(frame, column, path, low=0)
        else:
            blank_ok = column in BLANK_OK or column in DERIVED
            values[column] = float_column(frame, column, path, low=0.0, allow_blank=blank_ok)
    status = frame.stripped("status")
    fail_at_first(
        frame,
        np.array([s not in STATUSES for s in status.tolist()], dtype=bool),
        path,
        "status",
        lambda i: f"unknown status {status[i]!r} (allowed: {', '.join(STATUSES)})",
    )
    submit, start, end = values["submit_time"], values["start_time"], values["end_time"]
    fail_at_first(
        frame,
        (status == "completed") & np.isnan(end),
        path,
        "end_time",
        lambda i: "a completed job has no 'end_time'",
    )
    for later, column, what in ((start, "start_time", "start"), (end, "end_time", "end")):
        fail_at_first(
            frame,
            later < submit,
            path,
            column,
            lambda i, v=later, w=what: (
                f"the job would {w} before it was submitted ({v[i]:g} < {submit[i]:g}): "
                f"a negative {'JCT' if w == 'end' else 'queueing delay'}"
            ),
        )
    return frame


def check_timeseries_csv(path: Path) -> None:
    """Every row of ``timeseries.csv`` whole, finite and ≥ 0, busy GPUs within the total."""
    frame = read_text_table(path, list(TIMESERIES_COLUMNS), ["efficiency"], allow_empty=True)
    values = {c: float_column(frame, c, path) for c in frame.columns}
    busy, total = values["busy_gpus"], values["total_gpus"]
    fail_at_first(
        frame,
        busy > total,
        path,
        "busy_gpus",
        lambda i: f"more busy GPUs than the cluster has ({busy[i]:g} > {total[i]:g})",
    )


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)


def _line(text: str, pattern: str) -> int | None:
    match = re.search(pattern, text)
    return text.count("\n", 0, match.start()) + 1 if match else None


def load_summary(path: Path) -> dict[str, Any]:
    """``summary.json`` as a dict: strict JSON, numbers finite and ≥ 0."""
    text = read_text(path, "run summary")
    try:
        summary = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path=str(path), row=exc.lineno) from None
    except ValueError as exc:  # NaN, Infinity, -Infinity: Python writes them, JSON has no such
        raise InputError(
            f"{exc} is not a number (JSON has no NaN or Infinity)",
            path=str(path),
            row=_line(text, rf"(?<![\w.]){re.escape(str(exc))}"),
        ) from None
    if not isinstance(summary, dict):
        raise InputError("summary must be a JSON object", path=str(path))
    for key, value in summary.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if value < 0 or not math.isfinite(value):
            raise InputError(
                f"summary field {key!r} is {value!r}: no summary number is negative",
                path=str(path),
                row=_line(text, rf'"{re.escape(key)}"\s*:'),
            )
    return summary


def check_counts(summary: dict[str, Any], jobs: TextTable, summary_path: Path) -> None:
    """The summary's job counts must be those of ``jobs.csv``: a mismatch means the two files
    are not of the same run (or one was cut short)."""
    status = jobs.stripped("status")
    actual = {"jobs": len(jobs), **{k: int((status == s).sum()) for s, k in COUNTS.items()}}
    for key, count in actual.items():
        said = summary.get(key)
        if said is None:
            continue
        if isinstance(said, bool) or not isinstance(said, int | float) or said != count:
            noun = "rows" if key == "jobs" else f"{key} jobs"
            raise InputError(
                f"summary says {key} = {said!r} but jobs.csv has {count} {noun}: "
                f"the two files are not of the same run",
                path=str(summary_path),
            )


def check_run(folder: Path) -> dict[str, Any]:
    """Check every file of a run folder a report reads; return the summary."""
    summary = load_summary(folder / "summary.json")
    jobs = check_jobs_csv(folder / "jobs.csv")
    if (folder / "timeseries.csv").is_file():
        check_timeseries_csv(folder / "timeseries.csv")
    check_counts(summary, jobs, folder / "summary.json")
    return summary
