"""What every job-trace reader shares: the result type, datetime columns, and the final filtering.

Readers validate *every* row before anything is dropped (a bad value in a row that a filter would
remove is still a bad file), then :func:`finish` applies the filters and counts what each removed,
so a user always sees how many jobs an option took away instead of a silently shorter trace.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.model.gpu_models import GPU_MODELS, is_known_model, parse_gpu_spec, spec_mask
from schedlab.model.jobs import JobTable
from schedlab.traces.columns import TextTable, fail_at_first, line_of

#: More GPUs than any job in any public trace asks for: a larger count is a unit mix-up.
MAX_GPUS_PER_JOB = 65_536

#: No trace spans, and no job runs, a century: a larger time is a unit mix-up (milliseconds or
#: microseconds read as seconds). Unix-epoch seconds (about 56 years today) still pass.
MAX_SECONDS = 100 * 365.25 * 86_400.0

#: The job-table columns given in seconds, which :func:`check_times` bounds.
TIME_COLUMNS = ("submit_time", "duration", "deadline")


@dataclass(frozen=True)
class ReadResult:
    """A trace read into canonical jobs, with what the filters removed.

    ``dropped`` maps each filter that was applied to the number of jobs it removed (0 included, so
    the keys say which filters ran); a job is counted under the first filter that removes it, in
    the order the keys appear. ``rows`` is the number of data rows in the file.
    """

    jobs: JobTable
    dropped: dict[str, int]
    format: str
    rows: int

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())


def check_min_duration(value: float) -> float:
    """``min_duration`` is user input (CLI or script): reject what cannot be a run time."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise InputError(f"'min_duration' must be a number of seconds ≥ 0 (got {value!r})")
    return seconds


def datetime_seconds(
    frame: TextTable, column: str, path: str | Path, *, allow_blank: bool = False
) -> np.ndarray:
    """Seconds since the Unix epoch of ISO-8601 datetimes (``2017-10-09 07:01:55``).

    Traces write local wall-clock time without a zone; it is read as if it were UTC so that no
    daylight-saving jump is invented (a time with a zone is taken to UTC). Readers only ever use
    differences, which is what matters. Whole seconds and microseconds are added as floats, so a
    time reads the same as it always did. Blank cells become NaN when ``allow_blank``; anything
    unparseable raises InputError.
    """
    text = frame.stripped(column)
    blank = text == ""
    seen: dict[str, float] = {}
    values = []
    for cell in text.tolist():
        value = seen.get(cell)
        if value is None:
            value = seen[cell] = _epoch_seconds(cell)
        values.append(value)
    seconds = np.array(values, dtype=np.float64)
    bad = np.isnan(seconds) & ~(blank & allow_blank)
    fail_at_first(
        frame,
        bad,
        path,
        column,
        lambda i: (
            f"'{column}' "
            + ("is blank" if blank[i] else f"is not a date-time (got {frame[column][i]!r})")
            + "; expected e.g. 2017-10-09 07:01:55"
        ),
    )
    return seconds


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_NAIVE = datetime(1970, 1, 1)  # the same instant, for times without a zone (read as UTC)


def _epoch_seconds(cell: str) -> float:
    """One ISO-8601 date-time as seconds since the epoch (NaN: not one). Whole seconds are
    counted exactly (years 1 to 9999), then the microseconds added."""
    if not cell.isascii():
        return math.nan
    try:
        when = datetime.fromisoformat(cell)
    except ValueError:
        return math.nan
    # days (may be negative), seconds and microseconds ≥ 0; a time without a zone is UTC's
    since = when - (_EPOCH_NAIVE if when.tzinfo is None else _EPOCH)
    return (since.days * 86_400 + since.seconds) + since.microseconds / 1e6


def check_not_before(
    frame: TextTable,
    later: np.ndarray,
    earlier: np.ndarray,
    path: str | Path,
    *,
    column: str,
    message: str,
) -> None:
    """Raise at the first row where ``later < earlier`` (NaN on either side passes)."""
    fail_at_first(
        frame,
        later < earlier,
        path,
        column,
        lambda i: f"{message} (got {later[i]:g} < {earlier[i]:g})",
    )


def check_times(
    frame: TextTable,
    columns: Mapping[str, object],
    path: str | Path,
    sources: Mapping[str, str] | None = None,
) -> None:
    """Raise at the first row whose submit time, run time or deadline is negative, infinite or
    beyond :data:`MAX_SECONDS`, naming the file column it came from (``sources``: job-table
    column → file column; the same name when absent). NaN passes: a missing duration or deadline
    is the reader's to judge.

    Readers derive some of these (a run time from two date-times, a submit time relative to the
    earliest one), so the check runs on the values the job table gets, not on the cells.
    """
    for name in TIME_COLUMNS:
        if columns.get(name) is None:
            continue
        values = np.asarray(columns[name], dtype=np.float64)
        column = (sources or {}).get(name, name)
        fail_at_first(
            frame,
            (values < 0) | (values > MAX_SECONDS),
            path,
            column,
            lambda i, v=values, n=name: (
                f"{n.replace('_', ' ')} of {v[i]:g} s is "
                + ("negative" if v[i] < 0 else "beyond 100 years (a time unit mix-up?)")
            ),
        )


