"""Synthetic job traces for replay: Philly-like by default, every knob a field of one spec.

Public traces fix one cluster's load, mix and length; a study of "what if load were 20 % higher"
or "what if 30 % of jobs had deadlines" needs a workload it can dial. :class:`SyntheticJobSpec`
describes one, :func:`generate_jobs` draws it (vectorised: a million jobs take about a second),
and :func:`load_for_gpus` sets the arrival rate that gives a target offered load on a cluster.

Defaults follow the condensed Philly trace (``shared/traces/philly-adaptdl``: 82,247 jobs over
9,408,690 s): mean inter-arrival 114.4 s; run time median 1,144 s, mean 13,136 s, longest
4,628,226 s; GPU counts weighted by Philly's own job counts. Assumptions beyond the data: the
log-normal shape of run times, 100 users whose activity falls off as rank^-1.3 (roughly how
Philly's virtual clusters' job counts fall off), and independence of size, length and arrival.

Each part of a job (arrival, run time, GPUs, user, deadline, model) is drawn from its own random
stream derived from ``rng``, so changing one knob (say ``deadline_fraction``) leaves every other
column of the generated trace unchanged: sweeps compare like with like.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

from schedlab.model.jobs import JobTable
from schedlab.traces.job_common import MAX_GPUS_PER_JOB

#: Philly (condensed) job counts by GPU count: 93.2 % one GPU, 2.2 % two, 2.3 % four, 2.0 % eight,
#: 0.33 % 16–64. Left out: 128 GPUs (3 jobs; larger than most simulated clusters) and the odd
#: sizes 12 and 24 (7 jobs each).
PHILLY_GPU_MIX: tuple[tuple[int, float], ...] = (
    (1, 76_627),
    (2, 1_818),
    (4, 1_870),
    (8, 1_643),
    (16, 199),
    (32, 67),
    (64, 6),
)

#: ElasticFlow's A100-profiled models and their global batch sizes (``shared/traces/
#: elasticflow-itp/README.md``), for ``SyntheticJobSpec.models``.
ELASTICFLOW_A100_MODELS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("resnet50", (64, 128, 256)),
    ("vgg16", (64, 128, 256)),
    ("inception3", (64, 128)),
    ("bert", (64, 128)),
    ("gpt2", (128, 256)),
    ("deepspeech2", (32, 64)),
)

#: Largest global batch size accepted (keeps the packed (model, batch, GPUs) key in an int64).
MAX_BATCH_SIZE = 2**24

ARRIVALS = ("poisson", "diurnal")
DURATION_DISTRIBUTIONS = ("lognormal", "pareto")

#: ``throughput(model_name, batch_size, num_gpus)`` in iterations per second (≤ 0 or NaN: the
#: combination cannot run, and the job keeps only its duration).
Throughput = Callable[[str, int, int], float]


def _fail(name: str, rule: str, value: object) -> ValueError:
    return ValueError(f"SyntheticJobSpec.{name} must be {rule} (got {value!r})")


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _finite(value: object) -> bool:
    return isinstance(value, int | float | np.number) and math.isfinite(float(value))


@dataclass(frozen=True)
class SyntheticJobSpec:
    """What to generate. Times are in seconds; see the module docstring for the defaults' source.

    * ``arrival``: ``"poisson"`` (constant rate) or ``"diurnal"`` (Poisson with rate
      ``(1 − amplitude·cos(2πt/period)) / mean_interarrival``: quietest at t = 0, busiest half a
      period later; the long-run mean inter-arrival is still ``mean_interarrival``).
    * Run times: ``"lognormal"`` or ``"pareto"`` with the given median, clipped to
      ``[duration_min, duration_max]``; the shape parameter is solved so that the *clipped*
      distribution has mean ``duration_mean``.
    * ``gpu_mix``: (GPU count, weight) pairs; weights need not sum to 1.
    * ``users``: how many; user k (0-based) submits with probability ∝ (k+1)^-user_zipf_exponent.
    * ``deadline_fraction`` of jobs get ``deadline = submit + U(deadline_slack)·duration``
      (ElasticFlow's rule, U(0.5, 1.5)); the rest have none.
    * ``models``: (model name, batch sizes) pairs; when given, each job gets a model uniformly at
      random and one of its batch sizes uniformly at random (as ElasticFlow's generator does).
    """

    jobs: int = 1_000
    arrival: str = "poisson"
    mean_interarrival: float = 114.4
    diurnal_amplitude: float = 0.5
    diurnal_period: float = 86_400.0
    duration_distribution: str = "lognormal"
    duration_median: float = 1_144.0
    duration_mean: float = 13_136.0
    duration_min: float = 1.0
    duration_max: float = 4_628_226.0
    gpu_mix: tuple[tuple[int, float], ...] = PHILLY_GPU_MIX
    users: int = 100
    user_zipf_exponent: float = 1.3
    deadline_fraction: float = 0.0
    deadline_slack: tuple[float, float] = (0.5, 1.5)
    models: tuple[tuple[str, tuple[int, ...]], ...] = field(default=())

    def __post_init__(self) -> None:
        if not _is_int(self.jobs) or self.jobs < 0:
            raise _fail("jobs", "a whole number ≥ 0", self.jobs)
        if self.arrival not in ARRIVALS:
            raise _fail("arrival", f"one of {', '.join(ARRIVALS)}", self.arrival)
        if not _finite(self.mean_interarrival) or self.mean_interarrival <= 0:
            raise _fail("mean_interarrival", "a number of seconds > 0", self.mean_interarrival)
        if not _finite(self.diurnal_amplitude) or not 0 <= self.diurnal_amplitude < 1:
            raise _fail("diurnal_amplitude", "in [0, 1)", self.diurnal_amplitude)
        if not _finite(self.diurnal_period) or self.diurnal_period <= 0:
            raise _fail("diurnal_period", "a number of seconds > 0", self.diurnal_period)
        if self.duration_distribution not in DURATION_DISTRIBUTIONS:
            raise _fail(
                "duration_distribution",
                f"one of {', '.join(DURATION_DISTRIBUTIONS)}",
                self.duration_distribution,
            )
        for name in ("duration_min", "duration_median", "duration_mean", "duration_max"):
            value = getattr(self, name)
            if not _finite(value) or value <= 0:
                raise _fail(name, "a number of seconds > 0", value)
        if not self.duration_min <= self.duration_median:
            raise _fail(
                "duration_median", f"≥ duration_min ({self.duration_min})", self.duration_median
            )
        if not self.duration_median < self.duration_mean < self.duration_max:
            raise _fail(
                "duration_mean",
                f"between duration_median ({self.duration_median}) and duration_max "
                f"({self.duration_max}) for a heavy tail",
                self.duration_mean,
            )
        self._check_gpu_mix()
        if not _is_int(self.users) or self.users < 1:
            raise _fail("users", "a whole number ≥ 1", self.users)
        if not _finite(self.user_zipf_exponent) or self.user_zipf_exponent < 0:
            raise _fail("user_zipf_exponent", "a number ≥ 0", self.user_zipf_exponent)
        if not _finite(self.deadline_fraction) or not 0 <= self.deadline_fraction <= 1:
            raise _fail("deadline_fraction", "in [0, 1]", self.deadline_fraction)
        slack = self.deadline_slack
        if len(slack) != 2 or not all(_finite(s) for s in slack) or not 0 <= slack[0] <= slack[1]:
            raise _fail("deadline_slack", "a pair (low, high) with 0 ≤ low ≤ high", slack)
        for entry in self.models:
            if (
                len(entry) != 2
                or not isinstance(entry[0], str)
                or not entry[0].strip()
                or len(entry[1]) == 0
                or not all(_is_int(b) and 0 < b <= MAX_BATCH_SIZE for b in entry[1])
            ):
                raise _fail(
                    "models",
                    f"(model name, (batch sizes in 1..{MAX_BATCH_SIZE}, ...)) pairs",
                    entry,
                )
        duration_shape(self)  # a mean the clipped distribution cannot reach fails here

    def _check_gpu_mix(self) -> None:
        mix = self.gpu_mix
        if len(mix) == 0:
            raise _fail("gpu_mix", "non-empty (GPU count, weight) pairs", mix)
        for entry in mix:
            if len(entry) != 2 or not _is_int(entry[0]) or not 1 <= entry[0] <= MAX_GPUS_PER_JOB:
                raise _fail("gpu_mix", f"(GPU count in 1..{MAX_GPUS_PER_JOB}, weight) pairs", entry)
            if not _finite(entry[1]) or entry[1] < 0:
                raise _fail("gpu_mix", "pairs with a weight ≥ 0", entry)
        if sum(w for _, w in mix) <= 0:
            raise _fail("gpu_mix", "weights with a positive sum", mix)

    @property
    def mean_gpus(self) -> float:
        counts = np.array([c for c, _ in self.gpu_mix], dtype=np.float64)
        weights = np.array([w for _, w in self.gpu_mix], dtype=np.float64)
        return float((counts * weights).sum() / weights.sum())


# -- run-time distributions ---------------------------------------------------------------------
def _lognormal_clipped_mean(sigma: float, median: float, lo: float, hi: float) -> float:
    """E[clip(X, lo, hi)] for X log-normal with the given median and shape ``sigma``."""
    mu = math.log(median)
    full = math.exp(mu + sigma * sigma / 2)
    z_hi = (math.log(hi) - mu) / sigma
    z_lo = (math.log(lo) - mu) / sigma
    below_hi = full * ndtr(z_hi - sigma) + hi * (1 - ndtr(z_hi))  # E[min(X, hi)]
    under_lo = lo * ndtr(z_lo) - full * ndtr(z_lo - sigma)  # E[(lo − X)+]
    return float(below_hi + under_lo)


def _pareto_clipped_mean(alpha: float, median: float, lo: float, hi: float) -> float:
    """E[clip(X, lo, hi)] for X Pareto (scale x_m, shape ``alpha``) with the given median."""
    xm = median / 2 ** (1 / alpha)
    a = max(lo, xm)
    if abs(alpha - 1) < 1e-9:
        return a + xm * math.log(hi / a)
    # xm^α·(hi^(1−α) − a^(1−α)) / (1−α), written with ratios ≤ 1 so a large α cannot overflow
    return a + xm * ((xm / hi) ** (alpha - 1) - (xm / a) ** (alpha - 1)) / (1 - alpha)


def duration_shape(spec: SyntheticJobSpec) -> float:
    """The shape parameter (log-normal σ, or Pareto α) that gives the clipped mean asked for.

    The clipped mean grows with the tail's weight only up to a point (past it, mass piles up at
    the cap and near zero), so the lightest tail that reaches the mean is taken; a mean beyond
    the peak raises ValueError naming ``duration_mean``.
    """
    median, lo, hi = spec.duration_median, spec.duration_min, spec.duration_max
    if spec.duration_distribution == "lognormal":

        def mean_at(h: float) -> float:
            return _lognormal_clipped_mean(h, median, lo, hi)

        to_param = float
    else:

        def mean_at(h: float) -> float:
            return _pareto_clipped_mean(1 / h, median, lo, hi)

        def to_param(h: float) -> float:
            return 1 / h

    heaviness = np.geomspace(1e-3, 20.0, 400)
    means = np.array([mean_at(h) for h in heaviness])
    reach = np.flatnonzero(means >= spec.duration_mean)
    if len(reach) == 0:
        raise _fail(
            "duration_mean",
            f"at most {means.max():.6g} for a {spec.duration_distribution} run time with median "
            f"{median:g} clipped to [{lo:g}, {hi:g}]",
            spec.duration_mean,
        )
    k = int(reach[0])
    if k == 0:
        return to_param(heaviness[0])
    h = brentq(lambda x: mean_at(x) - spec.duration_mean, heaviness[k - 1], heaviness[k])
    return to_param(h)


def _durations(spec: SyntheticJobSpec, rng: np.random.Generator) -> np.ndarray:
    shape = duration_shape(spec)
    n = spec.jobs
    if spec.duration_distribution == "lognormal":
        raw = rng.lognormal(math.log(spec.duration_median), shape, n)
    else:
        raw = spec.duration_median / 2 ** (1 / shape) * (1 + rng.pareto(shape, n))
    return np.clip(raw, spec.duration_min, spec.duration_max)


# -- arrivals -----------------------------------------------------------------------------------
def _arrivals(spec: SyntheticJobSpec, rng: np.random.Generator) -> np.ndarray:
    """Submit times starting at 0: a unit-rate Poisson process mapped through the inverse of the
    cumulative rate, which is exact for any rate shape and needs no per-job loop."""
    n = spec.jobs
    if n == 0:
        return np.zeros(0)
    steps = rng.exponential(1.0, n)
    steps[0] = 0.0
    tau = np.cumsum(steps) * spec.mean_interarrival  # time under a constant rate
    if spec.arrival == "poisson" or spec.diurnal_amplitude == 0:
        return tau
    # Diurnal: find t with t − (A·P/2π)·sin(2πt/P) = τ. The left side grows by P every period,
    # so solve within one period: interpolate on a grid, then polish with Newton steps.
    a, period = spec.diurnal_amplitude, spec.diurnal_period
    w = 2 * math.pi / period
    whole = np.floor(tau / period)
    rest = tau - whole * period
    grid = np.linspace(0.0, period, 4097)
    u = np.interp(rest, grid - a / w * np.sin(w * grid), grid)
    for _ in range(3):
        u -= (u - a / w * np.sin(w * u) - rest) / (1 - a * np.cos(w * u))
        np.clip(u, 0.0, period, out=u)
    return whole * period + u


# -- the generator ------------------------------------------------------------------------------
def _zipf_probabilities(count: int, exponent: float) -> np.ndarray:
    weights = np.arange(1, count + 1, dtype=np.float64) ** -exponent
    return weights / weights.sum()


def _iterations(
    which: np.ndarray,
    model_names: np.ndarray,
    batch_size: np.ndarray,
    num_gpus: np.ndarray,
    duration: np.ndarray,
    throughput: Throughput,
) -> np.ndarray:
    """``duration × throughput``, calling ``throughput`` once per distinct (model, batch, GPUs).

    The three small integers are packed into one int64 key (the spec bounds them), so finding the
    distinct combinations is one integer ``np.unique`` rather than a string or row-wise one.
    """
    n_batch = int(batch_size.max(initial=0)) + 1
    n_gpus = int(num_gpus.max(initial=0)) + 1
    keys = (which * n_batch + batch_size) * n_gpus + num_gpus
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    rates = np.empty(len(first))
    for k, i in enumerate(first):
        rate = float(throughput(str(model_names[which[i]]), int(batch_size[i]), int(num_gpus[i])))
        rates[k] = rate if math.isfinite(rate) and rate > 0 else np.nan
    return duration * rates[inverse.reshape(-1)]


def generate_jobs(
    spec: SyntheticJobSpec,
    rng: np.random.Generator,
    *,
    throughput: Throughput | None = None,
) -> JobTable:
    """Draw ``spec.jobs`` jobs in submit order.

    With ``spec.models`` and a ``throughput`` function, ``iterations`` = duration × throughput at
    the job's GPU count (ElasticFlow's rule: the job would take exactly ``duration`` at the size
    it asked for); otherwise ``iterations`` is NaN and replay uses ``duration``.
    """
    if not isinstance(spec, SyntheticJobSpec):
        raise TypeError(f"spec must be a SyntheticJobSpec (got {type(spec).__name__})")
    n = spec.jobs
    seeds = rng.integers(0, 2**63 - 1, size=6)
    arrival_rng, duration_rng, gpu_rng, user_rng, deadline_rng, model_rng = (
        np.random.default_rng(int(s)) for s in seeds
    )
    submit = _arrivals(spec, arrival_rng)
    duration = _durations(spec, duration_rng)

    counts = np.array([c for c, _ in spec.gpu_mix], dtype=np.int64)
    weights = np.array([w for _, w in spec.gpu_mix], dtype=np.float64)
    num_gpus = gpu_rng.choice(counts, size=n, p=weights / weights.sum())

    width = len(str(spec.users - 1))
    names = np.array([f"user{k:0{width}d}" for k in range(spec.users)], dtype=object)
    user = names[
        user_rng.choice(
            spec.users, size=n, p=_zipf_probabilities(spec.users, spec.user_zipf_exponent)
        )
    ]

    has_deadline = deadline_rng.random(n) < spec.deadline_fraction
    slack = deadline_rng.uniform(spec.deadline_slack[0], spec.deadline_slack[1], n)
    deadline = np.where(has_deadline, submit + slack * duration, np.nan)

    cols: dict[str, object] = {}
    if spec.models:
        model_names = np.array([m for m, _ in spec.models], dtype=object)
        sizes = [b for _, b in spec.models]
        table = np.zeros((len(sizes), max(len(b) for b in sizes)), dtype=np.int64)
        for k, b in enumerate(sizes):
            table[k, : len(b)] = b
        lengths = np.array([len(b) for b in sizes])
        which = model_rng.integers(len(sizes), size=n)
        pick = (model_rng.random(n) * lengths[which]).astype(np.int64)
        cols["model_name"] = model_names[which]
        cols["batch_size"] = table[which, pick]
        if throughput is not None:
            cols["iterations"] = _iterations(
                which, model_names, cols["batch_size"], num_gpus, duration, throughput
            )
    return JobTable.from_columns(
        source=f"<synthetic {spec.arrival} {spec.duration_distribution} n={n}>",
        job_id=np.arange(n).astype(str).astype(object),
        submit_time=submit,
        num_gpus=num_gpus,
        duration=duration,
        user=user,
        deadline=deadline,
        **cols,
    )


# -- load -----------------------------------------------------------------------------------------
def offered_load(spec: SyntheticJobSpec, total_gpus: int) -> float:
    """Expected GPU-seconds demanded per second, as a fraction of ``total_gpus``.

    GPU count and run time are drawn independently, so the demand per job is
    ``mean_gpus × duration_mean`` (the clipped mean, by construction of the run-time shape).
    """
    _check_gpus(total_gpus)
    return spec.mean_gpus * spec.duration_mean / spec.mean_interarrival / total_gpus


def load_for_gpus(spec: SyntheticJobSpec, total_gpus: int, target_load: float) -> SyntheticJobSpec:
    """``spec`` with the mean inter-arrival that offers ``target_load`` (e.g. 0.8 = 80 %) of
    ``total_gpus``; everything else unchanged. A load above 1 is allowed (an overloaded cluster
    is a legitimate experiment)."""
    _check_gpus(total_gpus)
    if not _finite(target_load) or target_load <= 0:
        raise ValueError(f"target_load must be a number > 0 (got {target_load!r})")
    gap = spec.mean_gpus * spec.duration_mean / (total_gpus * float(target_load))
    return replace(spec, mean_interarrival=gap)


def _check_gpus(total_gpus: int) -> None:
    if not _is_int(total_gpus) or total_gpus < 1:
        raise ValueError(f"total_gpus must be a whole number ≥ 1 (got {total_gpus!r})")
