"""The one-BLAS-thread block around Pollux's fit: it limits every loaded BLAS library to one
thread inside, restores the counts after, and the fit it wraps returns the same floats as an
unlimited fit."""

from __future__ import annotations

import numpy as np
import scipy.optimize
from threadpoolctl import threadpool_info

from schedlab.perf.blas_threads import one_blas_thread
from schedlab.perf.goodput import model
from schedlab.perf.goodput.model import fit_perf_params


def blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def profile(seed: int):
    rng = np.random.default_rng(seed)
    nodes = rng.integers(1, 3, 30)
    reps = np.maximum(nodes, rng.integers(1, 9, 30))
    micro = rng.integers(16, 128, 30)
    accum = 0.01 + 0.001 * micro * rng.uniform(0.9, 1.1, 30)
    step = accum + 0.02 * (reps > 1) + 0.03 * (nodes > 1)
    return nodes, reps, micro, accum, step


def test_one_thread_inside_and_counts_restored_after() -> None:
    before = blas_threads()
    assert before, "numpy and scipy load a BLAS"
    with one_blas_thread():
        assert blas_threads() == [1] * len(before)
    assert blas_threads() == before


def test_fit_runs_on_one_thread(monkeypatch) -> None:
    seen: list[list[int]] = []
    real = scipy.optimize.minimize

    def spy(*args, **kwargs):
        seen.append(blas_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "minimize", spy)
    fit_perf_params(*profile(0))
    assert seen and all(n == 1 for n in seen[0])


def test_limited_fit_equals_the_unlimited_fit(monkeypatch) -> None:
    limited = [fit_perf_params(*profile(seed)) for seed in range(3)]

    def unlimited():
        from contextlib import nullcontext

        return nullcontext()

    monkeypatch.setattr(model, "one_blas_thread", unlimited)
    for seed, got in enumerate(limited):
        assert fit_perf_params(*profile(seed)).tobytes() == got.tobytes()
