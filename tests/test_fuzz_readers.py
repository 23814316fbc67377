"""Fuzzing every trace reader and the cluster-spec parser: whatever the input, a reader either
returns something sane or raises :class:`InputError` (which the CLI prints as one line). Any other
exception is a crash a user would see as a traceback.

Three kinds of input: random bytes; CSV-ish text built from the format's own column names and a
pool of awkward cells (blank, ``nan``, ``inf``, huge, negative, dates, quotes, control
characters); and the valid samples of :mod:`trace_samples` mutated (cells replaced, text cut or
spliced, lines doubled). Sane means: no negative or non-finite times, GPU counts of a kept job
≥ 1, a deadline not before its submit time, a cluster with at least one GPU.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.errors import InputError
from schedlab.model.cluster import Cluster
from schedlab.model.pods import PodTable
from schedlab.perf.models import read_throughput_files
from schedlab.traces.cluster_spec import parse_cluster_spec, parse_compact
from schedlab.traces.job_common import MAX_SECONDS, ReadResult
from trace_samples import SAMPLES

FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

AWKWARD_CELLS = (
    "",
    " ",
    "0",
    "1",
    "-1",
    "2",
    "8",
    "1.5",
    "-0",
    "1e308",
    "1e309",
    "-1e308",
    "4e9",
    "1e-320",
    "9" * 40,
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "0x10",
    "1_000",
    "١٢",
    "abc",
    "V100",
    "T4|V100",
    "|",
    "COMPLETED",
    "2017-10-09 07:01:55",
    "1677-09-21 00:12:43",
    "2262-04-11 23:47:16",
    "9999-12-31 23:59:59",
    "0001-01-01",
    "2020-02-30 00:00:00",
    '"',
    '"a,b"',
    "\x00",
    "\t",
    "é",
)
SAMPLE_NAMES = tuple(SAMPLES)


def header_of(name: str) -> list[str]:
    return SAMPLES[name].text.splitlines()[0].split(",")


def check_sane(name: str, result: object) -> None:
    """What a reader that did not raise must have returned."""
    if isinstance(result, ReadResult):
        jobs = result.jobs
        assert len(jobs) <= result.rows
        submit = jobs.submit_time
        assert np.all(np.isfinite(submit)) and np.all(submit >= 0)
        assert np.all(submit <= MAX_SECONDS)
        keep_zero_gpus = name == "alibaba"  # only with keep_cpu_only, off by default
        assert np.all(jobs.num_gpus >= (0 if keep_zero_gpus else 1))
        duration, iterations = jobs.duration, jobs.iterations
        has_duration = np.isfinite(duration)
        assert np.all(duration[has_duration] >= 0) and np.all(duration[has_duration] <= MAX_SECONDS)
        assert not np.any(np.isinf(duration))
        assert np.all(has_duration | (np.isfinite(iterations) & (iterations > 0)))
        deadline = jobs.deadline
        dated = ~np.isnan(deadline)
        assert np.all(np.isfinite(deadline[dated])) and np.all(deadline[dated] >= submit[dated])
    elif isinstance(result, Cluster):
        assert result.size >= 1 and result.total_gpus >= 1
        assert np.all(result.num_gpus >= 0) and np.all(result.cpu_milli >= 0)
        assert np.all(result.memory_mib >= 0)
        assert np.all((result.model >= 0) | (result.num_gpus == 0))
    elif isinstance(result, PodTable):
        assert np.all(result.num_gpu >= 0) and np.all(result.cpu_milli >= 0)
        assert np.all((result.gpu_milli >= 0) & (result.gpu_milli <= 1000))
    else:
        raise AssertionError(f"{name} returned {type(result).__name__}")


def read_bytes(name: str, data: bytes) -> None:
    """Write ``data`` to a file, read it with the ``name`` reader: InputError or sane."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.csv"
        path.write_bytes(data)
        try:
            result = SAMPLES[name].read(path)
        except InputError:
            return
        check_sane(name, result)


# -- random bytes --------------------------------------------------------------------------------
@FUZZ
@given(st.sampled_from(SAMPLE_NAMES), st.binary(max_size=300))
def test_random_bytes(name: str, data: bytes) -> None:
    read_bytes(name, data)


@FUZZ
@given(st.sampled_from(SAMPLE_NAMES), st.binary(max_size=200))
def test_random_bytes_after_a_valid_header(name: str, data: bytes) -> None:
    header = SAMPLES[name].text.splitlines()[0].encode()
    read_bytes(name, header + b"\n" + data)


# -- CSV-ish text ------------------------------------------------------------------------------
@st.composite
def csv_text(draw: st.DrawFn) -> tuple[str, str]:
    name = draw(st.sampled_from(SAMPLE_NAMES))
    known = header_of(name)
    columns = draw(st.lists(st.sampled_from([*known, "extra", "user"]), min_size=1, max_size=14))
    if draw(st.booleans()):  # usually every column the format needs, in some order
        columns = draw(st.permutations(known))
    cell = st.one_of(st.sampled_from(AWKWARD_CELLS), st.text(max_size=6))
    rows = draw(
        st.lists(
            st.lists(cell, min_size=len(columns), max_size=len(columns)),
            min_size=0,
            max_size=5,
        )
    )
    lines = [",".join(columns)] + [",".join(r) for r in rows]
    return name, "\n".join(lines) + "\n"


