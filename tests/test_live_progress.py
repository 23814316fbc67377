"""A live bar per running simulation beside the runs counter, and none when not a terminal."""

from __future__ import annotations

import io
import time

from rich.console import Console
from rich.progress import Progress

from schedlab.commands.common import run_bars
from schedlab.experiments.live_progress import reporter, set_queue
from schedlab.experiments.parallel import run_all


def _wait(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not predicate():
        time.sleep(0.01)
    return predicate()


def _descriptions(bar: Progress) -> list[str]:
    return [t.description.strip() for t in bar.tasks]


def test_a_bar_per_run_that_goes_when_the_run_is_done() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    with Progress(console=console) as bar, run_bars(bar) as queue:
        assert queue is not None
        set_queue(queue)
        try:
            report = reporter("trace/fifo-s1")
            assert report is not None
            report(3, 10)
            assert _wait(lambda: _descriptions(bar) == ["trace/fifo-s1"])
            assert _wait(lambda: bar.tasks[0].completed == 3 and bar.tasks[0].total == 10)
            report(10, 10)
            assert _wait(lambda: _descriptions(bar) == [])
        finally:
            set_queue(None)


def test_quiet_when_not_a_terminal() -> None:
    with Progress(disable=True) as bar, run_bars(bar) as queue:
        assert queue is None
        set_queue(queue)
        assert reporter("trace/fifo-s1") is None


def _work(n: int) -> int:
    report = reporter(f"run-{n}")
    assert report is not None  # the worker was given the parent's queue
    report(n, n)
    return n


def test_worker_processes_report_to_the_parent() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    seen: list[str] = []
    with Progress(console=console) as bar:
        add = bar.add_task
        bar.add_task = lambda description, **kw: (
            seen.append(description.strip())
            or add(  # type: ignore[method-assign]
                description, **kw
            )
        )
        with run_bars(bar) as queue:
            assert run_all(_work, [1, 2, 3], workers=2, progress=queue) == [1, 2, 3]
            assert _wait(lambda: len(seen) == 3)
    assert sorted(seen) == ["run-1", "run-2", "run-3"]
