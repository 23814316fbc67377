"""Performance models: turn a job's work into a rate of progress on a concrete allocation.

A job's work is a number of *work units* (seconds at its requested size on the reference GPU for
a trace duration; iterations for a throughput table). A model gives the rate, in units per second,
for a GPU count and GPU model, so the engine can account progress piecewise across preemptions and
resizes without knowing which kind of model it has.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.input_files import check_input_file, reading
from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import GPU_MODELS, is_known_model, model_index
from schedlab.model.jobs import JobTable

#: GPU counts each model's table has a column for (its file's header), by model name.
MeasuredCounts = Mapping[str, frozenset[int]]


class PerfModel(ABC):
    """Work and rates for the jobs of one run."""

    @abstractmethod
    def work(self, jobs: JobTable) -> np.ndarray:
        """Total work units of every job (finite and > 0 for a job that can run)."""

    @abstractmethod
    def rate(self, jobs: JobTable, job: int, num_gpus: int, gpu_model: int) -> float:
        """Work units per second of ``job`` on ``num_gpus`` GPUs of ``gpu_model`` (0: never
        runs there; -1 means the reference GPU)."""

    def reference_rate(self, jobs: JobTable, job: int) -> float:
        """Rate at the requested size on the reference GPU, for oracle run-time estimates."""
        return self.rate(jobs, job, int(jobs.num_gpus[job]), -1)

    def rate_for_allocation(
        self, jobs: JobTable, job: int, allocation: object, now: float = math.nan
    ) -> float | None:
        """Rate on this exact allocation when the model needs its shape (GPUs per node), as the
        LLM planner does; None (the default): the rate of its GPU count, as :func:`allocation_rate`
        computes it."""
        return None

    def resize_seconds(self, jobs: JobTable, job: int, allocation: object, default: float) -> float:
        """Seconds a job resized onto ``allocation`` makes no progress (``default``: the run's
        ``--resize-overhead``; the LLM planner charges a checkpoint and a restart instead)."""
        return default

    #: Whether :meth:`gpu_counts` or :meth:`runnable_models` may restrict a job (False: they
    #: never do, and callers skip asking).
    restricts_counts: bool = False

    def gpu_counts(self, jobs: JobTable, job: int) -> tuple[int, ...] | None:
        """The GPU counts this model has a rate for ``job`` at, ascending; None (the default):
        any count, the model having a rule for every one.

        A model built from measurements alone (a throughput matrix knows a job type at 1, 2, 4
        and 8 GPUs and nothing in between or beyond) declares its counts, so that policies which
        choose a job's size choose among them instead of landing on a count it gives 0 for."""
        return None

    def runnable_models(self, jobs: JobTable, job: int, num_gpus: int) -> int | None:
        """Bitmask of the GPU models on which ``job`` makes progress (rate > 0) on ``num_gpus``
        GPUs; None (the default): every model. Placement keeps jobs off the others."""
        return None

    def max_useful_gpus(self, jobs: JobTable, job: int, limit: int) -> int:
        """Largest GPU count worth giving (where the rate stops growing); elastic policies cap
        jobs here."""
        best, best_rate = 1, 0.0
        n = 1
        while n <= limit:
            r = self.rate(jobs, job, n, -1)
            if r > best_rate * (1 + 1e-9):
                best, best_rate = n, r
            n *= 2
        return best


def allocation_rate(
    perf: PerfModel, jobs: JobTable, job: int, size: int, gpu_models: Iterable[int]
) -> float:
    """Work units per second of ``job`` on ``size`` GPUs spread over ``gpu_models``.

    A gang spanning GPU models runs at the pace of its slowest GPUs (every worker waits for the
    slowest at each step). The engine charges progress at this rate, and policies that predict
    when a job ends (backfill reservations) must use the same one, or their plans drift from what
    happens.
    """
    models = set(gpu_models)
    return min(perf.rate(jobs, job, size, m) for m in models) if models else 0.0


def runs_on_cluster(
    perf: PerfModel, jobs: JobTable, job: int, num_gpus: int, cluster: Cluster
) -> bool:
    """The cluster has ``num_gpus`` GPUs of models the job accepts and progresses on at that
    count (a gang may span models; it runs at its slowest one's rate, which is then > 0)."""
    mask = perf.runnable_models(jobs, job, num_gpus)
    if mask is None:
        return True
    return gpus_of_models(cluster, mask & int(jobs.gpu_model_mask[job])) >= num_gpus


def gpus_of_models(cluster: Cluster, mask: int) -> int:
    """GPUs the cluster has of the models in bitmask ``mask``."""
    bits = np.where(cluster.model >= 0, np.left_shift(1, np.maximum(cluster.model, 0)), 0)
    return int(cluster.num_gpus[(bits & mask) != 0].sum())


