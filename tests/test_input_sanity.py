"""Values that parse but make no sense, through the CLI: each is refused in one line that says
where (file, line, column, or the option) and what, with exit code 2 and no output written; or,
where a user may mean it (throughput tables that do not cover every job), the run goes on after a
one-line warning."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from schedlab.cli import main
from trace_samples import JOB_FORMATS, SAMPLES

TRACE = "job_id,submit_time,num_gpus,duration\na,0,2,100\nb,10,1,50\n"
CENTURY_PLUS = "4e9"  # seconds: 127 years
LATE_DATE = "2150-01-01 00:00:00"


def with_cell(text: str, line: int, column: str, value: str) -> str:
    """``text`` (a CSV file) with the cell at editor line ``line`` of ``column`` set to
    ``value``."""
    rows = list(csv.reader(io.StringIO(text)))
    rows[line - 1][rows[0].index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def with_column_twice(text: str, column: str) -> str:
    """``text`` with ``column`` repeated at the end of every row (header included)."""
    rows = list(csv.reader(io.StringIO(text)))
    k = rows[0].index(column)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([*row, row[k]] for row in rows)
    return out.getvalue()


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    """Run the CLI, expect exit 2 and one ``schedlab: error:`` line holding every needle."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("schedlab: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def replay_argv(tmp_path: Path, trace: Path, *extra: str, cluster: str = "1x4:V100") -> list[str]:
    argv = ["replay", "--cluster", cluster, "--trace", str(trace), "--policy", "fifo"]
    return [*argv, "--out", str(tmp_path / "out"), *extra]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text(TRACE)
    return path


