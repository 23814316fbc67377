"""Failure times of every component instance, one independent stream each.

The k-th failure of instance ``i`` of class ``c`` comes from uniforms that are a fixed 64-bit mix
(splitmix64, as ECMP hashing uses) of ``(seed, c, i, k)`` — never Python's ``hash()`` and never a
shared generator — so a stream does not depend on how many other components or jobs there are:
adding a job changes no component's failure times. The same mix draws each event's category and
repair time.

Events are generated in windows of simulated time, vectorised over all instances of a class; a
run pulls them in time order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from schedlab.failures.spec import Process
from schedlab.network.routing import mix_array

CLASS_CODE = {"gpu": 1, "node": 2, "nic": 3, "link": 4, "switch": 5, "software": 6}
_TWO53 = float(2**53)
#: Salts of the draws made from one event's key.
GAP, CATEGORY, REPAIR = 0, 1, 2


def uniforms(seed: int, cls: str, instance: np.ndarray, k: np.ndarray, what: int) -> np.ndarray:
    """Uniforms in (0, 1) from (seed, class, instance, k, what)."""
    h = mix_array(seed, CLASS_CODE[cls], instance.astype(np.uint64), k.astype(np.uint64), what)
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) / _TWO53


def gaps(process: Process, u: np.ndarray) -> np.ndarray:
    """Seconds to the next failure for uniforms ``u``: exponential or Weibull inverse CDF."""
    e = -np.log1p(-u)
    if process.kind == "exp":
        return e * process.mtbf_h * 3600.0
    return process.scale_h * 3600.0 * e ** (1.0 / process.shape)


class ClassStream:
    """All instances of one class: their next failure times, advanced window by window."""

    def __init__(self, cls: str, process: Process, instances: int, seed: int) -> None:
        self.cls, self.process, self.seed = cls, process, seed
        self.instance = np.arange(instances, dtype=np.int64)
        self.k = np.zeros(instances, dtype=np.int64)
        self.next = gaps(process, uniforms(seed, cls, self.instance, self.k, GAP))

    def until(self, horizon: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(time, instance, k) of every failure before ``horizon`` not taken yet."""
        times, insts, ks = [], [], []
        while True:
            due = np.flatnonzero(self.next < horizon)
            if not len(due):
                break
            times.append(self.next[due])
            insts.append(due)
            ks.append(self.k[due].copy())
            self.k[due] += 1
            u = uniforms(self.seed, self.cls, due, self.k[due], GAP)
            self.next[due] = self.next[due] + gaps(self.process, u)
        if not times:
            empty = np.zeros(0, dtype=np.int64)
            return np.zeros(0), empty, empty
        return np.concatenate(times), np.concatenate(insts), np.concatenate(ks)


def draw_category(
    seed: int, cls: str, instance: int, k: int, weights: Mapping[str, float] | None
) -> str:
    """The event's category, drawn with ``weights`` (the class name when there are none)."""
    if not weights:
        return cls
    u = float(uniforms(seed, cls, np.array([instance]), np.array([k]), CATEGORY)[0])
    total = sum(weights.values())
    acc = 0.0
    for name, w in weights.items():
        acc += w / total
        if u < acc:
            return name
    return next(reversed(weights))


def draw_repair(seed: int, cls: str, instance: int, k: int, kind: str, hours: float) -> float:
    """Seconds the component is out: fixed, or exponential with mean ``hours``."""
    if kind == "fixed":
        return hours * 3600.0
    u = float(uniforms(seed, cls, np.array([instance]), np.array([k]), REPAIR)[0])
    return -math.log1p(-u) * hours * 3600.0


class SoftwareStream:
    """Per-job software failures: thresholds in GPU-seconds held (rate ∝ the job's GPUs)."""

    def __init__(self, process: Process, seed: int) -> None:
        self.process, self.seed = process, seed
        self._k: dict[int, int] = {}

    def threshold(self, job: int) -> float:
        """GPU-seconds from the job's previous software failure to its next one."""
        k = self._k.get(job, 0)
        u = uniforms(self.seed, "software", np.array([job]), np.array([k]), GAP)
        return float(gaps(self.process, u)[0])

    def advance(self, job: int) -> int:
        """Take the job's current draw; returns its index (for the category draw)."""
        k = self._k.get(job, 0)
        self._k[job] = k + 1
        return k
