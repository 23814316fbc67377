"""Throughput matrices: steps per second of each job type on each accelerator type (Gavel).

A heterogeneity-aware scheduler needs to know that a Transformer runs 3.3× faster on a V100 than
on a K80 while a recommendation model gains almost nothing: one speed factor per GPU model cannot
say that. A throughput matrix can: ``T[job type][accelerator type]`` = steps/s of a job of that
type holding its ``scale_factor`` GPUs of that type (0: it cannot run there, e.g. ResNet-50 at
batch 128 on two or more K80s). A job type is ``(model, scale_factor)``; co-location pairs give
the steps/s of both jobs of a pair sharing the same GPUs (space sharing).

The file format is Gavel's ``simulation_throughputs.json``::

    { "<worker type>": { "('<model>', <scale>)": { "null": <isolated steps/s>,
                                                    "('<other model>', <scale>)": [<self>, <other>],
                                                    ... } } }

Keys are Python tuple literals. Worker types name GPU models schedlab knows (``k80``, ``p100``,
``v100``, ...); ``*_unconsolidated`` variants (a multi-GPU job spread over servers) are skipped,
as Gavel's simulator skips them.

:class:`MatrixPerf` makes a matrix a performance model every replay policy can use
(``replay --throughputs FILE.json``): a job's ``model_name`` is its job type's model (e.g.
``ResNet-18 (batch size 64)``), its ``num_gpus`` the scale factor, its work ``iterations`` steps
(or, with only a ``duration``, that many seconds at the reference type's speed — Gavel's own
definition of a job's length: V100 seconds).
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.input_files import read_text
from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import GPU_MODELS, is_known_model, model_index
from schedlab.model.jobs import JobTable
from schedlab.perf.models import PerfModel, gpus_of_models, runs_on_cluster

#: A job type: (model, scale factor).
JobType = tuple[str, int]

#: Worker types the simulator ignores (multi-GPU jobs spread over servers).
UNCONSOLIDATED = "_unconsolidated"

#: The accelerator a job's length is measured on when the matrix has it (Gavel's reference).
DEFAULT_REFERENCE = "v100"


@dataclass(frozen=True)
class ThroughputMatrix:
    """Isolated and co-located steps/s by job type × accelerator type.

    ``types`` are sorted by name (the order Gavel flattens allocations in); ``isolated[i, k]`` is
    job type ``job_types[i]`` on ``types[k]``; ``pairs[k][(a, b)]`` = (steps/s of a, of b) when
    the job types a and b share GPUs of ``types[k]``.
    """

    source: str
    types: tuple[str, ...]
    job_types: tuple[JobType, ...]
    isolated: np.ndarray
    pairs: tuple[Mapping[tuple[JobType, JobType], tuple[float, float]], ...] = ()
    index: Mapping[JobType, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.index:
            object.__setattr__(self, "index", {t: i for i, t in enumerate(self.job_types)})

    @property
    def models(self) -> tuple[int, ...]:
        """The schedlab GPU model index of each type."""
        return tuple(model_index(t) for t in self.types)

    def type_of_model(self, gpu_model: int) -> int | None:
        """Column of a GPU model index (None: the matrix has no column for it)."""
        name = GPU_MODELS[gpu_model].lower() if 0 <= gpu_model < len(GPU_MODELS) else ""
        return self.types.index(name) if name in self.types else None

    def throughput(self, job_type: JobType, worker_type: str) -> float:
        """Isolated steps/s of ``job_type`` on ``worker_type`` (KeyError if either is absent)."""
        return float(self.isolated[self.index[job_type], self.types.index(worker_type)])

    def pair(self, a: JobType, b: JobType, worker_type: str) -> tuple[float, float] | None:
        """Steps/s of ``a`` and ``b`` sharing GPUs of ``worker_type`` (None: not measured)."""
        if not self.pairs:
            return None
        return self.pairs[self.types.index(worker_type)].get((a, b))

    def model_names(self) -> list[str]:
        """The distinct model names, in file order."""
        return list(dict.fromkeys(m for m, _ in self.job_types))


def _job_type(text: str, where: str, path: str) -> JobType:
    """A key like ``('ResNet-18 (batch size 64)', 1)`` as a (model, scale) tuple."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = None
    if (
        not isinstance(value, tuple)
        or len(value) != 2
        or not isinstance(value[0], str)
        or not value[0]
        or isinstance(value[1], bool)
        or not isinstance(value[1], int)
        or value[1] < 1
    ):
        raise InputError(
            f"job type {text!r} under {where} is not a ('<model>', <scale factor ≥ 1>) tuple",
            path=path,
        )
    return value[0], value[1]


