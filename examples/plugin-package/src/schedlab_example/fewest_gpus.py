"""``fewest-gpus``: small jobs first, so they are not stuck behind wide ones."""

from __future__ import annotations

import numpy as np

from schedlab.model.snapshot import Snapshot
from schedlab.policies.ordering.base import Ordering


class FewestGpusFirst(Ordering):
    name = "fewest-gpus"
    summary = "fewest requested GPUs first, then first come first served"
    # Declared capabilities: replay and serve, any placement, no state, never preempts.
    engines = frozenset({"replay", "serve"})
    preemptive = False
    stateful = False

    def keys(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        # Lower runs first; ties go to the earlier submit, then the lower job index.
        return snap.jobs.num_gpus[idx].astype(np.float64)
