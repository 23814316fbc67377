"""Pods over time for the sharing engine: the pack pod table plus arrival, work and QoS class.

The resource side is the :class:`~schedlab.model.pods.PodTable` of ``pack`` unchanged (CPU
milli-cores, memory, GPU count, per-GPU milli-share, GPU model mask), so the same placement plugins
and feasibility code serve both engines. What time adds is kept beside it, aligned by row:

* ``arrival``: seconds on the trace's clock;
* ``work``: seconds the pod runs at full speed (``inf`` for pack mode, where nothing leaves);
* ``qos``: the trace's class name; ``level`` the class's priority level (see :data:`QOS_LEVELS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from schedlab.model.pods import PodTable

#: Level of each class: 3 guaranteed, 2 burstable, 1 opportunistic, 0 elastic filler.
LEVEL_GUARANTEED, LEVEL_BURSTABLE, LEVEL_OPPORTUNISTIC, LEVEL_FILLER = 3, 2, 1, 0
#: Trace ``qos`` value → level (spec: LS and Guaranteed are both guaranteed work).
QOS_LEVELS: dict[str, int] = {
    "LS": LEVEL_GUARANTEED,
    "Guaranteed": LEVEL_GUARANTEED,
    "Burstable": LEVEL_BURSTABLE,
    "BE": LEVEL_OPPORTUNISTIC,
}
#: The class names in report order.
QOS_ORDER: tuple[str, ...] = ("LS", "Guaranteed", "Burstable", "BE")


@dataclass(frozen=True)
class SharedWorkload:
    """Pods with their times and classes; ``dropped`` counts rows a reader left out, by reason."""

    pods: PodTable
    arrival: np.ndarray  # float64, (P,)
    work: np.ndarray  # float64, (P,)
    qos: np.ndarray  # object (str), (P,)
    dropped: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.pods)
        for attr in ("arrival", "work", "qos"):
            if len(getattr(self, attr)) != n:
                raise ValueError(f"SharedWorkload.{attr} has {len(getattr(self, attr))} rows")

    def __len__(self) -> int:
        return len(self.pods)

    @property
    def level(self) -> np.ndarray:
        return np.array([QOS_LEVELS[q] for q in self.qos.tolist()], dtype=np.int64)

    @classmethod
    def at_time_zero(cls, pods: PodTable, qos: str = "LS") -> SharedWorkload:
        """Every pod arrives at 0 and never leaves (the pack protocol's view of a pod list)."""
        n = len(pods)
        return cls(
            pods,
            np.zeros(n),
            np.full(n, np.inf),
            np.full(n, qos, dtype=object),
        )

    def select(self, keep: np.ndarray) -> SharedWorkload:
        """Rows where ``keep`` is True (a boolean mask), with the same drop counts."""
        index = np.flatnonzero(keep)
        return SharedWorkload(
            self.pods.take(index),
            self.arrival[index],
            self.work[index],
            self.qos[index],
            dict(self.dropped),
        )
