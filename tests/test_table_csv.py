"""CSV without pandas: ``csv_text`` writes byte for byte what ``DataFrame.to_csv`` wrote before
(six-decimal floats, blanks for missing values, the csv module's quoting), for column dicts and
DataFrames alike; ``write_csv`` writes it atomically."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.results import write_csv
from schedlab.table_csv import csv_text


def pandas_text(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, float_format="%.6f", lineterminator="\n")


def test_hand_written_table() -> None:
    table = {
        "job": np.array(["a", "b,c", 'say "hi"'], dtype=object),
        "gpus": np.array([1, 8, 0]),
        "start": np.array([0.0, math.nan, 1.0 / 3.0]),
        "met": np.array([True, False, True]),
        "why": np.array(["", None, "line\nbreak"], dtype=object),
    }
    assert csv_text(table) == (
        "job,gpus,start,met,why\n"
        "a,1,0.000000,True,\n"
        '"b,c",8,,False,\n'
        '"say ""hi""",0,0.333333,True,"line\nbreak"\n'
    )


def test_infinities_negative_zero_and_large_values_as_pandas_writes_them() -> None:
    values = np.array([math.inf, -math.inf, -0.0, -1e-9, 1e17, 2.5e-7, 0.0000005, 123456.0000005])
    table = {"x": values, "n": np.arange(len(values))}
    assert csv_text(table) == pandas_text(pd.DataFrame(table))


def test_empty_and_single_column_tables() -> None:
    assert csv_text({"a": np.array([]), "b": np.array([], dtype=np.int64)}) == "a,b\n"
    single = {"only": np.array(["", "x", None], dtype=object)}
    assert csv_text(single) == pandas_text(pd.DataFrame(single))


text = st.text(alphabet=st.sampled_from(list('ab ,"\n\r\t;é0')), max_size=6)
cells = st.one_of(st.none(), text)


@settings(max_examples=200, deadline=None)
@given(
    floats=st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True, width=64),
            # whole numbers (written from the integer), near and beyond what int64 holds
            st.integers(-(2**60), 2**60).map(float),
            st.sampled_from([-0.0, 0.0, 2.0**53, -(2.0**53), 2.0**53 - 1, 2.0**63, 1e22]),
        ),
        min_size=1,
        max_size=8,
    ),
    data=st.data(),
)
def test_any_table_is_written_as_pandas_wrote_it(floats, data) -> None:
    n = len(floats)
    ints = data.draw(st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n))
    flags = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    words = data.draw(st.lists(cells, min_size=n, max_size=n))
    name = data.draw(text.filter(bool))
    table = {
        "f": np.array(floats, dtype=np.float64),
        name + "!": np.array(ints, dtype=np.int64),
        "b": np.array(flags),
        "t": np.array(words, dtype=object),
    }
    frame = pd.DataFrame(table)
    assert csv_text(table) == pandas_text(frame)
    assert csv_text(frame) == pandas_text(frame)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.integers(-(2**55), 2**55).map(float),
            st.floats(allow_nan=False, allow_infinity=True, width=64),
            st.just(-0.0),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_whole_and_fractional_floats_in_one_column(values: list[float]) -> None:
    """A column mixing whole numbers (written from the integer) and others, alone or beside
    another column, with and without a missing value: every cell as ``%.6f`` writes it."""
    column = np.array(values, dtype=np.float64)
    want = [_as_pandas(v) for v in values]
    assert csv_text({"x": column, "n": np.arange(len(values))}).split("\n")[1:-1] == [
        f"{w},{i}" for i, w in enumerate(want)
    ]
    gap = np.append(column, np.nan)
    lines = csv_text({"x": gap, "n": np.arange(len(gap))}).split("\n")[1:-1]
    assert lines == [f"{w},{i}" for i, w in enumerate([*want, ""])]


def _as_pandas(value: float) -> str:
    return f"{value:.6f}"  # as pandas wrote it: inf and -inf too


def test_write_csv_writes_the_text(tmp_path: Path) -> None:
    table = {"a": np.array([1.5]), "b": np.array(["x"], dtype=object)}
    write_csv(tmp_path / "t.csv", table)
    assert (tmp_path / "t.csv").read_bytes() == b"a,b\n1.500000,x\n"
