"""What a data-parallel job sends each iteration: its collective as phases of rank → rank transfers.

A phase is a set of transfers that run concurrently; phases run one after another. Ranks are the
positions of the job's GPUs in its allocation. Only gradient synchronisation is modelled (data
parallelism); pipeline and tensor-parallel traffic are out of scope.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from schedlab.errors import InputError

COLLECTIVES: tuple[str, ...] = ("ring", "hd", "a2a", "ps", "ina")

#: fp32 gradient bytes per iteration (4 × parameters) of the models the traces name.
GRADIENT_BYTES: dict[str, float] = {
    "resnet50": 4 * 25.6e6,
    "vgg16": 4 * 138.4e6,
    "vgg19": 4 * 143.7e6,
    "alexnet": 221e6,
    "bert": 4 * 110e6,
    "gpt2": 4 * 124e6,
    "inception3": 4 * 23.8e6,
    "deepspeech2": 4 * 38e6,
}

#: Share of the gradient in the largest tensor (Tiresias' consolidation criterion).
LARGEST_TENSOR_SHARE: dict[str, float] = {
    "vgg16": 0.74,
    "vgg19": 0.72,
    "alexnet": 0.62,
    "gpt2": 0.31,
    "bert": 0.21,
    "resnet50": 0.09,
    "inception3": 0.09,
}

_ALIASES = {"inceptionv3": "inception3", "bertbase": "bert", "gpt2small": "gpt2"}


def model_key(name: str) -> str:
    """Normalised model name: ``ResNet-50`` → ``resnet50``."""
    key = "".join(ch for ch in name.lower() if ch.isalnum())
    return _ALIASES.get(key, key)


def gradient_bytes(model: str) -> float:
    """Gradient bytes per iteration of a named model; InputError for an unknown one."""
    key = model_key(model)
    if key not in GRADIENT_BYTES:
        raise InputError(
            f"no gradient size for model {model!r} (known: {', '.join(GRADIENT_BYTES)}); "
            "give the job's bytes explicitly"
        )
    return GRADIENT_BYTES[key]


@dataclass(frozen=True)
class CommSpec:
    """A job's communication and timing parameters.

    ``compute`` C is seconds of compute per iteration; communication starts at (1 − overlap)·C and
    may hide behind the rest; ``penalty`` κ is added per iteration (LIBRA's SM contention);
    ``priority`` is the level for the ``priority`` sharing rule (higher = served first).
    """

    collective: str = "ring"
    gradient_bytes: float = 0.0
    compute: float = 0.0
    overlap: float = 0.0
    penalty: float = 0.0
    priority: int = 0
    ring_directions: int = 1

    def __post_init__(self) -> None:
        if self.collective not in COLLECTIVES:
            raise InputError(
                f"unknown collective: field 'collective', value {self.collective!r} "
                f"(known: {', '.join(COLLECTIVES)})"
            )
        for name in ("gradient_bytes", "compute", "penalty"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise InputError(f"bad value: field '{name}', value {value!r} (must be ≥ 0)")
        if not 0.0 <= self.overlap <= 1.0:
            raise InputError(f"bad value: field 'overlap', value {self.overlap!r} (0…1)")
        if self.ring_directions not in (1, 2):
            raise InputError(
                f"bad value: field 'ring_directions', value {self.ring_directions!r} (1 or 2)"
            )


@dataclass(frozen=True)
class Transfers:
    """Rank-level transfers of one iteration, in phase order.

    ``channel`` is the ring channel (≥ 0; the transfer's bytes are already per channel) or -1
    when the sender's own NIC carries it.
    """

    phase: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    channel: np.ndarray
    num_phases: int
    steps: int  # latency-bound steps (α is paid once per step)


def _pack(parts: list[tuple[np.ndarray, np.ndarray, float | np.ndarray, int]], steps: int):
    phase = np.concatenate([np.full(len(p[0]), i) for i, p in enumerate(parts)])
    src = np.concatenate([p[0] for p in parts])
    dst = np.concatenate([p[1] for p in parts])
    nbytes = np.concatenate([np.broadcast_to(np.asarray(p[2], float), len(p[0])) for p in parts])
    channel = np.concatenate([np.full(len(p[0]), p[3]) for p in parts])
    return Transfers(
        phase.astype(np.int64),
        src.astype(np.int64),
        dst.astype(np.int64),
        nbytes.astype(np.float64),
        channel.astype(np.int64),
        len(parts),
        steps,
    )


def ring(n: int, size: float, channels: int = 1, directions: int = 1) -> Transfers:
    """One phase: every edge r → r+1 (and r+1 → r when bidirectional) in each channel, carrying
    2(N−1)/N · S / (channels · directions)."""
    r = np.arange(n)
    per = 2.0 * (n - 1) / n * size / (channels * directions)
    src, dst, chan = [], [], []
    for c in range(channels):
        src.append(r)
        dst.append((r + 1) % n)
        chan.append(np.full(n, c))
        if directions == 2:
            src.append((r + 1) % n)
            dst.append(r)
            chan.append(np.full(n, c))
    s, d, ch = np.concatenate(src), np.concatenate(dst), np.concatenate(chan)
    t = Transfers(np.zeros(len(s), np.int64), s, d, np.full(len(s), per), ch, 1, 2 * (n - 1))
    return t


def halving_doubling(n: int, size: float) -> Transfers:
    """Reduce-scatter stages k = 0…L−1 (r ↔ r⊕2^k, S/2^(k+1) each way), then all-gather
    k = L−1…0. For N not a power of two, ranks N'+i first send S to rank i and get it back at
    the end (N' the largest power of two ≤ N)."""
    levels = n.bit_length() - 1
    base = 1 << levels
    r = np.arange(base)
    stages = [(r, r ^ (1 << k), size / (1 << (k + 1)), -1) for k in range(levels)]
    parts = stages + stages[::-1]
    steps = 2 * levels
    if base < n:
        extra = np.arange(base, n)
        parts = [(extra, extra - base, size, -1), *parts, (extra - base, extra, size, -1)]
        steps += 2
    return _pack(parts, steps)


def all_to_all(n: int, size: float) -> Transfers:
    """One phase: every ordered pair of ranks exchanges S/N."""
    a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    keep = a != b
    return _pack([(a[keep], b[keep], size / n, -1)], n - 1)


def parameter_server(n: int, size: float) -> Transfers:
    """Push (every worker → the PS beside rank 0) then pull (PS → every worker), S each."""
    w = np.arange(1, n)
    zero = np.zeros(n - 1, np.int64)
    return _pack([(w, zero, size, -1), (zero, w, size, -1)], 2)


def transfers(spec: CommSpec, n: int, channels: int = 1) -> Transfers:
    """The transfers of ``spec``'s collective on ``n`` ranks (none for a single rank)."""
    if n <= 1 or spec.gradient_bytes == 0:
        empty = np.zeros(0, np.int64)
        return Transfers(empty, empty, empty, np.zeros(0), empty, 0, 0)
    if spec.collective == "ring":
        return ring(n, spec.gradient_bytes, channels, spec.ring_directions)
    if spec.collective == "hd":
        return halving_doubling(n, spec.gradient_bytes)
    if spec.collective == "a2a":
        return all_to_all(n, spec.gradient_bytes)
    return parameter_server(n, spec.gradient_bytes)
