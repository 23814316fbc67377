"""What every bad-input test asserts, whatever the surface: the CLI exits 2 with exactly one
``schedlab: error:`` line that names the culprit (file, table or row, key or column, value), no
traceback, and leaves no output behind."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from schedlab.cli import main

#: A small trace every replay case can run on (two jobs of 2 and 1 GPUs).
TRACE = "job_id,submit_time,num_gpus,duration\na,0,2,100\nb,10,1,50\n"


def refused(
    argv: Sequence[str],
    capsys: pytest.CaptureFixture[str],
    *needles: str,
    out: Path | None = None,
) -> str:
    """Run the CLI in this process: exit code 2, one error line holding every needle, no
    traceback, and ``out`` (when given) not created. Returns the line."""
    code = main(list(argv))
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2, err
    assert "Traceback" not in err, err
    assert len(lines) == 1, err
    assert lines[0].startswith("schedlab: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    if out is not None:
        assert not out.exists(), f"{out} was left behind"
    return lines[0]


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def replay_argv(folder: Path, *extra: str, trace: str = TRACE) -> list[str]:
    """``schedlab replay`` of :data:`TRACE` under fifo into ``folder/out``, plus ``extra``."""
    path = write(folder, "jobs.csv", trace)
    return [
        "replay",
        "--trace",
        str(path),
        "--policy",
        "fifo",
        "--out",
        str(folder / "out"),
        *extra,
    ]
