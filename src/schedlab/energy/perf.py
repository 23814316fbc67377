"""GPU power limits as a performance model: a limit changes a job's speed, not the engine.

:class:`PowerLimited` wraps any :class:`PerfModel` and multiplies a job's rate on a GPU model by
speed(p) of its Zeus curve on that model, p being the job's current power-limit fraction
(``limits[job]``, 1 = the top limit). A policy that changes a job's limit writes ``limits`` and
issues a ``Resize`` to the same allocation, so the engine re-reads the rate; the energy meter reads
the same array for the power. The reference GPU (model -1) keeps the top-limit rate, so oracle
run times stay those of the trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from schedlab.energy.curves import (
    DEFAULT_BATCH,
    PowerCurve,
    curve_for,
    curve_gpu,
    network_of,
    pick_group,
)
from schedlab.model.gpu_models import GPU_MODELS
from schedlab.model.jobs import JobTable
from schedlab.perf.models import PerfModel


@dataclass
class JobCurves:
    """The Zeus curve of every job on every GPU model, found once per (workload, GPU)."""

    root: Path
    jobs: JobTable
    _cache: dict[tuple[str, tuple[str, str], float], PowerCurve] = field(default_factory=dict)
    _per_job: dict[tuple[int, int], PowerCurve] = field(default_factory=dict)

    def curve(self, job: int, gpu_model: int) -> PowerCurve:
        got = self._per_job.get((job, gpu_model))
        if got is not None:
            return got
        gpu = curve_gpu(GPU_MODELS[gpu_model] if gpu_model >= 0 else "V100")
        network = network_of(self.jobs.model_name[job])
        batch = float(self.jobs.batch_size[job])
        key = (gpu, network, batch)
        if key not in self._cache:
            self._cache[key] = curve_for(self.root, gpu, network, batch)
        self._per_job[(job, gpu_model)] = self._cache[key]
        return self._cache[key]

    def check(self, gpu_models: set[int]) -> None:
        """Every job has a curve on every GPU model in ``gpu_models``: refused before the run,
        naming the file and the workload, instead of failing at the job's first start."""
        gpus = sorted({curve_gpu(GPU_MODELS[m]) for m in gpu_models if m >= 0})
        names = np.unique(self.jobs.model_name.astype(str))
        for network in dict.fromkeys(network_of(name) for name in names.tolist()):
            for gpu in gpus:
                pick_group(self.root, gpu, network, DEFAULT_BATCH)

    def speed(self, job: int, gpu_model: int, p: float) -> float:
        c = self.curve(job, gpu_model)
        return float(c.speed[c.index(p)])

    def power_fraction(self, job: int, gpu_model: int, p: float) -> float:
        c = self.curve(job, gpu_model)
        return float(c.power[c.index(p)])


class PowerLimited(PerfModel):
    """``base`` with each job's rate scaled by the speed of its power limit."""

    def __init__(self, base: PerfModel, curves: JobCurves, limits: np.ndarray) -> None:
        self.base = base
        self.curves = curves
        self.limits = limits

    def work(self, jobs: JobTable) -> np.ndarray:
        return self.base.work(jobs)

    def rate(self, jobs: JobTable, job: int, num_gpus: int, gpu_model: int) -> float:
        r = self.base.rate(jobs, job, num_gpus, gpu_model)
        if gpu_model < 0 or r <= 0:
            return r
        return r * self.curves.speed(job, gpu_model, float(self.limits[job]))

    def reference_rate(self, jobs: JobTable, job: int) -> float:
        return self.base.reference_rate(jobs, job)

    def max_useful_gpus(self, jobs: JobTable, job: int, limit: int) -> int:
        return self.base.max_useful_gpus(jobs, job, limit)

    @property
    def restricts_counts(self) -> bool:  # type: ignore[override]
        return self.base.restricts_counts

    def gpu_counts(self, jobs: JobTable, job: int) -> tuple[int, ...] | None:
        return self.base.gpu_counts(jobs, job)

    def runnable_models(self, jobs: JobTable, job: int, num_gpus: int) -> int | None:
        return self.base.runnable_models(jobs, job, num_gpus)

    def __getattr__(self, name: str) -> object:
        # Throughput-table helpers (``curve``, ``table``) of the wrapped model stay reachable.
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)
