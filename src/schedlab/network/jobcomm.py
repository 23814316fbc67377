"""What each job of a replay communicates: collective, gradient bytes, overlap, compute time.

A trace in schedlab's own (generic) format may carry per-job columns (all optional; blank = the
default):

``collective`` [ring]
    ``ring``, ``hd``, ``a2a``, ``ps`` or ``ina``.
``gradient_bytes`` [the model's, from :data:`GRADIENT_BYTES`]
    Bytes synchronised per iteration.
``overlap`` [the model's profile, 0.3]
    Share of the compute time communication may hide behind (0…1).
``compute_time`` [the model's profile]
    Compute seconds per iteration at the job's requested GPU count on the reference GPU; on n
    GPUs it is scaled by requested/n (data parallelism splits the batch).
``net_priority`` [0]
    Priority class for ``--net-sharing priority`` (higher is served first).

Jobs whose ``model_name`` is not in the per-model table (Philly and other duration-only traces
name no model) get a model drawn with a generator seeded by the run's seed, from the models that
have both a gradient size and a compute profile, so the same seed gives the same mix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.model.jobs import JobTable
from schedlab.network.collectives import COLLECTIVES, GRADIENT_BYTES, model_key
from schedlab.perf.scaling import PROFILES, TRACE_BATCHES
from schedlab.traces.columns import float_column, line_of, read_text_table

#: The trace columns read here (documented in :mod:`schedlab.traces.generic` too).
COMM_COLUMNS = ("collective", "gradient_bytes", "overlap", "compute_time", "net_priority")

#: Bounds of the per-job columns (ours): an iteration computes for under a day, no model
#: synchronises a petabyte per iteration (the largest today: about 1e12 bytes), and priority
#: classes are small whole numbers. Beyond them a value is a unit slip that would print absurd
#: times as a normal result.
MAX_COMPUTE_SECONDS = 86_400.0
MAX_GRADIENT_BYTES = 1e15
MAX_PRIORITY = 1_000_000

#: Models a job without a known model is drawn from: both a gradient size and a compute profile.
DRAW_MODELS: tuple[str, ...] = tuple(m for m in PROFILES if m in GRADIENT_BYTES)

#: Seconds per sample for a model with a gradient size but no compute profile (vgg19, alexnet).
FALLBACK_MS_PER_SAMPLE = 4.0
FALLBACK_BATCH = 64


@dataclass(frozen=True)
class JobComm:
    """Per-job communication parameters, aligned with a :class:`JobTable`'s rows."""

    model: np.ndarray  # object: model key used
    collective: np.ndarray  # object
    gradient_bytes: np.ndarray  # float64
    overlap: np.ndarray  # float64
    compute_requested: np.ndarray  # float64: C at the requested GPU count
    fixed: np.ndarray  # float64: the part of C that does not shrink with more GPUs
    priority: np.ndarray  # int64

    def compute(self, job: int, requested: int, gpus: int) -> float:
        """C on ``gpus`` GPUs: the fixed part plus the per-sample part split over the GPUs."""
        fixed = float(self.fixed[job])
        share = (requested / gpus) if gpus > 0 and requested > 0 else 1.0
        return fixed + (float(self.compute_requested[job]) - fixed) * share


def _profile_compute(model: str, batch: int, gpus: int) -> tuple[float, float, float]:
    """(C at ``gpus`` GPUs, its fixed part, overlap) from the scaling model's profile."""
    prof = PROFILES.get(model)
    if prof is None:
        b = batch if batch > 0 else FALLBACK_BATCH
        return b / max(gpus, 1) * FALLBACK_MS_PER_SAMPLE / 1000.0, 0.0, 0.3
    b = batch if batch > 0 else TRACE_BATCHES.get(model, (FALLBACK_BATCH,))[0]
    fixed = prof.fixed_ms / 1000.0
    return fixed + b / max(gpus, 1) * prof.ms_per_sample / 1000.0, fixed, prof.overlap


