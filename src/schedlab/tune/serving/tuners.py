"""The tuners: which configuration to profile next, given what the samples so far observed.

Every sample is one noisy evaluation (``J·e^ε``); no configuration is sampled twice. A run ends
after ``budget`` samples (grid and random may run the whole space: they cost nothing to plan).

- ``grid``: the space in order (type, share, memory, cores, batch);
- ``random``: uniform without replacement;
- ``bo``: Gaussian-process regression (scikit-learn, ``Matern(ν=2.5) + WhiteKernel``,
  ``normalize_y``) of the observed objective (zeros kept) over the features of
  :mod:`.space`; 5 random samples first, then the untested configuration of largest expected
  improvement, ``ξ = 0.01`` in units of the observations' standard deviation (ties: the lowest
  index);
- ``meta`` / ``meta-pool``: the meta-trained network's argmax first; after each sample the
  network is fine-tuned from the meta-weights on all samples so far (targets ÷ the best
  observed, raw if all are 0; 20 Adam steps) and the predicted-best untested configuration is
  sampled next.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from schedlab.errors import InputError
from schedlab.tune.serving import mlp
from schedlab.tune.serving.model import NOISE_SIGMA, Performance
from schedlab.tune.serving.space import features

TUNERS = ("grid", "random", "bo", "meta", "meta-pool")
LEARNED = ("meta", "meta-pool")
BO_INITIAL = 5
BO_XI = 0.01
FINE_TUNE_STEPS = 20


@dataclass
class Run:
    """One tuning run: the configurations sampled, in order, and what each observed."""

    tuner: str
    samples: list[int]
    observed: list[float]

    def incumbent(self, k: int | None = None) -> int:
        """The sampled configuration with the best observation among the first ``k``."""
        seen = self.observed[: k if k is not None else len(self.observed)]
        return self.samples[int(np.argmax(seen))]

    def search_cost(self, optimal: np.ndarray) -> int | None:
        """Samples until an optimal configuration was sampled (None: not within the run)."""
        for position, config in enumerate(self.samples, 1):
            if optimal[config]:
                return position
        return None

    def regret(self, perf: Performance, k: int) -> float:
        """``1 − J(incumbent after k samples)/J*`` on the noise-free objective."""
        best = perf.objective.max()
        return 1.0 - float(perf.objective[self.incumbent(min(k, len(self.samples)))]) / best


def optimal_set(perf: Performance) -> np.ndarray:
    j = perf.objective
    return j >= j.max() * (1 - 1e-12)


class Oracle:
    """Profiling: the noise-free objective times ``e^ε`` with ε ~ N(0, σ²) from ``rng``."""

    def __init__(self, perf: Performance, rng: np.random.Generator, sigma: float = NOISE_SIGMA):
        self.perf, self.rng, self.sigma = perf, rng, sigma

    def __call__(self, config: int) -> float:
        return float(self.perf.objective[config] * math.exp(self.rng.normal(0.0, self.sigma)))


def _masked_argmax(scores: np.ndarray, tested: np.ndarray) -> int:
    masked = np.where(tested, -np.inf, scores)
    return int(np.argmax(masked))


def run(
    tuner: str,
    perf: Performance,
    budget: int,
    rng: np.random.Generator,
    weights: list[np.ndarray] | None = None,
    stop: np.ndarray | None = None,
) -> Run:
    """One run of ``tuner`` on a service's performance ``perf``; with ``stop`` (a mask of
    configurations) the run ends as soon as it samples one of them (a benchmark measuring the
    search cost needs nothing after that)."""
    if tuner not in TUNERS:
        raise InputError(f"'--tuner' must be one of {', '.join(TUNERS)} (got {tuner!r})")
    size = len(perf.objective)
    budget = min(budget, size)
    oracle = Oracle(perf, rng)
    done = stop if stop is not None else np.zeros(size, dtype=bool)
    if tuner in ("grid", "random"):
        order = range(size) if tuner == "grid" else rng.permutation(size)
        samples: list[int] = []
        for c in order[:budget]:
            samples.append(int(c))
            if done[c]:
                break
        return Run(tuner, samples, [oracle(c) for c in samples])
    if tuner == "bo":
        return _bo(perf, budget, rng, oracle, done)
    if weights is None:
        raise InputError(f"the {tuner} tuner needs meta-weights (schedlab tune serving train)")
    return _meta(tuner, budget, oracle, weights, done)


def _bo(
    perf: Performance, budget: int, rng: np.random.Generator, oracle: Oracle, done: np.ndarray
) -> Run:
    try:
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import Matern, WhiteKernel
    except ImportError:
        raise InputError("the bo tuner needs scikit-learn: pip install 'schedlab[tune]'") from None
    from scipy.special import ndtr

    x = features()
    size = len(x)
    tested = np.zeros(size, dtype=bool)
    samples = [int(c) for c in rng.choice(size, size=min(BO_INITIAL, budget), replace=False)]
    observed = [oracle(c) for c in samples]
    tested[samples] = True
    while len(samples) < budget and not done[samples].any():
        y = np.asarray(observed)
        gp = GaussianProcessRegressor(kernel=Matern(nu=2.5) + WhiteKernel(), normalize_y=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # hyper-parameters at their bounds, say
            gp.fit(x[samples], y)
            mu, sd = gp.predict(x, return_std=True)
        spread = float(y.std()) or 1.0
        gain = mu - y.max() - BO_XI * spread
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(sd > 0, gain / sd, 0.0)
        ei = np.where(sd > 0, gain * ndtr(z) + sd * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi),
                      np.maximum(gain, 0.0))  # fmt: skip
        nxt = _masked_argmax(ei, tested)
        samples.append(nxt)
        observed.append(oracle(nxt))
        tested[nxt] = True
    return Run("bo", samples, observed)


def _meta(
    tuner: str, budget: int, oracle: Oracle, weights: list[np.ndarray], done: np.ndarray
) -> Run:
    x = features()
    tested = np.zeros(len(x), dtype=bool)
    first = _masked_argmax(mlp.predict(weights, x), tested)
    samples, observed = [first], [oracle(first)]
    tested[first] = True
    while len(samples) < budget and not done[samples[-1]]:
        y = np.asarray(observed)
        top = y.max()
        target = y / top if top > 0 else y
        tuned = mlp.fit(weights, x[samples], target, FINE_TUNE_STEPS)
        nxt = _masked_argmax(mlp.predict(tuned, x), tested)
        samples.append(nxt)
        observed.append(oracle(nxt))
        tested[nxt] = True
    return Run(tuner, samples, observed)
