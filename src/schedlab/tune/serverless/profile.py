"""A model as a chain of layer units: what each holds, stores, sends and costs to compute.

The profile file is JSON::

    {"name": "bert-large",
     "layers": [{"name": "embed", "params_mb": 125.0, "act_mb_per_sample": 0.5,
                 "out_mb_per_sample": 0.5, "fwd": [0.001, 0.0], "bwd": [0.002, 0.0]}, ...]}

``params_mb`` are the unit's parameters, ``act_mb_per_sample`` the activations it keeps for the
backward pass per sample, ``out_mb_per_sample`` what it hands the next unit per sample (the
boundary a pipeline cut sends through storage), and ``fwd``/``bwd`` = ``[a, b]``: seconds of one
pass over ``n`` samples at speed 1 are ``a + b·n``. Units are merged by compute down to
:data:`MAX_UNITS` (a planner over 100 layers gains nothing over one over 32 merged units).
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import InputError
from schedlab.input_files import read_text

#: Largest number of layer units a plan is made of (the FuncPipe repository merges to 30).
MAX_UNITS = 32
LAYER_FIELDS = ("name", "params_mb", "act_mb_per_sample", "out_mb_per_sample", "fwd", "bwd")


@dataclass(frozen=True)
class Layer:
    """One layer unit (see the module docstring for the fields)."""

    name: str
    params_mb: float
    act_mb_per_sample: float
    out_mb_per_sample: float
    fwd: tuple[float, float]
    bwd: tuple[float, float]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params_mb": self.params_mb,
            "act_mb_per_sample": self.act_mb_per_sample,
            "out_mb_per_sample": self.out_mb_per_sample,
            "fwd": list(self.fwd),
            "bwd": list(self.bwd),
        }


@dataclass(frozen=True)
class ModelProfile:
    """A model as an ordered chain of layer units, with column arrays for the planners."""

    name: str
    layers: tuple[Layer, ...]

    def __len__(self) -> int:
        return len(self.layers)

    def column(self, name: str) -> np.ndarray:
        return np.array([getattr(layer, name) for layer in self.layers], dtype=np.float64)

    @cached_property
    def params(self) -> np.ndarray:
        return self.column("params_mb")

    @cached_property
    def act(self) -> np.ndarray:
        return self.column("act_mb_per_sample")

    @cached_property
    def out(self) -> np.ndarray:
        return self.column("out_mb_per_sample")

    @cached_property
    def fwd(self) -> np.ndarray:
        """Shape (units, 2): ``a, b`` of each unit's forward pass."""
        return np.array([layer.fwd for layer in self.layers], dtype=np.float64).reshape(-1, 2)

    @cached_property
    def bwd(self) -> np.ndarray:
        return np.array([layer.bwd for layer in self.layers], dtype=np.float64).reshape(-1, 2)

    def forward_seconds(self, samples: float) -> np.ndarray:
        """Each unit's forward pass over ``samples`` samples at speed 1: ``a + b·samples``."""
        return self.fwd[:, 0] + self.fwd[:, 1] * samples

    def backward_seconds(self, samples: float) -> np.ndarray:
        return self.bwd[:, 0] + self.bwd[:, 1] * samples

    @property
    def total_params_mb(self) -> float:
        return float(self.params.sum())

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "layers": [layer.to_json() for layer in self.layers]}

    def merged(self, max_units: int = MAX_UNITS) -> ModelProfile:
        """Adjacent units merged, the pair with the least forward compute (at one sample)
        first, until at most ``max_units`` remain (ties: the earliest pair)."""
        layers = list(self.layers)
        while len(layers) > max_units:
            cost = [sum(layer.fwd) + sum(nxt.fwd) for layer, nxt in itertools.pairwise(layers)]
            i = int(np.argmin(cost))
            layers[i : i + 2] = [merge(layers[i], layers[i + 1])]
        return ModelProfile(self.name, tuple(layers))


def merge(first: Layer, second: Layer) -> Layer:
    """Two consecutive units as one: parameters, kept activations and compute add up; the
    output is the second's."""
    return Layer(
        f"{first.name}+{second.name}",
        first.params_mb + second.params_mb,
        first.act_mb_per_sample + second.act_mb_per_sample,
        second.out_mb_per_sample,
        (first.fwd[0] + second.fwd[0], first.fwd[1] + second.fwd[1]),
        (first.bwd[0] + second.bwd[0], first.bwd[1] + second.bwd[1]),
    )


def _number(value: object, where: str, field: str, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{where}: '{field}' must be a finite number (got {value!r})", path=path)
    if value < 0:
        raise InputError(f"{where}: '{field}' must be ≥ 0 (got {value!r})", path=path)
    return float(value)


def _pair(value: object, where: str, field: str, path: str) -> tuple[float, float]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise InputError(
            f"{where}: '{field}' must be [a, b] (seconds = a + b·samples; got {value!r})",
            path=path,
        )
    a, b = (_number(v, where, field, path) for v in value)
    return a, b


def layer_from(entry: object, index: int, path: str) -> Layer:
    where = f"layer {index}"
    if not isinstance(entry, dict):
        raise InputError(f"{where} must be an object with {', '.join(LAYER_FIELDS)}", path=path)
    unknown = sorted(set(entry) - set(LAYER_FIELDS))
    if unknown:
        raise InputError(
            f"{where}: unknown field {unknown[0]!r} (allowed: {', '.join(LAYER_FIELDS)})",
            path=path,
        )
    for key in LAYER_FIELDS[1:]:
        if key not in entry:
            raise InputError(f"{where}: missing '{key}'", path=path)
    name = entry.get("name", f"layer{index}")
    return Layer(
        str(name),
        _number(entry["params_mb"], where, "params_mb", path),
        _number(entry["act_mb_per_sample"], where, "act_mb_per_sample", path),
        _number(entry["out_mb_per_sample"], where, "out_mb_per_sample", path),
        _pair(entry["fwd"], where, "fwd", path),
        _pair(entry["bwd"], where, "bwd", path),
    )


def read_profile(path: str | Path) -> ModelProfile:
    """A profile JSON file (see the module docstring); errors name the file and the field."""
    text = read_text(path, "model profile")
    where = str(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg}, line {exc.lineno})", path=where) from None
    if not isinstance(data, dict) or not isinstance(data.get("layers"), list):
        raise InputError("a model profile needs a 'layers' list", path=where)
    if not data["layers"]:
        raise InputError("'layers' is empty: a model needs at least one layer", path=where)
    layers = tuple(layer_from(e, i, where) for i, e in enumerate(data["layers"]))
    return ModelProfile(str(data.get("name", Path(path).stem)), layers)
