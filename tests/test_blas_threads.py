"""The one-BLAS-thread block around Pollux's fit and the step-time interpolation: it limits
every loaded BLAS library to one thread inside, restores the counts after, and what it wraps
returns the same floats as without it."""

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


def scalable_app(root):
    """An application whose placement (2, 3) was not measured: its step time is interpolated
    from the scalability table (nodes 1..3 × replicas 1..8 × local batch 5, 20)."""
    from schedlab.perf.goodput.applications import read_application

    app = root / "toy"
    app.mkdir(parents=True)
    (app / "placements.csv").write_text(
        "placement,local_bsz,step_time,sync_time\n1,5,1.0,0.0\n1,20,2.0,0.0\n"
    )
    rows = ["num_nodes,num_replicas,local_bsz,step_time,sync_time"]
    for nodes in (1, 2, 3):
        for reps in (1, 2, 4, 8):
            if nodes <= reps:
                for bsz in (5, 20):
                    step = 0.01 * bsz + 0.03 * reps + 0.1 * nodes
                    rows.append(f"{nodes},{reps},{bsz},{step},{0.02 * nodes + 0.01 * reps}")
    (app / "scalability.csv").write_text("\n".join(rows) + "\n")
    (app / "validation-10.csv").write_text(
        "progress,iteration,metric,grad_sqr,grad_var\n100,10,0.5,1,1\n"
    )
    return read_application(app)


def test_interpolated_step_time_runs_on_one_thread(tmp_path) -> None:
    app = scalable_app(tmp_path)
    real = app._interpolator
    seen: list[list[int]] = []

    def spy(point):
        seen.append(blas_threads())
        return real(point)

    app.__dict__["_interpolator"] = spy
    app.throughput((2, 3), 10)
    assert seen and all(n == 1 for n in seen[0])


def test_limited_interpolation_equals_the_unlimited_one(tmp_path, monkeypatch) -> None:
    from contextlib import nullcontext

    from schedlab.perf.goodput import applications

    queries = [((2, 3), 10), ((1, 1, 2), 7), ((3, 2, 1), 19), ((2, 2), 5)]
    app = scalable_app(tmp_path / "a")
    limited = [app.throughput(p, b) for p, b in queries]
    assert all(0 < step < 10 for step, _ in limited)
    monkeypatch.setattr(applications, "one_blas_thread", nullcontext)
    unlimited = scalable_app(tmp_path / "b")
    for (placement, bsz), got in zip(queries, limited, strict=True):
        want = unlimited.throughput(placement, bsz)
        assert np.array(want).tobytes() == np.array(got).tobytes()
