"""Measured application tables for goodput-aware simulation (Pollux's simulator data).

Per application, a folder with:

* ``placements.csv`` — ``placement,local_bsz,step_time,sync_time``: seconds per step and of it
  the gradient synchronisation, per placement (digits = replicas per node: ``22`` is 2 nodes ×
  2 GPUs) and per-GPU batch size;
* ``scalability.csv`` — ``num_nodes,num_replicas,local_bsz,step_time,sync_time`` for larger
  placements;
* ``validation-<M>.csv`` — one row per epoch at global batch size M: ``progress`` (training
  progress in M0-sized iterations at the end of the epoch), ``iteration``, ``metric``, and the
  gradient statistics ``grad_sqr`` and ``grad_var`` measured during it.

Lookups follow Pollux's simulator exactly (the same interpolators, the same arithmetic order),
so the reproduced JCTs are the artifact's to the second: a placement is normalised to its
lexicographically smallest rotation; a placement that was measured is interpolated linearly
over the local batch size; any other is interpolated linearly in (nodes capped at 16, replicas,
local batch) over the per-key means of the placements and the scalability rows (a Delaunay
triangulation). Gradient statistics and iteration counts interpolate between the two validated
batch sizes around the one asked for.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from schedlab.errors import InputError
from schedlab.input_files import check_input_file
from schedlab.perf.blas_threads import one_blas_thread
from schedlab.perf.goodput.csv_floats import legacy_float

if TYPE_CHECKING:
    from scipy.interpolate import LinearNDInterpolator

#: Epochs to train and other per-application settings of Pollux's simulator.
APP_SETTINGS: dict[str, dict[str, int]] = {
    "bert": {"max_epochs": 2},
    "cifar10": {"max_epochs": 100},
    "ncf": {"max_epochs": 10},
    "imagenet": {"max_epochs": 90},
    "deepspeech2": {"max_epochs": 80},
    "yolov3": {"max_epochs": 50, "max_local_bsz": 8},
}

PLACEMENT_COLUMNS = ["placement", "local_bsz", "step_time", "sync_time"]
SCALABILITY_COLUMNS = ["num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"]
VALIDATION_COLUMNS = ["progress", "iteration", "metric", "grad_sqr", "grad_var"]
#: Nodes beyond which the interpolation extrapolates no further.
MAX_INTERPOLATED_NODES = 16

#: A table's numeric columns by name, each a float64 array with one value per row. Plain
#: arrays rather than data frames: the tables are small and looked up thousands of times per
#: run, and reading them should not cost a data-frame library's import.
Table = dict[str, np.ndarray]


def _read_csv(path: Path, columns: list[str]) -> Table:
    """A table's numeric columns, every cell parsed as pandas 1.x parsed it
    (:func:`legacy_float`): the simulator's numbers were computed from those values."""
    check_input_file(path, "application table")
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            lines = [row for row in csv.reader(f) if row]
    except (csv.Error, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the table ({exc})", path=str(path)) from None
    if not lines:
        raise InputError("cannot read the table (no columns to parse)", path=str(path))
    header, rows = lines[0], lines[1:]
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(
            f"missing column {missing[0]!r} (expected {', '.join(columns)})", path=str(path)
        )
    for number, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise InputError(
                f"cannot read the table (expected {len(header)} fields, saw {len(row)})",
                path=str(path),
                row=number,
            )
    table: Table = {}
    for column in columns:
        at = header.index(column)
        values = []
        for number, row in enumerate(rows, start=2):
            cell = row[at]
            try:
                value = legacy_float(cell)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise InputError(
                    f"{column!r} must be a number (got {cell!r})",
                    path=str(path),
                    row=number,
                    column=column,
                )
            values.append(value)
        table[column] = np.array(values, dtype=np.float64)
    return table


def _check_positive(table: Table, columns: list[str], path: Path) -> None:
    for column in columns:
        bad = table[column] <= 0
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{column!r} must be > 0 (got {table[column][row]!r})",
                path=str(path),
                row=row + 2,
                column=column,
            )


