"""What a plan is judged by: iteration time, cost per iteration, or a weighted mix of both.

``weighted:w`` scores ``w·T/T₀ + (1 − w)·C/C₀`` with ``T₀`` and ``C₀`` the shortest time and the
lowest cost of the ``dp-serverless`` baseline, so both terms are near 1 and ``w`` means what it
says. Ties between plans of equal score go to the shorter time, then the lower cost, then the
first plan in the solvers' order (fewer replicas, fewer micro-batches, fewer stages first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from schedlab.errors import InputError

TIME, COST, WEIGHTED = "time", "cost", "weighted"


@dataclass(frozen=True)
class Objective:
    kind: str
    w: float = 1.0
    t0: float = 1.0
    c0: float = 1.0

    def value(self, t: float, c: float) -> float:
        if self.kind == TIME:
            return t
        if self.kind == COST:
            return c
        return self.w * t / self.t0 + (1.0 - self.w) * c / self.c0

    def key(self, t: float, c: float) -> tuple[float, float, float]:
        """Sort key: the score, then time, then cost (the tie rule of the module)."""
        return (self.value(t, c), t, c)

    def label(self) -> str:
        return f"{WEIGHTED}:{self.w:g}" if self.kind == WEIGHTED else self.kind

    def anchored(self, t0: float, c0: float) -> Objective:
        return Objective(self.kind, self.w, t0, c0)


def parse_objective(text: str) -> Objective:
    """``time``, ``cost`` or ``weighted:W`` with W in [0, 1]."""
    if text in (TIME, COST):
        return Objective(text)
    kind, sep, value = text.partition(":")
    if kind == WEIGHTED and sep:
        try:
            w = float(value)
        except ValueError:
            w = math.nan
        if 0.0 <= w <= 1.0:
            return Objective(WEIGHTED, w)
    raise InputError(
        f"'--objective' must be time, cost or weighted:W with W in [0, 1] (got {text!r})"
    )
