"""Fit a calibration profile to measured points: minimise the largest relative error.

A points file (TOML) names the profile it starts from, the fields to fit, and ``[[points]]``: a
model, a GPU, an allocation, a forced plan, a measured figure (``tgs`` tokens/GPU/s,
``hfu_tflops`` or ``mfu_tflops``) and its value. The search is a coarse grid over each field's
range, then Nelder–Mead from the best grid point (scipy), on the largest relative error over the
points; both are deterministic, so the same file gives the same profile.
"""

from __future__ import annotations

import itertools
import math
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import InputError
from schedlab.input_files import read_text
from schedlab.perf.llm.hardware import GPUSpec, NodeNet, get_gpu
from schedlab.perf.llm.model import ModelConfig, get_model
from schedlab.perf.llm.planner import evaluate_plan
from schedlab.perf.llm.profile import Profile, get_profile
from schedlab.perf.llm.space import Plan, Shape, check_allocation, parse_plan

METRICS = ("tgs", "hfu_tflops", "mfu_tflops")

#: Fields a fit may move, with the range its grid covers and the bounds it stays within.
FIT_RANGES: dict[str, tuple[float, float]] = {
    "eta": (0.3, 1.0),
    "k_e": (0.0, 1000.0),
    "k_s": (0.0, 100.0),
    "alpha_inter": (0.0, 100e-6),
    "alpha_intra": (0.0, 50e-6),
    "omega_dp": (0.0, 1.0),
    "omega_tp": (0.0, 1.0),
}
GRID_STEPS = 9


@dataclass(frozen=True)
class Point:
    label: str
    model: ModelConfig
    gpu: GPUSpec
    shape: Shape
    net: NodeNet
    plan: Plan
    metric: str
    value: float

    def predict(self, profile: Profile) -> float:
        result = evaluate_plan(self.model, self.plan, self.gpu, self.shape, profile, self.net)
        if self.metric == "tgs":
            return result.tgs
        return result.breakdown[self.metric]


@dataclass(frozen=True)
class PointsFile:
    base: Profile
    fit: tuple[str, ...]
    points: tuple[Point, ...]
    name: str
    fit_on: tuple[str, ...]  # labels of the points fitted on (the others are held out)

    @property
    def fitted_points(self) -> tuple[Point, ...]:
        return tuple(p for p in self.points if p.label in self.fit_on)

    @property
    def held_out(self) -> tuple[Point, ...]:
        return tuple(p for p in self.points if p.label not in self.fit_on)