# -- mutated valid files ---------------------------------------------------------------------------
@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str]:
    name = draw(st.sampled_from(SAMPLE_NAMES))
    lines = SAMPLES[name].text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(("cell", "cut", "splice", "double", "drop")))
        k = draw(st.integers(min(1 if kind == "cell" else 0, len(lines) - 1), len(lines) - 1))
        if kind == "cell" and k < len(lines):
            cells = lines[k].split(",")
            cells[draw(st.integers(0, len(cells) - 1))] = draw(st.sampled_from(AWKWARD_CELLS))
            lines[k] = ",".join(cells)
        elif kind == "cut":
            lines[k] = lines[k][: draw(st.integers(0, len(lines[k])))]
        elif kind == "splice":
            at = draw(st.integers(0, len(lines[k])))
            lines[k] = lines[k][:at] + draw(st.text(max_size=4)) + lines[k][at:]
        elif kind == "double":
            lines.insert(k, lines[k])
        elif len(lines) > 1:
            del lines[k]
    return name, "\n".join(lines) + "\n"


@settings(FUZZ, max_examples=200)
@given(st.one_of(csv_text(), mutated()))
def test_csvish_text_and_mutated_valid_files(case: tuple[str, str]) -> None:
    name, text = case
    read_bytes(name, text.encode("utf-8", "surrogatepass"))


@given(st.sampled_from(SAMPLE_NAMES))
@settings(max_examples=len(SAMPLES), deadline=None)
def test_samples_themselves_are_sane(name: str) -> None:
    # The base of the mutations reads, and passes the same sanity checks.
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.csv"
        path.write_text(SAMPLES[name].text)
        check_sane(name, SAMPLES[name].read(path))


# -- cluster specs -------------------------------------------------------------------------------
COMPACT_PIECES = ("x", ":", "+", "0", "1", "8", "64", "65", "V100", "T4", "A100", "GPU", "-", " ")


def check_cluster(spec: str) -> None:
    try:
        cluster = parse_compact(spec)
    except InputError:
        return
    check_sane("cluster", cluster)


@FUZZ
@given(st.lists(st.sampled_from(COMPACT_PIECES), max_size=12).map("".join))
def test_compact_cluster_specs(spec: str) -> None:
    check_cluster(spec)


@FUZZ
@given(st.text(max_size=30))
def test_any_text_as_a_compact_cluster_spec(spec: str) -> None:
    check_cluster(spec)


#: Values per key, mostly near the edges of what is allowed (and some of the wrong type).
TOML_VALUES = {
    "count": ("1", "2", "0", "-1", "1000000", "1000001", "1e3", "true", '"4"'),
    "gpus": ("0", "1", "8", "64", "65", "-1", "1000000000", "2.0"),
    "model": ('"V100"', '"T4"', '"Z9"', '""', "1", "[]"),
    "cpu_cores": ("8", "0.5", "0.0001", "1e-300", "0", "-1", "inf", "nan", "-inf", "1e308"),
    "memory_gib": ("64", "0.001", "1e-300", "0", "inf", "nan", "1e308", "1e12"),
    "name_prefix": ('"n-"', '""', "3", "{}"),
    "nodes_per_rack": ("1", "4", "0", "-2", "true", "1.5", "1000000000000"),
    "other": ("1",),
}


@st.composite
def toml_text(draw: st.DrawFn) -> str:
    def line(key: str) -> str:
        return f"{key} = {draw(st.sampled_from(TOML_VALUES[key]))}"

    lines = [line("nodes_per_rack")] if draw(st.booleans()) else []
    if draw(st.integers(0, 9)) == 0:
        lines.append(draw(st.sampled_from(("nodes = [1, 2]", "nodes = 3", "nodes = []"))))
    for _ in range(draw(st.integers(0 if lines else 1, 3))):
        lines.append("[[nodes]]")
        lines += [line("count"), line("gpus")]  # the two a table needs, mostly valid
        optional = ("model", "cpu_cores", "memory_gib", "name_prefix", "other")
        keys = draw(st.lists(st.sampled_from(optional), max_size=3, unique=True))
        lines += [line(key) for key in keys if key != "other" or draw(st.integers(0, 9)) == 0]
    text = "\n".join(lines) + "\n"
    if draw(st.integers(0, 4)) == 0:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(max_size=5)) + text[at:]
    return text


def read_toml(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cluster.toml"
        path.write_bytes(data)
        try:
            cluster = parse_cluster_spec(str(path))
        except InputError:
            return
        check_sane("cluster", cluster)


@FUZZ
@given(toml_text())
def test_cluster_toml_files(text: str) -> None:
    read_toml(text.encode())


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_as_a_cluster_file(data: bytes) -> None:
    read_toml(data)


# -- throughput tables -----------------------------------------------------------------------------
TABLE_SAMPLE = "global_batch_size,1,2,4,8\n64,10.5,18,30,\n128,6,12,nan,0\n"
TABLE_CELLS = ("", "0", "-1", "1", "3.5", "nan", "inf", "1e400", "x", "01", "٣", "64", "1e3", "-0")


@st.composite
def table_text(draw: st.DrawFn) -> str:
    rows = [line.split(",") for line in TABLE_SAMPLE.splitlines()]
    for _ in range(draw(st.integers(1, 4))):
        r = draw(st.integers(0, len(rows) - 1))
        rows[r][draw(st.integers(0, len(rows[r]) - 1))] = draw(st.sampled_from(TABLE_CELLS))
    text = "\n".join(",".join(row) for row in rows) + "\n"
    if draw(st.integers(0, 3)) == 0:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(max_size=4)) + text[at:]
    return text


@FUZZ
@given(st.one_of(table_text().map(str.encode), st.binary(max_size=120)))
def test_throughput_tables(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "bert.csv").write_bytes(data)
        try:
            table, measured = read_throughput_files(folder)
        except InputError:
            return
    for (model, batch), curve in table.items():
        assert model == "bert" and isinstance(batch, int)
        assert all(n > 0 and n in measured["bert"] for n in curve)
        assert all(math.isfinite(v) and v > 0 for v in curve.values())
