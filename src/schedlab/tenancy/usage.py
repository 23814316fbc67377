"""Time-decayed usage of each queue, over the cluster's capacity (KAI's time-based fair share).

``u_q(t) = Σ a_q(s)·2^{-(t-s)/h} / Σ C(s)·2^{-(t-s)/h}`` over the window: allocation over
capacity, both decayed the same way, so a queue that used an idle cluster is not over-penalised.
The window slides (``[t - W, t]``) or tumbles (reset at ``start + n·W``); no half-life means no
decay. Usage is refreshed every ``tick`` seconds (KAI's usage fetch interval, 60 s by default)
and held in between.

``mode = "integral"`` integrates the piecewise-constant allocation exactly: a segment
``[s0, s1)`` at level ``a`` adds ``a·h/ln2·(2^{-(t-s1)/h} - 2^{-(t-s0)/h})`` (``a·(s1 - s0)``
without decay). ``mode = "sampled"`` sums the allocation seen at each tick, as KAI's one-minute
Prometheus samples do. Work is done per tick bin (one array per bin in the window), so a long
replay costs time in proportion to its span over ``tick``, not to its events.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

WINDOW_TYPES = ("sliding", "tumbling")
MODES = ("integral", "sampled")


@dataclass(frozen=True)
class UsageSettings:
    """How usage is kept (all times in seconds; ``half_life`` 0: no decay)."""

    window: float = 7 * 86400.0
    window_type: str = "sliding"
    half_life: float = 0.0
    tick: float = 60.0
    mode: str = "integral"


class UsageLedger:
    """Decayed allocation integrals per node and resource, by tick bins."""

    def __init__(self, settings: UsageSettings, shape: tuple[int, int], capacity: np.ndarray):
        self.s = settings
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.shape = shape
        self.start: float | None = None
        self.last = 0.0  # the allocation below is held from here on
        self.alloc = np.zeros(shape)
        self.bin_end = 0.0  # end of the open bin
        self.open = np.zeros(shape)  # the open bin's integral, decayed to bin_end
        self.bins: deque[tuple[float, np.ndarray]] = deque()  # closed bins (end, integral)
        self.total = np.zeros(shape)  # Σ closed bins in the window, decayed to the last end
        self.total_at = 0.0
        self.window_start = 0.0
        self.value = np.zeros(shape)  # usage as of the last tick
        self.value_at = -math.inf

    # -- decay helpers ---------------------------------------------------------------------
    def _factor(self, dt: float) -> float:
        h = self.s.half_life
        return 2.0 ** (-dt / h) if h > 0 else 1.0

    def _segment(self, s0: float, s1: float, end: float) -> float:
        """∫ over [s0, s1) of the decay seen from ``end`` (per unit of allocation)."""
        h = self.s.half_life
        if h <= 0:
            return s1 - s0
        return h / math.log(2.0) * (2.0 ** (-(end - s1) / h) - 2.0 ** (-(end - s0) / h))

    # -- feeding ---------------------------------------------------------------------------
    def observe(self, now: float, alloc: np.ndarray) -> None:
        """The allocation changes to ``alloc`` at ``now`` (the old one held until now)."""
        if self.start is None:
            self.start = now
            self.last = now
            self.bin_end = now + self.s.tick
            self.total_at = now
            self.window_start = now
        self._advance(now)
        self.alloc = np.array(alloc, dtype=np.float64, copy=True)

    def _advance(self, now: float) -> None:
        """Account the held allocation up to ``now``, closing every bin that ends by then."""
        while self.bin_end <= now:
            if self.s.mode == "integral":
                self.open += self.alloc * self._segment(self.last, self.bin_end, self.bin_end)
            else:
                self.open += self.alloc  # the sample at the bin's end
            self._close_bin()
            self.last = self.bin_end
            self.bin_end += self.s.tick
        if self.s.mode == "integral" and now > self.last:
            self.open += self.alloc * self._segment(self.last, now, self.bin_end)
            self.last = now
        else:
            self.last = max(self.last, now)

    def _close_bin(self) -> None:
        end = self.bin_end
        assert self.start is not None
        if self.s.window_type == "tumbling" and end - self.window_start > self.s.window + 1e-9:
            self.bins.clear()
            self.total = np.zeros(self.shape)
            self.window_start += self.s.window * math.floor(
                (end - self.window_start - 1e-9) / self.s.window
            )
        self.total = self.total * self._factor(end - self.total_at) + self.open
        self.total_at = end
        self.bins.append((end, self.open))
        self.open = np.zeros(self.shape)
        if self.s.window_type == "sliding":
            while self.bins and self.bins[0][0] <= end - self.s.window + 1e-9:
                old_end, old = self.bins.popleft()
                self.total -= old * self._factor(end - old_end)
        self.value = self._ratio(end)
        self.value_at = end

    def _ratio(self, end: float) -> np.ndarray:
        assert self.start is not None
        first = self.bins[0][0] - self.s.tick if self.bins else end
        span = end - max(first, self.start)
        if self.s.mode == "integral":
            denom = self._segment(end - span, end, end)
        else:
            n = len(self.bins)
            r = self._factor(self.s.tick)
            denom = float(n) if r == 1.0 else (1.0 - r**n) / (1.0 - r)
        cap = self.capacity * denom
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(cap > 0, np.clip(self.total, 0, None) / np.where(cap > 0, cap, 1), 0.0)
        return out

    def usage(self, now: float) -> np.ndarray:
        """Usage as of the last tick at or before ``now`` (0 before the first tick)."""
        if self.start is not None:
            self._advance(now)
        return self.value

    def next_tick(self, now: float) -> float:
        return self.bin_end if self.start is not None else math.inf

    # -- serve carries it across cycles ----------------------------------------------------
    def export(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "last": self.last,
            "alloc": self.alloc.tolist(),
            "bin_end": self.bin_end,
            "open": self.open.tolist(),
            "bins": [(e, b.tolist()) for e, b in self.bins],
            "total": self.total.tolist(),
            "total_at": self.total_at,
            "window_start": self.window_start,
            "value": self.value.tolist(),
            "value_at": self.value_at,
        }

    def restore(self, data: Mapping[str, Any]) -> None:
        if not data or data.get("start") is None:
            return
        shape = self.shape
        try:
            self.start = float(data["start"])
            self.last = float(data["last"])
            self.alloc = np.asarray(data["alloc"], dtype=np.float64).reshape(shape)
            self.bin_end = float(data["bin_end"])
            self.open = np.asarray(data["open"], dtype=np.float64).reshape(shape)
            self.bins = deque(
                (float(e), np.asarray(b, dtype=np.float64).reshape(shape)) for e, b in data["bins"]
            )
            self.total = np.asarray(data["total"], dtype=np.float64).reshape(shape)
            self.total_at = float(data["total_at"])
            self.window_start = float(data["window_start"])
            self.value = np.asarray(data["value"], dtype=np.float64).reshape(shape)
            self.value_at = float(data["value_at"])
        except (KeyError, ValueError, TypeError):
            self.start = None  # a tree that changed shape starts a fresh history
