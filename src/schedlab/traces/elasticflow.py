"""Readers for the ElasticFlow job traces (Gu et al., ASPLOS '23): the Microsoft ITP files and the
artifact's own traces. Both describe the same kind of job with different spellings.

``elasticflow-itp`` (``shared/traces/elasticflow-itp/``):
    raw ``job_id, submission_time, duration, num_gpu``; the enriched ``simulation/`` files add
    ``num_iteration, model_name, deadline, batch_size``. One reader takes both: each enriched
    column is used when present, so a file with only some of them also reads.

``elasticflow`` (``shared/traces/elasticflow-artifact/``):
    ``job_id, submit_time, num_gpu, duration, iteration, ddl, model_name, batch_size``, optionally
    ``best_effort`` (1 = the job has no deadline, so its ``ddl`` is ignored and the deadline is
    NaN) and ``real_duration`` / ``real_iteration``. The published files have ``real_*`` equal to
    ``duration`` / ``iteration``; ``use_real=True`` takes the ``real_*`` values as the work.

Times are kept as written (seconds on the trace's own clock, deadlines absolute on the same clock):
ElasticFlow's deadlines are absolute, so shifting submit times would need shifting them too, and
the published clusters' figures are quoted on this clock. A deadline before its submit time is an
error; ``duration`` is the run time at ``num_gpu`` GPUs and ``iteration`` the total iterations
(= duration × throughput on the A100 tables).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from schedlab.traces.columns import (
    TextTable,
    float_column,
    int_column,
    read_text_table,
    unique_names,
)
from schedlab.traces.job_common import (
    MAX_GPUS_PER_JOB,
    ReadResult,
    check_not_before,
    finish,
    require_one_of,
    text_column,
)

ITP_FORMAT = "elasticflow-itp"
ITP_COLUMNS = ["job_id", "submission_time", "duration", "num_gpu"]
ITP_ENRICHED = ["num_iteration", "model_name", "deadline", "batch_size"]

ARTIFACT_FORMAT = "elasticflow"
ARTIFACT_COLUMNS = ["job_id", "submit_time", "num_gpu"]
ARTIFACT_OPTIONAL = [
    "duration",
    "iteration",
    "ddl",
    "model_name",
    "batch_size",
    "best_effort",
    "real_duration",
    "real_iteration",
]


def _optional_float(frame: TextTable, column: str, path: Path) -> np.ndarray | None:
    return float_column(frame, column, path) if column in frame.columns else None


def _common(
    frame: TextTable,
    path: Path,
    *,
    submit_col: str,
    duration: np.ndarray | None,
    iterations: np.ndarray | None,
    deadline_col: str | None,
    deadline: np.ndarray | None,
) -> dict[str, object]:
    """Columns both formats share, validated; the deadline must not come before the submit."""
    submit = float_column(frame, submit_col, path)
    if deadline is not None and deadline_col is not None:
        check_not_before(
            frame,
            deadline,
            submit,
            path,
            column=deadline_col,
            message=f"'{deadline_col}' is before '{submit_col}'",
        )
    cols: dict[str, object] = {
        "job_id": unique_names(frame, "job_id", path),
        "submit_time": submit,
        "num_gpus": int_column(frame, "num_gpu", path, low=0, high=MAX_GPUS_PER_JOB),
        "duration": duration,
        "iterations": iterations,
        "deadline": deadline,
        "model_name": text_column(frame, "model_name"),
    }
    if "batch_size" in frame.columns:
        cols["batch_size"] = int_column(frame, "batch_size", path, low=0)
    return cols


def read_elasticflow_itp(
    path: str | Path, *, drop_zero: bool = True, min_duration: float = 0.0
) -> ReadResult:
    """Read a raw or enriched ITP file (``raw/clusterNN.csv``, ``simulation/*.csv``)."""
    path = Path(path)
    frame = read_text_table(path, ITP_COLUMNS, ITP_ENRICHED)
    duration = float_column(frame, "duration", path)
    cols = _common(
        frame,
        path,
        submit_col="submission_time",
        duration=duration,
        iterations=_optional_float(frame, "num_iteration", path),
        deadline_col="deadline",
        deadline=_optional_float(frame, "deadline", path),
    )
    sources = {"submit_time": "submission_time"}
    return finish(
        path,
        ITP_FORMAT,
        frame,
        cols,
        drop_zero=drop_zero,
        min_duration=min_duration,
        sources=sources,
    )


def read_elasticflow(
    path: str | Path,
    *,
    use_real: bool = False,
    drop_zero: bool = True,
    min_duration: float = 0.0,
) -> ReadResult:
    """Read an ElasticFlow artifact trace (``philly_103959.csv``, ``elasticVpollux_e.csv`` …).

    ``use_real`` takes ``real_duration`` / ``real_iteration`` (where the file has them) instead of
    ``duration`` / ``iteration``; every column present is validated either way.
    """
    path = Path(path)
    frame = read_text_table(path, ARTIFACT_COLUMNS, ARTIFACT_OPTIONAL)
    require_one_of(frame, ["duration", "iteration", "real_duration", "real_iteration"], path)
    values = {
        c: _optional_float(frame, c, path)
        for c in ("duration", "iteration", "real_duration", "real_iteration", "ddl")
    }
    first, second = ("real_", "") if use_real else ("", "real_")
    duration = values[f"{first}duration"]
    iterations = values[f"{first}iteration"]
    duration = values[f"{second}duration"] if duration is None else duration
    iterations = values[f"{second}iteration"] if iterations is None else iterations
    deadline = values["ddl"]
    if "best_effort" in frame.columns:
        best_effort = int_column(frame, "best_effort", path, low=0, high=1).astype(bool)
        if deadline is not None:
            deadline = np.where(best_effort, np.nan, deadline)
    cols = _common(
        frame,
        path,
        submit_col="submit_time",
        duration=duration,
        iterations=iterations,
        deadline_col="ddl",
        deadline=deadline,
    )
    used = f"{first}duration" if values[f"{first}duration"] is not None else f"{second}duration"
    sources = {"duration": used, "deadline": "ddl"}
    return finish(
        path,
        ARTIFACT_FORMAT,
        frame,
        cols,
        drop_zero=drop_zero,
        min_duration=min_duration,
        sources=sources,
    )
