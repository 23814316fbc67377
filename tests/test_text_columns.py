"""Reading cells without pandas: numbers and date-times come out as pandas read them before
(``to_numeric(errors="coerce")``, ``to_datetime(format="ISO8601", utc=True)``), so every trace
keeps its values to the last bit."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.traces.columns import TextTable, _split_csv, _split_plain, parse_numbers
from schedlab.traces.job_common import datetime_seconds


def pandas_numbers(cells: list[str]) -> np.ndarray:
    return pd.to_numeric(pd.Series(cells, dtype=object), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan
    )


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal, NaN where NaN, and the same sign of zero."""
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(both_nan | ((a == b) & (np.signbit(a) == np.signbit(b)))))


def test_hand_picked_cells() -> None:
    cells = ["1", "-2.5", "1e3", "inf", "-inf", "nan", "1_000", "١٢", "0x10", "", "abc", "+7"]
    got = parse_numbers(np.array(cells, dtype=object))
    assert same(got, pandas_numbers(cells))
    assert got[0] == 1.0 and got[2] == 1000.0 and np.isnan(got[6]) and np.isnan(got[7])


def test_negative_zero_depends_on_the_column_as_in_pandas() -> None:
    whole = ["-0", "3", "4"]  # a column of integers: -0 is 0
    mixed = ["-0", "3.5", "4"]  # read as floats: -0.0 keeps its sign
    for cells in (whole, mixed):
        assert same(parse_numbers(np.array(cells, dtype=object)), pandas_numbers(cells))


number_text = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**20), 10**20).map(str),
    st.text(alphabet=st.sampled_from(list("0123456789.-+eE_xainf ")), max_size=8),
)


@settings(max_examples=300, deadline=None)
@given(cells=st.lists(number_text.map(str.strip), min_size=1, max_size=10))
def test_any_cells_read_as_pandas_reads_them(cells: list[str]) -> None:
    assert same(parse_numbers(np.array(cells, dtype=object)), pandas_numbers(cells))


def table(cells: list[str]) -> TextTable:
    return TextTable({"t": np.array(cells, dtype=object)}, np.arange(2, len(cells) + 2))


def pandas_seconds(cells: list[str]) -> np.ndarray:
    parsed = pd.to_datetime(pd.Series(cells), format="ISO8601", errors="coerce", utc=True)
    whole = parsed.dt.tz_localize(None).to_numpy(dtype="datetime64[s]").astype(np.int64)
    fraction = parsed.dt.microsecond.to_numpy(dtype=np.float64, na_value=0.0) / 1e6
    return np.where(parsed.isna().to_numpy(), np.nan, whole + fraction)


def test_date_times_read_as_pandas_reads_them() -> None:
    cells = [
        "2017-10-09 07:01:55",
        "2017-10-09T07:01:55",
        "2017-10-09 07:01:55.250",
        "2017-10-09 07:01:55+02:00",
        "2017-10-09",
        "1970-01-01 00:00:00",
        "2262-04-11 23:47:16",
    ]
    got = datetime_seconds(table(cells), "t", "x.csv")
    assert same(got, pandas_seconds(cells))


@settings(max_examples=200, deadline=None)
@given(
    seconds=st.integers(0, 253_402_300_799),
    micro=st.integers(0, 999_999),
    offset=st.integers(-14 * 60, 14 * 60),
)
def test_any_date_time_reads_as_pandas_reads_it(seconds: int, micro: int, offset: int) -> None:
    when = pd.Timestamp(seconds, unit="s") + pd.Timedelta(microseconds=micro)
    text = when.strftime("%Y-%m-%d %H:%M:%S.%f")
    sign = "+" if offset >= 0 else "-"
    zoned = text + f"{sign}{abs(offset) // 60:02d}:{abs(offset) % 60:02d}"
    got = datetime_seconds(table([text, zoned]), "t", "x.csv")
    assert same(got, pandas_seconds([text, zoned]))


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab ,\n\t\u2028\x0b1")), max_size=40))
def test_plain_split_reads_what_the_csv_module_reads(text: str) -> None:
    """Text without quotes or carriage returns is split at commas and line ends without the csv
    module: header, cells by column and editor lines as the csv module gives them, blank lines
    (and lines of blank cells) skipped, a blank first line read as a header of no cells, and
    the first row of another width than the header's named."""
    header, columns, lines, misfit = _split_plain(text)
    want = _split_csv(text)
    assert (header, [list(c) for c in columns], list(lines), misfit) == want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("a1 \t\x1c\x85\u2028\u3000é")), max_size=6)))
def test_stripped_cells_are_str_strip(cells: list[str]) -> None:
    """A column without white space is kept as written; any other is stripped cell by cell
    (ASCII and Unicode white space alike, as ``str.strip`` removes it)."""
    column = np.empty(len(cells), dtype=object)
    column[:] = cells
    table = TextTable({"c": column}, np.arange(2, len(cells) + 2))
    assert table.stripped("c").tolist() == [c.strip() for c in cells]
