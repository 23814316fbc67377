"""Application tables as a performance model every replay policy can use (``replay --apps DIR``).

A job of a measured application (its ``model_name``) must make its application's whole
training progress (:attr:`Application.total_progress`, in iterations of the initial batch
size). Policies that model goodput themselves (Pollux, and the Tiresias and Optimus
baselines of Pollux's simulator) advance jobs epoch by epoch with
:class:`~schedlab.perf.goodput.job.GoodputJob` and tell the engine each job's pace. Every other
policy sees a constant rate: the one that trains the job in the time epoch-by-epoch progress
takes with the job's own batch size (the trace's ``batch_size``, or the initial one), on
``num_gpus`` GPUs packed ``gpus_per_node`` to a node — without restarts and without the
whole-second rounding at epoch ends.

Several GPU types: ``typed`` maps (application, GPU model index) to that type's tables; a type
without its own tables uses the default ones, scaled by ``speed`` (GPU model index → factor) when
given (synthetic heterogeneity: step and sync times divided by the factor).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from schedlab.errors import InputError
from schedlab.model.jobs import JobTable
from schedlab.perf.goodput.applications import Application, fixed_batch_config
from schedlab.perf.models import PerfModel

#: GPUs per node when packing a job for its nominal rate (Pollux's testbed: 4 per node).
DEFAULT_GPUS_PER_NODE = 4


def packed(num_gpus: int, per_node: int) -> tuple[int, ...]:
    """``num_gpus`` replicas filling nodes of ``per_node`` GPUs in turn."""
    out: list[int] = []
    while sum(out) < num_gpus:
        out.append(min(num_gpus - sum(out), per_node))
    return tuple(out)


def nominal_goodput(app: Application, batch: float, placement: tuple[int, ...]) -> float:
    """The constant rate that trains the whole job in the same time as epoch-by-epoch progress
    does with a fixed global batch on ``placement`` (no restarts, no rounding): total progress
    over Σ_e (epoch e's progress / its rate). 0 where the batch cannot be split so."""
    replicas = sum(placement)
    if replicas <= 0 or batch / replicas < app.min_local_bsz - 1e-9:
        return 0.0
    micro, accum = fixed_batch_config(app, batch, replicas)
    if micro < app.min_local_bsz:
        return 0.0
    real = replicas * micro * (accum + 1)
    try:
        step, sync = app.throughput(placement, micro)
    except ValueError:
        return 0.0
    seconds_per_step = step + (step - sync) * accum
    scale = real / app.init_batch_size
    clipped = min(max(real, app.init_batch_size), app.max_batch_size)
    seconds = 0.0
    for epoch in range(app.max_epochs):
        sqr, var = app.grad_stats(clipped, epoch)
        gain = (var + sqr) / (var / scale + sqr)
        seconds += (app.progress_at(epoch + 1) - app.progress_at(epoch)) * seconds_per_step / gain
    return float(app.total_progress / seconds) if seconds > 0 else 0.0


@dataclass(frozen=True)
class GoodputPerf(PerfModel):
    """See the module docstring."""

    apps: Mapping[str, Application]
    typed: Mapping[tuple[str, int], Application] = field(default_factory=dict)
    speed: Mapping[int, float] = field(default_factory=dict)
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE
    source: str = ""
    _cache: dict[tuple[str, float, int, int], float] = field(default_factory=dict, compare=False)

    def app_of(self, jobs: JobTable, job: int, gpu_model: int = -1) -> Application | None:
        """The tables of the job's application on ``gpu_model`` (-1: the default tables)."""
        name = str(jobs.model_name[job])
        if gpu_model >= 0 and (name, gpu_model) in self.typed:
            return self.typed[(name, gpu_model)]
        return self.apps.get(name)

    def covers(self, jobs: JobTable, job: int) -> bool:
        return str(jobs.model_name[job]) in self.apps

    def factor(self, gpu_model: int) -> float:
        return self.speed.get(gpu_model, 1.0) if gpu_model >= 0 else 1.0

    def work(self, jobs: JobTable) -> np.ndarray:
        out = jobs.duration.astype(np.float64).copy()
        for j in range(len(jobs)):
            app = self.apps.get(str(jobs.model_name[j]))
            if app is not None:
                out[j] = app.total_progress
        return out

    def batch_of(self, jobs: JobTable, job: int, app: Application) -> float:
        batch = int(jobs.batch_size[job])
        return float(batch) if batch > 0 else float(app.init_batch_size)

    def rate(self, jobs: JobTable, job: int, num_gpus: int, gpu_model: int) -> float:
        app = self.app_of(jobs, job, gpu_model)
        if app is None:
            requested = int(jobs.num_gpus[job])
            return self.factor(gpu_model) * (num_gpus / requested if requested > 0 else 1.0)
        batch = self.batch_of(jobs, job, app)
        key = (app.name, batch, num_gpus, gpu_model)
        hit = self._cache.get(key)
        if hit is None:
            typed = gpu_model >= 0 and (app.name, gpu_model) in self.typed
            scale = 1.0 if typed else self.factor(gpu_model)
            hit = scale * nominal_goodput(app, batch, packed(num_gpus, self.gpus_per_node))
            self._cache[key] = hit
        return hit


def goodput_gaps(jobs: JobTable, perf: GoodputPerf) -> list[tuple[int, str]]:
    """Jobs whose application has no tables, with the reason."""
    known = ", ".join(sorted(perf.apps))
    out = []
    for j in range(len(jobs)):
        name = str(jobs.model_name[j])
        if name not in perf.apps:
            what = f"application {name!r}" if name else "no application (model_name)"
            out.append((j, f"names {what}, which has no tables (known: {known})"))
    return out


def check_goodput_jobs(jobs: JobTable, perf: GoodputPerf) -> None:
    """Refuse a run with jobs of unknown applications or batch sizes outside the tables."""
    gaps = goodput_gaps(jobs, perf)
    if gaps:
        j, why = gaps[0]
        raise InputError(
            f"{len(gaps)} of {len(jobs)} jobs have no application tables "
            f"(first: job {jobs.job_id[j]!r}, which {why})",
            path=perf.source or None,
        )
    for j in range(len(jobs)):
        app = perf.apps[str(jobs.model_name[j])]
        batch = int(jobs.batch_size[j])
        if batch and not (app.init_batch_size <= batch <= app.max_batch_size):
            raise InputError(
                f"job {jobs.job_id[j]!r}: batch size {batch} is outside what {app.name} was "
                f"validated at ({app.init_batch_size}..{app.max_batch_size})"
            )
        if not math.isfinite(app.total_progress):
            raise InputError(f"{app.name}: its tables give no total progress")
