"""``schedlab trace stats`` and ``schedlab trace validate`` on small fixtures.

The command module is registered into our own parser here (the way ``schedlab.cli`` registers
every sub-command), with the same one-line error handling as ``schedlab.cli.main``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from schedlab.commands import trace
from schedlab.errors import SchedlabError

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
PHILLY = SHARED / "traces" / "philly-adaptdl" / "philly.csv"

JOBS = """job_id,submit_time,num_gpus,duration,user,deadline
a,0,1,3600,alice,
b,60,4,120,bob,600
c,90,0,50,bob,
d,120,2,0,carol,
"""


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    """Parse and run like ``schedlab.cli.main``: user errors become one line and exit code 2."""
    parser = argparse.ArgumentParser(prog="schedlab")
    sub = parser.add_subparsers(dest="command")
    trace.add_parser(sub)
    args = parser.parse_args(argv)
    try:
        code = int(args.run(args))
    except SchedlabError as exc:
        print(f"schedlab: error: {exc}", file=sys.stderr)
        code = 2
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def jobs_csv(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text(JOBS)
    return path


def test_validate_ok_reports_jobs_and_drops(jobs_csv, capsys):
    code, out, _ = run(["trace", "validate", str(jobs_csv)], capsys)
    assert code == 0
    assert out.startswith("ok: 2 jobs")
    assert "zero_gpus 1" in out and "zero_duration 1" in out

    code, out, _ = run(["trace", "validate", str(jobs_csv), "--keep-zero"], capsys)
    assert code == 0 and out.strip() == "ok: 4 jobs (generic)"

    code, out, _ = run(["trace", "validate", str(jobs_csv), "--min-duration", "200"], capsys)
    assert out.startswith("ok: 1 jobs")


def test_validate_bad_file_is_one_line_with_place(jobs_csv, capsys):
    jobs_csv.write_text(JOBS + "e,150,two,10,dave,\n")
    code, out, err = run(["trace", "validate", str(jobs_csv)], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("schedlab: error: ")
    assert f"{jobs_csv}:6" in lines[0] and "column 'num_gpus'" in lines[0]


def test_unknown_format_suggests_one(jobs_csv, capsys):
    code, _, err = run(["trace", "validate", str(jobs_csv), "--trace-format", "generik"], capsys)
    assert code == 2
    assert "did you mean 'generic'?" in err


def test_named_format_overrides_detection(jobs_csv, capsys):
    code, _, err = run(["trace", "validate", str(jobs_csv), "--trace-format", "philly"], capsys)
    assert code == 2 and "'timestamp'" in err  # read as Philly: its columns are missing


def test_bad_min_duration(jobs_csv, capsys):
    code, _, err = run(["trace", "stats", str(jobs_csv), "--min-duration", "-3"], capsys)
    assert code == 2 and "'--min-duration'" in err


def test_stats_table(jobs_csv, capsys):
    code, out, _ = run(["trace", "stats", str(jobs_csv)], capsys)
    assert code == 0
    for needle in (
        "generic",
        "jobs",
        "jobs with 4 GPU(s)",
        "with deadline",
        "run time p50",
        "dropped: zero gpus",
        "dropped: zero duration",
    ):
        assert needle in out, needle


def test_stats_json(jobs_csv, capsys):
    code, out, _ = run(["trace", "stats", str(jobs_csv), "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["format"] == "generic"
    assert data["rows"] == 4
    assert data["file"] == str(jobs_csv)
    assert data["dropped"] == {"zero_gpus": 1, "zero_duration": 1}
    stats = data["stats"]
    assert stats["jobs"] == 2
    assert stats["by_num_gpus"] == {"1": 1, "4": 1}
    assert stats["with_deadline"] == 1
    assert stats["users"] == 2
    assert stats["gpu_hours"] == pytest.approx((3600 + 4 * 120) / 3600)


def test_missing_file(tmp_path, capsys):
    code, _, err = run(["trace", "stats", str(tmp_path / "none.csv")], capsys)
    assert code == 2 and "file not found" in err


def test_trace_without_action_prints_help(capsys):
    code, _, err = run(["trace"], capsys)
    assert code == 2
    assert "stats" in err and "validate" in err


@pytest.mark.shared
def test_real_philly_validates(capsys):
    if not PHILLY.is_file():
        pytest.skip(f"{PHILLY} not found: the public traces are not beside this checkout")
    code, out, _ = run(["trace", "validate", str(PHILLY)], capsys)
    assert code == 0 and out.strip() == "ok: 82247 jobs (philly)"
    code, out, _ = run(["trace", "stats", str(PHILLY), "--json"], capsys)
    assert json.loads(out)["stats"]["by_num_gpus"]["1"] == 76_627
