"""A training job's progress as Pollux's simulator advances it, interval by interval.

Progress is counted in iterations of the initial batch size M0: running with global batch M for
one step of ``T_iter`` seconds advances it by ``gain(M) = (var + sqr) / (var/(M/M0) + sqr)``,
so the rate is ``gain / T_iter`` (times ``1 − slowdown`` under interference). Step and sync
times come from the measured tables at the job's placement and micro-batch, the gradient
statistics from the validation table of its current epoch. Epoch e ends at the least progress
any batch size reached by then; the time to the boundary is rounded to whole seconds, as the
simulator does, so every completion is a whole number of seconds after the interval start.

The batch size is chosen again after every stretch of progress (at every epoch boundary and at
the end of every interval): a job with a fixed target batch (the Tiresias and Optimus
baselines) splits it over its GPUs with gradient accumulation where a micro-batch would be too
large; a Pollux job picks the goodput-optimal batch from the model fitted to the (step, sync)
times it has observed so far. Every (re)allocation costs ``restart_seconds`` (30 s) without
progress.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from schedlab.perf.goodput.applications import Application, fixed_batch_config
from schedlab.perf.goodput.model import GoodputFunction, SpeedupFunction, fit_perf_params

#: Seconds a job spends re-forming its workers after every allocation change.
RESTART_SECONDS = 30.0


@dataclass(eq=False)
class GoodputJob:
    """Pollux's per-job simulator state (see the module docstring)."""

    app: Application
    submission: float
    #: Global batch size the job keeps (None: a Pollux job, which chooses its own).
    target_batch_size: float | None = None
    restart_seconds: float = RESTART_SECONDS
    #: Skip fitting the performance model (the baselines never use it).
    adaptive: bool = True
    placement: tuple[int, ...] = ()
    #: Speed of the GPUs the job is on relative to the tables' (synthetic heterogeneity: step
    #: and sync times divided by it). The agent's profile keeps the tables' own times, so its
    #: fitted model is that of the reference type, scaled by the speed where it is used.
    speed: float = 1.0
    atomic_bsz: int = 0
    accum_steps: int = 0
    progress: float = 0.0
    epoch: int = 0
    attained_service: float = 0.0
    num_restarts: int | None = None
    rescale_time: float = 0.0
    completion_time: float | None = None
    grad_params: tuple[float, float] | None = None
    profile: dict[tuple[int, int, int], tuple[float, float]] = field(default_factory=dict)
    perf_params: np.ndarray | None = None
    _stale_fit: bool = False

    # -- the agent's model ------------------------------------------------------------------
    @property
    def max_profiled_replicas(self) -> int:
        return max((k[1] for k in self.profile), default=0)

    def fitted_params(self) -> np.ndarray | None:
        """θ fitted to every profile point so far (refitted only when a new point came)."""
        if self._stale_fit:
            keys = list(self.profile)
            vals = list(self.profile.values())
            step = np.array([v[0] for v in vals])
            sync = np.array([v[1] for v in vals])
            self.perf_params = fit_perf_params(
                [k[0] for k in keys],
                [k[1] for k in keys],
                [k[2] for k in keys],
                step - sync,
                step,
                start=self.perf_params,
            )
            self._stale_fit = False
        return self.perf_params

    def goodput_fn(self) -> GoodputFunction | None:
        params = self.fitted_params()
        if params is None or self.grad_params is None:
            return None
        return GoodputFunction(
            params, self.grad_params[0], self.grad_params[1], self.app.init_batch_size
        )

    def speedup_fn(self) -> SpeedupFunction | None:
        fn = self.goodput_fn()
        if fn is None:
            return None
        app = self.app
        return SpeedupFunction(fn, app.max_batch_size, (app.min_local_bsz, app.max_local_bsz))

    def observe(
        self,
        num_nodes: int,
        num_replicas: int,
        micro: int,
        step: float,
        sync: float,
        grad_sqr: float,
        grad_var: float,
    ) -> None:
        self.grad_params = (grad_sqr, grad_var)
        key = (num_nodes, num_replicas, micro)
        if key in self.profile:
            return
        self.profile[key] = (step, sync)
        if self.adaptive:
            self._stale_fit = True

    # -- batch size ------------------------------------------------------------------------
    def choose_batch(self, placement: tuple[int, ...]) -> None:
        """Set the micro-batch and accumulation steps for ``placement``."""
        app = self.app
        p = tuple(x for x in placement if x)
        num_nodes, num_replicas = len(p), sum(p)
        batch = self.target_batch_size
        params = self.fitted_params() if self.target_batch_size is None else None
        if batch is None and params is None:
            batch = max(app.init_batch_size, app.min_local_bsz * num_replicas)
        if batch is None:
            fn = self.goodput_fn()
            assert fn is not None
            _, self.atomic_bsz, self.accum_steps = fn.optimize(
                num_nodes,
                num_replicas,
                app.max_batch_size,
                (app.min_local_bsz, app.max_local_bsz),
                accumulation=True,
            )
        else:
            local = math.ceil(batch / num_replicas - 1e-8)
            self.accum_steps = math.ceil(local / app.max_local_bsz - 1e-8) - 1
            if num_replicas == 1 and batch > app.init_batch_size:
                self.accum_steps = max(1, self.accum_steps)
            self.atomic_bsz = math.ceil(local / (self.accum_steps + 1) - 1e-8)
        count = num_replicas * (self.accum_steps + 1)
        self.atomic_bsz = min(self.atomic_bsz, int(app.max_batch_size / count))

    def reallocate(self, placement: tuple[int, ...]) -> None:
        """A new allocation (replicas per node, in node order; empty: none)."""
        if placement:
            self.placement = tuple(placement)
            self.choose_batch(self.placement)
            self.rescale_time = self.restart_seconds
            self.num_restarts = 0 if self.num_restarts is None else self.num_restarts + 1
        else:
            self.placement = ()
            self.atomic_bsz = 0

    # -- progress --------------------------------------------------------------------------
    def step(self, now: float, seconds: float, interference: float = 0.0) -> None:
        """Advance the job from ``now`` by ``seconds`` on its current placement."""
        if not self.placement:
            return
        current = now
        replicas_held = sum(self.placement)
        delay = min(self.rescale_time, seconds)
        current += delay
        self.attained_service += delay * replicas_held
        self.rescale_time -= delay
        seconds -= delay
        app = self.app
        while seconds > 0 and self.completion_time is None:
            p = tuple(x for x in self.placement if x)
            num_nodes, num_replicas = len(p), sum(p)
            batch = num_replicas * self.atomic_bsz * (self.accum_steps + 1)
            scale = batch / app.init_batch_size
            step_time, sync_time = app.throughput(p, self.atomic_bsz)
            grad_sqr, grad_var = app.grad_stats(batch, self.epoch)
            gain = (grad_var + grad_sqr) / (grad_var / scale + grad_sqr)
            self.observe(
                num_nodes, num_replicas, self.atomic_bsz, step_time, sync_time, grad_sqr, grad_var
            )
            if self.speed != 1.0:  # another GPU type: the same tables, scaled
                step_time, sync_time = step_time / self.speed, sync_time / self.speed
            accum = step_time - sync_time
            total = step_time + accum * self.accum_steps
            goodput = gain / total * (1.0 - interference)
            next_progress = app.progress_at(self.epoch + 1)
            if self.progress + goodput * seconds < next_progress:
                self.progress += goodput * seconds
                current += seconds
                self.attained_service += seconds * replicas_held
                seconds = 0
            else:
                self.epoch += 1
                delta = round(float((next_progress - self.progress) / goodput))
                if self.epoch > app.completion_epoch(batch):
                    self.completion_time = current + delta
                self.progress = next_progress
                current += delta
                self.attained_service += delta * replicas_held
                seconds -= delta
            self.choose_batch(self.placement)


def nominal_config(app: Application, batch_size: float, num_replicas: int) -> tuple[int, int]:
    """(micro-batch, accumulation) of a fixed batch on ``num_replicas`` GPUs."""
    return fixed_batch_config(app, batch_size, num_replicas)
