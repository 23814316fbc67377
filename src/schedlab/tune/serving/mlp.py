"""A small multilayer perceptron in numpy (two tanh layers of 64, one linear output) trained by
Adam on squared error: what the meta-learned tuner fits, offline and online.

Weights are a flat list of arrays ``[W1, b1, W2, b2, W3, b3]`` so that Reptile can move one set
toward another by plain arithmetic.
"""

from __future__ import annotations

import numpy as np

HIDDEN = 64
LEARNING_RATE = 0.01


def init(inputs: int, rng: np.random.Generator, hidden: int = HIDDEN) -> list[np.ndarray]:
    """Glorot-uniform weights, zero biases."""

    def glorot(fan_in: int, fan_out: int) -> np.ndarray:
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, size=(fan_in, fan_out))

    return [
        glorot(inputs, hidden),
        np.zeros(hidden),
        glorot(hidden, hidden),
        np.zeros(hidden),
        glorot(hidden, 1),
        np.zeros(1),
    ]


def predict(weights: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    w1, b1, w2, b2, w3, b3 = weights
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    return (h2 @ w3 + b3)[:, 0]


def gradients(
    weights: list[np.ndarray], x: np.ndarray, y: np.ndarray
) -> tuple[float, list[np.ndarray]]:
    """Mean squared error and its gradient by back-propagation."""
    w1, b1, w2, b2, w3, b3 = weights
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    out = (h2 @ w3 + b3)[:, 0]
    err = out - y
    n = len(y)
    d_out = (2.0 / n) * err[:, None]
    g_w3 = h2.T @ d_out
    g_b3 = d_out.sum(axis=0)
    d_h2 = (d_out @ w3.T) * (1 - h2**2)
    g_w2 = h1.T @ d_h2
    g_b2 = d_h2.sum(axis=0)
    d_h1 = (d_h2 @ w2.T) * (1 - h1**2)
    g_w1 = x.T @ d_h1
    g_b1 = d_h1.sum(axis=0)
    return float(np.mean(err**2)), [g_w1, g_b1, g_w2, g_b2, g_w3, g_b3]


class Adam:
    """Adam (β₁ 0.9, β₂ 0.999, ε 1e-8) over a list of arrays, updated in place."""

    def __init__(self, weights: list[np.ndarray], lr: float = LEARNING_RATE) -> None:
        self.lr = lr
        self.m = [np.zeros_like(w) for w in weights]
        self.v = [np.zeros_like(w) for w in weights]
        self.t = 0

    def step(self, weights: list[np.ndarray], grads: list[np.ndarray]) -> None:
        self.t += 1
        b1, b2, eps = 0.9, 0.999, 1e-8
        c1, c2 = 1 - b1**self.t, 1 - b2**self.t
        for w, g, m, v in zip(weights, grads, self.m, self.v, strict=True):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            w -= self.lr * (m / c1) / (np.sqrt(v / c2) + eps)


def fit(
    weights: list[np.ndarray], x: np.ndarray, y: np.ndarray, steps: int, lr: float = LEARNING_RATE
) -> list[np.ndarray]:
    """A copy of ``weights`` after ``steps`` full-batch Adam steps on (x, y)."""
    trained = [w.copy() for w in weights]
    opt = Adam(trained, lr)
    for _ in range(steps):
        _, grads = gradients(trained, x, y)
        opt.step(trained, grads)
    return trained
