"""A pipelined serverless training plan and what one iteration of it takes: time, memory, money.

A plan cuts the layer chain into contiguous stages, gives each stage a function memory size,
replicates the pipeline ``d`` times (data parallel) and splits each replica's share of the global
batch ``B_g`` into ``m`` micro-batches of ``μ = B_g/(d·m)`` samples. Per stage ``s`` and
micro-batch, with ``c = λ + μ·out/B`` for each boundary the stage touches:

- compute ``F_s = Σ(a + b·μ)/speed(M_s)`` forward, ``K_s`` likewise backward;
- ``T^f_s = max(F_s, c_up, c_down)``, ``T^b_s = max(K_s, c_up, c_down)`` with overlap (the
  default), their sums without; the first stage downloads nothing forward, the last uploads
  nothing forward (and the reverse backward);
- ``T_pipe = Σ_s (T^f_s + T^b_s) + (m − 1)·max_s (T^f_s + T^b_s)`` (GPipe-style schedule);
- sync of a stage with ``P`` MB of parameters: pipelined scatter-reduce
  ``(P/B)·2(d−1)/d + 2λ``, LambdaML's four-phase ``(P/B)·(3 − 2/d) + 4λ``, 0 for ``d = 1``;
  ``T_iter = T_pipe + max_s sync_s``;
- memory ``base + k_w·ΣP + (B_g/d)·Σact ≤ M_s`` (all micro-batches' activations are kept);
- cost per iteration ``price·d·Σ_s M_s[GB]·T_iter`` (functions stay up through bubbles) plus
  requests: 2 PUT + 2 GET per boundary, micro-batch and replica; ``d`` PUT and ``2(d−1)`` GET per
  replica per stage sync; ``polls_per_get`` LIST requests (billed as PUT) per GET.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.errors import InputError
from schedlab.tune.serverless.platform import Platform
from schedlab.tune.serverless.profile import ModelProfile

PIPELINED, FOUR_PHASE = "pipelined", "four-phase"
SYNCS = (PIPELINED, FOUR_PHASE)
#: Optimizer state multiplier ``k_w`` on the parameters (weights + gradients + state).
OPTIMIZERS = {"adam": 4.0, "sgd": 2.0}
MB_PER_GB = 1024.0


@dataclass(frozen=True)
class Training:
    """How the model is trained: global batch, optimizer memory and the pipeline's habits."""

    batch: int
    k_w: float = OPTIMIZERS["adam"]
    base_mb: float = 500.0
    overlap: bool = True
    sync: str = PIPELINED

    def __post_init__(self) -> None:
        if self.batch < 1:
            raise InputError(f"'--batch' must be ≥ 1 sample (got {self.batch})")
        if self.sync not in SYNCS:
            raise InputError(f"sync must be one of {', '.join(SYNCS)} (got {self.sync!r})")

    def with_sync(self, sync: str) -> Training:
        return Training(self.batch, self.k_w, self.base_mb, self.overlap, sync)


@dataclass(frozen=True)
class Plan:
    """Stage sizes (layer units per stage, in chain order), the memory option index of each
    stage, the data-parallel degree ``d`` and the micro-batch count ``m``."""

    sizes: tuple[int, ...]
    memory: tuple[int, ...]
    d: int
    m: int

    def label(self, platform: Platform) -> str:
        stages = "|".join(
            f"{n}@{platform.memory_mb[o]:g}" for n, o in zip(self.sizes, self.memory, strict=True)
        )
        return f"{stages} d={self.d} m={self.m}"


@dataclass(frozen=True)
class Evaluation:
    """One plan's iteration: times (s), memory (MB per stage), requests and dollars."""

    plan: Plan
    micro_batch: int
    t_iter: float
    t_pipe: float
    t_sync: float
    stage_forward: tuple[float, ...]
    stage_backward: tuple[float, ...]
    memory_needed: tuple[float, ...]
    fits: bool
    compute_usd: float
    puts: float
    gets: float
    lists: float
    request_usd: float

    @property
    def cost(self) -> float:
        return self.compute_usd + self.request_usd

    def to_json(self, platform: Platform) -> dict[str, Any]:
        p = self.plan
        return {
            "stages": [
                {
                    "layers": [start, start + n],
                    "memory_mb": platform.memory_mb[o],
                    "memory_needed_mb": need,
                    "forward_s": tf,
                    "backward_s": tb,
                }
                for start, n, o, need, tf, tb in zip(
                    np.cumsum((0, *p.sizes[:-1])).tolist(),
                    p.sizes,
                    p.memory,
                    self.memory_needed,
                    self.stage_forward,
                    self.stage_backward,
                    strict=True,
                )
            ],
            "d": p.d,
            "m": p.m,
            "micro_batch": self.micro_batch,
            "functions": p.d * len(p.sizes),
            "t_iter_s": self.t_iter,
            "t_pipe_s": self.t_pipe,
            "t_sync_s": self.t_sync,
            "cost_usd": self.cost,
            "compute_usd": self.compute_usd,
            "requests": {"put": self.puts, "get": self.gets, "list": self.lists},
            "request_usd": self.request_usd,
        }


