"""Network metrics as pure functions of given data (footprints, iteration times, timelines).

One implementation per metric: the replay's network state computes machine fragmentation at each
decision point with :func:`machine_fragmentation_at`, the same function the timeline forms below
use, and studies average its series with :func:`window_mean` / :func:`machine_days`. Time
averages take piecewise-constant timelines: ``values[i]`` holds over ``durations[i]`` seconds
(or, for the series forms, from ``times[i]`` to the next time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from schedlab.metrics.timeline import step_integral, time_weighted_mean
from schedlab.network.footprint import Footprint
from schedlab.network.topology import TIERS, Topology

#: Seconds in a day (machine-days).
DAY = 86_400.0


@dataclass(frozen=True)
class JobNetworkMetrics:
    """Per-job columns of ``jobs.csv``."""

    hosts: int
    leaves: int
    collective: str
    comm_share: float
    cross_host_bytes: float
    cross_leaf_bytes: float
    net_slowdown: float


def time_average(values: np.ndarray | Sequence[float], durations: np.ndarray | Sequence[float]):
    """∫ value dt / ∫ dt over a piecewise-constant timeline (NaN for zero total time)."""
    v = np.asarray(values, dtype=np.float64)
    d = np.asarray(durations, dtype=np.float64)
    total = d.sum()
    return float((v * d).sum() / total) if total > 0 else float("nan")


def job_metrics(
    fp: Footprint,
    compute: float,
    iteration_times: Sequence[float],
    isolated_time: float,
    durations: Sequence[float],
    iterations: float,
) -> JobNetworkMetrics:
    """A job's network columns from its footprint and its iteration-time timeline.

    ``iteration_times[i]`` held for ``durations[i]`` seconds of its run; ``iterations`` is the
    number of iterations it completed. The communication share is ∫ (T − C)/T dt over the run
    divided by the run time; the slowdown is the time-average of T/T^iso.
    """
    t = np.asarray(iteration_times, dtype=np.float64)
    share = time_average((t - compute) / t, durations) if len(t) else 0.0
    slowdown = time_average(t / isolated_time, durations) if len(t) else 1.0
    return JobNetworkMetrics(
        hosts=fp.hosts,
        leaves=fp.leaves,
        collective=fp.collective,
        comm_share=share,
        cross_host_bytes=fp.cross_host_bytes * iterations,
        cross_leaf_bytes=fp.cross_leaf_bytes * iterations,
        net_slowdown=slowdown,
    )


def titan_pair_bytes(cross_host_bytes: float | np.ndarray) -> float | np.ndarray:
    """Titan's cross-machine count for halving-doubling from sender-side cross-host bytes: each
    exchanging pair once per stage, i.e. half of them."""
    return cross_host_bytes / 2


def titan_pair_traffic(fp: Footprint) -> float:
    """Titan's count of one iteration of a footprint (:func:`titan_pair_bytes`)."""
    return float(titan_pair_bytes(fp.cross_host_bytes))


def machines_used(busy_gpus: np.ndarray, durations: Sequence[float]) -> float:
    """Time-average number of hosts with at least one busy GPU (``busy_gpus``: intervals ×
    hosts)."""
    return time_average((np.asarray(busy_gpus) > 0).sum(axis=1), durations)


def machine_fragmentation_at(idle_on_active, cap_active, total_gpus):
    """(rate, share) at one instant (scalars or arrays of instants).

    Rate: idle GPUs on non-idle hosts / all GPUs of non-idle hosts (0 when every host is idle);
    share: idle GPUs on non-idle hosts / all GPUs. Idle machines are not fragments.
    """
    if np.isscalar(idle_on_active) and np.isscalar(cap_active):  # the replay's per-event call
        return (
            idle_on_active / cap_active if cap_active else 0.0,
            idle_on_active / total_gpus if total_gpus else 0.0,
        )
    idle = np.asarray(idle_on_active, dtype=np.float64)
    cap = np.asarray(cap_active, dtype=np.float64)
    rate = np.divide(idle, cap, out=np.zeros_like(idle), where=cap > 0)
    share = idle / total_gpus if total_gpus else np.zeros_like(idle)
    return rate, share


