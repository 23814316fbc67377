"""The canonical job table for replay: one row per training job.

A job is a gang: all of its GPUs start together (possibly across nodes) and stop together. Its
work is given either as a trace duration (seconds at the requested GPU count on the reference GPU)
or as a number of iterations with a (model, batch size) for a throughput table; the perf model
turns either into a rate of progress on a concrete allocation.

Columns are numpy arrays (a million jobs must fit in well under a gigabyte). ``deadline`` is an
absolute time in seconds (NaN: none); ``gpu_model_mask`` is a bitmask of allowed GPU models.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from schedlab.model.gpu_models import ANY_MODEL_MASK

JOB_SCHEMA_VERSION = 1

#: Column name → (dtype, default for a missing column; None = required).
JOB_COLUMNS: dict[str, tuple[str, object]] = {
    "job_id": ("object", None),
    "submit_time": ("float64", None),
    "num_gpus": ("int64", None),
    "duration": ("float64", np.nan),
    "iterations": ("float64", np.nan),
    "model_name": ("object", ""),
    "batch_size": ("int64", 0),
    "user": ("object", ""),
    "deadline": ("float64", np.nan),
    "gpu_model_mask": ("int64", ANY_MODEL_MASK),
    "cpu_milli": ("int64", 0),
    "memory_mib": ("int64", 0),
    # Geometry (Slurm's -N, --gpus-per-node, --ntasks-per-node, --exclusive): when
    # ``gpus_per_node`` > 0 the job runs on exactly ``num_nodes`` nodes with that many GPUs on
    # each (``num_gpus`` = their product); 0 lets any split through. An exclusive job shares
    # none of its nodes.
    "gpus_per_node": ("int64", 0),
    "num_nodes": ("int64", 0),
    "exclusive": ("bool", False),
    # Whether a preempted job resumes where it stopped (True, the simulator's long-standing
    # model) or, like a requeued Slurm job without a checkpoint, starts again from nothing.
    "checkpoint": ("bool", True),
    # Slurm's habits (:mod:`schedlab.traces.slurm_habits`): the seconds a run may last (NaN: no
    # limit), the dependency as Slurm writes it with array IDs spelled out as task IDs ("": none),
    # and for an array task its array's ID and throttle (0: none).
    "time_limit": ("float64", np.nan),
    "dependency": ("object", ""),
    "array_job": ("object", ""),
    "array_throttle": ("int64", 0),
    # Relative weight in weighted-fairness policies (Gavel's LAS and water-filling): a job of
    # weight 5 is entitled to five times the share of a job of weight 1.
    "priority_weight": ("float64", 1.0),
}


@dataclass(frozen=True)
class JobTable:
    """Jobs in canonical form; see :data:`JOB_COLUMNS` for units and defaults."""

    job_id: np.ndarray
    submit_time: np.ndarray
    num_gpus: np.ndarray
    duration: np.ndarray
    iterations: np.ndarray
    model_name: np.ndarray
    batch_size: np.ndarray
    user: np.ndarray
    deadline: np.ndarray
    gpu_model_mask: np.ndarray
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    gpus_per_node: np.ndarray
    num_nodes: np.ndarray
    exclusive: np.ndarray
    checkpoint: np.ndarray
    time_limit: np.ndarray
    dependency: np.ndarray
    array_job: np.ndarray
    array_throttle: np.ndarray
    priority_weight: np.ndarray
    source: str = field(default="<memory>")
    schema_version: int = JOB_SCHEMA_VERSION
    #: LLM training jobs' own columns (a :class:`schedlab.model.llm_jobs.LLMJobs` aligned with
    #: the rows; None: a trace without LLM jobs, and every job is as described above).
    llm: Any = None
    #: A reader's extra per-job columns for reports (name → array aligned with the rows; None:
    #: none), e.g. AcmeTrace's job type and final state. Engines never read them.
    extra: Any = None
    #: Jobs of the file its reader's filters left out, by filter (``zero_gpus`` …; only those
    #: that removed any), so every result made from this table can say so.
    dropped: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.job_id)
        for name in JOB_COLUMNS:
            if len(getattr(self, name)) != n:
                raise ValueError(f"JobTable.{name} has {len(getattr(self, name))} rows, not {n}")

    def __len__(self) -> int:
        return len(self.job_id)

    @classmethod
    def from_columns(cls, source: str = "<memory>", **cols: object) -> JobTable:
        """Build from any sequences; optional columns get their defaults."""
        unknown = set(cols) - set(JOB_COLUMNS)
        if unknown:
            raise ValueError(f"unknown job column(s): {', '.join(sorted(unknown))}")
        n = len(cols["job_id"])  # type: ignore[arg-type]
        data: dict[str, np.ndarray] = {}
        for name, (dtype, default) in JOB_COLUMNS.items():
            if name in cols and cols[name] is not None:
                data[name] = np.asarray(cols[name], dtype=dtype)
            elif default is None:
                raise ValueError(f"job column {name!r} is required")
            else:
                data[name] = np.full(n, default, dtype=dtype)
        return cls(source=source, **data)

    def take(self, index: np.ndarray) -> JobTable:
        cols = {name: getattr(self, name)[index] for name in JOB_COLUMNS}
        if self.llm is not None:
            cols["llm"] = self.llm.take(index)
        if self.extra is not None:
            cols["extra"] = {k: np.asarray(v)[index] for k, v in self.extra.items()}
        return replace(self, **cols)

    def sorted_by_submit(self) -> JobTable:
        """Submit order, ties kept in input order (a trace's own order is its tie-break)."""
        return self.take(np.argsort(self.submit_time, kind="stable"))

    @property
    def has_deadlines(self) -> bool:
        return bool(np.isfinite(self.deadline).any())

    def columns(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in JOB_COLUMNS}

    def stats(self) -> dict[str, object]:
        """What a user checks first about a trace."""
        n = len(self)
        dur = self.duration[np.isfinite(self.duration)]
        counts = np.unique(self.num_gpus, return_counts=True)
        span = float(self.submit_time.max() - self.submit_time.min()) if n else 0.0
        out: dict[str, object] = {
            "jobs": n,
            "span_seconds": span,
            "by_num_gpus": {str(int(k)): int(c) for k, c in zip(*counts, strict=True)},
            "gpu_hours": float(
                (self.duration * self.num_gpus)[np.isfinite(self.duration)].sum() / 3600.0
            ),
            "users": len(np.unique(self.user)) if n else 0,
            "with_deadline": int(np.isfinite(self.deadline).sum()),
            "with_iterations": int(np.isfinite(self.iterations).sum()),
        }
        if len(dur):
            q = np.percentile(dur, [50, 90, 99])
            out["duration_seconds"] = {
                "mean": float(dur.mean()),
                "p50": float(q[0]),
                "p90": float(q[1]),
                "p99": float(q[2]),
                "max": float(dur.max()),
            }
        return out
