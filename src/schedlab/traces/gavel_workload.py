"""Gavel's continuous and static workloads, drawn call for call as Gavel's simulator draws them.

Papers compare against Gavel on the traces its simulator generates on the fly; to compare like
with like, the same seed must give the same jobs, bit for bit. Gavel draws with Python's
Mersenne Twister (``random.Random``) — a NumPy generator would give other streams — from
separate streams per seed:

* the job stream, ``Random(seed + 2)``; per job, in this order: a uniform scale-factor draw
  (Philly's mix: 2 GPUs for 0.7 ≤ u ≤ 0.8, 4 up to 0.95, 8 above, else 1 — drawn even when only
  single-GPU jobs are generated); ``random() ≥ 0.8`` picks a long job of ``60·10^U(3, 4)`` s,
  else ``60·10^U(1.5, 3)`` s (V100 seconds); then ``choice`` over the 26 job templates,
  repeated until the template may run distributed or the scale is 1; with multi-priority jobs a
  last uniform draw gives weight 5 to 20 % of the jobs;
* the inter-arrival stream, ``Random(seed + 3)``: job 0 arrives at 0, then
  ``t += -ln(1 - U) / (1 / λ)`` (λ: mean inter-arrival time in seconds; λ = 0 puts every job
  at 0 without drawing);
* the SLO stream, ``Random(seed + 6)`` (only when SLOs are asked for): factor 1.2, 2 or 10.

A job's length is its steps: duration × its steps/s on a V100 at its scale, from the throughput
matrix (:mod:`schedlab.perf.throughput_matrix`), kept as the exact float.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from schedlab.errors import InputError
from schedlab.model.jobs import JobTable
from schedlab.perf.throughput_matrix import ThroughputMatrix

#: (model, may run distributed), in Gavel's job-table order (``choice`` depends on it).
JOB_TEMPLATES: tuple[tuple[str, bool], ...] = (
    *((f"ResNet-18 (batch size {b})", True) for b in (16, 32, 64, 128, 256)),
    *((f"ResNet-50 (batch size {b})", True) for b in (16, 32, 64, 128)),
    *((f"Transformer (batch size {b})", True) for b in (16, 32, 64, 128, 256)),
    *((f"LM (batch size {b})", True) for b in (5, 10, 20, 40, 80)),
    *((f"Recommendation (batch size {b})", False) for b in (512, 1024, 2048, 4096, 8192)),
    ("A3C", False),
    ("CycleGAN", False),
)

#: The accelerator job lengths are measured on.
REFERENCE_TYPE = "v100"

#: Share of jobs with priority weight 5 when multi-priority jobs are generated.
HIGH_PRIORITY_SHARE = 0.2
HIGH_PRIORITY_WEIGHT = 5.0


@dataclass(frozen=True)
class GavelJob:
    """One generated job, as Gavel's generator makes it."""

    job_type: str
    scale_factor: int
    duration: float  # V100 seconds
    total_steps: float
    priority_weight: float = 1.0
    slo: float | None = None


def _scale_factor(rng: random.Random) -> int:
    u = rng.uniform(0, 1)
    if 0.7 <= u <= 0.8:
        return 2
    if 0.8 <= u <= 0.95:
        return 4
    if u >= 0.95:
        return 8
    return 1


def _duration(rng: random.Random) -> float:
    if rng.random() >= 0.8:
        return 60 * (10 ** rng.uniform(3, 4))
    return 60 * (10 ** rng.uniform(1.5, 3))


def _slo(rng: random.Random) -> float:
    u = rng.uniform(0, 1)
    if u < 0.33:
        return 1.2
    if u < 0.67:
        return 2.0
    return 10.0


def generate_job(
    rng: random.Random,
    matrix: ThroughputMatrix,
    *,
    multi_gpu: bool = False,
    multi_priority: bool = False,
    slo_rng: random.Random | None = None,
    fixed_duration: float | None = None,
) -> GavelJob:
    """The next job of the job stream ``rng`` (draw order as described in the module)."""
    scale = _scale_factor(rng)
    duration = fixed_duration if fixed_duration else _duration(rng)
    if not multi_gpu:
        scale = 1
    while True:
        model, distributed = rng.choice(JOB_TEMPLATES)
        if scale == 1 or distributed:
            break
    key = (model, scale)
    if key not in matrix.index:
        raise InputError(
            f"job type {key!r} is not in the throughput matrix the generator was given",
            path=matrix.source,
        )
    steps = duration * matrix.throughput(key, REFERENCE_TYPE)
    weight = 1.0
    if multi_priority and 0.0 <= rng.uniform(0, 1) <= HIGH_PRIORITY_SHARE:
        weight = HIGH_PRIORITY_WEIGHT
    slo = _slo(slo_rng) if slo_rng is not None else None
    return GavelJob(model, scale, duration, steps, weight, slo)