def machine_fragmentation(
    busy_gpus: np.ndarray, host_gpus: np.ndarray, durations: Sequence[float]
) -> tuple[float, float]:
    """(machine fragmentation rate, machine_frag_share), time-averaged over intervals × hosts
    of busy GPUs (see :func:`machine_fragmentation_at`)."""
    busy = np.asarray(busy_gpus, dtype=np.float64)
    cap = np.asarray(host_gpus, dtype=np.float64)[None, :]
    active = busy > 0
    idle_on_active = np.where(active, cap - busy, 0.0).sum(axis=1)
    cap_active = np.where(active, cap, 0.0).sum(axis=1)
    rate, share = machine_fragmentation_at(idle_on_active, cap_active, float(cap.sum()))
    return time_average(rate, durations), time_average(share, durations)


def window_mean(times: np.ndarray, values: np.ndarray, start: float, end: float) -> float:
    """Mean of a step series (each value holds from its time to the next, the last one on)
    over [start, end]: the common window placements are compared over (NaN if empty)."""
    mean = time_weighted_mean(np.asarray(times), np.asarray(values), start, end)
    return float("nan") if mean is None else mean


def machine_days(times: np.ndarray, machines: np.ndarray, end: float) -> float:
    """∫ machines in use dt from the first time to ``end``, in machine-days: what a placement
    costs over the whole run, however long its tail."""
    t = np.asarray(times, dtype=np.float64)
    if not len(t):
        return 0.0
    lo, hi = step_integral(t, machines, np.array([t[0], end]))
    return float(hi - lo) / DAY


def compute_utilisation(
    gpus: Sequence[int], compute: Sequence[float], iteration_times: Sequence[float], total: int
) -> float:
    """Σ_running N_j·C_j/T_j / all GPUs at one instant (Crux's objective)."""
    n, c, t = (np.asarray(x, dtype=np.float64) for x in (gpus, compute, iteration_times))
    return float((n * c / t).sum() / total) if total else 0.0


def link_utilisation(
    topo: Topology,
    footprints: Sequence[Footprint],
    iteration_times: Sequence[float],
) -> np.ndarray:
    """Per link id: Σ_k (Σ_t b_{k,t,l})/T_k / c_l at one instant (may exceed 1 under overload)."""
    util = np.zeros(topo.num_links)
    for fp, t in zip(footprints, iteration_times, strict=True):
        np.add.at(util, fp.links, fp.seconds / t)
    return util


def utilisation_by_tier(
    topo: Topology, utilisation: np.ndarray, durations: Sequence[float] | None = None
) -> dict[str, dict[str, float]]:
    """Mean, p99 and max of link utilisation per tier.

    ``utilisation`` is one vector per link, or intervals × links with ``durations`` (each link's
    utilisation is time-averaged first). Tiers without links are left out.
    """
    u = np.asarray(utilisation, dtype=np.float64)
    if u.ndim == 2:
        d = np.asarray(durations, dtype=np.float64)
        u = (u * d[:, None]).sum(axis=0) / d.sum() if d.sum() > 0 else u.mean(axis=0)
    out: dict[str, dict[str, float]] = {}
    for i, name in enumerate(TIERS):
        sel = u[topo.link_tier == i]
        if len(sel):
            out[name] = {
                "mean": float(sel.mean()),
                "p99": float(np.percentile(sel, 99)),
                "max": float(sel.max()),
            }
    return out


def network_summary(
    busy_gpus: np.ndarray,
    host_gpus: np.ndarray,
    durations: Sequence[float],
    topo: Topology,
    utilisation: np.ndarray,
) -> Mapping[str, object]:
    """The ``network`` block of ``summary.json`` from a run's timelines."""
    rate, share = machine_fragmentation(busy_gpus, host_gpus, durations)
    return {
        "machines_used": machines_used(busy_gpus, durations),
        "machine_frag_rate": rate,
        "machine_frag_share": share,
        "link_utilisation": utilisation_by_tier(topo, utilisation, durations),
    }
