"""Reader for the Helios traces (SenseTime, SC '21; CC-BY-4.0): ``cluster_log.csv`` of one of the
Venus, Earth, Saturn and Uranus clusters. The data is not shipped with schedlab; see
``shared/specs/trace-formats.md``.

Columns: ``job_id, user, vc, gpu_num, cpu_num, node_num, state, submit_time, start_time, end_time``
(date-times), ``duration`` (= end − start, s) and ``queue`` (= start − submit, s). Only
``job_id, submit_time, gpu_num`` and a run time (``start_time`` + ``end_time``, or ``duration``)
are required, so an excerpt with fewer columns still reads.

Conversions, and why:

* ``submit_time`` = seconds since the earliest ``submit_time`` in the *file* (before filters), so a
  job's submit time does not depend on which other jobs an option drops.
* ``duration`` = ``end_time − start_time`` where both are given (what the job really held),
  otherwise the ``duration`` column; a job with neither never started (e.g. cancelled while
  queued) and gets 0 s, which ``drop_zero`` removes and counts. ``queue`` is an outcome of the
  original scheduler, not an input of a replay, so it is not read.
* ``user`` = ``user`` (``vc`` when the file has no user column); ``cpu_milli`` = 1000 × ``cpu_num``.

``states`` (default: all) keeps only jobs whose ``state`` is one of the given names
(case-insensitive, e.g. ``{"COMPLETED"}``); the others are counted as ``state``. Failed and
cancelled jobs held GPUs too, which is why nothing is filtered by state unless asked.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.traces.columns import float_column, int_column, read_text_table, unique_names
from schedlab.traces.job_common import (
    MAX_GPUS_PER_JOB,
    ReadResult,
    check_not_before,
    datetime_seconds,
    finish,
    text_column,
)

FORMAT = "helios"
COLUMNS = ["job_id", "submit_time", "gpu_num"]
OPTIONAL = ["user", "vc", "cpu_num", "state", "start_time", "end_time", "duration"]
#: States the published traces use (others are accepted as well).
STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")


def _check_states(states: Iterable[str]) -> set[str]:
    if isinstance(states, str):
        states = [states]
    wanted = set()
    for s in states:
        if not isinstance(s, str) or not s.strip():
            raise InputError(f"'states' must be job state names such as COMPLETED (got {s!r})")
        wanted.add(s.strip().upper())
    if not wanted:
        raise InputError("'states' is empty: it would drop every job")
    return wanted


def read_helios(
    path: str | Path,
    *,
    states: Iterable[str] | None = None,
    drop_zero: bool = True,
    min_duration: float = 0.0,
) -> ReadResult:
    """Read a Helios ``cluster_log.csv`` (see the module docstring for conversions)."""
    path = Path(path)
    wanted = None if states is None else _check_states(states)
    frame = read_text_table(path, COLUMNS, OPTIONAL)
    has_times = "start_time" in frame.columns and "end_time" in frame.columns
    if not has_times and "duration" not in frame.columns:
        raise InputError(
            "needs 'start_time' and 'end_time', or 'duration', for the jobs' run time",
            path=str(path),
            row=1,
        )
    job_id = unique_names(frame, "job_id", path)
    submit = datetime_seconds(frame, "submit_time", path)
    num_gpus = int_column(frame, "gpu_num", path, low=0, high=MAX_GPUS_PER_JOB)
    run = np.full(len(frame), np.nan)
    if has_times:
        start = datetime_seconds(frame, "start_time", path, allow_blank=True)
        end = datetime_seconds(frame, "end_time", path, allow_blank=True)
        check_not_before(
            frame,
            end,
            start,
            path,
            column="end_time",
            message="'end_time' is before 'start_time' (negative duration)",
        )
        run = end - start
    if "duration" in frame.columns:
        logged = float_column(frame, "duration", path, allow_blank=True)
        run = np.where(np.isnan(run), logged, run)
    duration = np.where(np.isnan(run), 0.0, run)
    user = text_column(frame, "user")
    if user is None:
        user = text_column(frame, "vc")
    cols: dict[str, object] = {
        "job_id": job_id,
        "submit_time": submit - submit.min(),
        "num_gpus": num_gpus,
        "duration": duration,
        "user": user,
    }
    if "cpu_num" in frame.columns:
        cols["cpu_milli"] = int_column(frame, "cpu_num", path, low=0) * 1000
    drops: dict[str, np.ndarray] = {}
    if wanted is not None:
        if "state" not in frame.columns:
            raise InputError(
                "'states' was given but the file has no 'state' column", path=str(path)
            )
        state = [s.upper() for s in frame.stripped("state").tolist()]
        drops["state"] = np.array([s not in wanted for s in state], dtype=bool)
    sources = {"duration": "end_time" if has_times else "duration"}
    return finish(
        path,
        FORMAT,
        frame,
        cols,
        drop_zero=drop_zero,
        min_duration=min_duration,
        drops=drops,
        sources=sources,
    )
