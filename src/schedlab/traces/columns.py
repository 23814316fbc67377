"""Column validation shared by every CSV reader.

Readers load a file as text and convert column by column; the first bad value found is reported
with the file, the line number as an editor shows it (header = line 1) and the column name, so a
user can fix the file without guessing. Nothing is returned until the whole file is valid.

The file is held as a :class:`TextTable` (cells as text, column by column) and converted with
numpy and plain Python, not pandas: reading a trace is what every replay does first, and loading
pandas alone would cost it more than a small replay takes. Numbers are read as pandas'
``to_numeric`` reads them (the readers used it before), so every trace gives the same values.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.input_files import check_input_file

LINE_ATTR = "source_lines"
_WHOLE = re.compile(r"[+-]?[0-9]+")
#: What ``str.strip`` removes (Unicode white space, as ``str.isspace`` defines it).
_SPACE = re.compile(r"\s")
_ASCII_SPACE = tuple(c for c in map(chr, range(128)) if c.isspace())


def _has_space(text: str) -> bool:
    """Whether ``text`` holds white space (``str`` substring tests are quicker than a regex
    over ASCII text, the usual case)."""
    if text.isascii():
        return any(c in text for c in _ASCII_SPACE)
    return _SPACE.search(text) is not None


class TextTable:
    """A CSV file's cells as text (object arrays, column by column), with the editor line each
    data row came from (``attrs["source_lines"]``)."""

    def __init__(self, cells: dict[str, np.ndarray], lines: np.ndarray) -> None:
        self._cells = cells
        self._stripped: dict[str, np.ndarray] = {}
        #: Column names, in the order asked for.
        self.columns = list(cells)
        self.attrs = {LINE_ATTR: lines}

    def __len__(self) -> int:
        return len(self.attrs[LINE_ATTR])

    def __contains__(self, column: object) -> bool:
        return column in self._cells

    def __getitem__(self, column: str) -> np.ndarray:
        """The column's cells as written."""
        return self._cells[column]

    def stripped(self, column: str) -> np.ndarray:
        """The column's cells without surrounding white space."""
        text = self._stripped.get(column)
        if text is None:
            cells = self._cells[column]
            if not _has_space("".join(cells.tolist())):  # the usual column: as written
                text = cells.copy()
            else:
                text = np.empty(len(cells), dtype=object)
                text[:] = list(map(str.strip, cells.tolist()))
            self._stripped[column] = text
        return text

    def replaced(self, column: str, cells: np.ndarray) -> TextTable:
        """This table with ``column``'s cells replaced (the same rows and lines)."""
        return TextTable({**self._cells, column: cells}, self.attrs[LINE_ATTR])


def line_of(frame: TextTable, index: int) -> int:
    """Editor line number of the data row at 0-based ``index`` (blank lines are skipped when
    reading, so the numbers come from the reader, not from arithmetic)."""
    return int(frame.attrs[LINE_ATTR][index])


def parse_numbers(text: np.ndarray) -> np.ndarray:
    """Stripped cells as float64, NaN where a cell is not a number: what pandas'
    ``to_numeric(errors="coerce")`` reads (ASCII decimal numbers, ``inf``, ``nan``; no digit
    separators, no other scripts' digits; a column of whole numbers only is read as integers,
    so ``-0`` there is 0)."""
    cells = text.tolist()
    values = np.empty(len(cells), dtype=np.float64)
    try:
        values[:] = list(map(float, cells))
        clean = True
    except ValueError:
        clean = False
    joined = "".join(cells)
    if not clean or "_" in joined or not joined.isascii():
        values[:] = [_number(c) for c in cells]
    zeros = np.flatnonzero((values == 0) & np.signbit(values))
    if len(zeros) and all(_WHOLE.fullmatch(c) for c in cells):
        values[zeros] = 0.0  # integers have no negative zero
    return values


def _number(cell: str) -> float:
    """One cell as :func:`parse_numbers` reads it."""
    if "_" in cell or not cell.isascii():
        return math.nan
    try:
        return float(cell)
    except ValueError:
        return math.nan


