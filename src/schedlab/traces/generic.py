"""schedlab's own job CSV: the canonical job table written out, for traces from anywhere else.

One row per job; the header names the columns (any order; unknown columns are ignored).

Required:

``job_id``
    Non-blank and unique.
``submit_time``
    Seconds (≥ 0, fractions allowed) on any clock you like; kept as written.
``num_gpus``
    Whole GPUs the job runs on as a gang (0 allowed, but dropped by default: see below).

and at least one of these two columns, with at least one of them filled in on every row:

``duration``
    Run time in seconds at ``num_gpus`` GPUs of the reference model.
``iterations``
    Total training iterations; the perf model turns them into time from a throughput table, so
    a row with iterations and no duration must name its ``model_name``.

Optional (blank = the default in brackets):

``user`` [""]
    Tenant, for fairness and quotas.
``deadline`` [none]
    Absolute time in seconds on the ``submit_time`` clock; must not be before ``submit_time``.
``model_name`` [""], ``batch_size`` [0 = unknown]
    Keys into the throughput tables.
``gpu_model`` [any]
    GPU models the job may run on, ``|``-separated (e.g. ``V100|A100``); names are checked against
    :data:`schedlab.model.gpu_models.GPU_MODELS`.
``cpu_milli``, ``memory_mib`` [0]
    CPU (thousandths of a core) and memory (MiB) per job.
``gpus_per_node``, ``num_nodes`` [0 = any split]
    A fixed geometry: ``num_nodes`` nodes with ``gpus_per_node`` GPUs each (their product must be
    ``num_gpus``).
``exclusive`` [0]
    1: the job shares none of its nodes.
``checkpoint`` [1]
    0: a preempted job loses its progress and starts again from nothing (as a requeued Slurm job
    that saves no checkpoint); 1: it resumes where it stopped.
``priority_weight`` [1]
    A job's weight (> 0) in weighted-fairness policies (Gavel's LAS: weight 5 is entitled to five
    times the share of weight 1).

Slurm's habits, enforced by replay as Slurm does live (details and semantics in
:mod:`schedlab.traces.slurm_habits`):

``time_limit`` [none]
    Seconds a run may last (``--time``); a run still going then is killed (status ``timeout``).
``array`` [none]
    ``--array`` spec (``0-9``, ``1,3,5-7``, ``0-15:4``, ``%N`` throttle): one job per task,
    named ``ID_TASK``.
``dependency`` [none]
    ``--dependency`` (``afterok:a:b``, ``afterany:…``, ``afternotok:…``, ``after:…``; clauses
    joined by ``,`` for all or ``?`` for any; quote it in the CSV when it has a comma).

Communication, read only by ``replay --topology`` (see :mod:`schedlab.network.jobcomm` and
``docs/network.md``; other commands ignore them):

``collective`` [ring]
    ``ring``, ``hd`` (halving-doubling), ``a2a``, ``ps`` (parameter server) or ``ina``.
``gradient_bytes`` [the model's fp32 gradient size]
    Bytes synchronised per training iteration (at most 1e15).
``overlap`` [the model's profile, 0.3]
    Share (0…1) of the compute time communication may hide behind.
``compute_time`` [the model's profile]
    Compute seconds per iteration at ``num_gpus`` GPUs of the reference model (> 0, at most a
    day).
``net_priority`` [0]
    Whole-number priority class for ``--net-sharing priority`` (higher is served first), in
    0…10⁶.

Example::

    job_id,submit_time,num_gpus,duration,iterations,model_name,batch_size,deadline,gpu_model
    a,0,1,3600,,,,,
    b,30.5,4,,120000,resnet50,256,9000,V100|A100
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.traces.columns import (
    TextTable,
    float_column,
    int_column,
    line_of,
    read_text_table,
    unique_names,
)
from schedlab.traces.job_common import (
    MAX_GPUS_PER_JOB,
    ReadResult,
    check_not_before,
    finish,
    gpu_model_masks,
    require_one_of,
    text_column,
)
from schedlab.traces.slurm_habits import SLURM_COLUMNS, expand, read_columns

FORMAT = "generic"
#: Where a job's input is, for ``replay --federation``: a site or data store, GB staged in, GB
#: written back, a site it is pinned to, and GB of checkpoint a move of the running job carries
#: (blank: the federation's defaults).
FEDERATION_COLUMNS = ["data_site", "data_gb", "output_gb", "site", "ckpt_gb"]
#: The most data one job may name (1e9 GB, an exabyte): a larger figure is a broken export, and
#: past ~1e300 the transfer times it implies are no longer numbers.
MAX_JOB_GB = 1e9
COLUMNS = ["job_id", "submit_time", "num_gpus"]
OPTIONAL = [
    "duration",
    "iterations",
    "user",
    "deadline",
    "model_name",
    "batch_size",
    "gpu_model",
    "cpu_milli",
    "memory_mib",
    "gpus_per_node",
    "num_nodes",
    "exclusive",
    "checkpoint",
    *SLURM_COLUMNS,
    "priority_weight",
    *FEDERATION_COLUMNS,
]


def _blank_float(frame: TextTable, column: str, path: Path) -> np.ndarray:
    """Optional number column: blanks (or a missing column) are NaN."""
    if column not in frame.columns:
        return np.full(len(frame), np.nan)
    return float_column(frame, column, path, allow_blank=True)


def _blank_int(frame: TextTable, column: str, path: Path) -> np.ndarray | None:
    """Optional whole-number column: blanks take the job table's default (0)."""
    return _filled_int(frame, column, path, "0")


