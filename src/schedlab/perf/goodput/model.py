"""Pollux's goodput model (OSDI '21): throughput × statistical efficiency, and its fitting.

Throughput of data-parallel training on N nodes and K GPUs with per-GPU micro-batch m and s
extra gradient-accumulation steps (global batch M = K·m·(s+1)), θ = (α_c, β_c, α_n, β_n, α_r,
β_r, γ):

* compute time of one micro-batch ``T_c = α_c + β_c·m``;
* network time ``T_n = α_n + β_n·max(K − 2, 1e-8)`` across nodes, ``α_r + β_r·…`` within one
  node, ≈ 0 on one GPU;
* a synchronised step overlaps them: ``T_s = (T_c^γ + T_n^γ)^(1/γ)``;
* one optimiser step takes ``s·T_c + T_s``; throughput ``X = M / (s·T_c + T_s)`` samples/s.

Statistical efficiency from the gradient noise scale φ = M0·var/sqr (M0 the initial batch):
``E(M) = (φ + M0) / (φ + M)``; goodput = X·E. A job's agent fits θ to the (step, sync) times it
has observed; the batch-size optimiser tries 50 global batches between the initial and the
largest and keeps the one with the highest goodput; the speedup of (N, K) is its best goodput
over the best on one GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, minimize

from schedlab.perf.blas_threads import one_blas_thread

#: θ's fields in order.
PARAM_NAMES = ("alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r", "gamma")


@dataclass(frozen=True)
class PerfParams:
    alpha_c: float
    beta_c: float
    alpha_n: float
    beta_n: float
    alpha_r: float
    beta_r: float
    gamma: float

    def as_array(self) -> np.ndarray:
        return np.array([getattr(self, n) for n in PARAM_NAMES])


def accum_time(p: np.ndarray, micro_batch):
    """Seconds of one forward/backward pass over a micro-batch."""
    return p[0] + p[1] * micro_batch


def network_time(p: np.ndarray, num_nodes, num_replicas):
    """Seconds of gradient synchronisation (the most significant link decides)."""
    num_nodes = np.asarray(num_nodes)
    num_replicas = np.asarray(num_replicas)
    conds = [num_nodes > 1, num_replicas > 1]
    bottleneck = np.select(conds, [p[2], p[4]], 1e-8)
    retrogress = np.select(conds, [p[3], p[5]], 1e-8)
    return bottleneck + retrogress * np.maximum(num_replicas - 2, 1e-8)


def log_optim_time(p: np.ndarray, t_accum, t_network):
    """log of the synchronised step time (a γ-norm of compute and network)."""
    gamma = p[6]
    return np.log(t_accum**gamma + t_network**gamma) / gamma


@dataclass(frozen=True)
class GoodputFunction:
    """Goodput of one job from its fitted θ and its current gradient statistics."""

    params: np.ndarray
    grad_sqr: float
    grad_var: float
    init_batch_size: float

    def throughput(self, num_nodes, num_replicas, micro_batch, accum_steps):
        t_accum = accum_time(self.params, micro_batch)
        t_net = network_time(self.params, num_nodes, num_replicas)
        t_optim = np.exp(log_optim_time(self.params, t_accum, t_net))
        total = accum_steps * t_accum + t_optim
        return num_replicas * micro_batch * (accum_steps + 1) / total

    def efficiency(self, batch_size):
        scale = batch_size / self.init_batch_size
        denom = self.grad_var / scale + self.grad_sqr
        gain = np.where(denom > 0, (self.grad_var + self.grad_sqr) / denom, 1.0)
        return gain / scale

    def evaluate(self, num_nodes, num_replicas, micro_batch, accum_steps):
        batch = num_replicas * micro_batch * (accum_steps + 1)
        return self.throughput(num_nodes, num_replicas, micro_batch, accum_steps) * (
            self.efficiency(batch)
        )

    def optimize(
        self,
        num_nodes,
        num_replicas,
        max_batch_size: float,
        micro_range: tuple[int, int],
        accumulation: bool = True,
    ):
        """Best (goodput, micro-batch, accumulation steps) for each (nodes, replicas)."""
        scalar = np.isscalar(num_nodes) and np.isscalar(num_replicas)
        shape = np.broadcast(num_nodes, num_replicas).shape
        nodes = np.broadcast_to(num_nodes, shape).ravel()
        replicas = np.broadcast_to(num_replicas, shape).ravel()
        lo_micro, hi_micro = micro_range
        min_batch = np.maximum(self.init_batch_size, lo_micro * replicas)
        batch = np.geomspace(min_batch, max_batch_size)  # 50 candidates × jobs
        local = batch / replicas
        eps = 1e-8
        if accumulation:
            accum = np.ceil(local / hi_micro - eps) - 1
            accum = np.where(
                (replicas == 1) & (local > self.init_batch_size + eps), np.maximum(accum, 1), accum
            ).astype(int)
        else:
            accum = np.zeros_like(local, dtype=int)
        micro = np.ceil(local / (accum + 1) - eps).astype(int)
        goodput = self.evaluate(nodes, replicas, micro, accum)
        goodput = np.where((lo_micro <= micro) & (micro <= hi_micro), goodput, 0.0)
        best = np.argmax(goodput, axis=0), np.arange(goodput.shape[1])
        g, m, a = (
            goodput[best].reshape(shape),
            micro[best].reshape(shape),
            accum[best].reshape(shape),
        )
        if scalar:
            return g.item(), int(m.item()), int(a.item())
        return g, m, a


@dataclass(frozen=True)
class FitData:
    """A profile prepared once for the many loss evaluations of one fit: the observed times'
    logs, the link each point synchronises over, the replicas past two."""

    micro: np.ndarray
    log_accum_obs: np.ndarray
    log_optim_obs: np.ndarray
    #: 0: across nodes (α_n, β_n); 1: within a node (α_r, β_r); 2: one GPU (no network).
    link: np.ndarray
    across: np.ndarray
    within: np.ndarray
    extra: np.ndarray

    @classmethod
    def of(cls, num_nodes, num_replicas, micro, accum_obs, optim_obs) -> FitData:
        num_nodes, num_replicas = np.asarray(num_nodes), np.asarray(num_replicas)
        across = num_nodes > 1
        within = ~across & (num_replicas > 1)
        return cls(
            micro=np.asarray(micro),
            log_accum_obs=np.log(np.asarray(accum_obs, dtype=float)),
            log_optim_obs=np.log(np.asarray(optim_obs, dtype=float)),
            link=np.where(across, 0, np.where(within, 1, 2)),
            across=across,
            within=within,
            extra=np.maximum(num_replicas - 2, 1e-8),
        )


def _objective(
    free: np.ndarray, fixed: np.ndarray, mask: np.ndarray, data: FitData
) -> tuple[float, np.ndarray]:
    """The fitting loss and its exact gradient in the free parameters (the artifact
    differentiates the same loss with autograd; finite differences cost 8 evaluations a step
    and stall on this non-smooth loss). The same floating-point operations as
    :func:`accum_time`, :func:`network_time` and :func:`log_optim_time`, with what does not
    depend on θ taken from ``data``."""
    p = fixed.copy()
    p[mask] = free
    micro = data.micro
    a = p[0] + p[1] * micro
    n = np.array([p[2], p[4], 1e-8])[data.link] + np.array([p[3], p[5], 1e-8])[data.link] * (
        data.extra
    )
    gamma = p[6]
    a_g, n_g = a**gamma, n**gamma
    total = a_g + n_g
    log_total = np.log(total)
    log_a = np.log(a)
    r1 = log_a - data.log_accum_obs
    r2 = log_total / gamma - data.log_optim_obs
    err1 = np.sqrt((r1**2).mean())
    err2 = np.sqrt((r2**2).mean())
    reg1 = 1e-3 * (gamma - 1) ** 2
    reg2 = 1e-2 * ((p[3] / p[2]) ** 2 + (p[5] / p[4]) ** 2)
    # d err = mean(r · d residual) / err
    w1 = r1 / (len(r1) * max(err1, 1e-300))
    w2 = r2 / (len(r2) * max(err2, 1e-300))
    d_a = w1 / a + w2 * a ** (gamma - 1) / total  # through log a and through the γ-norm
    d_n = w2 * n ** (gamma - 1) / total
    across, within, extra = data.across, data.within, data.extra
    with np.errstate(divide="ignore", invalid="ignore"):
        d_gamma_terms = (a_g * log_a + n_g * np.log(n)) / (gamma * total) - log_total / gamma**2
    grad = np.array(
        [
            d_a.sum(),
            (d_a * micro).sum(),
            (d_n * across).sum() - 2e-2 * p[3] ** 2 / p[2] ** 3,
            (d_n * across * extra).sum() + 2e-2 * p[3] / p[2] ** 2,
            (d_n * within).sum() - 2e-2 * p[5] ** 2 / p[4] ** 3,
            (d_n * within * extra).sum() + 2e-2 * p[5] / p[4] ** 2,
            (w2 * d_gamma_terms).sum() + 2e-3 * (gamma - 1),
        ]
    )
    return float(err1 + err2 + reg1 + reg2), grad[mask]


def fit_perf_params(
    num_nodes, num_replicas, micro_batch, accum_obs, optim_obs, start: np.ndarray | None = None
) -> np.ndarray:
    """θ fitted to observed (compute, step) times, with Pollux's priors: α_c fixed at half the
    mean compute time when one micro-batch size was seen; the network terms fixed where no data
    speaks of them; L-BFGS-B with the loss's exact gradient, run to a relative change of 1e-12
    (looser, it stops far from the optimum of this non-smooth loss), within [1e-8, ∞) and
    γ ∈ [1, 10]. ``start``:
    the previous fit of the same job, to start from (the free parameters only)."""
    num_nodes = np.asarray(num_nodes)
    num_replicas = np.asarray(num_replicas)
    micro_batch = np.asarray(micro_batch)
    accum_obs = np.asarray(accum_obs, dtype=float)
    optim_obs = np.asarray(optim_obs, dtype=float)
    params = np.array([1e-1, 1e-2] * 3 + [1.0 + 1e-3])
    lower = np.array([1e-8, 1e-8] * 3 + [1.0])
    upper = np.array([np.inf, np.inf] * 3 + [10.0])
    fixed = np.zeros(7, dtype=bool)
    if len(np.unique(micro_batch)) == 1:
        params[0] = lower[0] = upper[0] = np.mean(accum_obs) / 2
        fixed[0] = True
    if not np.any(num_nodes > 1):
        params[2] = params[3] = lower[2]
        fixed[2] = fixed[3] = True
    if not np.any((num_nodes == 1) & (num_replicas > 1)):
        params[4] = params[5] = lower[4]
        fixed[4] = fixed[5] = True
    if not np.any(num_replicas > 2):
        params[3] = params[5] = lower[3]
        fixed[3] = fixed[5] = True
    free = ~fixed
    if start is not None:
        params[free] = np.clip(start[free], lower[free], upper[free])
    data = FitData.of(num_nodes, num_replicas, micro_batch, accum_obs, optim_obs)
    with one_blas_thread():  # the solver's tiny BLAS calls would wake idle spinning threads
        result = minimize(
            _objective,
            params[free],
            args=(params, free, data),
            method="L-BFGS-B",
            jac=True,
            bounds=Bounds(lower[free], upper[free]),
            options={"ftol": 1e-12, "gtol": 1e-10},
        )
    out = params.copy()
    out[free] = result.x
    if not np.any(num_nodes > 1):
        out[2] = max(out[2], out[4] * 1.1)
        out[3] = max(out[3], out[5] * 1.1)
    return out


class SpeedupFunction:
    """Best goodput on (nodes, replicas) over a base goodput, memoised for small counts.

    The base is the best goodput on one GPU unless :meth:`rebase` sets another (Pollux's
    scheduler measures speedups against a fair share of the cluster)."""

    def __init__(
        self,
        goodput: GoodputFunction,
        max_batch_size: float,
        micro_range: tuple[int, int],
        accumulation: bool = True,
        mem_size: int = 32,
    ) -> None:
        self.goodput = goodput
        self.max_batch_size = max_batch_size
        self.micro_range = micro_range
        self.accumulation = accumulation
        self.mem_size = mem_size
        self._raw = -np.ones((mem_size, mem_size))
        self._raw[0, 0] = 0.0
        self.base = self.best(1, 1)

    def best(self, num_nodes, num_replicas):
        """Raw best goodput (samples/s in M0 units) on (nodes, replicas)."""
        return self.goodput.optimize(
            num_nodes, num_replicas, self.max_batch_size, self.micro_range, self.accumulation
        )[0]

    def rebase(self, num_nodes: int, num_replicas: int) -> None:
        self.base = self.best(num_nodes, num_replicas)

    def raw(self, num_nodes: np.ndarray, num_replicas: np.ndarray) -> np.ndarray:
        """Best goodput for arrays of (nodes, replicas), memoised below ``mem_size``."""
        num_nodes = np.asarray(num_nodes, dtype=np.int64)
        num_replicas = np.asarray(num_replicas, dtype=np.int64)
        out = np.full(num_nodes.shape, -1.0)
        small = num_replicas < self.mem_size
        out[small] = self._raw[num_nodes[small], num_replicas[small]]
        missing = out < 0
        if missing.any():
            pairs, inverse = np.unique(
                np.stack([num_nodes[missing], num_replicas[missing]]), axis=1, return_inverse=True
            )
            good = np.asarray(self.best(pairs[0], pairs[1]), dtype=float).reshape(-1)
            keep = pairs[1] < self.mem_size
            self._raw[pairs[0][keep], pairs[1][keep]] = good[keep]
            out[missing] = good[np.asarray(inverse).reshape(-1)]
        return out

    def __call__(self, num_nodes, num_replicas):
        return self.raw(num_nodes, num_replicas) / self.base