def linear_1d(xs: np.ndarray, ys: np.ndarray, x: float) -> tuple[np.float64, np.float64]:
    """``ys`` (rows of (step, sync)) at ``x``, linearly between the measured ``xs`` (sorted,
    stably): scipy's ``interp1d(xs, ys, axis=0)(x)`` operation for operation — the segment
    is found by a left search clipped to [1, n−1], then slope × (x − x_lo) + y_lo — so the
    values agree to the last bit; outside [xs[0], xs[-1]] it raises ValueError as that does."""
    if x < xs[0] or x > xs[-1]:
        side = "below" if x < xs[0] else "above"
        raise ValueError(f"A value ({x}) in x_new is {side} the interpolation range")
    hi = min(max(int(np.searchsorted(xs, x)), 1), len(xs) - 1)
    lo = hi - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = (ys[hi] - ys[lo]) / (xs[hi] - xs[lo])
        out = slope * (np.float64(x) - xs[lo]) + ys[lo]
    return out[0], out[1]


def group_means(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``keys`` in ascending (lexicographic) order and the mean of
    ``values`` over each, summed in row order with Kahan compensation. On the shipped tables
    these are bit for bit the means pandas' ``groupby(sort=True).mean()`` gives (tested), so
    the interpolation's points — and with them its triangulation — stay those the reproduced
    runs were matched with."""
    groups = sorted({tuple(row) for row in keys.tolist()})
    index = {key: i for i, key in enumerate(groups)}
    sums = np.zeros((len(groups), values.shape[1]))
    compensation = np.zeros_like(sums)
    counts = np.zeros(len(groups))
    for key, row in zip(keys.tolist(), values, strict=True):
        g = index[tuple(key)]
        counts[g] += 1
        for j, value in enumerate(row):
            y = value - compensation[g, j]
            t = sums[g, j] + y
            compensation[g, j] = t - sums[g, j] - y
            if compensation[g, j] != compensation[g, j]:  # an infinite value: keep it
                compensation[g, j] = 0.0
            sums[g, j] = t
    return np.array(groups, dtype=np.float64).reshape(-1, keys.shape[1]), sums / counts[:, None]


@dataclass(eq=False)
class Application:
    """One application's tables and Pollux's lookups over them."""

    name: str
    placements: Table
    scalability: Table
    #: Validation tables by global batch size, ascending.
    validation: dict[int, Table]
    init_batch_size: int
    max_batch_size: int
    min_local_bsz: int
    max_local_bsz: int
    max_epochs: int
    _throughput: dict[tuple[tuple[int, ...], int], tuple[float, float]] = field(
        default_factory=dict, repr=False
    )
    _grad: dict[tuple[float, int], tuple[float, float]] = field(default_factory=dict, repr=False)
    _progress: dict[int, float] = field(default_factory=dict, repr=False)

    # -- lookups ---------------------------------------------------------------------------
    def validated_batch_sizes(self, batch_size: float) -> tuple[int, int]:
        """The validated batch sizes just below and above ``batch_size`` (may be equal)."""
        lower = upper = None
        for bsz in self.validation:
            if bsz <= batch_size:
                lower = bsz
            if bsz >= batch_size:
                upper = bsz
                break
        if lower is None or upper is None:
            raise ValueError(
                f"{self.name}: batch size {batch_size} is outside the validated "
                f"{min(self.validation)}..{max(self.validation)}"
            )
        return lower, upper

    def progress_at(self, epoch: int) -> float:
        """Progress at the end of ``epoch`` − 1 (the least over batch sizes); 0 for epoch 0."""
        value = self._progress.get(epoch)
        if value is None:
            value = (
                0.0
                if epoch == 0
                else min(table["progress"][epoch - 1] for table in self.validation.values())
            )
            self._progress[epoch] = value
        return value

    @property
    def total_progress(self) -> float:
        """Progress at which a job completes (the end of its last epoch)."""
        return self.progress_at(self.max_epochs)

    def completion_epoch(self, batch_size: float) -> int:
        """The epoch after which a job stops (no target metric: the last one)."""
        return self.max_epochs - 1

    def iteration(self, batch_size: float, epoch: int) -> float:
        """Iterations done by the end of ``epoch`` at ``batch_size`` (interpolated)."""
        lower, upper = self.validated_batch_sizes(batch_size)
        lo = self.validation[lower]["iteration"][epoch]
        hi = self.validation[upper]["iteration"][epoch]
        if lower == upper:
            return lo
        return ((batch_size - lower) * hi + (upper - batch_size) * lo) / (upper - lower)

    def grad_stats(self, batch_size: float, epoch: int) -> tuple[float, float]:
        """(|g|², tr Σ) during ``epoch`` at ``batch_size`` (interpolated)."""
        key = (batch_size, epoch)
        hit = self._grad.get(key)
        if hit is not None:
            return hit
        lower, upper = self.validated_batch_sizes(batch_size)
        lo, hi = self.validation[lower], self.validation[upper]
        lo_sqr, hi_sqr = lo["grad_sqr"][epoch], hi["grad_sqr"][epoch]
        lo_var, hi_var = lo["grad_var"][epoch], hi["grad_var"][epoch]
        if lower == upper:
            out = (lo_sqr, lo_var)
        else:
            sqr = ((batch_size - lower) * hi_sqr + (upper - batch_size) * lo_sqr) / (upper - lower)
            var = ((batch_size - lower) * hi_var + (upper - batch_size) * lo_var) / (upper - lower)
            out = (sqr, var)
        self._grad[key] = out
        return out

    def throughput(self, placement: tuple[int, ...], local_bsz: int) -> tuple[float, float]:
        """(step time, sync time) in seconds on ``placement`` at per-GPU batch ``local_bsz``."""
        key = (tuple(placement), local_bsz)
        hit = self._throughput.get(key)
        if hit is not None:
            return hit
        p = tuple(x for x in placement if x)
        p = min(p[i:] + p[:i] for i in range(len(p)))
        pid = int("".join(map(str, p)))
        rows = self._by_placement.get(pid)
        if rows is not None:
            ret = linear_1d(rows[0], rows[1], local_bsz)
        else:
            nodes = min(len(p), MAX_INTERPOLATED_NODES)
            interpolate = self._interpolator
            if interpolate is None:
                raise ValueError(
                    f"{self.name}: no step time for placement {p} (the measured placements "
                    "span too few dimensions to interpolate)"
                )
            # The first call computes every simplex's barycentric transform with LAPACK: on
            # the default thread pool the idle workers spin between those tiny calls (25 s of
            # CPU for cifar10's table on two busy cores against 10 ms on one thread).
            with one_blas_thread():
                ret = interpolate([nodes, sum(p), local_bsz])[0]
        if not (ret[0] == ret[0] and ret[1] == ret[1]):  # NaN: outside the measured hull
            raise ValueError(
                f"{self.name}: no step time for placement {p} at local batch {local_bsz}"
            )
        out = (ret[0], ret[1])
        self._throughput[key] = out
        return out

    @cached_property
    def _by_placement(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Each measured placement's local batch sizes (stably sorted) and (step, sync) rows."""
        table = self.placements
        ids = table["placement"]
        times = np.column_stack([table["step_time"], table["sync_time"]])
        out = {}
        for pid in dict.fromkeys(ids.tolist()):
            rows = np.flatnonzero(ids == pid)
            order = np.argsort(table["local_bsz"][rows], kind="mergesort")
            out[int(pid)] = (table["local_bsz"][rows][order], times[rows][order])
        return out

    @cached_property
    def _interpolator(self) -> LinearNDInterpolator | None:
        # Imported here: only a placement that was not measured needs it, and the import is a
        # good share of a short run's time.
        from scipy.interpolate import LinearNDInterpolator
        from scipy.spatial import QhullError

        xs = ["num_nodes", "num_replicas", "local_bsz"]
        ys = ["step_time", "sync_time"]
        keys, means = group_means(
            np.column_stack([self.placements[c] for c in xs]),
            np.column_stack([self.placements[c] for c in ys]),
        )
        points = np.vstack([keys, np.column_stack([self.scalability[c] for c in xs])])
        values = np.vstack([means, np.column_stack([self.scalability[c] for c in ys])])
        try:
            return LinearNDInterpolator(points, values)
        except QhullError:  # e.g. every measured placement on one node: a flat point set
            return None


def read_application(folder: str | Path, name: str | None = None) -> Application:
    """Read one application folder (see the module docstring)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("application folder not found", path=str(folder))
    name = name or folder.name
    settings = APP_SETTINGS.get(name, {})
    validation: dict[int, Table] = {}
    for path in sorted(folder.glob("validation-*.csv")):
        tail = path.stem.split("-")[-1]
        if not tail.isdigit() or int(tail) <= 0:
            raise InputError(
                "validation tables are named validation-<global batch size>.csv", path=str(path)
            )
        frame = _read_csv(path, VALIDATION_COLUMNS)
        if len(frame["progress"]) == 0:
            raise InputError("the validation table has no epochs", path=str(path))
        validation[int(tail)] = frame
    if not validation:
        raise InputError("no validation-<batch size>.csv tables", path=str(folder))
    validation = dict(sorted(validation.items()))
    placements = _read_csv(folder / "placements.csv", PLACEMENT_COLUMNS)
    _check_positive(placements, ["placement", "local_bsz", "step_time"], folder / "placements.csv")
    bad = [p for p in placements["placement"] if not str(int(p)).isdigit() or "0" in str(int(p))]
    if bad:
        raise InputError(
            f"placement {bad[0]!r} must be digits 1-9 (replicas per node)",
            path=str(folder / "placements.csv"),
            column="placement",
        )
    digits = [str(int(p)) for p in placements["placement"].tolist()]
    placements["num_nodes"] = np.array([len(d) for d in digits], dtype=np.float64)
    placements["num_replicas"] = np.array([sum(map(int, d)) for d in digits], dtype=np.float64)
    scalability = _read_csv(folder / "scalability.csv", SCALABILITY_COLUMNS)
    epochs = min(len(table["progress"]) for table in validation.values())
    max_epochs = settings.get("max_epochs") or epochs
    if max_epochs > epochs:
        raise InputError(
            f"{name} trains {max_epochs} epochs but a validation table has fewer rows",
            path=str(folder),
        )
    return Application(
        name=name,
        placements=placements,
        scalability=scalability,
        validation=validation,
        init_batch_size=min(validation),
        max_batch_size=max(validation),
        min_local_bsz=int(placements["local_bsz"].min()),
        max_local_bsz=int(settings.get("max_local_bsz") or placements["local_bsz"].max()),
        max_epochs=max_epochs,
    )


def read_applications(root: str | Path) -> dict[str, Application]:
    """Every application folder under ``root`` (a folder with a ``placements.csv``)."""
    root = Path(root)
    if not root.is_dir():
        raise InputError("applications folder not found", path=str(root))
    apps = {
        p.parent.name: read_application(p.parent) for p in sorted(root.glob("*/placements.csv"))
    }
    if not apps:
        raise InputError("no application folders (<app>/placements.csv)", path=str(root))
    return apps


def fixed_batch_config(app: Application, batch_size: float, num_replicas: int) -> tuple[int, int]:
    """(per-GPU micro-batch, accumulation steps) for a fixed global batch on ``num_replicas``
    GPUs: as many accumulation steps as the largest micro-batch needs (at least one on a single
    GPU above the initial batch), then capped so the global batch does not exceed the largest
    validated one."""
    local = math.ceil(batch_size / num_replicas - 1e-8)
    accum = math.ceil(local / app.max_local_bsz - 1e-8) - 1
    if num_replicas == 1 and batch_size > app.init_batch_size:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    count = num_replicas * (accum + 1)
    return min(atomic, int(app.max_batch_size / count)), accum