def _filled_int(frame: TextTable, column: str, path: Path, default: str) -> np.ndarray | None:
    """Optional whole-number column, blanks read as ``default`` (None: no such column)."""
    if column not in frame.columns:
        return None
    filled = np.where(frame.stripped(column) != "", frame[column], default)
    return int_column(frame.replaced(column, filled), column, path, low=0)


def _geometry(frame: TextTable, num_gpus: np.ndarray, path: Path) -> dict[str, object]:
    """The optional geometry columns; a fixed split must multiply out to ``num_gpus``."""
    per_node = _blank_int(frame, "gpus_per_node", path)
    nodes = _blank_int(frame, "num_nodes", path)
    exclusive = _blank_int(frame, "exclusive", path)
    if per_node is not None:
        count = np.maximum(nodes if nodes is not None else 1, 1)
        bad = (per_node > 0) & (per_node * count != num_gpus)
        line = _first(frame, bad)
        if line is not None:
            raise InputError(
                "'gpus_per_node' × 'num_nodes' must equal 'num_gpus'",
                path=str(path),
                row=line,
                column="gpus_per_node",
            )
        nodes = np.where(per_node > 0, count, 0)
    return {
        "gpus_per_node": per_node,
        "num_nodes": nodes if per_node is not None else None,
        "exclusive": None if exclusive is None else exclusive > 0,
    }


def _checkpoint(frame: TextTable, path: Path) -> np.ndarray | None:
    """The optional ``checkpoint`` column (blank: 1, the job resumes after a preemption)."""
    values = _filled_int(frame, "checkpoint", path, "1")
    return None if values is None else values > 0


def deadline_column(frame: TextTable, submit: np.ndarray, path: Path) -> np.ndarray:
    """The optional ``deadline`` column (blank: none), never before the job's submit time."""
    deadline = _blank_float(frame, "deadline", path)
    check_not_before(
        frame,
        deadline,
        submit,
        path,
        column="deadline",
        message="'deadline' is before 'submit_time'",
    )
    return deadline


def _weights(frame: TextTable, path: Path) -> np.ndarray | None:
    """The optional ``priority_weight`` column: blank is 1, anything else a number > 0."""
    if "priority_weight" not in frame.columns:
        return None
    weights = _blank_float(frame, "priority_weight", path)
    line = _first(frame, weights <= 0)
    if line is not None:
        raise InputError(
            "'priority_weight' must be > 0", path=str(path), row=line, column="priority_weight"
        )
    return np.where(np.isnan(weights), 1.0, weights)


