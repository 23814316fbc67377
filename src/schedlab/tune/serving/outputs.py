"""What ``tune serving`` writes: ``tuned.json`` (the chosen configuration, its modelled figures
and the samples that led to it) and ``pods.csv``, an openb pod list ``replay --sharing`` reads.

Pod columns: ``cpu_milli = 1000·n``, ``memory_mib`` = ``host_mem_mib`` per core,
``num_gpu = 1``, ``gpu_milli = round(1000·max(s, g/G_τ))`` (the larger of the compute and memory
share the pod blocks), ``gpu_spec`` the schedlab GPU name, ``qos = LS``; ``--load RPS`` asks for
``ceil(RPS/(0.8·X))`` replicas (each run at 80 % of its throughput), created at 0 and deleted at
``duration`` seconds.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from schedlab.tune.serving.model import DEFAULT_HARDWARE, Hardware, Performance, Service
from schedlab.tune.serving.space import GPU_TYPES, SCHEDLAB_GPU, Space, space
from schedlab.tune.serving.tuners import Run, optimal_set

#: Replicas run at this share of their modelled throughput (headroom for bursts).
UTILISATION = 0.8
HOST_MEM_MIB = 4096


def config_figures(perf: Performance, i: int, s: Space | None = None) -> dict[str, Any]:
    s = space() if s is None else s
    return {
        **s.config(i),
        "index": i,
        "throughput_rps": float(perf.throughput[i]),
        "latency_p99_ms": float(perf.latency_ms[i]),
        "price_per_hour": float(perf.price[i]),
        "objective": float(perf.objective[i]),
        "feasible": bool(perf.feasible[i]),
    }


def tuned(service: Service, perf: Performance, result: Run, budget: int, seed: int) -> dict:
    chosen = result.incumbent()
    optimum = perf.best
    cost = result.search_cost(optimal_set(perf))
    return {
        "service": {
            "alpha_ms": service.alpha_ms,
            "beta_ms": service.beta_ms,
            "kappa_ms": service.kappa_ms,
            "model_gb": service.model_gb,
            "gb_per_sample": service.gb_per_sample,
            "slo_ms": service.slo_ms,
            "speed": list(service.speed),
        },
        "tuner": result.tuner,
        "budget": budget,
        "seed": seed,
        "config": config_figures(perf, chosen),
        "optimum": config_figures(perf, optimum),
        "regret": 1.0 - float(perf.objective[chosen]) / float(perf.objective[optimum]),
        "search_cost": cost,
        "samples": [
            {"index": c, "label": space().label(c), "observed": o}
            for c, o in zip(result.samples, result.observed, strict=True)
        ],
    }


#: The most pods a pods.csv lists (one row each): a load that needs more is refused.
MAX_REPLICAS = 100_000


def replicas(load_rps: float | None, throughput: float) -> int:
    if load_rps is None:
        return 1
    return max(1, math.ceil(load_rps / (UTILISATION * throughput)))


def pods(
    perf: Performance,
    i: int,
    count: int,
    duration: float,
    host_mem_mib: int = HOST_MEM_MIB,
    hw: Hardware = DEFAULT_HARDWARE,
    name: str = "tuned",
) -> pd.DataFrame:
    s = space()
    gpu = GPU_TYPES[int(s.gpu[i])]
    capacity = hw.gpu_memory_gb[int(s.gpu[i])]
    share = max(float(s.share[i]), float(s.memory_gb[i]) / capacity)
    cores = int(s.cores[i])
    n = np.arange(count)
    return pd.DataFrame(
        {
            "name": [f"{name}-{k:04d}" for k in n],
            "cpu_milli": 1000 * cores,
            "memory_mib": host_mem_mib * cores,
            "num_gpu": 1,
            "gpu_milli": round(1000 * share),
            "gpu_spec": SCHEDLAB_GPU[gpu],
            "qos": "LS",
            "pod_phase": "Running",
            "creation_time": 0,
            "deletion_time": round(duration),
            "scheduled_time": 0,
        }
    )
