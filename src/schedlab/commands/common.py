"""Pieces several sub-commands share: argument parsing helpers, the console, progress bars."""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import sys
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from schedlab.errors import InputError
from schedlab.input_files import read_text

T = TypeVar("T")
R = TypeVar("R")

#: Human-facing output goes to stderr so stdout stays clean for tables a script may parse.
#: Wide enough for the comparison tables when the output is a file or a pipe (rich assumes 80).
PIPE_WIDTH = 120
console = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else PIPE_WIDTH)
stdout = Console(highlight=False, width=None if sys.stdout.isatty() else PIPE_WIDTH)

MAX_SEEDS = 10_000
_SEED_PART = re.compile(r"(\d+)(?:-(\d+))?")


def parse_seeds(text: str) -> list[int]:
    """``42-51`` (inclusive), ``1,5,9``, ``7``, or a mix like ``1-3,10``; duplicates dropped."""
    seeds: list[int] = []
    for part in text.split(","):
        match = _SEED_PART.fullmatch(part.strip())
        if match is None or (match[2] is not None and int(match[2]) < int(match[1])):
            raise InputError(f"'--seeds' must look like 42-51, 1,2,3 or 7 (got {text!r})")
        lo = int(match[1])
        hi = int(match[2]) if match[2] is not None else lo
        if len(seeds) + hi - lo + 1 > MAX_SEEDS:
            raise InputError(f"'--seeds' names more than {MAX_SEEDS} seeds (got {text!r})")
        seeds.extend(range(lo, hi + 1))
    return list(dict.fromkeys(seeds))


def check_inflate(value: float) -> float:
    if not math.isfinite(value) or value <= 0 or value > 100:
        raise InputError(f"'--inflate' must be in (0, 100] (got {value})")
    return value


def add_plugin_option(parser: argparse.ArgumentParser) -> None:
    """``--plugin module:Class``: a policy from another package, then named like a built-in."""
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE:CLASS",
        help="load a policy class from an importable module (repeatable); then name it with "
        "--policy or --placement (installed packages may declare 'schedlab.policies' entry "
        "points instead)",
    )


def read_config(path: Path, keys: Mapping[str, type]) -> dict[str, object]:
    """A run's ``config.toml`` (``--config``); unknown keys and wrong types are errors naming the
    key, never ignored. ``list`` keys hold strings; a ``float`` key also takes an integer."""
    try:
        data = tomllib.loads(read_text(path, "config file"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=str(path)) from None
    for key, value in data.items():
        if key not in keys:
            raise InputError(f"unknown key {key!r} (allowed: {', '.join(keys)})", path=str(path))
        want = keys[key]
        ok = isinstance(value, want) and (want is bool or not isinstance(value, bool))
        if want is list:
            ok = ok and all(isinstance(v, str) for v in value)
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            raise InputError(f"'{key}' must be a {want.__name__} (got {value!r})", path=str(path))
    return data


#: Shortest ``--slot``: a round below a millisecond is finer than any scheduler decides, and a
#: blocked queue would wake the replay once per round, billions of times.
MIN_SLOT = 0.001


def check_seconds(option: str, value: float, minimum: float = 0.0) -> float:
    """A time option: finite (``inf`` would never come round) and at least ``minimum``."""
    if not (math.isfinite(value) and value >= minimum):
        raise InputError(f"'{option}' must be ≥ {minimum:g} seconds and finite (got {value})")
    return value


def check_workers(value: int) -> int:
    if value < 1:
        raise InputError(f"'--workers' must be ≥ 1 (got {value})")
    return value


@contextlib.contextmanager
def run_bars(bar: Progress) -> Iterator[Any]:
    """A queue the running simulations report to, shown as a bar per run under ``bar`` (jobs
    arrived or pods placed / all of them); None, and no bars, when ``bar`` is quiet (not a
    terminal)."""
    if bar.disable:
        yield None
        return
    import multiprocessing
    import threading

    queue = multiprocessing.Queue()
    shown: dict[str, Any] = {}

    def follow() -> None:
        while (item := queue.get()) is not None:
            label, done, total = item
            if label not in shown:
                shown[label] = bar.add_task(f"  {label}", total=total)
            bar.update(shown[label], completed=done, total=total)
            if done >= total:
                bar.remove_task(shown.pop(label))

    reader = threading.Thread(target=follow, name="schedlab-run-bars", daemon=True)
    reader.start()
    try:
        yield queue
    finally:
        queue.put(None)
        reader.join(timeout=2)
        for task in shown.values():
            bar.remove_task(task)
        queue.close()


def progress_bar(transient: bool = True) -> Progress:
    """A progress bar on stderr that stays quiet when stderr is not a terminal."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=transient,
        disable=not sys.stderr.isatty(),
    )


def run_resumable(
    tasks: Sequence[T],
    finished: Callable[[T], R | None],
    run_grid: Callable[..., list[R]],
    workers: int,
    what: str,
    where: object,
) -> tuple[list[R], int, float]:
    """Run the tasks an earlier sweep into the same grid folder did not finish, with a progress
    bar; returns every task's result in task order, how many were already done, and the wall
    time of the runs made now."""
    done = {i: r for i, t in enumerate(tasks) if (r := finished(t)) is not None}
    todo = [t for i, t in enumerate(tasks) if i not in done]
    if done:
        console.print(f"resuming {where}: {len(done)} of {len(tasks)} runs already done")
    started = time.perf_counter()
    with progress_bar(transient=False) as bar:
        job = bar.add_task(f"{len(todo)} {what} on {workers} worker(s)", total=len(todo))
        with run_bars(bar) as queue:
            ran = iter(run_grid(todo, workers, on_done=lambda _r: bar.advance(job), progress=queue))
    results = [done[i] if i in done else next(ran) for i in range(len(tasks))]
    return results, len(done), time.perf_counter() - started
