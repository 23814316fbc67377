"""Run independent tasks in worker processes, with results in task order.

Shared by the pack and replay grids: each task is seeded and self-contained, so the results do
not depend on the number of workers or on the order in which they finish.

Workers never outlive the command. Each ignores SIGINT (Ctrl-C reaches the whole process group;
the parent alone decides, so no worker prints a traceback) and watches its parent from a thread,
exiting as soon as the parent is gone, even after a SIGKILL no handler sees. When the parent
stops early (an interrupt, SIGTERM, a failed task) it terminates the workers instead of waiting
for their runs to finish.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from schedlab.errors import SchedlabError
from schedlab.experiments.live_progress import set_queue

T = TypeVar("T")
R = TypeVar("R")

#: How often a worker checks that its parent still exists (seconds).
PARENT_POLL = 0.2
#: How long the parent waits for a terminated worker before killing it (seconds).
TERMINATE_GRACE = 2.0


def default_workers() -> int:
    """Worker processes of a grid when none are asked for: the cores, at most 8."""
    return max(1, min(os.cpu_count() or 1, 8))


def run_all(
    fn: Callable[[T], R],
    tasks: Sequence[T],
    workers: int,
    on_done: Callable[[R], None] | None = None,
    slow_first: Callable[[T], bool] | None = None,
    progress: Any = None,
) -> list[R]:
    """``fn`` over every task, ``workers`` at a time (1: in this process).

    ``slow_first`` marks tasks known to take longest; submitting them first keeps every worker
    busy to the end instead of leaving one long run alone at the tail. ``progress`` is a queue
    that runs report their progress to (:mod:`schedlab.experiments.live_progress`).
    """
    results: list[R | None] = [None] * len(tasks)
    if workers <= 1 or len(tasks) <= 1:
        set_queue(progress)
        for i, task in enumerate(tasks):
            results[i] = fn(task)
            if on_done:
                on_done(results[i])  # type: ignore[arg-type]
        return results  # type: ignore[return-value]
    order = list(range(len(tasks)))
    if slow_first is not None:
        order.sort(key=lambda i: not slow_first(tasks[i]))
    pool = ProcessPoolExecutor(
        max_workers=workers, initializer=_init_worker, initargs=(os.getpid(), progress)
    )
    try:
        futures = {pool.submit(fn, tasks[i]): i for i in order}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            if on_done:
                on_done(results[futures[future]])  # type: ignore[arg-type]
    except BrokenProcessPool:
        stop_pool(pool)
        raise SchedlabError(
            "a worker process ended unexpectedly (killed, or out of memory?); try fewer --workers"
        ) from None
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown()
    return results  # type: ignore[return-value]


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now (SIGTERM, then SIGKILL after a
    grace period), instead of waiting for their runs to finish."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + TERMINATE_GRACE
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join()
    # Let the pool's own thread finish closing its wake-up pipe: the interpreter's exit hook
    # writes to that pipe, and racing its close prints an "Exception ignored" traceback.
    if manager is not None:
        manager.join(TERMINATE_GRACE)


def _init_worker(parent: int, progress: Any = None) -> None:
    """Runs first in every worker: leave Ctrl-C to the parent, die by SIGTERM without a
    traceback, exit when the parent is gone, and report progress where the parent listens."""
    set_queue(progress)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(
        target=_watch_parent, args=(parent,), name="schedlab-parent-watch", daemon=True
    ).start()


def _watch_parent(parent: int) -> None:
    # A process whose parent died is re-parented (to init or a subreaper), so its ppid changes.
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)
    os._exit(1)