def _steps(value: object, what: str, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{what} must be a number of steps/s (got {value!r})", path=path)
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise InputError(f"{what} must be ≥ 0 steps/s (got {value!r})", path=path)
    return v


def read_throughput_matrix(path: str | Path) -> ThroughputMatrix:
    """Read a Gavel throughput JSON (see the module docstring); every problem is an InputError
    naming the file, the worker type and the job type."""
    src = str(path)
    text = read_text(path, "throughput matrix")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path=src, row=exc.lineno) from None
    if not isinstance(raw, dict) or not raw:
        raise InputError("expected an object of worker types at the top level", path=src)
    types = sorted(t for t in raw if not str(t).endswith(UNCONSOLIDATED))
    if not types:
        raise InputError("no worker types (only *_unconsolidated ones)", path=src)
    for t in types:
        if not is_known_model(t):
            raise InputError(
                f"worker type {t!r} is not a GPU model schedlab knows "
                f"(known: {', '.join(m.lower() for m in GPU_MODELS)})",
                path=src,
            )
        if t != t.lower():
            raise InputError(f"worker type {t!r} must be lower case (as {t.lower()!r})", path=src)
    job_types: list[JobType] = []
    rows: dict[JobType, list[float]] = {}
    pairs: list[dict[tuple[JobType, JobType], tuple[float, float]]] = []
    for k, t in enumerate(types):
        entries = raw[t]
        if not isinstance(entries, dict) or not entries:
            raise InputError(f"worker type {t!r} must map job types to throughputs", path=src)
        here: dict[tuple[JobType, JobType], tuple[float, float]] = {}
        seen: set[JobType] = set()
        for key, value in entries.items():
            jt = _job_type(key, repr(t), src)
            if jt in seen:
                raise InputError(f"job type {key!r} appears twice under {t!r}", path=src)
            seen.add(jt)
            where = f"{t!r} → {key}"
            if not isinstance(value, dict) or "null" not in value:
                raise InputError(
                    f"{where} must be an object with a 'null' (isolated) throughput", path=src
                )
            if k == 0:
                job_types.append(jt)
                rows[jt] = []
            elif jt not in rows:
                raise InputError(
                    f"job type {key!r} is under {t!r} but not under {types[0]!r}", path=src
                )
            rows[jt].append(_steps(value["null"], f"{where} 'null'", src))
            for other, both in value.items():
                if other == "null":
                    continue
                ot = _job_type(other, where, src)
                if not isinstance(both, list) or len(both) != 2:
                    raise InputError(
                        f"{where} → {other} must be [self steps/s, other steps/s]", path=src
                    )
                here[(jt, ot)] = (
                    _steps(both[0], f"{where} → {other}[0]", src),
                    _steps(both[1], f"{where} → {other}[1]", src),
                )
        missing = [jt for jt in job_types if jt not in seen]
        if missing:
            raise InputError(
                f"job type {missing[0]!r} is under {types[0]!r} but not under {t!r}", path=src
            )
        pairs.append(here)
    isolated = np.array([rows[jt] for jt in job_types], dtype=np.float64).reshape(
        len(job_types), len(types)
    )
    return ThroughputMatrix(src, tuple(types), tuple(job_types), isolated, tuple(pairs))


def is_matrix_file(spec: str | None) -> bool:
    """``--throughputs`` names a throughput matrix (a ``.json`` file) rather than a table folder."""
    return bool(spec) and str(spec).lower().endswith(".json")


