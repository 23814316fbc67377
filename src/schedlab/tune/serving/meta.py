"""Offline training of the learned tuners' network over a population of training services.

Each service's target is its objective scaled by its own optimum, ``J/max J`` (so every service
teaches the shape of a good configuration, not its scale).

- ``meta``: Reptile (first-order MAML; Nichol et al., arXiv 1803.02999): ``outer_steps`` times,
  pick a training service, copy the weights, take ``inner_steps`` Adam steps on ``batch`` of its
  configurations, and move the weights ``outer_lr`` of the way to the adapted copy. The result
  is a starting point that few samples of a new service adapt well.
- ``meta-pool`` (ablation): the same network and the same number of gradient steps, trained on
  batches pooled across the training services with no inner loop.

Weights are saved as ``meta.npz`` (arrays ``meta_0…meta_5`` and ``pool_0…pool_5``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.tune.serving import mlp
from schedlab.tune.serving.model import DEFAULT_HARDWARE, Hardware, Service, evaluate
from schedlab.tune.serving.space import features


@dataclass(frozen=True)
class MetaSettings:
    outer_steps: int = 2000
    inner_steps: int = 10
    batch: int = 32
    outer_lr: float = 0.1
    inner_lr: float = mlp.LEARNING_RATE


def targets(services: list[Service], hw: Hardware = DEFAULT_HARDWARE) -> np.ndarray:
    """(services, 720): each service's ``J/max J``."""
    out = np.empty((len(services), len(features())))
    for i, s in enumerate(services):
        j = evaluate(s, hw).objective
        out[i] = j / j.max()
    return out


def _start(services: list[Service], seed: int):
    """Features, targets, the seeded generator and fresh weights: what both trainings share
    (the same seed gives both nets the same initial weights, so the ablation isolates Reptile)."""
    x = features()
    rng = np.random.default_rng(seed)
    return x, targets(services), rng, mlp.init(x.shape[1], rng)


def reptile(
    services: list[Service], seed: int, settings: MetaSettings = MetaSettings()
) -> list[np.ndarray]:
    x, y, rng, weights = _start(services, seed)
    for _ in range(settings.outer_steps):
        task = int(rng.integers(len(services)))
        pick = rng.choice(len(x), size=settings.batch, replace=False)
        adapted = mlp.fit(weights, x[pick], y[task, pick], settings.inner_steps, settings.inner_lr)
        for w, a in zip(weights, adapted, strict=True):
            w += settings.outer_lr * (a - w)
    return weights


def pooled(
    services: list[Service], seed: int, settings: MetaSettings = MetaSettings()
) -> list[np.ndarray]:
    x, y, rng, weights = _start(services, seed)
    opt = mlp.Adam(weights, settings.inner_lr)
    for _ in range(settings.outer_steps * settings.inner_steps):
        tasks = rng.integers(len(services), size=settings.batch)
        pick = rng.choice(len(x), size=settings.batch, replace=False)
        _, grads = mlp.gradients(weights, x[pick], y[tasks, pick])
        opt.step(weights, grads)
    return weights


@dataclass
class MetaWeights:
    meta: list[np.ndarray]
    pool: list[np.ndarray]

    def for_tuner(self, tuner: str) -> list[np.ndarray]:
        return self.pool if tuner == "meta-pool" else self.meta


def train(
    services: list[Service], seed: int, settings: MetaSettings = MetaSettings()
) -> MetaWeights:
    if not services:
        raise InputError("meta-training needs at least one training service")
    return MetaWeights(reptile(services, seed, settings), pooled(services, seed, settings))


def save(path: Path, weights: MetaWeights) -> None:
    from schedlab.results import atomic_write

    arrays = {f"meta_{i}": w for i, w in enumerate(weights.meta)}
    arrays |= {f"pool_{i}": w for i, w in enumerate(weights.pool)}
    atomic_write(path, lambda fh: np.savez(fh, **arrays), binary=True)


def load(path: str | Path) -> MetaWeights:
    from schedlab.input_files import check_input_file

    path = check_input_file(path, "meta-weights file")
    refused = InputError(
        "not a meta-weights file written by 'schedlab tune serving train' (an .npz archive of "
        "meta_0..5 and pool_0..5)",
        path=str(path),
    )
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):  # empty, truncated, text, pickled
        raise refused from None
    if not isinstance(data, np.lib.npyio.NpzFile):  # a bare .npy array
        raise refused
    try:
        with data:
            meta = [data[f"meta_{i}"] for i in range(6)]
            pool = [data[f"pool_{i}"] for i in range(6)]
    except (OSError, KeyError, ValueError, EOFError):
        raise refused from None
    if meta[0].shape != (features().shape[1], mlp.HIDDEN):
        raise InputError(
            f"meta weights for {meta[0].shape[0]} features, the space has {features().shape[1]}",
            path=str(path),
        )
    return MetaWeights(meta, pool)
