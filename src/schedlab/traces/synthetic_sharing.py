"""Synthetic mixed-class pod workloads for the sharing engine, at any size and load.

Pods are drawn with replacement from a base workload (normally the openb pod list read with its
times: each draw keeps a real pod's shape, GPU share, class and work together, so the mix of
classes, shares and lifetimes is the trace's). Arrivals are a Poisson process whose rate gives
the asked offered load ρ = λ·E[GPUs × work] / GPUs of the cluster. Elastic filler jobs (spec A.5)
are a job kind of the generator: :func:`synthetic_fillers` draws them beside the pods.
"""

from __future__ import annotations

import numpy as np

from schedlab.engines.filler import FillerJob
from schedlab.errors import InputError
from schedlab.model.cluster import GPU_MILLI
from schedlab.model.shared_pods import SharedWorkload


def synthetic_workload(
    base: SharedWorkload,
    pods: int,
    load: float,
    total_gpus: int,
    rng: np.random.Generator,
) -> SharedWorkload:
    """``pods`` draws from ``base`` arriving at offered load ``load`` on ``total_gpus`` GPUs."""
    if pods < 1:
        raise InputError(f"the synthetic workload needs at least 1 pod (got {pods})")
    if not load > 0 or total_gpus < 1:
        raise InputError(f"offered load must be > 0 (got {load})")
    gpu_seconds = base.pods.gpu_request_milli / GPU_MILLI * base.work
    if not (gpu_seconds > 0).any() or not np.isfinite(gpu_seconds).all():
        raise InputError("the base workload has no finite GPU work to resample")
    pick = rng.integers(0, len(base), size=pods)
    rate = load * total_gpus / float(gpu_seconds.mean())  # pods per second
    arrival = np.cumsum(rng.exponential(1.0 / rate, size=pods))
    names = np.array([f"syn-{i:07d}" for i in range(pods)], dtype=object)
    return SharedWorkload(
        base.pods.take(pick, names=names),
        arrival,
        base.work[pick].astype(np.float64),
        base.qos[pick],
    )


def synthetic_fillers(
    count: int, gpu_hours: float, rng: np.random.Generator, r_max: int = 64
) -> tuple[FillerJob, ...]:
    """``count`` filler jobs of about ``gpu_hours`` each, arriving an hour apart, with replica
    and share ranges drawn around ParaSet-like defaults (1–r_max replicas, 100–500 milli)."""
    jobs = []
    for k in range(count):
        m_min = int(rng.choice([50, 100, 200]))
        jobs.append(
            FillerJob(
                name=f"filler-{k:03d}",
                work=float(gpu_hours * 3600.0 * rng.uniform(0.5, 1.5)),
                r_min=1,
                r_max=int(rng.integers(max(1, r_max // 4), r_max + 1)),
                m_min=m_min,
                m_max=int(rng.choice([500, 700, 1000])),
                cpu_milli=1000,
                memory_mib=2048,
                arrival=3600.0 * k,
            )
        )
    return tuple(jobs)