@dataclass(frozen=True)
class MatrixPerf(PerfModel):
    """A throughput matrix as a performance model (see the module docstring).

    ``rate(job, n, model)`` = steps/s of the job's model at scale ``n`` on ``model``'s column:
    a job may run at another scale only where the matrix has that job type (Gavel's distributed
    models exist at 1, 2, 4 and 8 GPUs), and nowhere the matrix says 0. The reference GPU (for
    oracle run-time estimates) is ``reference``. Jobs the matrix does not cover run on their trace
    duration with linear scaling, as with throughput tables (:func:`matrix_gaps` lists them so a
    run can refuse or announce it).

    The matrix declares what it knows (:meth:`gpu_counts`, :meth:`runnable_models`): policies
    that size jobs choose among those counts, placement keeps a job off the GPU types where its
    count runs at 0, and a run refuses a job that can make progress nowhere on its cluster
    (:func:`unrunnable_jobs`) — the matrix has no scaling rule to fill its gaps with.
    """

    matrix: ThroughputMatrix
    reference: str = DEFAULT_REFERENCE
    #: Steps/s by (model name, GPUs, GPU model): jobs of a type share them (keyed by name, not
    #: by job index, since the engine and the checks see the jobs in different orders).
    _cache: dict[tuple[str, int, int], float] = field(default_factory=dict, compare=False)
    _counts: dict[str, tuple[int, ...]] = field(default_factory=dict, compare=False)
    _masks: dict[tuple[str, int], int] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.reference not in self.matrix.types:
            object.__setattr__(self, "reference", self.matrix.types[0])

    def covers(self, jobs: JobTable, job: int) -> bool:
        return (str(jobs.model_name[job]), int(jobs.num_gpus[job])) in self.matrix.index

    def reference_throughput(self, jobs: JobTable, job: int) -> float:
        key = (str(jobs.model_name[job]), int(jobs.num_gpus[job]))
        return self.matrix.throughput(key, self.reference)

    def work(self, jobs: JobTable) -> np.ndarray:
        out = jobs.duration.astype(np.float64).copy()
        for j in range(len(jobs)):
            if not self.covers(jobs, j):
                continue
            if math.isfinite(jobs.iterations[j]):
                out[j] = jobs.iterations[j]
            else:  # a duration in reference seconds: that many seconds' worth of steps
                out[j] = jobs.duration[j] * self.reference_throughput(jobs, j)
        return out

    def rate(self, jobs: JobTable, job: int, num_gpus: int, gpu_model: int) -> float:
        if not self.covers(jobs, job):
            requested = int(jobs.num_gpus[job])
            return num_gpus / requested if requested > 0 else 1.0
        key = (str(jobs.model_name[job]), num_gpus, gpu_model)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._rate(key[0], num_gpus, gpu_model)
        return cached

    def _rate(self, model: str, num_gpus: int, gpu_model: int) -> float:
        if num_gpus <= 0:
            return 0.0
        row = self.matrix.index.get((model, num_gpus))
        if row is None:
            return 0.0
        col = (
            self.matrix.types.index(self.reference)
            if gpu_model < 0
            else self.matrix.type_of_model(gpu_model)
        )
        return 0.0 if col is None else float(self.matrix.isolated[row, col])

    restricts_counts = True

    def gpu_counts(self, jobs: JobTable, job: int) -> tuple[int, ...] | None:
        """The scales the matrix has the job's model at with steps/s > 0 on some type (None for
        a job it does not cover: those scale linearly)."""
        if not self.covers(jobs, job):
            return None
        model = str(jobs.model_name[job])
        counts = self._counts.get(model)
        if counts is None:
            counts = self._counts[model] = tuple(
                sorted(
                    s
                    for m, s in self.matrix.job_types
                    if m == model and self.runnable_models(jobs, job, s)
                )
            )
        return counts

    def runnable_models(self, jobs: JobTable, job: int, num_gpus: int) -> int | None:
        """GPU models whose column runs the job's model at ``num_gpus`` GPUs above 0 steps/s (0:
        the matrix has no such job type); None for a job it does not cover."""
        if not self.covers(jobs, job):
            return None
        key = (str(jobs.model_name[job]), num_gpus)
        mask = self._masks.get(key)
        if mask is None:
            row = self.matrix.index.get(key)
            mask = 0
            if row is not None:
                for k, model in enumerate(self.matrix.models):
                    if self.matrix.isolated[row, k] > 0:
                        mask |= 1 << model
            self._masks[key] = mask
        return mask

    def max_useful_gpus(self, jobs: JobTable, job: int, limit: int) -> int:
        """The scale with the highest reference steps/s among those the matrix has."""
        best, best_rate = 1, 0.0
        for n in (1, 2, 4, 8, 16, 32, 64):
            if n > limit:
                break
            r = self.rate(jobs, job, n, -1)
            if r > best_rate * (1 + 1e-9):
                best, best_rate = n, r
        return best


def matrix_gaps(jobs: JobTable, matrix: ThroughputMatrix) -> list[tuple[int, str]]:
    """Jobs the matrix does not cover, with the reason: ``(job index, reason)``."""
    models = set(matrix.model_names())
    gaps: list[tuple[int, str]] = []
    for j in range(len(jobs)):
        model, n = str(jobs.model_name[j]), int(jobs.num_gpus[j])
        if (model, n) in matrix.index:
            if not (math.isfinite(jobs.iterations[j]) or math.isfinite(jobs.duration[j])):
                gaps.append((j, "gives neither iterations nor a duration"))
            continue
        if not model:
            reason = "names no model_name (a job type of the throughput matrix)"
        elif model not in models:
            reason = f"job type {model!r} is not in the throughput matrix"
        else:
            scales = sorted(s for m, s in matrix.job_types if m == model)
            reason = (
                f"job type {model!r} has no column at scale {n} in the throughput matrix "
                f"(it has: {', '.join(map(str, scales))})"
            )
        gaps.append((j, reason))
    return gaps


