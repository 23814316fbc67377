"""Helpers for benchmark scripts: where the public traces are, and peak memory."""

from __future__ import annotations

import contextlib
import resource
import sys
from collections.abc import Iterator
from pathlib import Path

from schedlab import __version__
from schedlab.errors import InputError
from schedlab.output_dir import StagedDir
from schedlab.results import write_config

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
OPENB = SHARED / "traces" / "alibaba-gpu-2023"


def require_openb() -> Path:
    if not OPENB.is_dir():
        sys.exit(f"benchmark needs the public trace at {OPENB} (not found)")
    return OPENB


def peak_rss_mib(children: bool = False) -> float:
    """Peak resident memory in MiB (ru_maxrss is KiB on Linux)."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024


@contextlib.contextmanager
def output_folder(out: Path, name: str, settings: dict[str, object]) -> Iterator[Path]:
    """A study's output folder, complete or absent (see ``schedlab.output_dir``), with a
    config.toml recording how it was made; an unwritable ``out`` stops the script before the
    runs start."""
    try:
        stage = StagedDir(out)
    except InputError as exc:
        sys.exit(f"error: {exc}")
    try:
        write_config(stage.path / "config.toml", settings, f"schedlab {__version__} {name}")
        yield stage.path
    except BaseException:
        stage.discard()
        raise
    stage.commit()
