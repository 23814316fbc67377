"""``schedlab report`` refuses run folders it cannot trust: values a run never writes (``inf``,
``nan``, negative times), rows cut short, missing columns, a summary that disagrees with jobs.csv.
Each is one ``schedlab: error:`` line naming the file and line, exit code 2, and no report."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from schedlab.cli import main

TRACE = "job_id,submit_time,num_gpus,duration,user\na,0,2,100,u1\nb,1,4,50,u2\nc,2,1,10,u1\n"


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("run")
    (root / "t.csv").write_text(TRACE)
    argv = ["replay", "--cluster", "1x4:V100", "--trace", str(root / "t.csv"), "--policy"]
    assert main([*argv, "fifo", "--out", str(root / "fifo")]) == 0
    return root / "fifo"


def copy_run(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for name in ("jobs.csv", "timeseries.csv", "summary.json", "config.toml"):
        (dst / name).write_bytes((src / name).read_bytes())
    return dst


def set_cell(path: Path, line: int, column: str, value: str) -> None:
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[line - 1].split(",")
    cells[header.index(column)] = value
    lines[line - 1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


def repeat_column(path: Path, column: str) -> None:
    lines = path.read_text().splitlines()
    k = lines[0].split(",").index(column)
    path.write_text("\n".join(f"{line},{line.split(',')[k]}" for line in lines) + "\n")


def set_field(path: Path, key: str, value: str) -> None:
    """summary.json with ``key``'s number replaced by the text ``value``."""
    text, count = re.subn(rf'("{key}": )[-0-9.e+]+', rf"\g<1>{value}", path.read_text())
    assert count == 1
    path.write_text(text)


def test_the_good_run_reports(good_run: Path, tmp_path: Path) -> None:
    assert main(["report", str(good_run), "--out", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").stat().st_size > 0


def refused(
    good_run: Path, run: Path, message: str, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Report on the good run and ``run``: exit 2, one error line with ``message`` and
    ``where``, and no report (nor a temporary file) beside it."""
    out = run.parent / "report.html"
    capsys.readouterr()
    assert main(["report", str(good_run), str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("schedlab: error: ")
    assert message in err[0], err[0]
    assert where in err[0], err[0]
    assert not out.exists()
    assert list(run.parent.glob(".report.html*")) == []


CELL_CASES = [  # (file, line, column, value written there, message)
    ("jobs.csv", 3, "end_time", "inf", "'end_time' must be a number (got 'inf')"),
    ("jobs.csv", 2, "jct", "nan", "'jct' must be a number (got 'nan')"),
    ("jobs.csv", 4, "jct", "-5", "'jct' must be ≥ 0 (got -5)"),
    (
        "jobs.csv",
        3,
        "end_time",
        "0.5",
        "would end before it was submitted (0.5 < 1): a negative JCT",
    ),
    ("jobs.csv", 2, "start_time", "-1", "'start_time' must be ≥ 0 (got -1)"),
    ("jobs.csv", 4, "status", "exploded", "unknown status 'exploded'"),
    ("timeseries.csv", 2, "busy_gpus", "9", "more busy GPUs than the cluster has (9 > 4)"),
    ("timeseries.csv", 3, "time", "inf", "'time' must be a number (got 'inf')"),
]


SUMMARY_CASES = [  # (key, number written as, message, whether the key's line is named)
    ("makespan", "NaN", "NaN is not a number (JSON has no NaN or Infinity)", True),
    ("makespan", "Infinity", "Infinity is not a number", True),
    ("avg_jct", "-90", "summary field 'avg_jct' is -90", True),
    ("completed", "2", "summary says completed = 2 but jobs.csv has 3 completed jobs", False),
    ("jobs", "100", "summary says jobs = 100 but jobs.csv has 3 rows", False),
]


def cut_short(path: Path) -> None:
    path.write_text(path.read_text()[:-40])


def without_last_columns(path: Path) -> None:
    lines = path.read_text().split("\n")
    path.write_text("\n".join(line.rsplit(",", 6)[0] for line in lines))


def header_only(path: Path) -> None:
    path.write_text(path.read_text().splitlines()[0] + "\n")


SHAPE_CASES = [  # (file, how it is broken, message, file named with its line)
    ("jobs.csv", cut_short, "row has 13 fields but the header has 16", "jobs.csv:4"),
    ("jobs.csv", without_last_columns, "missing column(s) 'status'", "jobs.csv:1"),
    ("jobs.csv", header_only, "summary says jobs = 3 but jobs.csv has 0 rows", "summary.json"),
    (
        "jobs.csv",
        lambda p: repeat_column(p, "submit_time"),
        "'submit_time' appears twice",
        "jobs.csv:1",
    ),
    ("timeseries.csv", cut_short, "fields but the header has", "timeseries.csv:"),
    ("summary.json", cut_short, "not valid JSON", "summary.json:"),
]


def key_line(path: Path, key: str) -> int:
    text = path.read_text()
    return text[: text.index(f'"{key}":')].count("\n") + 1


Breaks = Callable[[Path], None]
Where = Callable[[Path], str]
CASES: list[tuple[Breaks, str, Where]] = [
    *(
        (
            lambda run, f=f, n=n, c=c, v=v: set_cell(run / f, n, c, v),
            message,
            lambda run, f=f, n=n, c=c: f"{run / f}:{n}, column '{c}'",
        )
        for f, n, c, v, message in CELL_CASES
    ),
    *(
        (
            lambda run, k=k, v=v: set_field(run / "summary.json", k, v),
            message,
            lambda run, k=k, named=named: (
                f"{run / 'summary.json'}:{key_line(run / 'summary.json', k)}"
                if named
                else str(run / "summary.json")
            ),
        )
        for k, v, message, named in SUMMARY_CASES
    ),
    *(
        (lambda run, f=f, b=b: b(run / f), message, lambda run, w=w: str(run / w))
        for f, b, message, w in SHAPE_CASES
    ),
]


@pytest.mark.parametrize(("breaks", "message", "where"), CASES, ids=[c[1] for c in CASES])
def test_untrustworthy_folder_is_refused(
    breaks: Breaks,
    message: str,
    where: Where,
    good_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = copy_run(good_run, tmp_path / "bad")
    breaks(run)
    refused(good_run, run, message, where(run), capsys)


def test_summary_values_the_replay_writes_are_all_accepted(good_run: Path) -> None:
    # The checks hold every field replay writes: none negative, none NaN or infinite.
    summary = json.loads((good_run / "summary.json").read_text())
    numbers = [
        v for v in summary.values() if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    assert numbers and all(v >= 0 for v in numbers)
    assert summary["jobs"] == 3 and summary["completed"] == 3