def _speed_of(speed: Mapping[int, float], gpu_model: int) -> float:
    return speed.get(gpu_model, 1.0) if gpu_model >= 0 else 1.0


@dataclass(frozen=True)
class TraceDuration(PerfModel):
    """The run time recorded in the trace, at the requested GPU count.

    On another GPU count the rate scales linearly with the count (the usual assumption when a trace
    says nothing about scaling); on another GPU model it is multiplied by that model's speed factor
    relative to the reference GPU (``speed``: model index → factor, default 1).
    """

    speed: Mapping[int, float] = field(default_factory=dict)

    def work(self, jobs: JobTable) -> np.ndarray:
        return jobs.duration.astype(np.float64)

    def rate(self, jobs: JobTable, job: int, num_gpus: int, gpu_model: int) -> float:
        requested = int(jobs.num_gpus[job])
        share = num_gpus / requested if requested > 0 else 1.0
        return _speed_of(self.speed, gpu_model) * share


@dataclass(frozen=True)
class ThroughputTable(PerfModel):
    """Iterations per second by GPU count, per (model name, global batch size).

    ``table[(model, batch)]`` maps a GPU count to iterations/s; counts between measured ones are
    interpolated linearly; counts beyond the largest measured one get its rate (no further gain).
    Jobs without iterations, or whose (model, batch) is not in the table, fall back to their trace
    duration with linear scaling, so mixed traces still run (:func:`table_gaps` lists them, so a
    run can refuse or announce it). ``measured``: the GPU counts each model's file has columns
    for, when the table was read from files.
    """

    table: Mapping[tuple[str, int], Mapping[int, float]]
    speed: Mapping[int, float] = field(default_factory=dict)
    measured: MeasuredCounts | None = None

    def curve(self, jobs: JobTable, job: int) -> Mapping[int, float] | None:
        """The measured iterations/s by GPU count for this job, or None if it has none."""
        return self._curve(jobs, job)

    def _curve(self, jobs: JobTable, job: int) -> Mapping[int, float] | None:
        if not math.isfinite(jobs.iterations[job]):
            return None
        model = str(jobs.model_name[job])
        curve = self.table.get((model, int(jobs.batch_size[job])))
        n = int(jobs.num_gpus[job])
        if curve is not None and self.measured and n in self.measured.get(model, ()):
            # A blank cell where the job asks to run: no measurement to count iterations with.
            return curve if n in curve else None
        return curve

    def work(self, jobs: JobTable) -> np.ndarray:
        out = jobs.duration.astype(np.float64).copy()
        for j in range(len(jobs)):
            if self._curve(jobs, j) is not None:
                out[j] = jobs.iterations[j]
        return out

    def rate(self, jobs: JobTable, job: int, num_gpus: int, gpu_model: int) -> float:
        curve = self._curve(jobs, job)
        speed = _speed_of(self.speed, gpu_model)
        if curve is None:
            requested = int(jobs.num_gpus[job])
            return speed * (num_gpus / requested if requested > 0 else 1.0)
        return speed * interpolate(curve, num_gpus)


def interpolate(curve: Mapping[int, float], num_gpus: int) -> float:
    """Rate at ``num_gpus`` from measured points (0 below the smallest, flat past the largest)."""
    if num_gpus <= 0:
        return 0.0
    if num_gpus in curve:
        return curve[num_gpus]
    xs = sorted(curve)
    if num_gpus < xs[0]:
        return curve[xs[0]] * num_gpus / xs[0]
    if num_gpus > xs[-1]:
        return curve[xs[-1]]
    return float(np.interp(num_gpus, xs, [curve[x] for x in xs]))


def read_throughput_dir(path: str | Path) -> dict[tuple[str, int], dict[int, float]]:
    """Read a folder of ``<model>.csv`` tables: ``global_batch_size,1,2,4,...`` header, one row per
    batch size, iterations/s per GPU count (blank, ``nan`` or 0 = not runnable there)."""
    return read_throughput_files(path)[0]


