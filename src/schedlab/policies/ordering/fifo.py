"""``fifo``: first come, first served."""

from __future__ import annotations

import numpy as np

from schedlab.model.snapshot import Snapshot
from schedlab.policies.ordering.base import Ordering


class Fifo(Ordering):
    name = "fifo"
    summary = "first come, first served by submit time"

    def keys(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        return snap.jobs.submit_time[idx]
