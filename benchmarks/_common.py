"""Helpers for benchmark scripts: where the public traces are, peak memory, and timing the whole
``schedlab`` command as a user runs it beside the engine alone.

Every benchmark prints what users wait for — the whole command in a fresh process (interpreter
start, imports, reading the files, the run, writing the results), wall and CPU seconds, median
of ``--repeat`` runs — beside the engine alone. CPU seconds are the figure to compare on a shared
machine: other work there stretches the wall time far more than the CPU time.
"""

from __future__ import annotations

import contextlib
import functools
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Timing:
    """Median wall and CPU (user + system) seconds over ``runs`` runs."""

    wall: float
    cpu: float
    runs: int

    def line(self, label: str) -> str:
        return f"{label}: {self.wall:.2f} s wall, {self.cpu:.2f} s CPU (median of {self.runs})"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def replay_argv(cluster: str, trace: Path | str, policy: str, *extra: str) -> list[str]:
    """The ``schedlab replay`` command line of a run (its output goes to ``run``)."""
    argv = ["replay", "--cluster", cluster, "--trace", str(trace), "--policy", policy]
    return [*argv, *extra, "--out", "run"]


@functools.cache
def compile_schedlab() -> None:
    """schedlab's modules compiled to bytecode once, as ``pip install`` leaves them, so that a
    timed process does not compile its sources first (an environment with
    ``PYTHONDONTWRITEBYTECODE`` set would otherwise recompile them in every process: 40 % of a
    195-job replay). Compiling writes the ``__pycache__`` files even under that setting."""
    import compileall

    import schedlab

    compileall.compile_dir(str(Path(schedlab.__file__).parent), quiet=1)


def time_cli(argv: Sequence[str], repeat: int = 5) -> Timing:
    """``python -m schedlab ARGV`` run ``repeat`` times, each a fresh process in a fresh
    temporary folder (relative ``--out`` paths land there); a failed run stops the benchmark.
    The package is compiled to bytecode first (:func:`compile_schedlab`)."""
    compile_schedlab()
    walls, cpus = [], []
    for _ in range(max(repeat, 1)):
        with tempfile.TemporaryDirectory(prefix="schedlab-bench-") as tmp:
            before, started = children_cpu(), time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "schedlab", *argv], cwd=tmp, capture_output=True, text=True
            )
            walls.append(time.perf_counter() - started)
            cpus.append(children_cpu() - before)
        if done.returncode != 0:
            sys.exit(f"schedlab {' '.join(argv)} failed:\n{done.stderr}")
    return Timing(statistics.median(walls), statistics.median(cpus), len(walls))


@contextlib.contextmanager
def timed(runs: list[tuple[float, float]]) -> Iterator[None]:
    """Append the (wall, CPU) seconds of the ``with`` body to ``runs``."""
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    runs.append((time.perf_counter() - wall, time.process_time() - cpu))


def median_timing(runs: list[tuple[float, float]]) -> Timing:
    return Timing(
        statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs), len(runs)
    )


def print_whole_process(what: str) -> None:
    """For a study with no single ``schedlab`` command: the whole of this benchmark's process
    (and its workers) is what its user waits for."""
    self_usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = self_usage.ru_utime + self_usage.ru_stime + children_cpu()
    wall = time.perf_counter() - _STARTED
    print(f"{what}, whole process: {wall:.1f} s wall, {cpu:.1f} s CPU (workers included)")


#: When the benchmark script started (its first import is this module).
_STARTED = time.perf_counter()