def read_throughput_files(
    path: str | Path,
) -> tuple[dict[tuple[str, int], dict[int, float]], MeasuredCounts]:
    """:func:`read_throughput_dir`, and the GPU counts each file has columns for: a count with a
    column but no value in a job's row is a hole in the measurements, not a count between two
    measured ones, and :func:`table_gaps` tells the two apart with it."""
    from schedlab.traces.columns import int_column, read_text_table  # readers live in traces/

    folder = Path(path)
    if not folder.is_dir():
        raise InputError("throughput folder not found", path=str(folder))
    files = sorted(folder.glob("*.csv"))
    if not files:
        raise InputError("no <model>.csv throughput tables in the folder", path=str(folder))
    table: dict[tuple[str, int], dict[int, float]] = {}
    columns: dict[str, frozenset[int]] = {}
    seen_rows: dict[tuple[str, int], int] = {}
    for file in files:
        full = read_text_table(file, ["global_batch_size"], _header(file))
        counts = [c for c in full.columns if c != "global_batch_size"]
        seen: dict[int, str] = {}
        for c in counts:
            if not (c.isascii() and c.isdigit()) or int(c) <= 0:
                raise InputError(
                    f"GPU-count column {c!r} is not a positive whole number",
                    path=str(file),
                    row=1,
                    column=c,
                )
            if int(c) in seen:  # "1" and "01": which would count?
                raise InputError(
                    f"GPU-count column {c!r} repeats {seen[int(c)]!r}",
                    path=str(file),
                    row=1,
                    column=c,
                )
            seen[int(c)] = c
        columns[file.stem] = frozenset(int(c) for c in counts)
        lines = full.attrs["source_lines"]
        batches = int_column(full, "global_batch_size", file, low=1)
        for i in range(len(full)):
            batch = int(batches[i])
            if (file.stem, batch) in seen_rows:  # a second row would silently replace the first
                raise InputError(
                    f"batch size {batch} has a row already (line {seen_rows[(file.stem, batch)]})",
                    path=str(file),
                    row=int(lines[i]),
                    column="global_batch_size",
                )
            seen_rows[(file.stem, batch)] = int(lines[i])
            curve: dict[int, float] = {}
            for c in counts:
                cell = full[c][i].strip()
                try:
                    value = float(cell) if cell else math.nan
                except ValueError:
                    raise InputError(
                        f"iterations/s must be a number (got {cell!r})",
                        path=str(file),
                        row=int(lines[i]),
                        column=c,
                    ) from None
                if math.isfinite(value) and value < 0:
                    raise InputError(
                        f"iterations/s must be ≥ 0 (got {cell})",
                        path=str(file),
                        row=int(lines[i]),
                        column=c,
                    )
                if math.isfinite(value) and value > 0:
                    curve[int(c)] = value
            if curve:
                table[(file.stem, batch)] = curve
    return table, columns


def table_gaps(
    jobs: JobTable,
    table: Mapping[tuple[str, int], Mapping[int, float]],
    measured: MeasuredCounts | None = None,
) -> list[tuple[int, str]]:
    """Jobs a throughput table does not cover, each with the reason: ``(job index, reason)``.

    :class:`ThroughputTable` runs such jobs on their trace duration with linear scaling; a run
    that was given tables should not do that without saying so. A job is not covered when it
    names no model, when its model is not in the tables, when its batch size has no row, or when
    its row leaves the cell of its requested GPU count blank (``measured``: the counts each
    model's file has columns for; None skips that last check), or when it gives no iterations for
    the table to count (only a duration).
    """
    models = {m for m, _ in table}
    gaps: list[tuple[int, str]] = []
    for j in range(len(jobs)):
        model, batch, n = str(jobs.model_name[j]), int(jobs.batch_size[j]), int(jobs.num_gpus[j])
        curve = table.get((model, batch))
        if not model:
            reason = "names no model_name"
        elif model not in models:
            reason = f"model {model!r} is not in the tables"
        elif curve is None:
            reason = f"batch size {batch} has no row in the table of {model!r}"
        elif measured is not None and n in measured.get(model, ()) and n not in curve:
            reason = f"the table of {model!r} has no value for batch {batch} on {n} GPUs"
        elif not math.isfinite(jobs.iterations[j]):
            reason = "gives a duration but no iterations"
        else:
            continue
        gaps.append((j, reason))
    return gaps


def _header(file: Path) -> list[str]:
    check_input_file(file, "throughput table")
    with reading(file, "throughput table"), open(file, encoding="utf-8-sig") as fh:
        return [c.strip() for c in fh.readline().strip().split(",") if c.strip()]


def parse_speed_factors(text: str) -> dict[int, float]:
    """``V100=1,T4=0.4`` → {model index: factor}; for heterogeneous clusters."""
    out: dict[int, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if not is_known_model(name):
            raise InputError(
                f"unknown GPU model {name!r} in speed factors (known: {', '.join(GPU_MODELS)})"
            )
        try:
            factor = float(value)
        except ValueError:
            raise InputError(f"speed factor for {name} must be a number (got {value!r})") from None
        if not math.isfinite(factor) or factor <= 0:
            raise InputError(f"speed factor for {name} must be > 0 (got {value})")
        if model_index(name) in out:
            raise InputError(f"speed factor for {name} is given twice (in {text!r})")
        out[model_index(name)] = factor
    return out