# -- options -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--slot", "inf"], "'--slot' must be ≥ 0.001 seconds and finite (got inf)"),
        (["--slot", "nan"], "'--slot' must be"),
        (["--slot", "0"], "'--slot' must be"),
        (["--slot=-60"], "'--slot' must be"),
        (["--slot", "1e-300"], "'--slot' must be ≥ 0.001 seconds"),
        (["--restart-overhead", "inf"], "'--restart-overhead' must be ≥ 0 seconds and finite"),
        (["--resize-overhead", "nan"], "'--resize-overhead' must be ≥ 0 seconds and finite"),
        (["--speed", "T4=0"], "speed factor for T4 must be > 0 (got 0)"),
        (["--speed", "T4=-0.5"], "speed factor for T4 must be > 0"),
        (["--speed", "T4=nan"], "speed factor for T4 must be > 0 (got nan)"),
        (["--speed", "T4=inf"], "speed factor for T4 must be > 0 (got inf)"),
        (["--speed", "Z99=1"], "unknown GPU model 'Z99'"),
        (["--speed", "T4=0.5,T4=0.4"], "speed factor for T4 is given twice"),
        (["--throughputs-fallback", "linear"], "'--throughputs-fallback' needs '--throughputs'"),
    ],
)
def test_replay_options_that_make_no_sense(
    extra: list[str], needle: str, trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused(replay_argv(tmp_path, trace, *extra), capsys, needle)
    assert not (tmp_path / "out").exists()


def test_speed_for_a_model_the_cluster_lacks_is_a_warning(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Harmless but most likely a slip (a typo'd cluster, a factor meant for another run): the
    # run goes on and says so in one line; a factor the cluster uses says nothing.
    argv = replay_argv(tmp_path, trace, "--speed", "T4=0.5,V100=1", cluster="1x4:V100+1x4:A100")
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    warnings = [line for line in err if line.startswith("schedlab: warning: ")]
    assert warnings == [
        "schedlab: warning: '--speed' names T4, which the cluster '1x4:V100+1x4:A100' has none of"
    ]
    assert (tmp_path / "out" / "summary.json").is_file()
    argv = replay_argv(tmp_path / "again", trace, "--speed", "A100=2", cluster="1x4:V100+1x4:A100")
    assert main(argv) == 0
    assert "warning" not in capsys.readouterr().err


def test_sweep_restart_overhead_must_be_finite(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", "--cluster", "1x4:V100", "--traces", str(trace), "--policies", "fifo"]
    argv += ["--restart-overhead", "inf", "--out", str(tmp_path / "out")]
    refused(argv, capsys, "'--restart-overhead' must be ≥ 0 seconds and finite (got inf)")
    assert not (tmp_path / "out").exists()


def test_serve_interval_must_be_finite(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["serve", "slurm", "--policy", "fifo", "--interval", "inf"]
    refused(argv, capsys, "'--interval' must be > 0 seconds and finite (got inf)")


# -- clusters ----------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["0x8", "4x0", "4x8:V100+0x8:T4"])
def test_compact_cluster_without_gpus(
    spec: str, trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused(replay_argv(tmp_path, trace, cluster=spec), capsys, "needs 1..1000000 nodes of 1..64")


def test_node_list_whose_gpus_sum_to_zero(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,1024,0,\nn1,32000,1024,0,\n")
    argv = replay_argv(tmp_path, trace, cluster=str(nodes))
    refused(argv, capsys, "no node has a GPU", f"{nodes}, column 'gpu'")
    pods = tmp_path / "pods.csv"
    pods.write_text(SAMPLES["openb-pods"].text)
    argv = ["pack", "--nodes", str(nodes), "--pods", str(pods), "--policy", "fgd"]
    refused([*argv, "--out", str(tmp_path / "pack")], capsys, "no node has a GPU")
    assert not (tmp_path / "pack").exists()


def test_cluster_file_whose_gpus_sum_to_zero(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "cluster.toml"
    toml.write_text("[[nodes]]\ncount = 4\ngpus = 0\n\n[[nodes]]\ncount = 2\ngpus = 0\n")
    refused(replay_argv(tmp_path, trace, cluster=str(toml)), capsys, "no node has a GPU", str(toml))


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("[[nodes]]\ncount = 1\ngpus = 8\ncpu_cores = inf\n", "'cpu_cores' in [[nodes]] #1"),
        ("[[nodes]]\ncount = 1\ngpus = 8\nmemory_gib = nan\n", "'memory_gib' in [[nodes]] #1"),
        ("[[nodes]]\ncount = 1\ngpus = 8\ncpu_cores = 1e-300\n", "must be a number in 0.001.."),
        ("[[nodes]]\ncount = 1\ngpus = 1000000000\n", "'gpus' in [[nodes]] #1 must be"),
        ("[[nodes]]\ncount = 2000000\ngpus = 8\n", "'count' in [[nodes]] #1 must be"),
        ("nodes = [1, 2]\n", "[[nodes]] #1 must be a table (got 1)"),
        ("nodes_per_rack = true\n[[nodes]]\ncount = 1\ngpus = 8\n", "'nodes_per_rack'"),
        ("[[nodes]]\ncount = 1\ngpus = 8\nmodel = 3\n", "'model' in [[nodes]] #1 must be a"),
        ("[[nodes]]\ncount = 1\ngpus = 8\n\udcff", "not a UTF-8 text file"),
    ],
)
def test_cluster_file_values_out_of_range(
    body: str, needle: str, trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "cluster.toml"
    toml.write_bytes(body.encode("utf-8", "surrogateescape"))
    refused(replay_argv(tmp_path, trace, cluster=str(toml)), capsys, needle, str(toml))


# -- times in every job-trace reader ---------------------------------------------------------------
#: Cells set beyond a century, by format: (line, column); date-time columns get a date.
CENTURY_CELLS = {
    "philly": ((2, "duration"), (3, "timestamp")),
    "elasticflow-itp": ((2, "duration"), (2, "deadline")),
    "elasticflow": ((3, "duration"), (2, "ddl")),
    "alibaba": ((2, "deletion_time"),),
    "helios": ((2, "end_time"), (3, "submit_time")),
    "generic": ((2, "duration"), (2, "submit_time"), (3, "deadline")),
}
DATE_COLUMNS = {("philly", "timestamp"), ("helios", "end_time"), ("helios", "submit_time")}
#: Cells set negative or non-finite, by format.
SIGN_CELLS = {
    "generic": ((2, "duration"), (3, "submit_time")),
    "elasticflow": ((2, "duration"),),
    "elasticflow-itp": ((3, "submission_time"),),
    "alibaba": ((2, "creation_time"),),
    "philly": ((2, "duration"),),
}
BEYOND = "beyond 100 years"
TIME_CASES = [
    (fmt, line, column, LATE_DATE if (fmt, column) in DATE_COLUMNS else CENTURY_PLUS, BEYOND)
    for fmt, cells in CENTURY_CELLS.items()
    for line, column in cells
] + [
    (fmt, line, column, value, "")
    for value in ("-5", "nan", "inf", "-inf")
    for fmt, cells in SIGN_CELLS.items()
    for line, column in cells
]


@pytest.mark.parametrize(("fmt", "line", "column", "value", "message"), TIME_CASES)
def test_bad_times_are_refused(
    fmt: str,
    line: int,
    column: str,
    value: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Negative, NaN or infinite times, and times beyond a century (a unit mix-up), in every
    # reader: the line and the file column the value came from are named.
    path = tmp_path / f"{fmt}.csv"
    path.write_text(with_cell(SAMPLES[fmt].text, line, column, value))
    argv = ["trace", "validate", str(path), "--trace-format", fmt]
    refused(argv, capsys, message, f"{path}:{line}", f"column '{column}'")


@pytest.mark.parametrize("fmt", JOB_FORMATS)
def test_every_sample_reads(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The base the cases above change one cell of: valid as it stands.
    path = tmp_path / f"{fmt}.csv"
    path.write_text(SAMPLES[fmt].text)
    assert main(["trace", "validate", str(path), "--trace-format", fmt]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


# -- duplicated header columns -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fmt", "column"),
    [
        ("philly", "duration"),
        ("elasticflow-itp", "num_gpu"),
        ("elasticflow", "ddl"),
        ("alibaba", "deletion_time"),
        ("helios", "gpu_num"),
        ("generic", "duration"),
    ],
)
def test_trace_with_a_column_twice(
    fmt: str, column: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"{fmt}.csv"
    path.write_text(with_column_twice(SAMPLES[fmt].text, column))
    argv = ["trace", "validate", str(path), "--trace-format", fmt]
    refused(argv, capsys, f"column {column!r} appears twice", f"{path}:1")


def test_node_and_pod_lists_with_a_column_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(with_column_twice(SAMPLES["openb-nodes"].text, "gpu"))
    pods.write_text(SAMPLES["openb-pods"].text)
    argv = ["pack", "--nodes", str(nodes), "--pods", str(pods), "--policy", "fgd", "--out"]
    refused([*argv, str(tmp_path / "a")], capsys, "column 'gpu' appears twice", f"{nodes}:1")
    nodes.write_text(SAMPLES["openb-nodes"].text)
    pods.write_text(with_column_twice(SAMPLES["openb-pods"].text, "num_gpu"))
    refused([*argv, str(tmp_path / "b")], capsys, "column 'num_gpu' appears twice", f"{pods}:1")


@pytest.mark.parametrize(
    ("table", "needle", "line"),
    [
        (b"global_batch_size,1,2,2\n64,10,18,19\n", "column '2' appears twice", 1),
        (b"global_batch_size,1,2,02\n64,10,18,19\n", "GPU-count column '02' repeats '2'", 1),
        (b"global_batch_size,1,\xd9\xa3\n64,10,18\n", "is not a positive whole number", 1),
        (b"global_batch_size,1,2\n64,10,18\n64,11,19\n", "batch size 64 has a row already", 3),
        (b"global_batch_size,1,2\n0,10,18\n", "'global_batch_size' must be ≥ 1 (got 0)", 2),
        (b"global_batch_size,1,2\n1e400,10,18\n", "'global_batch_size' must be a whole", 2),
        (b"\x80global_batch_size,1\n64,1\n", "not a UTF-8 text file", None),
    ],
)
def test_throughput_table_that_makes_no_sense(
    table: bytes,
    needle: str,
    line: int | None,
    trace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "bert.csv").write_bytes(table)
    argv = replay_argv(tmp_path, trace, "--throughputs", str(tables))
    where = str(tables / "bert.csv") + ("" if line is None else f":{line}")
    refused(argv, capsys, needle, where)
    assert not (tmp_path / "out").exists()


# -- throughput tables never fall back silently ----------------------------------------------------
TABLE = "global_batch_size,1,2,4\n64,10,20,\n128,6,12,24\n"
# 1000 iterations each: a at 10 it/s on 1 GPU (100 s), b at 24 it/s on 4 GPUs (41.67 s).
COVERED = "job_id,submit_time,num_gpus,duration,iterations,model_name,batch_size\n" + (
    "a,0,1,,1000,bert,64\nb,0,4,,1000,bert,128\n"
)


@pytest.fixture
def tables(tmp_path: Path) -> Path:
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "bert.csv").write_text(TABLE)
    return folder


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("c,5,2,300,1000,gpt2,64", "job 'c', which model 'gpt2' is not in the tables"),
        ("c,5,2,300,1000,bert,32", "job 'c', which batch size 32 has no row in the table of"),
        ("c,5,4,300,1000,bert,64", "job 'c', which the table of 'bert' has no value for batch 64"),
        ("c,5,2,300,,,", "job 'c', which names no model_name"),
        ("c,5,2,300,,bert,64", "job 'c', which gives a duration but no iterations"),
    ],
)
def test_jobs_the_tables_do_not_cover(
    row: str,
    reason: str,
    tables: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(COVERED + row + "\n")
    argv = replay_argv(tmp_path, path, "--throughputs", str(tables))
    refused(argv, capsys, "1 of 3 jobs are not covered by the throughput tables", reason, str(path))
    assert not (tmp_path / "out").exists()
    # With the fallback the run goes on: one warning line, and c runs its 300 s trace duration
    # scaled linearly (it asked for 2 GPUs and gets them: 300 s).
    assert main([*argv, "--throughputs-fallback", "linear"]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("schedlab: warning: ")]
    assert len(warnings) == 1, err
    assert "1 of 3 jobs are not covered" in warnings[0]
    assert "they run on linear scaling of their trace duration" in warnings[0]
    with open(tmp_path / "out" / "jobs.csv", newline="") as fh:
        rows = {r["job_id"]: r for r in csv.DictReader(fh)}
    ran = {k: float(r["end_time"]) - float(r["start_time"]) for k, r in rows.items()}
    assert ran["a"] == pytest.approx(100.0)
    assert ran["b"] == pytest.approx(1000 / 24)
    assert ran["c"] == pytest.approx(300.0)
    config = (tmp_path / "out" / "config.toml").read_text()
    assert 'throughputs_fallback = "linear"' in config


def test_covered_jobs_run_without_a_warning(
    tables: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(COVERED)
    assert main(replay_argv(tmp_path, path, "--throughputs", str(tables))) == 0
    assert "warning" not in capsys.readouterr().err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["completed"] == 2


def test_iterations_only_job_off_the_tables_cannot_fall_back(
    tables: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Linear scaling needs a trace duration; a job given only as iterations has none.
    path = tmp_path / "jobs.csv"
    path.write_text(COVERED + "c,5,2,,1000,gpt2,64\n")
    argv = replay_argv(tmp_path, path, "--throughputs", str(tables), "--throughputs-fallback")
    assert main([*argv, "linear"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("schedlab: warning: 1 of 3 jobs")
    assert err[1].startswith("schedlab: error: job 'c' has no duration to replay")
    assert len(err) == 2
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("date", ["1677-09-21 00:12:43", "0001-01-01 00:00:00", "9999-12-31"])
@pytest.mark.parametrize(("fmt", "column"), [("philly", "timestamp"), ("helios", "submit_time")])
def test_dates_far_from_now_are_refused_not_crashed_on(
    fmt: str, column: str, date: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Dates the parser takes (years 1..9999) but nanosecond arithmetic cannot hold: seconds
    # since the epoch are still computed, and a trace spanning them is beyond a century.
    path = tmp_path / f"{fmt}.csv"
    path.write_text(with_cell(SAMPLES[fmt].text, 2, column, date))
    argv = ["trace", "validate", str(path), "--trace-format", fmt]
    refused(argv, capsys, BEYOND, f"column '{column}'")