def gpu_model_masks(frame: TextTable, column: str, path: str | Path) -> np.ndarray:
    """Bitmasks of ``|``-separated GPU model lists (blank = any); unknown names raise.

    Only distinct texts are parsed, so a million rows with a handful of specs cost a handful of
    parses.
    """
    masks: dict[str, int] = {}
    out = np.empty(len(frame), dtype=np.int64)
    for i, raw in enumerate(frame.stripped(column).tolist()):
        mask = masks.get(raw)
        if mask is None:
            models = parse_gpu_spec(raw)
            for name in models:
                if not is_known_model(name):
                    raise InputError(
                        f"unknown GPU model {name!r} in '{column}' "
                        f"(known: {', '.join(GPU_MODELS)})",
                        path=str(path),
                        row=line_of(frame, i),
                        column=column,
                    )
            mask = masks[raw] = spec_mask(models)
        out[i] = mask
    return out


def require_one_of(frame: TextTable, columns: list[str], path: str | Path) -> None:
    """A job needs some measure of its work: at least one of ``columns`` must be in the file."""
    if not any(c in frame.columns for c in columns):
        raise InputError(
            f"needs a {' or '.join(repr(c) for c in columns)} column for the jobs' work",
            path=str(path),
            row=1,
        )


def text_column(frame: TextTable, column: str) -> np.ndarray | None:
    """Stripped text of an optional column, or None when the file does not have it."""
    if column not in frame.columns:
        return None
    return frame.stripped(column)


def finish(
    path: str | Path,
    fmt: str,
    frame: TextTable,
    columns: dict[str, object],
    *,
    drop_zero: bool,
    min_duration: float,
    drops: dict[str, np.ndarray] | None = None,
    drop_zero_gpus: bool | None = None,
    sources: Mapping[str, str] | None = None,
) -> ReadResult:
    """Apply the filters and build the table.

    ``drops`` are format-specific filters (name → rows to remove), applied first; then
    ``zero_gpus`` and ``zero_duration`` (no work: duration 0, or no duration and 0 iterations)
    when ``drop_zero``, then ``below_min_duration`` when ``min_duration`` > 0. Jobs given only as
    iterations have no run time to compare and pass ``min_duration``. ``drop_zero_gpus``
    (default: ``drop_zero``) lets a reader with its own CPU-only filter switch that part off.
    ``frame`` is the file as read (one row a job); times are checked first
    (:func:`check_times`, ``sources`` naming the file columns they came from), before any
    filter, like every other value.
    """
    min_duration = check_min_duration(min_duration)
    check_times(frame, columns, path, sources)
    rows = len(frame)
    num_gpus = np.asarray(columns["num_gpus"])
    duration = np.asarray(columns.get("duration", np.full(rows, np.nan)), dtype=np.float64)
    iterations = columns.get("iterations")
    iters = (
        np.full(rows, np.nan) if iterations is None else np.asarray(iterations, dtype=np.float64)
    )
    reasons: dict[str, np.ndarray] = dict(drops or {})
    if drop_zero if drop_zero_gpus is None else drop_zero_gpus:
        reasons["zero_gpus"] = num_gpus == 0
    if drop_zero:
        reasons["zero_duration"] = (duration == 0) | (np.isnan(duration) & (iters == 0))
    if min_duration > 0:
        reasons["below_min_duration"] = duration < min_duration
    removed = np.zeros(rows, dtype=bool)
    dropped: dict[str, int] = {}
    for name, mask in reasons.items():
        new = mask & ~removed
        dropped[name] = int(new.sum())
        removed |= new
    jobs = JobTable.from_columns(source=str(path), **columns)
    if removed.any():
        jobs = replace(jobs.take(np.flatnonzero(~removed)), dropped=nonzero(dropped))
    return ReadResult(jobs=jobs, dropped=dropped, format=fmt, rows=rows)


def nonzero(counts: Mapping[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if v}


def dropped_note(jobs: JobTable, kept_word: str = "") -> str | None:
    """One line saying what the reader dropped from ``jobs``'s file and why (None: nothing),
    with the counts as ``trace stats`` shows them."""
    if not jobs.dropped:
        return None
    total = sum(jobs.dropped.values())
    why = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in jobs.dropped.items())
    return (
        f"{total} of {total + len(jobs)} jobs of {jobs.source} were dropped by the reader's "
        f"filters ({why}){kept_word}"
    )