def read_text_table(
    path: str | Path,
    required: list[str],
    optional: Sequence[str] = (),
    *,
    allow_empty: bool = False,
) -> TextTable:
    """Read a CSV file with every cell as text; check that the required columns are present.

    Each data row remembers the line it came from (``table.attrs["source_lines"]``), so errors
    point at the right line even when the file has blank lines. A header without data rows is an
    error unless ``allow_empty`` (a result file of a run with nothing in it).
    """
    path = check_input_file(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            text = fh.read()
        split = _split_csv if any(c in text for c in _NOT_PLAIN) else _split_plain
        header, columns, lines, misfit = split(text)
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
    if not lines and not allow_empty:
        raise InputError("file has a header but no data rows", path=str(path))
    if misfit is not None:
        fields, line = misfit
        raise InputError(
            f"row has {fields} fields but the header has {len(header)}", path=str(path), row=line
        )
    cells: dict[str, np.ndarray] = {}
    for column in [c for c in [*required, *optional] if c in header]:
        cells[column] = np.empty(len(lines), dtype=object)
        cells[column][:] = columns[header.index(column)]
    return TextTable(cells, np.asarray(lines, dtype=np.int64))


#: A CSV file as split: its header (None if the file is empty), its cells column by column, the
#: editor line of each data row, and (fields, line) of the first row whose width is not the
#: header's (then the columns are empty).
Split = tuple[list[str] | None, list[list[str]], list[int], tuple[int, int] | None]


#: What only the csv module reads right: quotes, carriage returns (a line end the plain split
#: would leave in the last cell) and NUL (which the csv module refuses).
_NOT_PLAIN = ('"', "\r", "\x00")


def _split_plain(text: str) -> Split:
    """:func:`_split_csv` for a CSV text without quotes or carriage returns, split by
    ``str.split`` alone: the lines, then every data cell in one list sliced into columns —
    no Python step per cell or row, and no list per row for the garbage collector to walk (a
    million-row trace's table: 1.2 s instead of 2.1 s). Blank lines (and lines of blank cells) are
    skipped as the csv path skips them."""
    if not text:
        return None, [], [], None
    body = text.split("\n")
    if body[-1] == "":
        body.pop()  # the file's last line end
    header = body[0].split(",") if body[0] else []  # the csv module reads no cell there
    del body[0]
    numbers: Sequence[int] = range(2, len(body) + 2)
    filled = [bool(line.replace(",", "").strip()) for line in body]
    if not all(filled):
        numbers = [n for n, keep in zip(numbers, filled, strict=True) if keep]
        body = [line for line, keep in zip(body, filled, strict=True) if keep]
    width = len(header)
    commas = [line.count(",") for line in body]
    misfit = next((i for i, c in enumerate(commas) if c != width - 1), None)
    if misfit is not None:
        return header, [], list(numbers), (commas[misfit] + 1, numbers[misfit])
    if not body:
        return header, [[] for _ in header], [], None
    cells = ",".join(body).split(",")
    return header, [cells[i::width] for i in range(width)], list(numbers), None


def _split_csv(text: str) -> Split:
    """Header, cells by column and editor lines of any CSV text, through the csv module (quoted
    cells, line breaks inside them, carriage returns); blank lines (and lines of blank cells)
    skipped."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    rows: list[list[str]] = []
    lines: list[int] = []
    for row in reader:
        if not "".join(row).strip():  # blank line, or only blank cells
            continue
        rows.append(row)
        lines.append(reader.line_num)
    width = len(header or ())
    for row, line in zip(rows, lines, strict=True):
        if len(row) != width:
            return header, [], lines, (len(row), line)
    return header, [[row[i] for row in rows] for i in range(width)], lines, None


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
    frame: TextTable,
    failing: np.ndarray,
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
    frame: TextTable,
    column: str,
    path: str | Path,
    *,
    low: int | None = 0,
    high: int | None = None,
) -> np.ndarray:
    """Whole numbers in ``[low, high]``; the first bad cell raises InputError naming it."""
    values = parse_numbers(frame.stripped(column))
    with np.errstate(invalid="ignore"):
        bad = (
            np.isnan(values)
            | ~np.isfinite(values)
            | (np.abs(values) > MAX_ABS_INT)
            | (values != np.floor(values))
        )
    fail_at_first(
        frame,
        bad,
        path,
        column,
        lambda i: f"'{column}' must be a whole number (got {frame[column][i]!r})",
    )
    out = values.astype(np.int64)
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


def unique_names(frame: TextTable, column: str, path: str | Path) -> np.ndarray:
    """Non-blank, unique names."""
    names = frame.stripped(column)
    fail_at_first(frame, names == "", path, column, lambda i: f"'{column}' is blank")
    if len(set(names.tolist())) == len(names):
        return names
    seen: set[str] = set()
    for i, name in enumerate(names.tolist()):
        if name in seen:
            raise InputError(
                f"'{column}' {name!r} appears twice",
                path=str(path),
                row=line_of(frame, i),
                column=column,
            )
        seen.add(name)
    return names


def float_column(
    frame: TextTable,
    column: str,
    path: str | Path,
    *,
    low: float | None = 0.0,
    allow_blank: bool = False,
    high: float | None = None,
) -> np.ndarray:
    """Finite numbers ≥ ``low`` (and ≤ ``high``, when given);
    blank cells become NaN when ``allow_blank``, else an error.

    ``nan`` and ``inf`` written out are rejected: a trace that needs "no value" leaves the cell
    blank, so a literal NaN is more likely a broken export than a choice.
    """
    text = frame.stripped(column)
    blank = text == ""
    values = parse_numbers(text)
    bad = ~np.isfinite(values) & ~(blank & allow_blank)
    fail_at_first(
        frame,
        bad,
        path,
        column,
        lambda i: (
            f"'{column}' is blank"
            if blank[i]
            else f"'{column}' must be a number (got {frame[column][i]!r})"
        ),
    )
    if allow_blank:
        values[blank] = np.nan
    if low is not None:  # NaN compares False, so blanks pass
        with np.errstate(invalid="ignore"):
            below = values < low
        fail_at_first(
            frame,
            below,
            path,
            column,
            lambda i: f"'{column}' must be ≥ {low:g} (got {values[i]:g})",
        )
    if high is not None:
        with np.errstate(invalid="ignore"):
            above = values > high
        fail_at_first(
            frame,
            above,
            path,
            column,
            lambda i: f"'{column}' must be ≤ {high:g} (got {values[i]:g})",
        )
    return values
