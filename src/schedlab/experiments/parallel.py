"""Run independent tasks in worker processes, with results in task order.

Shared by the pack and replay grids: each task is seeded and self-contained, so the results do
not depend on the number of workers or on the order in which they finish.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def run_all(
    fn: Callable[[T], R],
    tasks: Sequence[T],
    workers: int,
    on_done: Callable[[R], None] | None = None,
    slow_first: Callable[[T], bool] | None = None,
) -> list[R]:
    """``fn`` over every task, ``workers`` at a time (1: in this process).

    ``slow_first`` marks tasks known to take longest; submitting them first keeps every worker
    busy to the end instead of leaving one long run alone at the tail.
    """
    results: list[R | None] = [None] * len(tasks)
    if workers <= 1 or len(tasks) <= 1:
        for i, task in enumerate(tasks):
            results[i] = fn(task)
            if on_done:
                on_done(results[i])  # type: ignore[arg-type]
        return results  # type: ignore[return-value]
    order = list(range(len(tasks)))
    if slow_first is not None:
        order.sort(key=lambda i: not slow_first(tasks[i]))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(fn, tasks[i]): i for i in order}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            if on_done:
                on_done(results[futures[future]])  # type: ignore[arg-type]
    return results  # type: ignore[return-value]
