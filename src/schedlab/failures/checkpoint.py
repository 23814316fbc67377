"""Checkpoint costs and intervals (Young 1974, Daly 2006), and what a checkpoint cycle saves.

A job between two failures runs in cycles: ``τ`` seconds of work, then a checkpoint that blocks
it for ``C`` (synchronous), or for ``C_block`` after which it persists in the background for
``C_persist`` at ``(1 − δ)`` speed (asynchronous; it counts once persisted). On average the job
progresses at ``w/(τ + C)`` of its full rate (``w`` = ``τ`` less the slowed share); a failure
rolls it back to its last counted checkpoint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from schedlab.errors import InputError
from schedlab.failures.spec import CheckpointSpec


def young(cost: float, mtbf: float) -> float:
    """Young's interval ``√(2·C·M)``."""
    return math.sqrt(2.0 * cost * mtbf)


def daly(cost: float, mtbf: float) -> float:
    """Daly's interval ``√(2CM)·(1 + √(C/(2M))/3 + C/(18M)) − C`` for ``C < 2M``, else ``M``."""
    if cost >= 2.0 * mtbf:
        return mtbf
    root = math.sqrt(2.0 * cost * mtbf)
    return root * (1.0 + math.sqrt(cost / (2.0 * mtbf)) / 3.0 + cost / (18.0 * mtbf)) - cost


def daly_ettr(tau: float, cost: float, restart: float, mtbf: float) -> float:
    """Daly's exact expected efficiency with exponential failures (failures also during
    checkpoint and restart): ``τ / (M·e^{R/M}·(e^{(τ+C)/M} − 1))``."""
    return tau / (mtbf * math.exp(restart / mtbf) * math.expm1((tau + cost) / mtbf))


def first_order_ettr(tau: float, cost: float, restart: float, mtbf: float) -> float:
    """``1 − C/τ − (τ/2 + R)/M``."""
    return 1.0 - cost / tau - (tau / 2.0 + restart) / mtbf


@dataclass(frozen=True)
class Cycle:
    """One job's checkpoint cycle on its current allocation."""

    interval: float  # τ: work seconds between checkpoints (inf: never; 0: free, continuous)
    block: float  # C (sync) or C_block (async): seconds the job stands still per checkpoint
    persist: float = 0.0  # C_persist (async), seconds in the background
    delta: float = 0.0  # slowdown while persisting (async)

    @property
    def free(self) -> bool:
        """No cost known: progress is kept continuously (as a preempted job's is)."""
        return self.interval == 0.0

    @property
    def none(self) -> bool:
        return math.isinf(self.interval)

    @property
    def length(self) -> float:
        return self.interval + self.block

    @property
    def rate_factor(self) -> float:
        """Mean progress per second over a cycle, as a share of the full rate."""
        if self.free or self.none:
            return 1.0
        return (self.interval - self.delta * self.persist) / self.length

    def completed(self, elapsed: float) -> int:
        """Checkpoints that count after ``elapsed`` seconds of a segment (persisted, if async)."""
        if self.free or self.none or elapsed <= 0:
            return 0
        return max(0, math.floor((elapsed - self.persist) / self.length))

    def blocked(self, elapsed: float) -> float:
        """Seconds spent standing still in checkpoints in ``elapsed`` seconds of a segment."""
        if self.free or self.none or elapsed <= 0:
            return 0.0
        k = math.floor(elapsed / self.length)
        return k * self.block + max(0.0, elapsed - k * self.length - self.interval)


@dataclass(frozen=True)
class Costs:
    sync: float  # C_sync
    block: float  # C_block (async)
    persist: float  # C_persist (async)
    load: float  # seconds to read the checkpoint back at a restart


def costs(spec: CheckpointSpec, nbytes: float | None, gpus: int, nodes: int) -> Costs | None:
    """Checkpoint costs of a job holding ``gpus`` GPUs on ``nodes`` nodes whose checkpoint is
    ``nbytes`` (None: unknown, only ``cost=`` etc. can say); None when nothing is known."""
    given = (spec.cost, spec.block, spec.persist)
    if nbytes is None and all(math.isnan(v) for v in given):
        return None
    if nbytes is not None:
        write = min(spec.w_storage, nodes * spec.w_node)
        sync = spec.cost if not math.isnan(spec.cost) else nbytes / write
        block = spec.block if not math.isnan(spec.block) else nbytes / gpus / spec.w_d2h
        read = spec.w_node if math.isnan(spec.w_read) else spec.w_read
        load = nbytes / gpus / read
    else:
        sync = spec.cost
        block = spec.block if not math.isnan(spec.block) else math.nan
        load = 0.0
    persist = spec.persist if not math.isnan(spec.persist) else sync
    return Costs(sync, block, persist, load)


def cycle(
    spec: CheckpointSpec, c: Costs | None, mtbf: float, step_seconds: float | None = None
) -> Cycle:
    """The job's cycle under the checkpoint policy: ``τ`` from the policy with ``C`` the
    blocking cost (``C_sync``, or ``C_block + δ·C_persist`` asynchronous) and ``M`` the job's
    MTBF on its allocation (seconds)."""
    if spec.policy == "none":
        return Cycle(math.inf, 0.0)
    if c is None:
        return Cycle(0.0, 0.0)
    asynchronous = spec.mode == "async"
    if asynchronous and (math.isnan(c.block) or math.isnan(c.persist)):
        raise InputError(
            "'--checkpoint': mode=async needs block=SECONDS and persist=SECONDS (or cost=) for a "
            "job of unknown size"
        )
    if not asynchronous and math.isnan(c.sync):
        raise InputError("'--checkpoint': needs cost=SECONDS for a job of unknown size")
    block = c.block if asynchronous else c.sync
    persist = c.persist if asynchronous else 0.0
    delta = spec.delta if asynchronous else 0.0
    blocking = block + delta * persist
    if spec.policy == "fixed":
        tau = spec.interval
    elif spec.policy == "steps":
        if step_seconds is None:
            raise InputError(
                "'--checkpoint': steps:K needs LLM jobs (a step time from the planner)"
            )
        tau = spec.steps * step_seconds
    else:
        if not math.isfinite(mtbf):
            raise InputError(
                f"'--checkpoint': policy={spec.policy} needs failure rates (a failure trace gives "
                "none); use fixed:SECONDS"
            )
        tau = young(blocking, mtbf) if spec.policy == "young" else daly(blocking, mtbf)
    floor = block + persist if asynchronous else block
    if spec.policy == "fixed" and tau < floor:
        what = "the blocking copy and the persist" if asynchronous else "the checkpoint"
        raise InputError(f"'--checkpoint': interval {tau:g} s is shorter than {what} ({floor:g} s)")
    return Cycle(max(tau, floor, 1e-9), block, persist, delta)
