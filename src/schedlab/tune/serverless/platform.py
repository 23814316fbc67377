"""A serverless platform: function memory options and their compute speed, the storage channel
every function talks through, and prices.

Platform TOML (every field required unless a default is shown)::

    name = "my-cloud"
    memory_mb = [1024, 2048, 4096]
    speed = [0.58, 1.16, 2.32]        # or: mb_per_speed = 1769 (speed = memory ÷ that)
    bandwidth_mb_s = 70               # per function, up and down each
    latency_s = 0.05                  # per storage request
    price_gb_s = 0.0000166667         # function time
    price_put = 0.000005              # per PUT (and per LIST, which polls are billed as)
    price_get = 0.0000004             # per GET
    polls_per_get = 0                 # LIST requests before each GET (default 0)

Presets: ``aws`` (Lambda: 1,024–10,240 MB in 1,024 MB steps, one vCPU per 1,769 MB as the Lambda
documentation states, 70 MB/s as the FuncPipe paper measured, 50 ms storage latency as the
FuncPipe repository assumes, Lambda and S3 list prices) and ``alicloud`` (the constants of the
FuncPipe repository's ``baselines/NIPS_partition/_data_translate.py``: four memory sizes with
their compute ratios, OSS at 50 MB/s and 50 ms, its price per GB-s; it states no request
prices, so they are 0 here).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.input_files import read_text

#: Lambda's rule: one vCPU's worth of compute per 1,769 MB of memory.
AWS_MB_PER_VCPU = 1769.0
FIELDS = (
    "name",
    "memory_mb",
    "speed",
    "mb_per_speed",
    "bandwidth_mb_s",
    "latency_s",
    "price_gb_s",
    "price_put",
    "price_get",
    "polls_per_get",
)


@dataclass(frozen=True)
class Platform:
    """Memory options (MB, ascending) with their speeds, and the storage channel's figures."""

    name: str
    memory_mb: tuple[float, ...]
    speed: tuple[float, ...]
    bandwidth_mb_s: float
    latency_s: float
    price_gb_s: float
    price_put: float
    price_get: float
    polls_per_get: float = 0.0

    @property
    def memory(self) -> np.ndarray:
        return np.asarray(self.memory_mb, dtype=np.float64)

    @property
    def speeds(self) -> np.ndarray:
        return np.asarray(self.speed, dtype=np.float64)

    @property
    def largest_mb(self) -> float:
        return max(self.memory_mb)

    def with_options(self, memory: dict[float, float]) -> Platform:
        """The same platform with other memory options (``{MB: speed}``)."""
        items = sorted(memory.items())
        return Platform(
            self.name,
            tuple(float(m) for m, _ in items),
            tuple(float(s) for _, s in items),
            self.bandwidth_mb_s,
            self.latency_s,
            self.price_gb_s,
            self.price_put,
            self.price_get,
            self.polls_per_get,
        )

    def describe(self) -> str:
        sizes = ", ".join(f"{m:g}" for m in self.memory_mb)
        return (
            f"{self.name}: memory {sizes} MB; {self.bandwidth_mb_s:g} MB/s, "
            f"{1000 * self.latency_s:g} ms per request; ${self.price_gb_s:g}/GB-s"
        )


def aws() -> Platform:
    memory = tuple(float(m) for m in range(1024, 10240 + 1, 1024))
    return Platform(
        "aws",
        memory,
        tuple(m / AWS_MB_PER_VCPU for m in memory),
        bandwidth_mb_s=70.0,
        latency_s=0.05,
        price_gb_s=0.0000166667,
        price_put=0.005 / 1000,
        price_get=0.0004 / 1000,
    )


def alicloud() -> Platform:
    return Platform(
        "alicloud",
        (256.0, 512.0, 1024.0, 3072.0),
        (0.1, 0.2, 0.4, 1.0),
        bandwidth_mb_s=50.0,
        latency_s=0.05,
        price_gb_s=0.000110592,
        price_put=0.0,
        price_get=0.0,
    )


PRESETS = {"aws": aws, "alicloud": alicloud}


def _positive(value: object, key: str, path: str, *, zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"'{key}' must be a finite number (got {value!r})", path=path)
    if value < 0 or (value == 0 and not zero):
        raise InputError(f"'{key}' must be {'≥' if zero else '>'} 0 (got {value!r})", path=path)
    return float(value)


def platform_from(data: dict[str, object], path: str) -> Platform:
    """A platform from a TOML table; every problem names the file and the field."""
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise InputError(f"unknown field {unknown[0]!r} (allowed: {', '.join(FIELDS)})", path=path)
    for key in ("memory_mb", "bandwidth_mb_s", "latency_s", "price_gb_s", "price_put", "price_get"):
        if key not in data:
            raise InputError(f"missing '{key}'", path=path)
    memory = data["memory_mb"]
    if not isinstance(memory, list) or not memory:
        raise InputError(
            f"'memory_mb' must be a non-empty list of sizes (got {memory!r})", path=path
        )
    sizes = [_positive(m, "memory_mb", path) for m in memory]
    if len(set(sizes)) != len(sizes):
        raise InputError(f"'memory_mb' lists a size twice (got {memory!r})", path=path)
    if ("speed" in data) == ("mb_per_speed" in data):
        raise InputError("give exactly one of 'speed' and 'mb_per_speed'", path=path)
    if "speed" in data:
        speed = data["speed"]
        if not isinstance(speed, list) or len(speed) != len(sizes):
            raise InputError(
                f"'speed' must list one speed per memory size ({len(sizes)}; got {speed!r})",
                path=path,
            )
        speeds = [_positive(s, "speed", path) for s in speed]
    else:
        per = _positive(data["mb_per_speed"], "mb_per_speed", path)
        speeds = [m / per for m in sizes]
    order = np.argsort(sizes, kind="stable")
    return Platform(
        str(data.get("name", Path(path).stem)),
        tuple(sizes[i] for i in order),
        tuple(speeds[i] for i in order),
        bandwidth_mb_s=_positive(data["bandwidth_mb_s"], "bandwidth_mb_s", path),
        latency_s=_positive(data["latency_s"], "latency_s", path, zero=True),
        price_gb_s=_positive(data["price_gb_s"], "price_gb_s", path, zero=True),
        price_put=_positive(data["price_put"], "price_put", path, zero=True),
        price_get=_positive(data["price_get"], "price_get", path, zero=True),
        polls_per_get=_positive(data.get("polls_per_get", 0), "polls_per_get", path, zero=True),
    )


def get_platform(spec: str) -> Platform:
    """A preset name (``aws``, ``alicloud``) or a platform TOML file."""
    if spec in PRESETS:
        return PRESETS[spec]()
    if not Path(spec).exists():
        raise InputError(
            f"'--platform' must be a preset ({', '.join(PRESETS)}) or a TOML file (got {spec!r})"
        )
    text = read_text(spec, "platform file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=spec) from None
    return platform_from(data, spec)
