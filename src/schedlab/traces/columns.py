"""Column validation shared by every CSV reader.

Readers load a file as text and convert column by column; the first bad value found is reported
with the file, the line number as an editor shows it (header = line 1) and the column name, so a
user can fix the file without guessing. Nothing is returned until the whole file is valid.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.errors import InputError

HEADER_LINES = 1


def line_of(index: int) -> int:
    """Editor line number of the data row at 0-based ``index``."""
    return index + HEADER_LINES + 1


def read_text_table(
    path: str | Path, required: list[str], optional: list[str] = ()
) -> pd.DataFrame:
    """Read a CSV file with every cell as text; check that the required columns are present."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", path=str(path))
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    except pd.errors.EmptyDataError:
        raise InputError("file is empty (expected a header row)", path=str(path)) from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"not a readable CSV file ({exc})", path=str(path)) from None
    frame.columns = [c.strip() for c in frame.columns]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(repr(c) for c in missing)}; "
            f"found {', '.join(repr(c) for c in frame.columns)}",
            path=str(path),
            row=1,
        )
    if len(frame) == 0:
        raise InputError("file has a header but no data rows", path=str(path))
    keep = [c for c in [*required, *optional] if c in frame.columns]
    return frame[keep]


def int_column(
    frame: pd.DataFrame,
    column: str,
    path: str | Path,
    *,
    low: int | None = 0,
    high: int | None = None,
) -> np.ndarray:
    """Whole numbers in ``[low, high]``; the first bad cell raises InputError naming it."""
    text = frame[column].str.strip()
    values = pd.to_numeric(text, errors="coerce")
    bad = values.isna() | (values != np.floor(values))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(
            f"'{column}' must be a whole number (got {frame[column].iloc[i]!r})",
            path=str(path),
            row=line_of(i),
            column=column,
        )
    out = values.to_numpy(dtype=np.float64).astype(np.int64)
    failing = np.zeros(len(out), dtype=bool)
    if low is not None:
        failing |= out < low
    if high is not None:
        failing |= out > high
    if failing.any():
        i = int(np.flatnonzero(failing)[0])
        allowed = f"in {low}..{high}" if high is not None else f"≥ {low}"
        if low is None:
            allowed = f"≤ {high}"
        raise InputError(
            f"'{column}' must be {allowed} (got {out[i]})",
            path=str(path),
            row=line_of(i),
            column=column,
        )
    return out


def unique_names(frame: pd.DataFrame, column: str, path: str | Path) -> np.ndarray:
    """Non-blank, unique names."""
    names = frame[column].str.strip()
    blank = names == ""
    if blank.any():
        i = int(np.flatnonzero(blank.to_numpy())[0])
        raise InputError(f"'{column}' is blank", path=str(path), row=line_of(i), column=column)
    dup = names.duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(
            f"'{column}' {names.iloc[i]!r} appears twice",
            path=str(path),
            row=line_of(i),
            column=column,
        )
    return names.to_numpy(dtype=object)
