"""The interface every time-based scheduling policy implements, whatever engine calls it.

``decide(snapshot)`` returns decisions; ``next_wakeup(snapshot)`` says when the policy wants to be
asked again even if nothing happens (a round boundary, a queue-threshold crossing). The engine
never branches on a policy's type: it applies whatever comes back.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from schedlab.model.cluster import Cluster
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import Decision, Snapshot
from schedlab.perf.models import PerfModel
from schedlab.policies.placement.gang import GangPlacer

#: Tolerance, in rounds, for "this time is a round boundary" (float sums of slot lengths).
ROUND_EPS = 1e-9


def between_rounds(now: float, slot: float | None) -> bool:
    """True if round-based scheduling (``slot`` seconds a round) must not decide at ``now``."""
    if slot is None:
        return False
    rounds = now / slot
    return abs(rounds - round(rounds)) > ROUND_EPS


def next_round(now: float, slot: float) -> float:
    """The first round boundary strictly after ``now``."""
    return (math.floor(now / slot + ROUND_EPS) + 1) * slot


@dataclass(frozen=True)
class ReplayContext:
    """What a policy may know before the first decision."""

    cluster: Cluster
    jobs: JobTable
    perf: PerfModel
    placer: GangPlacer
    rng: np.random.Generator


class SchedulingPolicy(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]

    def reset(self, ctx: ReplayContext) -> None:  # noqa: B027 - optional hook
        """Called once before a run."""

    @abstractmethod
    def decide(self, snap: Snapshot) -> list[Decision]:
        """Decisions to apply now (possibly none)."""

    def next_wakeup(self, snap: Snapshot) -> float:
        """Earliest time the policy wants another decision point (inf: only on events)."""
        return float("inf")

    def describe(self) -> str:
        return self.name
