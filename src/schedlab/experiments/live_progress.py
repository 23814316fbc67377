"""Progress of the simulations running in worker processes, for a live bar per run.

A worker reports ``(run label, done, total)`` now and then (at most every :data:`INTERVAL`
seconds per process: a simulation calls back thousands of times) through a queue the parent
gave it when the pool started; the parent shows one bar per worker beside the runs counter. With
no queue (output is not a terminal, or the caller did not ask) reporting costs one ``None``
check, so a sweep into a pipe or a log stays quiet and as fast.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: Seconds between two reports of one worker.
INTERVAL = 0.25

_queue: list[Any] = [None]


def set_queue(queue: Any) -> None:
    """Called in each worker (and in the parent for in-process runs): where reports go."""
    _queue[0] = queue


def reporter(label: str) -> Callable[[int, int], None] | None:
    """A ``progress(done, total)`` callback for the run ``label``; None when nobody listens."""
    queue = _queue[0]
    if queue is None:
        return None
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= INTERVAL or done >= total:
            last[0] = now
            queue.put((label, done, total))

    return report
