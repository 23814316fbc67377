"""What a study is given to run: where the data is, where to write, how big, and a progress line.

A study splits its work into steps (replays, pack runs, fits) and runs them through
:meth:`StudyContext.map`, which runs them on the context's workers, advances the study's progress
as each finishes and lets every replay report its own progress (jobs arrived) to the bars the
command shows. Studies never print progress themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Progress(Protocol):
    """Where a study's progress goes (the command's bars or lines; nothing in a library call)."""

    def begin(self, total: int, what: str) -> None:
        """A new stage of ``total`` steps (``what``: e.g. "5 replays of 69,351 jobs")."""

    def advance(self, label: str) -> None:
        """One step of the stage finished (``label`` names it)."""

    @property
    def queue(self) -> Any:
        """A queue replays report (label, done, total) to, or None."""


class Quiet:
    """No progress shown (library calls, tests)."""

    queue = None

    def begin(self, total: int, what: str) -> None:
        pass

    def advance(self, label: str) -> None:
        pass


@dataclass
class StudyContext:
    """One study's run."""

    #: The shared data folder (``../shared`` beside the checkout).
    shared: Path
    #: The study's own output folder (exists; written before it is renamed into place).
    out: Path
    #: A smoke version in seconds (small fabrics, few jobs, one seed), not the study's figures.
    quick: bool = False
    workers: int = 2
    progress: Progress = field(default_factory=Quiet)

    def map(
        self,
        fn: Callable[[T], R],
        tasks: Sequence[T],
        what: str,
        slow_first: Callable[[T], bool] | None = None,
    ) -> list[R]:
        """``fn`` over ``tasks`` on the context's workers, results in task order; one progress
        step per task. ``fn`` must be a module-level function (it runs in worker processes);
        it may report its own progress with :func:`schedlab.experiments.live_progress.reporter`.
        """
        from schedlab.experiments.parallel import run_all

        self.progress.begin(len(tasks), what)

        def done(_result: R) -> None:
            self.progress.advance(what)

        return run_all(
            fn,
            tasks,
            self.workers,
            on_done=done,
            slow_first=slow_first,
            progress=self.progress.queue,
        )

    def step(self, what: str, fn: Callable[[], R]) -> R:
        """One step run here (a fit, a table read), shown as a stage of its own."""
        self.progress.begin(1, what)
        result = fn()
        self.progress.advance(what)
        return result
