"""Run one study of the catalog into its own folder and write its table.

``OUT/NAME/`` holds what the study writes (traces, figures, its own tables), ``checks.csv`` (one
row per published figure: published, ours, tolerance, verdict, gated) and ``table.md`` (the
README's table). The folder is complete or absent (see :mod:`schedlab.output_dir`).
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

from schedlab import __version__
from schedlab.errors import InputError
from schedlab.output_dir import StagedDir
from schedlab.reproduce.catalog import BY_NAME, Study, load
from schedlab.reproduce.checks import Reproduction
from schedlab.reproduce.context import Progress, Quiet, StudyContext

#: checks.csv's columns.
CHECK_COLUMNS = (
    "what",
    "published",
    "ours",
    "tolerance",
    "verdict",
    "gated",
    "kind",
    "published_value",
    "ours_value",
)


def study_named(name: str) -> Study:
    if name not in BY_NAME:
        raise InputError(f"unknown study {name!r} (known: {', '.join(BY_NAME)})")
    return BY_NAME[name]


def run_study(
    study: Study,
    shared: Path,
    out: Path,
    *,
    quick: bool = False,
    workers: int = 2,
    progress: Progress | None = None,
) -> Reproduction:
    """Run ``study`` into ``out`` (its folder, replaced whole) and return its result."""
    missing = study.missing(shared)
    if missing is not None:
        raise InputError(f"study {study.name!r} needs {missing} (not found)")
    stage = StagedDir(out)
    try:
        _write_config(stage.path, study, shared, quick, workers)
        ctx = StudyContext(shared, stage.path, quick, workers, progress or Quiet())
        started = time.perf_counter()
        result: Reproduction = load(study)(ctx)
        result.seconds = time.perf_counter() - started
        result.quick = quick
        write_checks(stage.path / "checks.csv", result)
        (stage.path / "table.md").write_text(result.markdown())
    except BaseException:
        stage.discard()
        raise
    stage.commit()
    return result


def write_checks(path: Path, result: Reproduction) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(CHECK_COLUMNS)
        for c in result.checks:
            writer.writerow([getattr(c, k) for k in CHECK_COLUMNS])


def _write_config(folder: Path, study: Study, shared: Path, quick: bool, workers: int) -> None:
    from schedlab.results import write_config

    settings = {"study": study.name, "quick": quick, "workers": workers, "shared": str(shared)}
    write_config(folder / "config.toml", settings, f"schedlab {__version__} reproduce")
