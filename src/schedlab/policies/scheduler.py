"""The interface every time-based scheduling policy implements, whatever engine calls it.

``decide(snapshot)`` returns decisions; ``next_wakeup(snapshot)`` says when the policy wants to be
asked again even if nothing happens (a round boundary, a queue-threshold crossing). The engine
never branches on a policy's type: it applies whatever comes back.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

from schedlab.model.snapshot import Decision, Snapshot
from schedlab.policies.api import Policy, PolicyContext

#: Tolerance, in rounds, for "this time is a round boundary" (float sums of slot lengths).
ROUND_EPS = 1e-9


def between_rounds(now: float, slot: float | None) -> bool:
    """True if round-based scheduling (``slot`` seconds a round) must not decide at ``now``."""
    if slot is None:
        return False
    rounds = now / slot
    return abs(rounds - round(rounds)) > ROUND_EPS


def check_slot(slot: float | None) -> float | None:
    """A round length given to a round-based policy's constructor: None or > 0 seconds."""
    if slot is not None and not slot > 0:
        raise ValueError(f"'slot' must be > 0 seconds (got {slot})")
    return None if slot is None else float(slot)


def next_round(now: float, slot: float) -> float:
    """The first round boundary strictly after ``now``."""
    return (math.floor(now / slot + ROUND_EPS) + 1) * slot


#: The context a scheduling policy is reset with: the one context type of every policy.
ReplayContext = PolicyContext


class SchedulingPolicy(Policy, ABC):
    """Base of every time-based policy; capabilities as in :mod:`schedlab.policies.api`. A
    round-based policy takes ``slot`` (seconds a round) as a constructor parameter."""

    #: With no job pending (none new, none withdrawn), ``decide`` returns no decision and
    #: ``next_wakeup`` inf, and not asking changes nothing later: an engine may skip the call.
    #: Half the decision points of an uncongested trace are completions with an empty queue.
    idle_without_queue: bool = False
    #: ``next_wakeup`` is inf whatever the snapshot: an engine need not ask it.
    never_wakes: bool = False
    #: With no job pending (none new, none withdrawn), ``decide`` returns no decision and not
    #: asking it changes nothing later, but ``next_wakeup`` still matters (Tiresias wakes at
    #: its running jobs' threshold crossings): an engine may ask only that.
    quiet_without_queue: bool = False

    @abstractmethod
    def decide(self, snap: Snapshot) -> list[Decision]:
        """Decisions to apply now (possibly none)."""

    def next_wakeup(self, snap: Snapshot) -> float:
        """Earliest time the policy wants another decision point (inf: only on events)."""
        return float("inf")

    def describe(self) -> str:
        return self.name

    def report(self) -> dict[str, Any]:
        """Figures the policy kept of its own run, for the run's summary (JSON-ready; empty:
        nothing to report). A solver that failed and was replaced by a fallback is reported
        here, so the run says so."""
        return {}
