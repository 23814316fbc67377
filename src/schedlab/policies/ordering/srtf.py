"""``srtf``: shortest remaining time first, preemptive (oracle remaining run time)."""

from __future__ import annotations

import numpy as np

from schedlab.model.snapshot import Snapshot
from schedlab.policies.ordering.base import Ordering


class ShortestRemainingTimeFirst(Ordering):
    name = "srtf"
    summary = "shortest remaining time first (oracle), preempts longer jobs"
    preemptive = True
    static = False

    def keys(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        return snap.remaining_seconds(idx)