def _trace_columns(path: str, jobs: JobTable) -> dict[str, np.ndarray]:
    """The communication columns a generic trace gives, aligned with ``jobs`` (NaN/"" = blank)."""
    frame = read_text_table(path, ["job_id"], COMM_COLUMNS)
    present = [c for c in COMM_COLUMNS if c in frame.columns]
    if not present:
        return {}
    row_of = {str(v).strip(): i for i, v in enumerate(frame["job_id"].tolist())}
    index = np.array([row_of.get(str(j), -1) for j in jobs.job_id], dtype=np.int64)
    out: dict[str, np.ndarray] = {}
    for col in present:
        if col == "collective":
            cells = frame[col].astype(str).str.strip().str.lower().to_numpy(dtype=object)
            for i, cell in enumerate(cells.tolist()):
                if cell and cell not in COLLECTIVES:
                    raise InputError(
                        f"unknown collective {cell!r} (known: {', '.join(COLLECTIVES)})",
                        path=path,
                        row=line_of(frame, i),
                        column=col,
                    )
            values: np.ndarray = cells
        else:
            values = float_column(frame, col, path, allow_blank=True)
            rules = {
                "overlap": (values > 1, "overlap must be between 0 and 1"),
                "net_priority": (
                    (values != np.round(values)) | (values > MAX_PRIORITY),
                    f"net_priority must be a whole number in 0..{MAX_PRIORITY}",
                ),
                "compute_time": (
                    (values <= 0) | (values > MAX_COMPUTE_SECONDS),
                    f"compute_time must be > 0 and at most {MAX_COMPUTE_SECONDS:g} seconds per "
                    "iteration (at 0 the job would never progress)",
                ),
                "gradient_bytes": (
                    values > MAX_GRADIENT_BYTES,
                    f"gradient_bytes must be at most {MAX_GRADIENT_BYTES:g} per iteration",
                ),
            }
            if col in rules:
                wrong, message = rules[col]
                bad = np.flatnonzero(np.isfinite(values) & wrong)
                if len(bad):
                    raise InputError(
                        f"{message} (got {frame[col].iat[bad[0]]!r})",
                        path=path,
                        row=line_of(frame, int(bad[0])),
                        column=col,
                    )
        blank: object = "" if col == "collective" else math.nan
        out[col] = np.array(
            [values[i] if i >= 0 else blank for i in index.tolist()],
            dtype=object if col == "collective" else np.float64,
        )
    return out


def job_comm(jobs: JobTable, seed: int, trace: str | None = None) -> JobComm:
    """Communication parameters of every job: the trace's columns (a generic-format ``trace``)
    over the per-model defaults."""
    cols = _trace_columns(trace, jobs) if trace is not None and Path(trace).is_file() else {}
    n = len(jobs)
    rng = np.random.default_rng([seed, 0x6E6574])  # its own stream: policies' draws unchanged
    drawn = rng.integers(0, len(DRAW_MODELS), size=n)
    model = np.empty(n, dtype=object)
    collective = np.empty(n, dtype=object)
    size = np.zeros(n)
    overlap = np.zeros(n)
    compute = np.zeros(n)
    fixed = np.zeros(n)
    priority = np.zeros(n, dtype=np.int64)
    for i in range(n):
        key = model_key(str(jobs.model_name[i]))
        if key not in GRADIENT_BYTES:
            key = DRAW_MODELS[int(drawn[i])]
        model[i] = key
        req = max(int(jobs.num_gpus[i]), 1)
        c, f, o = _profile_compute(key, int(jobs.batch_size[i]), req)
        given = cols.get("compute_time")
        if given is not None and np.isfinite(given[i]):
            c, f = float(given[i]), 0.0
        compute[i], fixed[i] = c, f
        given = cols.get("overlap")
        overlap[i] = float(given[i]) if given is not None and np.isfinite(given[i]) else o
        given = cols.get("gradient_bytes")
        has_size = given is not None and np.isfinite(given[i])
        size[i] = float(given[i]) if has_size else GRADIENT_BYTES[key]  # type: ignore[index]
        given = cols.get("collective")
        collective[i] = (given[i] if given is not None and given[i] else "ring") or "ring"
        given = cols.get("net_priority")
        priority[i] = int(given[i]) if given is not None and np.isfinite(given[i]) else 0
    return JobComm(model, collective, size, overlap, compute, fixed, priority)