def _need(table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in table:
        raise InputError(f"{where} lacks '{key}'")
    value = table[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InputError(f"{where}: '{key}' has the wrong type (got {value!r})")
    return value


def _positive(table: dict[str, Any], key: str, where: str) -> float:
    """A finite number > 0 from a point (a measured figure or a rate: 0, a negative, inf or nan
    would make the relative error, or the transfer times, meaningless)."""
    value = float(_need(table, key, (int, float), where))
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{where}: '{key}' must be a finite number > 0 (got {value:g})")
    return value


def _count(table: dict[str, Any], key: str, where: str) -> int:
    """A whole number ≥ 1 from a point (nodes, GPUs per node)."""
    value = _need(table, key, int, where)
    if value < 1:
        raise InputError(f"{where}: '{key}' must be ≥ 1 (got {value})")
    return value


def _names(data: dict[str, Any], key: str, file: Path, what: str) -> tuple[str, ...] | None:
    """A non-empty list of distinct strings from the file's top level (None when absent): an
    empty ``fit`` has nothing to fit and an empty ``fit_on`` nothing to fit on."""
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"'{key}' must be a list of {what} (got {value!r})", path=str(file))
    if not value:
        raise InputError(f"'{key}' is empty: it must name at least one {what[:-1]}", path=str(file))
    dup = next((v for i, v in enumerate(value) if v in value[:i]), None)
    if dup is not None:
        raise InputError(f"'{key}' names {dup!r} twice", path=str(file))
    return tuple(value)


def _point(row: Any, i: int, file: Path) -> Point:
    """One ``[[points]]`` table; every error names the file, the point and the field."""
    if not isinstance(row, dict):
        raise InputError(f"point {i} must be a table (got {row!r})", path=str(file))
    label = str(row.get("label", f"point {i}"))
    where = f"{file}: point {i}" + (f" ({label!r})" if "label" in row else "")
    try:
        model = get_model(_need(row, "model", str, where))
        gpu = get_gpu(_need(row, "gpu", str, where))
    except InputError as exc:
        if exc.message.startswith(where):
            raise
        raise InputError(f"{where}: {exc.message}") from None
    nodes = _count(row, "nodes", where)
    per_node = _count(row, "gpus_per_node", where)
    check_allocation(nodes, per_node, f"{where}: 'nodes' × 'gpus_per_node'")
    shape = Shape.uniform(nodes, per_node)
    net = NodeNet.from_gbps(
        float(_need(row, "nic_gbps", (int, float), where)), f"{where}: 'nic_gbps'"
    )
    fields = parse_plan(_need(row, "plan", str, where), f"{where}: 'plan'")
    plan = Plan(**fields)  # type: ignore[arg-type]
    if "zg" not in fields:
        plan = replace(plan, zg=plan.d)
    if plan.gpus != shape.total:
        raise InputError(
            f"{where}: 'plan' uses {plan.gpus} GPUs, the allocation ('nodes' × "
            f"'gpus_per_node') {shape.total}"
        )
    metric = _need(row, "metric", str, where)
    if metric not in METRICS:
        raise InputError(f"{where}: 'metric' must be one of {', '.join(METRICS)} (got {metric!r})")
    value = _positive(row, "value", where)
    return Point(label, model, gpu, shape, net, plan, metric, value)


def read_points(path: str | Path) -> PointsFile:
    """A points file: the base profile, what to fit, the points and which of them to fit on.
    Anything that cannot be used is one InputError naming the file (and point and field)."""
    file = Path(path)
    text = read_text(file, "points file")  # a binary file is one line, not UnicodeDecodeError
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=str(file)) from None
    base = get_profile(str(data.get("base", "generic")))
    name = str(data.get("name", file.stem))
    fit = _names(data, "fit", file, "fields") or ("eta", "k_e")
    for key in fit:
        if key not in FIT_RANGES:
            raise InputError(
                f"cannot fit {key!r} (fittable: {', '.join(FIT_RANGES)})", path=str(file)
            )
    overrides = data.get("profile", {})
    if not isinstance(overrides, dict):
        raise InputError(f"[profile] must be a table (got {overrides!r})", path=str(file))
    if overrides:
        try:
            base = replace(base, **overrides)
        except TypeError as exc:
            raise InputError(f"bad [profile] table ({exc})", path=str(file)) from None
        except InputError as exc:
            raise InputError(f"[profile]: {exc.message}", path=str(file)) from None
    raw = data.get("points")
    if not isinstance(raw, list) or not raw:
        raise InputError("no [[points]]", path=str(file))
    points = [_point(row, i, file) for i, row in enumerate(raw, 1)]
    labels = [p.label for p in points]
    if len(set(labels)) != len(labels):
        raise InputError("two points share a label", path=str(file))
    fit_on = _names(data, "fit_on", file, "points") or tuple(labels)
    unknown = [label for label in fit_on if label not in labels]
    if unknown:
        raise InputError(f"'fit_on' names no point {unknown[0]!r}", path=str(file))
    return PointsFile(base, fit, tuple(points), name, fit_on)


def errors(points: tuple[Point, ...], profile: Profile) -> np.ndarray:
    """Relative error of every point under ``profile``: predicted / measured − 1."""
    return np.array([p.predict(profile) / p.value - 1.0 for p in points])


def fit(points: PointsFile) -> tuple[Profile, np.ndarray]:
    """The profile minimising the largest relative error over the points, and its errors."""
    from scipy.optimize import minimize

    keys = points.fit
    lows = np.array([FIT_RANGES[k][0] for k in keys])
    highs = np.array([FIT_RANGES[k][1] for k in keys])

    def profile_of(x: np.ndarray) -> Profile:
        x = np.clip(x, lows, highs)
        values = {k: float(v) for k, v in zip(keys, x, strict=True)}
        values["eta"] = max(values.get("eta", points.base.eta), 1e-3)
        return replace(points.base, **{k: values[k] for k in keys})

    chosen = points.fitted_points

    def loss(x: np.ndarray) -> float:
        return float(np.max(np.abs(errors(chosen, profile_of(x)))))

    axes = [np.linspace(lo, hi, GRID_STEPS) for lo, hi in zip(lows, highs, strict=True)]
    best_x, best = None, math.inf
    for combo in itertools.product(*axes):
        x = np.array(combo)
        value = loss(x)
        if value < best:
            best_x, best = x, value
    assert best_x is not None
    scale = (highs - lows) / (GRID_STEPS - 1)
    simplex = np.vstack(
        [best_x] + [best_x + np.eye(len(keys))[i] * scale[i] / 2 for i in range(len(keys))]
    )
    res = minimize(
        loss,
        best_x,
        method="Nelder-Mead",
        options={"initial_simplex": simplex, "xatol": 1e-9, "fatol": 1e-9, "maxiter": 4000},
    )
    x = res.x if res.fun <= best else best_x
    fitted = profile_of(x)
    errs = errors(chosen, fitted)
    fitted = replace(
        fitted,
        name=points.name,
        fitted_on=tuple(p.label for p in chosen),
        fit_max_error=float(np.max(np.abs(errs))),
    )
    return fitted, errs
