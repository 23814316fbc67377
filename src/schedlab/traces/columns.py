"""Column validation shared by every CSV reader.

Readers load a file as text and convert column by column; the first bad value found is reported
with the file, the line number as an editor shows it (header = line 1) and the column name, so a
user can fix the file without guessing. Nothing is returned until the whole file is valid.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.errors import InputError
from schedlab.input_files import check_input_file

LINE_ATTR = "source_lines"


def line_of(frame: pd.DataFrame, index: int) -> int:
    """Editor line number of the data row at 0-based ``index`` (blank lines are skipped when
    reading, so the numbers come from the reader, not from arithmetic)."""
    return int(frame.attrs[LINE_ATTR][index])


def read_text_table(
    path: str | Path,
    required: list[str],
    optional: Sequence[str] = (),
    *,
    allow_empty: bool = False,
) -> pd.DataFrame:
    """Read a CSV file with every cell as text; check that the required columns are present.

    Each data row remembers the line it came from (``frame.attrs["source_lines"]``), so errors
    point at the right line even when the file has blank lines. A header without data rows is an
    error unless ``allow_empty`` (a result file of a run with nothing in it).
    """
    path = check_input_file(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            rows: list[list[str]] = []
            lines: list[int] = []
            for row in reader:
                if not "".join(row).strip():  # blank line, or only blank cells
                    continue
                rows.append(row)
                lines.append(reader.line_num)
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", path=str(path)) from None
    except csv.Error as exc:
        raise InputError(f"not a readable CSV file ({exc})", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror}", path=str(path)) from None
    if header is None:
        raise InputError("file is empty (expected a header row)", path=str(path))
    header = [c.strip() for c in header]
    check_unique_header(header, path)
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(repr(c) for c in missing)}; "
            f"found {', '.join(repr(c) for c in header)}",
            path=str(path),
            row=1,
        )
    if not rows and not allow_empty:
        raise InputError("file has a header but no data rows", path=str(path))
    for row, line in zip(rows, lines, strict=True):
        if len(row) != len(header):
            raise InputError(
                f"row has {len(row)} fields but the header has {len(header)}",
                path=str(path),
                row=line,
            )
    keep = [c for c in [*required, *optional] if c in header]
    index = [header.index(c) for c in keep]
    frame = pd.DataFrame(
        {c: [r[i] for r in rows] for c, i in zip(keep, index, strict=True)}, dtype=object
    )
    frame.attrs[LINE_ATTR] = np.asarray(lines, dtype=np.int64)
    return frame


def check_unique_header(header: Sequence[str], path: str | Path) -> None:
    """A column named twice is refused: which of the two a reader took would be a silent guess
    (and a merge of two exports, the usual cause, rarely agrees on both)."""
    seen: dict[str, int] = {}
    for k, name in enumerate(header, start=1):
        if not name:
            continue
        if name in seen:
            raise InputError(
                f"column {name!r} appears twice in the header (fields {seen[name]} and {k})",
                path=str(path),
                row=1,
                column=name,
            )
        seen[name] = k


def fail_at_first(
    frame: pd.DataFrame,
    failing: np.ndarray | pd.Series,
    path: str | Path,
    column: str | None,
    message: Callable[[int], str],
) -> None:
    """Raise InputError at the first row where ``failing`` is true, naming its file, line and
    column; ``message(i)`` words it for that row. Nothing happens when no row fails."""
    mask = np.asarray(failing, dtype=bool)
    if mask.any():
        i = int(np.flatnonzero(mask)[0])
        raise InputError(message(i), path=str(path), row=line_of(frame, i), column=column)


#: Integers beyond this are rejected as values no cluster or trace has (and float64 loses
#: whole-number precision past 2**53).
MAX_ABS_INT = 2**53


def int_column(
    frame: pd.DataFrame,
    column: str,
    path: str | Path,
    *,
    low: int | None = 0,
    high: int | None = None,
) -> np.ndarray:
    """Whole numbers in ``[low, high]``; the first bad cell raises InputError naming it."""
    text = frame[column].astype(str).str.strip()
    values = pd.to_numeric(text, errors="coerce").astype(np.float64)
    bad = (
        values.isna()
        | ~np.isfinite(values)
        | (values.abs() > MAX_ABS_INT)
        | (values != np.floor(values))
    )
    fail_at_first(
        frame,
        bad,
        path,
        column,
        lambda i: f"'{column}' must be a whole number (got {frame[column].iloc[i]!r})",
    )
    out = values.to_numpy(dtype=np.float64).astype(np.int64)
    failing = np.zeros(len(out), dtype=bool)
    if low is not None:
        failing |= out < low
    if high is not None:
        failing |= out > high
    allowed = f"in {low}..{high}" if high is not None else f"≥ {low}"
    if low is None:
        allowed = f"≤ {high}"
    fail_at_first(
        frame, failing, path, column, lambda i: f"'{column}' must be {allowed} (got {out[i]})"
    )
    return out


def unique_names(frame: pd.DataFrame, column: str, path: str | Path) -> np.ndarray:
    """Non-blank, unique names."""
    names = frame[column].str.strip()
    blank = names == ""
    fail_at_first(frame, blank, path, column, lambda i: f"'{column}' is blank")
    fail_at_first(
        frame,
        names.duplicated(),
        path,
        column,
        lambda i: f"'{column}' {names.iloc[i]!r} appears twice",
    )
    return names.to_numpy(dtype=object)


def float_column(
    frame: pd.DataFrame,
    column: str,
    path: str | Path,
    *,
    low: float | None = 0.0,
    allow_blank: bool = False,
) -> np.ndarray:
    """Finite numbers ≥ ``low``; blank cells become NaN when ``allow_blank``, else an error.

    ``nan`` and ``inf`` written out are rejected: a trace that needs "no value" leaves the cell
    blank, so a literal NaN is more likely a broken export than a choice.
    """
    text = frame[column].astype(str).str.strip()
    blank = (text == "").to_numpy()
    values = np.array(
        pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    )
    bad = ~np.isfinite(values) & ~(blank & allow_blank)
    fail_at_first(
        frame,
        bad,
        path,
        column,
        lambda i: (
            f"'{column}' is blank"
            if blank[i]
            else f"'{column}' must be a number (got {frame[column].iloc[i]!r})"
        ),
    )
    if allow_blank:
        values[blank] = np.nan
    if low is not None:  # NaN compares False, so blanks pass
        fail_at_first(
            frame,
            values < low,
            path,
            column,
            lambda i: f"'{column}' must be ≥ {low:g} (got {values[i]:g})",
        )
    return values
