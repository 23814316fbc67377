"""``edf``: earliest deadline first; jobs without a deadline go after all that have one."""

from __future__ import annotations

import numpy as np

from schedlab.model.snapshot import Snapshot
from schedlab.policies.ordering.base import Ordering


class EarliestDeadlineFirst(Ordering):
    name = "edf"
    summary = "earliest deadline first (no deadline: last); preemptive=true to preempt"

    def __init__(self, preemptive: bool = False) -> None:
        self.preemptive = preemptive

    def keys(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        deadline = snap.jobs.deadline[idx]
        return np.where(np.isfinite(deadline), deadline, np.inf)
