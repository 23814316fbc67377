"""``sjf``: shortest job first, by the oracle run time at the requested size."""

from __future__ import annotations

import numpy as np

from schedlab.model.snapshot import Snapshot
from schedlab.policies.ordering.base import Ordering


class ShortestJobFirst(Ordering):
    name = "sjf"
    summary = "shortest job first (oracle run time), non-preemptive"

    def keys(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        return snap.total_seconds(idx)
