"""What the tenant scheduler saw and did, for the tenancy metrics and figures.

At each decision it keeps (only when something changed since the last row) every queue's
allocation after the decision, its fair share, its demand (allocated + pending) and, for
time-based policies, its usage; and every reclaim with the preemptor's and the victim's queue,
the reason and what the victim loses. Allocation is piecewise constant between decisions, so
these rows are the whole timeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import Snapshot
from schedlab.tenancy.state import TenantState
from schedlab.tenancy.tree import QueueTree


@dataclass
class Reclaim:
    time: float
    preemptor_queue: int
    victim_queue: int
    reason: str
    job: int
    victim: int
    gpus: int
    #: GPU-seconds of work the victim loses (its run so far, when it keeps no checkpoint).
    lost_gpu_seconds: float


@dataclass
class TenancyRecorder:
    """Rows of the timeline and the reclaims (see the module docstring)."""

    times: list[float] = field(default_factory=list)
    alloc: list[np.ndarray] = field(default_factory=list)
    fair: list[np.ndarray] = field(default_factory=list)
    demand: list[np.ndarray] = field(default_factory=list)
    usage: list[np.ndarray] = field(default_factory=list)
    reclaims: list[Reclaim] = field(default_factory=list)

    def start(
        self, tree: QueueTree, capacity: np.ndarray, jobs: JobTable, leaf_of: np.ndarray
    ) -> None:
        self.tree = tree
        self.capacity = capacity
        self.jobs = jobs
        self.leaf_of = leaf_of
        self.times.clear()
        self.alloc.clear()
        self.fair.clear()
        self.demand.clear()
        self.usage.clear()
        self.reclaims.clear()
        self._last: tuple[bytes, bytes, bytes] | None = None

    def record(self, now: float, st: TenantState, fair: np.ndarray) -> None:
        request = st.request
        key = (st.alloc.tobytes(), fair.tobytes(), request.tobytes())
        if key == self._last and st.usage is None:
            return
        self._last = key
        if self.times and self.times[-1] == now:  # a second decision at the same time
            self.alloc[-1], self.fair[-1], self.demand[-1] = st.alloc.copy(), fair.copy(), request
            if st.usage is not None:
                self.usage[-1] = st.usage.copy()
            return
        self.times.append(now)
        self.alloc.append(st.alloc.copy())
        self.fair.append(fair.copy())
        self.demand.append(request)
        if st.usage is not None:
            self.usage.append(st.usage.copy())

    def reclaim(self, snap: Snapshot, leaf: int, job: int, victim: int, reason: str) -> None:
        rt = snap.runtime
        gpus = int(rt.alloc_n[victim])
        run = max(0.0, snap.now - float(rt.run_started[victim]))
        lost = 0.0 if bool(snap.jobs.checkpoint[victim]) else gpus * run
        self.reclaims.append(
            Reclaim(snap.now, leaf, int(self.leaf_of[victim]), reason, job, victim, gpus, lost)
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """The timeline as arrays ``[rows, nodes, resources]`` (``time``: ``[rows]``)."""
        n, r = len(self.tree), len(self.tree.resources)
        empty = np.zeros((0, n, r))
        return {
            "time": np.asarray(self.times, dtype=np.float64),
            "alloc": np.stack(self.alloc) if self.alloc else empty,
            "fair": np.stack(self.fair) if self.fair else empty,
            "demand": np.stack(self.demand) if self.demand else empty,
            "usage": np.stack(self.usage) if self.usage else empty,
        }
