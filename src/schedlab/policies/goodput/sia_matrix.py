"""Sia's goodput matrix (SOSP '23): every job's goodput in every configuration, across GPU types.

Row j, column c (a configuration on type k, :mod:`.sia_configs`):

* invalid (→ the floor, 1e-4) unless ``min_replicas ≤ GPUs(c) ≤ max_replicas_k``;
* a job with a fitted Pollux model on k: its best goodput on (nodes, GPUs) there;
* else, when projecting, a model fitted on another type k′ (the first in cluster order) is
  evaluated at the same GPU count (on as many k′ nodes as that needs) and scaled by
  ``X1_k / X1_k′``, the ratio of the two types' one-GPU throughputs (the "bootstrap": one-GPU
  profiles of every type are cheap, multi-GPU ones are not);
* a job profiled nowhere: 1 on each type's one-GPU configuration, the floor elsewhere.

Then the row is divided by its smallest positive entry (goodput relative to the job's worst
option), floored at 1e-4; for a job that holds a configuration, every other entry is multiplied
by the re-allocation factor ``max(age − restarts·P, 0) / (age + P)`` (1 while age < P; P the
application's restart penalty) — a job holding nothing is not penalised, so that with λ_n > 1
starting it beats leaving it idle (**our reading**: applied to a waiting job the factor would
keep an unprofiled job, whose one-GPU entry is 1, idle until its age reaches ~5.8 P); and the
ILP's coefficients are ``round(G^p, 2)`` clipped at 3000 (p = −0.5 by default).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from schedlab.policies.goodput.sia_configs import Config, GpuPool

#: Entries at or below this (invalid configurations included) are set to it.
FLOOR = 1e-4
#: Largest ILP coefficient.
CLIP = 3000.0
#: Seconds of re-allocation penalty by application (Sia's scheduler); others: DEFAULT_PENALTY.
PENALTY = {"imagenet": 250.0, "bert": 120.0, "yolov3": 45.0, "cifar10": 30.0, "deepspeech2": 25.0}
DEFAULT_PENALTY = 30.0

#: Best goodput of a job on (nodes, GPUs) of one type (vectorised over arrays).
GoodputOn = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass
class SiaJob:
    """What the matrix needs to know of one job."""

    #: Fitted goodput by GPU type (types where the job has been profiled).
    models: Mapping[str, GoodputOn] = field(default_factory=dict)
    #: Most GPUs by type (``min(max(2·profiled, 1), 64, M_max // m_min)``).
    max_replicas: Mapping[str, int] = field(default_factory=dict)
    min_replicas: int = 0
    #: The job's current configuration (index into the configuration list), or -1.
    current: int = -1
    age: float = 0.0
    restarts: int = 0
    penalty: float = DEFAULT_PENALTY


def realloc_factor(age: float, restarts: int, penalty: float) -> float:
    """``max(age − restarts·P, 0) / (age + P)``; 1 while the job is younger than P."""
    if age < penalty:
        return 1.0
    return max(age - restarts * penalty, 0.0) / (age + penalty)


def raw_row(
    job: SiaJob,
    configs: Sequence[Config],
    pools: Sequence[GpuPool],
    one_gpu_rate: Mapping[str, float],
    project: bool = True,
) -> np.ndarray:
    """The job's goodput in every configuration (0 where invalid or unknown)."""
    per_node = {p.name: p.gpus_per_node for p in pools}
    order = [p.name for p in pools]
    row = np.zeros(len(configs))
    if not job.models:
        for i, c in enumerate(configs):
            if c.gpus == 1 and job.min_replicas <= 1 and job.max_replicas.get(c.pool, 0) >= 1:
                row[i] = 1.0
        return row
    for pool in order:
        cols = [i for i, c in enumerate(configs) if c.pool == pool]
        if not cols:
            continue
        gpus = np.array([configs[i].gpus for i in cols])
        nodes = np.array([configs[i].nodes for i in cols])
        valid = (gpus >= job.min_replicas) & (gpus <= job.max_replicas.get(pool, 0))
        if not valid.any():
            continue
        if pool in job.models:
            values = job.models[pool](nodes[valid], gpus[valid])
        elif project:
            source = next(k for k in order if k in job.models)
            there = np.ceil(gpus[valid] / per_node[source]).astype(np.int64)
            ratio = one_gpu_rate[pool] / one_gpu_rate[source]
            values = job.models[source](there, gpus[valid]) * ratio
        else:
            continue
        row[np.asarray(cols)[valid]] = values
    return row


def goodput_matrix(
    jobs: Sequence[SiaJob],
    configs: Sequence[Config],
    pools: Sequence[GpuPool],
    one_gpu_rate: Mapping[str, float],
    project: bool = True,
) -> np.ndarray:
    """Normalised goodputs with the re-allocation factor applied (see the module docstring)."""
    out = np.full((len(jobs), len(configs)), FLOOR)
    for j, job in enumerate(jobs):
        row = raw_row(job, configs, pools, one_gpu_rate, project)
        positive = row[row > 0]
        if len(positive):
            row = row / positive.min()
        row = np.where(row <= FLOOR, FLOOR, row)
        if job.current < 0:  # holds nothing: no allocation to lose, so no penalty to starting
            out[j] = row
            continue
        factor = realloc_factor(job.age, job.restarts, job.penalty)
        keep = np.zeros(len(configs), dtype=bool)
        keep[job.current] = True
        out[j] = np.where(keep, row, row * factor)
    return out


def ilp_coefficients(goodput: np.ndarray, p: float = -0.5) -> np.ndarray:
    """``round(G^p, 2)`` clipped at 3000 (the per-(job, configuration) costs or values)."""
    if p == 0 or not math.isfinite(p):
        raise ValueError(f"'p' must be a non-zero number (got {p})")
    with np.errstate(divide="ignore"):  # a factor of 0 (restarted too often): ∞, clipped
        return np.minimum(np.round(np.power(goodput, p), 2), CLIP)


def one_gpu_throughput(placements_local_bsz: np.ndarray, placements_step: np.ndarray) -> float:
    """``max(local_bsz) / max(step_time)`` over a type's one-GPU rows: the bootstrap's rate."""
    if len(placements_local_bsz) == 0:
        raise ValueError("no one-GPU rows to bootstrap from")
    return float(np.max(placements_local_bsz) / np.max(placements_step))