def _first(frame: TextTable, mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return line_of(frame, int(hits[0])) if len(hits) else None


def read_generic(
    path: str | Path, *, drop_zero: bool = True, min_duration: float = 0.0
) -> ReadResult:
    """Read a job CSV in schedlab's own format (see the module docstring)."""
    path = Path(path)
    frame = read_text_table(path, COLUMNS, OPTIONAL)
    require_one_of(frame, ["duration", "iterations"], path)
    job_id = unique_names(frame, "job_id", path)
    submit = float_column(frame, "submit_time", path)
    num_gpus = int_column(frame, "num_gpus", path, low=0, high=MAX_GPUS_PER_JOB)
    duration = _blank_float(frame, "duration", path)
    iterations = _blank_float(frame, "iterations", path)
    no_work = np.isnan(duration) & np.isnan(iterations)
    line = _first(frame, no_work)
    if line is not None:
        column = "duration" if "duration" in frame.columns else "iterations"
        raise InputError(
            "the job needs a 'duration' or an 'iterations' value",
            path=str(path),
            row=line,
            column=column,
        )
    model_name = text_column(frame, "model_name")
    needs_model = np.isnan(duration) & (
        np.ones(len(frame), dtype=bool) if model_name is None else model_name == ""
    )
    line = _first(frame, needs_model)
    if line is not None:
        raise InputError(
            "a job given only as 'iterations' needs a 'model_name' to turn them into time",
            path=str(path),
            row=line,
            column="model_name",
        )
    deadline = deadline_column(frame, submit, path)
    cols: dict[str, object] = {
        "job_id": job_id,
        "submit_time": submit,
        "num_gpus": num_gpus,
        "duration": duration,
        "iterations": iterations,
        "deadline": deadline,
        "user": text_column(frame, "user"),
        "model_name": model_name,
        "batch_size": _blank_int(frame, "batch_size", path),
        "cpu_milli": _blank_int(frame, "cpu_milli", path),
        "memory_mib": _blank_int(frame, "memory_mib", path),
        **_geometry(frame, num_gpus, path),
        "checkpoint": _checkpoint(frame, path),
        "priority_weight": _weights(frame, path),
    }
    if "gpu_model" in frame.columns:
        cols["gpu_model_mask"] = gpu_model_masks(frame, "gpu_model", path)
    slurm = read_columns(frame, path)
    array = slurm.pop("array", None)
    cols.update(slurm)
    if array is None and "dependency" not in slurm:
        result = finish(path, FORMAT, frame, cols, drop_zero=drop_zero, min_duration=min_duration)
        return _with_federation(result, frame, job_id, path)
    # Arrays become one job per task and dependencies name the jobs they wait for: both after
    # the filters, with each job's file line kept for errors.
    cols["array_job"] = array if array is not None else None
    result = finish(path, FORMAT, frame, cols, drop_zero=drop_zero, min_duration=min_duration)
    lines = {str(j): line_of(frame, i) for i, j in enumerate(job_id.tolist())}
    jobs = result.jobs
    specs = jobs.array_job if array is not None else None
    jobs = expand(replace(jobs, array_job=np.full(len(jobs), "", dtype=object)), specs, lines, path)
    return _with_federation(replace(result, jobs=jobs), frame, job_id, path)


def _with_federation(
    result: ReadResult, frame: TextTable, job_id: np.ndarray, path: Path
) -> ReadResult:
    """The federation columns the file has, as the table's ``extra`` columns (aligned with the
    jobs kept; an array's tasks take their job's values)."""
    present = [c for c in FEDERATION_COLUMNS if c in frame.columns]
    if not present:
        return result
    values: dict[str, np.ndarray] = {}
    for column in present:
        if column in ("data_gb", "output_gb", "ckpt_gb"):
            values[column] = float_column(
                frame, column, path, allow_blank=True, low=0.0, high=MAX_JOB_GB
            )
        else:
            values[column] = frame.stripped(column)
    row = {str(j): i for i, j in enumerate(job_id.tolist())}
    jobs = result.jobs
    index = np.array(
        [row.get(str(j), row.get(str(j).split("_")[0], 0)) for j in jobs.job_id.tolist()],
        dtype=np.int64,
    )
    extra = dict(jobs.extra or {})
    extra.update({k: v[index] for k, v in values.items()})
    return replace(result, jobs=replace(jobs, extra=extra))
