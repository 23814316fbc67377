"""The analytic performance model of a serving pod, and the objective the tuners maximise.

A service has ``α`` ms and ``β`` ms/sample of batch time on a T4, ``κ`` CPU core-ms per request,
a model of ``M₀`` GB plus ``m`` GB per sample in a batch, speed factors ``v`` per GPU type and a
latency SLO. On a configuration (type τ, GPU share s, GPU memory g, cores n, max batch B):

- batch time ``ℓ(b) = (α + β·b)/(v_τ·s) + (1 − s)·q`` ms (affine in b; time-slicing as a fluid
  share, ``q`` the slice period, 0 by default);
- throughput ``X = min(X_gpu, X_cpu)``, ``X_gpu = B/ℓ(B)``, ``X_cpu = 1000·n/κ`` requests/s;
- the batch actually formed: ``b = B`` when GPU-bound, else ``b = X·α'/(1 − X·β')`` (``α'``,
  ``β'`` = ``α``, ``β`` ÷ ``v_τ·s``, in seconds), at most ``B``;
- tail latency ``L99 = κ + 2·ℓ(b)`` ms (a request that just misses a batch waits for it, then
  runs in the next);
- feasible iff ``M₀ + B·m ≤ g ≤ G_τ`` and ``L99 ≤ SLO``;
- price ``π = max(s, g/G_τ)·π_τ + n·π_core`` $/h (a pod blocks the larger of its compute and
  memory share of the GPU);
- objective ``J = X/π`` (requests/s per $/h) when feasible, else 0 (Morphling's load client
  reports 0 too). A profiling sample observes ``X·e^ε``, ``ε ~ N(0, σ²)`` (σ = 0.03).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from schedlab.errors import InputError
from schedlab.tune.serving.space import GPU_TYPES, Space, space

NOISE_SIGMA = 0.03


@dataclass(frozen=True)
class Hardware:
    """Per GPU type: memory ``G`` (GB), $/GPU-hour; $/core-hour; the time-slice period ``q``
    (ms). Editable defaults, not measurements (docs/tuning.md)."""

    gpu_memory_gb: tuple[float, ...] = (16.0, 16.0, 40.0)
    gpu_price: tuple[float, ...] = (0.35, 2.48, 2.93)
    core_price: float = 0.03
    slice_ms: float = 0.0


#: The defaults every command uses (π_τ 0.35 / 2.48 / 2.93 $/GPU-h, π_core 0.03 $/core-h).
DEFAULT_HARDWARE = Hardware()


@dataclass(frozen=True)
class Service:
    """One model service (see the module docstring)."""

    name: str
    alpha_ms: float
    beta_ms: float
    kappa_ms: float
    model_gb: float
    gb_per_sample: float
    slo_ms: float
    #: Speed of each GPU type relative to the T4 (first entry 1).
    speed: tuple[float, ...] = field(default=(1.0, 2.0, 4.0))

    def __post_init__(self) -> None:
        for key in ("alpha_ms", "beta_ms", "kappa_ms", "model_gb", "gb_per_sample", "slo_ms"):
            value = getattr(self, key)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise InputError(f"service {self.name!r}: '{key}' must be ≥ 0 (got {value!r})")
        for key in ("kappa_ms", "slo_ms"):
            if getattr(self, key) <= 0:
                raise InputError(f"service {self.name!r}: '{key}' must be > 0")
        if len(self.speed) != len(GPU_TYPES) or not all(v > 0 for v in self.speed):
            raise InputError(
                f"service {self.name!r}: one positive speed per GPU type {GPU_TYPES} "
                f"(got {self.speed})"
            )


@dataclass(frozen=True)
class Performance:
    """The model's figures for every configuration (arrays over the space)."""

    throughput: np.ndarray  # requests/s
    batch_formed: np.ndarray
    latency_ms: np.ndarray  # L99
    batch_ms: np.ndarray  # ℓ(b)
    price: np.ndarray  # $/h
    feasible: np.ndarray
    objective: np.ndarray  # J (0 where infeasible)

    @property
    def best(self) -> int:
        """Index of the optimum (the first of equal ones)."""
        return int(np.argmax(self.objective))


def evaluate(
    service: Service, hw: Hardware = DEFAULT_HARDWARE, s: Space | None = None
) -> Performance:
    """The model over every configuration of the space."""
    s = space() if s is None else s
    v = np.asarray(service.speed)[s.gpu]
    share = s.share
    batch = s.batch.astype(np.float64)

    def batch_ms(b: np.ndarray) -> np.ndarray:
        return (service.alpha_ms + service.beta_ms * b) / (v * share) + (1 - share) * hw.slice_ms

    x_gpu = 1000.0 * batch / batch_ms(batch)
    x_cpu = 1000.0 * s.cores / service.kappa_ms
    x = np.minimum(x_gpu, x_cpu)
    gpu_bound = x_gpu <= x_cpu
    a = service.alpha_ms / 1000.0 / (v * share)
    b_ = service.beta_ms / 1000.0 / (v * share)
    with np.errstate(divide="ignore", invalid="ignore"):
        formed = np.where(gpu_bound, batch, x * a / (1.0 - x * b_))
    formed = np.minimum(np.where(np.isfinite(formed) & (formed > 0), formed, batch), batch)
    ell = batch_ms(formed)
    latency = service.kappa_ms + 2.0 * ell
    capacity = np.asarray(hw.gpu_memory_gb)[s.gpu]
    fits = (service.model_gb + batch * service.gb_per_sample <= s.memory_gb) & (
        s.memory_gb <= capacity
    )
    feasible = fits & (latency <= service.slo_ms)
    price = np.maximum(share, s.memory_gb / capacity) * np.asarray(hw.gpu_price)[s.gpu]
    price = price + s.cores * hw.core_price
    objective = np.where(feasible, x / price, 0.0)
    return Performance(x, formed, latency, ell, price, feasible, objective)
