"""Long-running serving instances (the Alibaba GPU v2025 DLRM trace): what each asks for and when
it runs.

A DLRM service (an *app*) runs as many instances in two roles: CN instances on CPU nodes (CPU,
memory, RDMA bandwidth, no GPU) and HN instances on GPU nodes (one GPU each, a little CPU). Besides
the pack resources (CPU milli-cores, memory MiB, whole GPUs) an instance holds a share of one RDMA
NIC (``rdma``, in % of one NIC) and a per-app density limit (``max_per_node``: at most that many
instances of its app on one node; -1 = no limit).

Times are seconds on the trace's clock. An instance occupies its node over [``start``, ``end``):
``start`` is the scheduled time (0 for instances already running when the window opened),
``end`` the deletion time (the window end for instances still running when it closed, flagged
``censored``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Role codes: CPU-node instance, heterogeneous-GPU-node instance.
ROLE_CN, ROLE_HN = 0, 1
ROLE_NAMES: tuple[str, ...] = ("CN", "HN")

#: ``max_per_node`` value meaning "no limit".
NO_LIMIT = -1

#: Percentiles ``stats`` reports (numpy's default linear interpolation).
PERCENTILES: tuple[int, ...] = (50, 90, 99)

#: The per-row columns of :class:`ServingInstances`, in field order.
ROW_COLUMNS: tuple[str, ...] = (
    "name",
    "role",
    "app",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "rdma",
    "disk_gib",
    "max_per_node",
    "arrival",
    "start",
    "end",
    "preexisting",
    "censored",
)


@dataclass(frozen=True)
class ServingInstances:
    """Instances in canonical form, one row each (numpy columns aligned by row).

    ``app`` indexes ``app_names``; ``role`` is :data:`ROLE_CN` or :data:`ROLE_HN`.
    """

    name: np.ndarray  # object (str)
    role: np.ndarray  # int8
    app: np.ndarray  # int64, index into app_names
    app_names: tuple[str, ...]
    cpu_milli: np.ndarray  # int64
    memory_mib: np.ndarray  # int64
    num_gpu: np.ndarray  # int64 (whole GPUs)
    rdma: np.ndarray  # int64, % of one RDMA NIC
    disk_gib: np.ndarray  # float64 (request)
    max_per_node: np.ndarray  # int64, NO_LIMIT or ≥ 1
    arrival: np.ndarray  # float64: creation time, 0 when blank
    start: np.ndarray  # float64: scheduled time, 0 when blank
    end: np.ndarray  # float64: deletion time, window end when blank
    preexisting: np.ndarray  # bool: no creation time (running before the window opened)
    censored: np.ndarray  # bool: no deletion time (still running when it closed)
    window_end: float
    source: str = "<memory>"

    def __post_init__(self) -> None:
        n = len(self.name)
        for col in ROW_COLUMNS[1:]:
            if len(getattr(self, col)) != n:
                raise ValueError(f"ServingInstances.{col} has {len(getattr(self, col))} rows")

    def __len__(self) -> int:
        return len(self.name)

    def running_at(self, t: float) -> np.ndarray:
        """Mask of the instances holding their node at time ``t`` (start ≤ t < end)."""
        return (self.start <= t) & (t < self.end)

    def concurrency_peak(self) -> tuple[int, float]:
        """Most instances running at once and the first time that many run.

        Intervals are half-open, so at a shared timestamp departures come before arrivals: an
        instance replacing another at the same second does not count twice.
        """
        live = self.end > self.start
        if not live.any():
            return 0, 0.0
        times = np.concatenate([self.start[live], self.end[live]])
        steps = np.concatenate([np.ones(int(live.sum())), -np.ones(int(live.sum()))])
        order = np.lexsort((steps, times))  # by time, then -1 before +1
        running = np.cumsum(steps[order])
        k = int(np.argmax(running))
        return int(running[k]), float(times[order][k])

    def stats(self) -> dict[str, object]:
        """What an operator checks first: counts by role, apps, span, request percentiles,
        density limits and the concurrency peak."""
        peak, when = self.concurrency_peak()
        at_peak = self.running_at(when) if peak else np.zeros(len(self), dtype=bool)
        roles: dict[str, object] = {}
        for code, role in enumerate(ROLE_NAMES):
            sel = self.role == code
            roles[role] = {
                "instances": int(sel.sum()),
                "apps": len(np.unique(self.app[sel])),
                "requests": _percentiles(
                    {
                        "vcpu": self.cpu_milli[sel] / 1000.0,
                        "gpu": self.num_gpu[sel].astype(np.float64),
                        "rdma_pct": self.rdma[sel].astype(np.float64),
                        "memory_gib": self.memory_mib[sel] / 1024.0,
                    }
                ),
                "running_at_peak": int((sel & at_peak).sum()),
            }
        limited = self.max_per_node != NO_LIMIT
        values, counts = np.unique(self.max_per_node[limited], return_counts=True)
        limited_apps = np.unique(self.app[limited])
        first = float(self.arrival[~self.preexisting].min()) if (~self.preexisting).any() else 0.0
        return {
            "instances": len(self),
            "apps": len(self.app_names),
            "apps_with_both_roles": len(
                np.intersect1d(self.app[self.role == ROLE_CN], self.app[self.role == ROLE_HN])
            ),
            "window_end_seconds": self.window_end,
            "first_creation_seconds": first,
            "without_creation_time": int(self.preexisting.sum()),
            "without_deletion_time": int(self.censored.sum()),
            "by_role": roles,
            "anti_affinity": {
                "instances_without_limit": int((~limited).sum()),
                "instances_with_limit": int(limited.sum()),
                "apps_with_limit": len(limited_apps),
                "by_limit": {str(int(v)): int(c) for v, c in zip(values, counts, strict=True)},
            },
            "concurrency_peak": {
                "instances": peak,
                "at_seconds": when,
                "vcpu": float(self.cpu_milli[at_peak].sum() / 1000.0),
                "gpus": int(self.num_gpu[at_peak].sum()),
                "memory_gib": float(self.memory_mib[at_peak].sum() / 1024.0),
                "rdma_nics": float(self.rdma[at_peak].sum() / 100.0),
            },
        }

    def select(self, mask: np.ndarray) -> ServingInstances:
        """The rows where ``mask`` is true (app names kept whole, so indices stay valid)."""
        cols = {c: getattr(self, c)[mask] for c in ROW_COLUMNS}
        return ServingInstances(
            **cols, app_names=self.app_names, window_end=self.window_end, source=self.source
        )


def _percentiles(columns: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for key, values in columns.items():
        if len(values) == 0:
            out[key] = {}
            continue
        row = {f"p{p}": float(np.percentile(values, p)) for p in PERCENTILES}
        row["max"] = float(values.max())
        out[key] = row
    return out
