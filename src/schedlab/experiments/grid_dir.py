"""A sweep's output folder that a rerun resumes instead of starting over.

A grid folder holds ``grid.json`` (the manifest: everything that defines the grid, written when
the folder is first made), one complete entry per finished run (each written atomically, so a run
either has its entry or not), and — once every run is done — the grid's tables and reports.
A sweep killed half-way therefore leaves every finished run usable, and rerunning the same
command into the same ``--out`` computes only the runs that are missing.

A rerun whose grid differs from the manifest is refused, naming the first difference, because
mixing runs of two grids in one folder would make its tables lie; ``--force`` starts the folder
over instead. The folder itself is created through :class:`schedlab.output_dir.StagedDir`, so an
unwritable ``--out`` fails before any run, and a folder that is not a schedlab output is never
replaced.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from schedlab.errors import InputError, PolicyError
from schedlab.output_dir import StagedDir
from schedlab.results import write_json

MANIFEST = "grid.json"


def _read_manifest(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _first_difference(old: Mapping[str, object], new: Mapping[str, object]) -> str:
    for key in dict.fromkeys([*new, *old]):
        if old.get(key) != new.get(key):
            return f"{key}: was {json.dumps(old.get(key))}, now {json.dumps(new.get(key))}"
    return ""


def open_grid(out: Path, manifest: Mapping[str, object], force: bool = False) -> bool:
    """Make ``out`` the folder of the grid ``manifest`` describes; True when it resumes an
    earlier run of the same grid (its finished runs are kept), False when it starts afresh.

    Refused with an InputError: a folder holding another grid (unless ``force``), and anything
    :class:`StagedDir` refuses (a file, a folder that is not a schedlab output, no permission)."""
    manifest = json.loads(json.dumps(manifest))  # as it will read back from the file
    earlier = _read_manifest(out / MANIFEST) if out.is_dir() else None
    if earlier is not None and not force:
        if earlier == manifest:
            return True
        change = _first_difference(earlier, manifest)
        raise InputError(
            f"'--out' {str(out)!r} holds a different grid ({change}); "
            "name another folder, rerun the same grid to resume it, or pass --force to start "
            "it over"
        )
    stage = StagedDir(out)  # a fresh folder with only the manifest, swapped in whole
    try:
        write_json(stage.path / MANIFEST, manifest)
        (stage.path / "config.toml").write_text("# schedlab grid (in progress)\n", "utf-8")
    except BaseException:
        stage.discard()
        raise
    stage.commit()
    return False


@contextmanager
def grid_runs(out: Path, resumed: bool) -> Iterator[None]:
    """Around the runs of a grid :func:`open_grid` just opened: when they stop on an error
    a rerun would meet again (a policy's bad answer, a bad value found in a run) before any run
    finished, a folder this sweep made is removed again, so the failed command leaves no output
    behind. A resumed folder, or one with a finished run, is kept to resume."""
    try:
        yield
    except (InputError, PolicyError):  # not a lost worker: resuming that one helps
        if not resumed and _holds_only_the_manifest(out):
            shutil.rmtree(out, ignore_errors=True)
        raise


def _holds_only_the_manifest(out: Path) -> bool:
    """``out`` has no file but what :func:`open_grid` wrote (empty folders aside)."""
    mine = {out / MANIFEST, out / "config.toml"}
    try:
        return all(p in mine or p.is_dir() for p in out.rglob("*"))
    except OSError:
        return False
