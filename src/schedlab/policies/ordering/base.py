"""An ordering ranks jobs; the shared scheduler turns a ranking into starts and preemptions.

Orderings are independent of placement (Tiresias, Lucid): any order runs with any placement
plugin. An ordering states a key per job (lower runs first; ties go to the earlier submit, then
the lower job index), whether it may preempt, and whether a pending job's key can change while it
waits (if not, the scheduler keeps the queue sorted incrementally instead of re-sorting).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from schedlab.model.snapshot import Snapshot
from schedlab.policies.api import Policy


class Ordering(Policy, ABC):
    """Base of every ordering; ``preemptive`` (may stop running jobs to run higher-ranked ones)
    and the other capabilities are declared as for every policy (:mod:`schedlab.policies.api`)."""

    #: A pending job's key never changes (so a sorted queue can be kept incrementally).
    static: ClassVar[bool] = True

    @abstractmethod
    def keys(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        """Sort key of each job in ``idx`` (lower first)."""

    def next_wakeup(self, snap: Snapshot) -> float:
        return float("inf")