def sync_time(params_mb: np.ndarray | float, d: int, platform: Platform, sync: str) -> Any:
    """Seconds to synchronise ``params_mb`` of parameters over ``d`` replicas (0 for d = 1)."""
    if d == 1:
        return params_mb * 0.0
    rate, lat = platform.bandwidth_mb_s, platform.latency_s
    if sync == PIPELINED:
        return params_mb / rate * 2 * (d - 1) / d + 2 * lat
    return params_mb / rate * (3 - 2 / d) + 4 * lat


def request_counts(stages: int, d: int, m: int) -> tuple[float, float]:
    """(PUT, GET) per iteration: the boundaries' activations and gradients, then the syncs."""
    boundary = 2.0 * m * d * (stages - 1)
    if d == 1:
        return boundary, boundary
    return boundary + stages * d * d, boundary + stages * d * 2 * (d - 1)


def request_usd(stages: int, d: int, m: int, platform: Platform) -> tuple[float, float, float]:
    """(PUT, GET, LIST) counts' dollars for a plan of ``stages`` stages, and the counts."""
    puts, gets = request_counts(stages, d, m)
    lists = gets * platform.polls_per_get
    return puts, gets, lists


def requests_cost(puts: float, gets: float, lists: float, platform: Platform) -> float:
    return (puts + lists) * platform.price_put + gets * platform.price_get


def micro_batch(training: Training, d: int, m: int) -> int | None:
    """``μ = B_g/(d·m)`` when it is a whole number of samples, else None."""
    share, rest = divmod(training.batch, d * m)
    return share if rest == 0 and share >= 1 else None


def evaluate(
    profile: ModelProfile, platform: Platform, training: Training, plan: Plan
) -> Evaluation:
    """Time, memory and cost of one iteration of ``plan`` (the formulas of the module)."""
    mu = micro_batch(training, plan.d, plan.m)
    if mu is None:
        raise InputError(
            f"global batch {training.batch} does not split into d={plan.d} × m={plan.m} "
            "whole micro-batches"
        )
    if sum(plan.sizes) != len(profile) or min(plan.sizes) < 1:
        raise InputError(f"plan stages {plan.sizes} do not cover the {len(profile)} layer units")
    bounds = np.cumsum((0, *plan.sizes))
    fwd = profile.forward_seconds(mu)
    bwd = profile.backward_seconds(mu)
    speed = platform.speeds[list(plan.memory)]
    size = platform.memory[list(plan.memory)]
    f = np.add.reduceat(fwd, bounds[:-1]) / speed
    k = np.add.reduceat(bwd, bounds[:-1]) / speed
    params = np.add.reduceat(profile.params, bounds[:-1])
    act = np.add.reduceat(profile.act, bounds[:-1])
    cross = platform.latency_s + mu * profile.out[bounds[1:-1] - 1] / platform.bandwidth_mb_s
    up = np.append(cross, 0.0)  # forward upload / backward download
    down = np.insert(cross, 0, 0.0)  # forward download / backward upload
    if training.overlap:
        tf = np.maximum(f, np.maximum(up, down))
        tb = np.maximum(k, np.maximum(up, down))
    else:
        tf, tb = f + up + down, k + up + down
    per = tf + tb
    t_pipe = float(per.sum() + (plan.m - 1) * per.max())
    t_sync = float(np.max(sync_time(params, plan.d, platform, training.sync)))
    t_iter = t_pipe + t_sync
    need = training.base_mb + training.k_w * params + (training.batch / plan.d) * act
    fits = bool(np.all(need <= size))
    compute = platform.price_gb_s * plan.d * float(size.sum()) / MB_PER_GB * t_iter
    puts, gets, lists = request_usd(len(plan.sizes), plan.d, plan.m, platform)
    return Evaluation(
        plan,
        mu,
        t_iter,
        t_pipe,
        t_sync,
        tuple(tf.tolist()),
        tuple(tb.tolist()),
        tuple(need.tolist()),
        fits,
        compute,
        puts,
        gets,
        lists,
        requests_cost(puts, gets, lists, platform),
    )
