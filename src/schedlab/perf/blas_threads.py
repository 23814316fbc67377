"""Run small linear algebra on one BLAS thread.

scipy's L-BFGS-B calls BLAS/LAPACK on 7 × 10 matrices thousands of times per replay. OpenBLAS
hands each call to its thread pool, and the idle workers then spin waiting for the next one:
on a 2-core machine that burned ~30× the CPU of the fit itself (466 ms → 15 ms per fit of
40 observations, same answer). The first step time interpolated from an application's
scalability table computes every simplex's barycentric transform (a 3 × 3 LAPACK solve each):
the same spinning cost 25 s of CPU on cifar10's table against 10 ms on one thread. One thread
computes the same floats, since these sizes are never split across threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from threadpoolctl import ThreadpoolController


@cache
def _controller() -> ThreadpoolController:
    # Finding the loaded BLAS libraries walks the process's shared objects: do it once.
    return ThreadpoolController()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Within the block, BLAS libraries loaded so far use one thread (restored after)."""
    with _controller().limit(limits=1, user_api="blas"):
        yield