@dataclass(frozen=True)
class GavelWorkloadSpec:
    """What Gavel's ``simulate_scheduler_with_generated_jobs.py`` generates."""

    seed: int = 0
    #: Mean inter-arrival time in seconds (Gavel's ``-l``); 0: a static trace, all at t = 0.
    lam: float = 1200.0
    num_jobs: int = 6000
    multi_gpu: bool = False
    multi_priority: bool = False
    slos: bool = False
    fixed_duration: float | None = None

    def __post_init__(self) -> None:
        if not self.lam >= 0 or not math.isfinite(self.lam):
            raise InputError(f"'lam' must be ≥ 0 seconds (got {self.lam})")
        if self.num_jobs < 1:
            raise InputError(f"the number of jobs must be ≥ 1 (got {self.num_jobs})")


def arrival_draws(seed: int, count: int) -> Iterator[float]:
    """``-ln(1 - U)`` of the inter-arrival stream (unit-rate exponential draws), in order."""
    rng = random.Random(seed + 3)
    for _ in range(count):
        yield -math.log(1.0 - rng.random())


def arrival_times(seed: int, lam: float, count: int) -> list[float]:
    """Arrival times of ``count`` jobs: 0, then each previous one plus ``draw / (1 / lam)``."""
    if lam == 0.0:
        return [0.0] * count
    rate = 1.0 / lam
    times = [0.0]
    for draw in arrival_draws(seed, count - 1):
        times.append(draw / rate + times[-1])
    if not math.isfinite(times[-1]):  # 1/lam rounds to 0 or the sum overflows
        raise InputError(
            f"'lam' {lam:g} s puts arrivals past the largest time a trace can hold: give a "
            "smaller mean inter-arrival time"
        )
    return times


def generate_gavel_jobs(matrix: ThroughputMatrix, spec: GavelWorkloadSpec) -> list[GavelJob]:
    """The first ``spec.num_jobs`` jobs of the job stream."""
    rng = random.Random(spec.seed + 2)
    slo_rng = random.Random(spec.seed + 6) if spec.slos else None
    return [
        generate_job(
            rng,
            matrix,
            multi_gpu=spec.multi_gpu,
            multi_priority=spec.multi_priority,
            slo_rng=slo_rng,
            fixed_duration=spec.fixed_duration,
        )
        for _ in range(spec.num_jobs)
    ]


def gavel_job_table(matrix: ThroughputMatrix, spec: GavelWorkloadSpec) -> JobTable:
    """The workload as a replay job table: ids 0, 1, …; ``model_name`` the job type, ``num_gpus``
    the scale factor, ``iterations`` the steps, ``duration`` the V100 seconds; with SLOs, the
    deadline ``SLO × duration + arrival``."""
    jobs = generate_gavel_jobs(matrix, spec)
    times = arrival_times(spec.seed, spec.lam, spec.num_jobs)
    deadline = [
        j.slo * j.duration + t if j.slo is not None else math.nan
        for j, t in zip(jobs, times, strict=True)
    ]
    return JobTable.from_columns(
        source=f"gavel:seed={spec.seed},lam={spec.lam},multi_gpu={int(spec.multi_gpu)}",
        job_id=[str(i) for i in range(len(jobs))],
        submit_time=np.asarray(times, dtype=np.float64),
        num_gpus=[j.scale_factor for j in jobs],
        duration=[j.duration for j in jobs],
        iterations=[j.total_steps for j in jobs],
        model_name=[j.job_type for j in jobs],
        priority_weight=[j.priority_weight for j in jobs],
        deadline=deadline,
    )


#: Columns of a written workload (schedlab's generic job CSV; floats as exact ``repr``).
CSV_COLUMNS = (
    "job_id",
    "submit_time",
    "num_gpus",
    "duration",
    "iterations",
    "model_name",
    "priority_weight",
    "deadline",
)


def job_csv_lines(jobs: JobTable) -> list[str]:
    """A generated workload as the lines of a generic job CSV that reads back bit for bit."""
    lines = [",".join(CSV_COLUMNS)]
    for i in range(len(jobs)):
        deadline = float(jobs.deadline[i])
        lines.append(
            ",".join(
                (
                    str(jobs.job_id[i]),
                    repr(float(jobs.submit_time[i])),
                    str(int(jobs.num_gpus[i])),
                    repr(float(jobs.duration[i])),
                    repr(float(jobs.iterations[i])),
                    _quote(str(jobs.model_name[i])),
                    repr(float(jobs.priority_weight[i])),
                    "" if math.isnan(deadline) else repr(deadline),
                )
            )
        )
    return lines


def _quote(text: str) -> str:
    return f'"{text}"' if "," in text or '"' in text else text