def check_matrix_columns(matrix: ThroughputMatrix, cluster: Cluster, cluster_name: str) -> None:
    """Every GPU model of the cluster needs a column: a GPU the matrix cannot speak of would get
    throughput 0 for every job, i.e. silently never be used."""
    present = sorted({int(m) for m in cluster.model[cluster.num_gpus > 0].tolist()})
    for m in present:
        if matrix.type_of_model(m) is None:
            raise InputError(
                f"the cluster {cluster_name!r} has {GPU_MODELS[m]} GPUs, but the throughput "
                f"matrix has no column for them (it has: {', '.join(matrix.types)})",
                path=matrix.source,
            )


def unrunnable_jobs(
    perf: MatrixPerf, jobs: JobTable, cluster: Cluster, elastic: bool
) -> list[tuple[int, str]]:
    """Jobs that can make no progress on ``cluster``: at their GPU count (a policy that keeps
    sizes), or at every count the matrix has for them (a policy that sizes jobs itself, which
    may pick any of those), the cluster has too few GPUs of the models the matrix gives a
    non-zero rate for. ``(job index, reason)``, in job order."""
    present = sorted({int(m) for m in cluster.model[cluster.num_gpus > 0].tolist()})
    verdicts: dict[tuple[str, int, int], bool] = {}
    out: list[tuple[int, str]] = []
    for j in range(len(jobs)):
        known = perf.gpu_counts(jobs, j)
        if known is None:
            continue
        counts = known if elastic else (int(jobs.num_gpus[j]),)
        model, mask = str(jobs.model_name[j]), int(jobs.gpu_model_mask[j])
        runs = False
        for n in counts:
            key = (model, n, mask)
            if key not in verdicts:
                verdicts[key] = runs_on_cluster(perf, jobs, j, n, cluster)
            if verdicts[key]:
                runs = True
                break
        if runs:
            continue
        if elastic:
            where = ", ".join(map(str, known)) or "none"
            out.append((j, f"runs at 0 steps/s at every GPU count the matrix has for it ({where})"))
            continue
        n = counts[0]
        mask_n = perf.runnable_models(jobs, j, n) or 0
        on = [GPU_MODELS[m] for m in present if (mask_n >> m) & 1 and (mask >> m) & 1]
        if on:
            have = gpus_of_models(cluster, mask_n & mask)
            reason = f"runs at {n} GPUs only on {', '.join(on)}, of which the cluster has {have}"
        else:
            reason = f"runs at 0 steps/s at {n} GPUs on every GPU model of the cluster"
        out.append((j, reason))
    return out


def convert_to_tables(matrix: ThroughputMatrix, out: str | Path) -> list[Path]:
    """Write the matrix as ``--throughputs DIR`` tables, one folder per accelerator type:
    ``OUT/<type>/<model>.csv`` with a row per batch size and a column per scale factor.

    Gavel's model names carry their batch size (``ResNet-18 (batch size 64)``): it becomes the
    row's ``global_batch_size`` under the file ``ResNet-18.csv``. Models without one (A3C,
    CycleGAN) get batch size 1. Returns the files written. Co-location pairs have no place in the
    tables and are left out.
    """
    root = Path(out)
    written: list[Path] = []
    grouped: dict[str, dict[int, dict[int, list[float]]]] = {}
    for i, (model, scale) in enumerate(matrix.job_types):
        base, batch = split_batch(model)
        grouped.setdefault(base, {}).setdefault(batch, {})[scale] = list(matrix.isolated[i])
    for k, t in enumerate(matrix.types):
        folder = root / t
        folder.mkdir(parents=True, exist_ok=True)
        for base, by_batch in grouped.items():
            scales = sorted({s for row in by_batch.values() for s in row})
            lines = ["global_batch_size," + ",".join(map(str, scales))]
            for batch in sorted(by_batch):
                cells = [
                    repr(float(by_batch[batch][s][k])) if s in by_batch[batch] else ""
                    for s in scales
                ]
                lines.append(f"{batch}," + ",".join(cells))
            path = folder / f"{file_stem(base)}.csv"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            written.append(path)
    return written


def split_batch(model: str) -> tuple[str, int]:
    """``'ResNet-18 (batch size 64)'`` → ``('ResNet-18', 64)``; no batch size → batch 1."""
    marker = " (batch size "
    if model.endswith(")") and marker in model:
        base, _, rest = model.rpartition(marker)
        digits = rest[:-1]
        if digits.isdigit():
            return base, int(digits)
    return model, 1


def file_stem(model: str) -> str:
    """A model name as a file name (path separators and spaces replaced)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in model)
