"""Calibration profiles: the constants of the step-time model that are fitted, not derived.

A profile holds the matmul efficiency ``eta`` and the memory-bound bytes per token-hidden unit
``k_e`` (elementwise kernels) and per head-token² ``k_s`` (softmax without FlashAttention) — the
"achievable MFU curve" of :mod:`schedlab.perf.llm.steptime` — plus the overlaps, latencies and
byte widths of the collectives, and the points it was fitted on. Shipped profiles live in
``profiles/*.toml``; ``schedlab plan calibrate`` writes new ones.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.input_files import read_text

PROFILE_DIR = Path(__file__).with_name("profiles")
#: The measured points the shipped profiles were fitted on (and the held-out ones).
POINTS_DIR = Path(__file__).with_name("points")
ALLGATHER_RULES = ("per-tensor", "bucket")


@dataclass(frozen=True)
class Profile:
    name: str
    eta: float = 0.60  # matmul efficiency: achieved / peak FLOP rate of the big GEMMs
    k_e: float = 150.0  # memory-bound bytes per (token × hidden) per layer, forward + backward
    k_s: float = 0.0  # memory-bound bytes per (head × token²) per layer (softmax, no flash)
    flash: bool = True  # FlashAttention: no s² activations, no softmax traffic
    omega_dp: float = 0.8  # share of the last micro-batch's backward gradient reduction hides in
    omega_tp: float = 0.0  # share of tensor-parallel collectives hidden behind compute
    omega_3: float = 0.8  # share of ZeRO-3 gathers hidden behind the layer's compute
    alpha_intra: float = 5e-6  # seconds per collective step inside a node
    alpha_inter: float = 10e-6  # seconds per collective step across nodes
    grad_bytes: int = 2  # bytes of a gradient held per parameter (Megatron keeps fp32: 4)
    grad_comm_bytes: int = 2  # bytes per parameter the gradient reduction moves
    optimizer_bytes: int = 12  # K: fp32 master weights, Adam m and v
    allgather: str = "bucket"  # parameter all-gathers: one call per bucket or per tensor
    bucket_bytes: float = 512 * 2**20
    overlap_param_gather: bool = False
    dropout: bool | None = None  # None: the model's own setting
    fitted_on: tuple[str, ...] = ()
    fit_max_error: float = math.nan  # largest relative error on the points it was fitted on
    source: str = ""

    def __post_init__(self) -> None:
        where = f"profile {self.name!r}"
        for name in ("eta",):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise InputError(f"{where}: '{name}' must be in (0, 1] (got {value})")
        for name in ("omega_dp", "omega_tp", "omega_3"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise InputError(f"{where}: '{name}' must be in [0, 1] (got {value})")
        for name in ("k_e", "k_s", "alpha_intra", "alpha_inter"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"{where}: '{name}' must be ≥ 0 (got {value})")
        for name in ("grad_bytes", "grad_comm_bytes", "optimizer_bytes"):
            value = getattr(self, name)
            if value not in (1, 2, 4, 8, 12, 16):
                raise InputError(f"{where}: '{name}' must be a byte width (got {value})")
        if self.allgather not in ALLGATHER_RULES:
            raise InputError(
                f"{where}: 'allgather' must be one of {', '.join(ALLGATHER_RULES)} "
                f"(got {self.allgather!r})"
            )
        if not self.bucket_bytes > 0:
            raise InputError(f"{where}: 'bucket_bytes' must be > 0 (got {self.bucket_bytes})")

    def with_values(self, **values: float) -> Profile:
        return replace(self, **values)

    def to_toml(self) -> str:
        """The profile as a TOML file :func:`read_profile` reads back unchanged."""
        lines = [f"# Calibration profile {self.name} (see docs/llm.md)."]
        for f in fields(self):
            if f.name == "name":
                continue
            value = getattr(self, f.name)
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            lines.append(f"{f.name} = {_toml_value(value)}")
        return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value)
    return str(value)


_TYPES = {f.name: f.type for f in fields(Profile)}


def read_profile(path: str | Path, name: str | None = None) -> Profile:
    file = Path(path)
    text = read_text(file, "profile")  # one line naming the file, not a UnicodeDecodeError
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=str(file)) from None
    unknown = sorted(set(data) - set(_TYPES) - {"name"})
    if unknown:
        raise InputError(f"unknown profile field {unknown[0]!r}", path=str(file))
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key == "name":
            continue
        if key == "fitted_on":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError("'fitted_on' must be a list of strings", path=str(file))
            value = tuple(value)
        elif key in ("flash", "overlap_param_gather", "dropout"):
            if not isinstance(value, bool):
                raise InputError(f"'{key}' must be true or false", path=str(file))
        elif key in ("allgather", "source"):
            if not isinstance(value, str):
                raise InputError(f"'{key}' must be a string", path=str(file))
        elif key in ("grad_bytes", "grad_comm_bytes", "optimizer_bytes"):
            if not isinstance(value, int) or isinstance(value, bool):
                raise InputError(f"'{key}' must be a whole number", path=str(file))
        else:
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise InputError(f"'{key}' must be a number (got {value!r})", path=str(file))
            value = float(value)
        values[key] = value
    try:
        return Profile(name=name or str(data.get("name", file.stem)), **values)
    except InputError as exc:
        raise InputError(exc.message, path=str(file)) from None


@cache
def builtin_profiles() -> dict[str, Profile]:
    return {p.stem: read_profile(p) for p in sorted(PROFILE_DIR.glob("*.toml"))}


def get_profile(name: str) -> Profile:
    """A shipped profile by name, or a profile TOML file by path."""
    known = builtin_profiles()
    if name in known:
        return known[name]
    if name.endswith(".toml") or "/" in name:
        return read_profile(name)
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise InputError(f"unknown profile {name!r} (known: {', '.join(known)}){hint}")
