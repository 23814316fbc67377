"""``pwr`` and ``pwr+fgd``: power-aware placement (Lettich et al., CCGrid '25).

A node's score is int(node power before − node power after placing the pod) (≤ 0) under PWR's
model — binary GPUs (idle when nothing is allocated on one, TDP as soon as anything is) and its
CPU socket model — min-max normalised to 0–100 over the feasible nodes (all equal: 100). A
GPU-sharing pod tries every GPU with enough free share and keeps the cheapest (lowest index on
ties), so it lands on a GPU that is already powered when one fits; other pods take GPUs by best
fit. ``pwr+fgd`` scores w·fgd + (1 − w)·pwr with w = 0.5 (ours: the paper's weights were not
available), and a sharing pod takes the GPU FGD picks. Power figures come from the shipped PWR
tables (:mod:`schedlab.energy.data`).
"""

from __future__ import annotations

import numpy as np

from schedlab.energy.power import VCPU_PER_CORE, ClusterPower, EnergySettings
from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.policies.api import PACK, REPLAY
from schedlab.policies.placement.base import PlacementPolicy, PodRequest, RunContext
from schedlab.policies.placement.fgd import FgdPlacement

#: Weight of FGD's score in ``pwr+fgd`` (ours).
FGD_WEIGHT = 0.5


def sockets_power(
    cpu_milli: np.ndarray,
    free_milli: np.ndarray,
    idle_w: np.ndarray,
    full_w: np.ndarray,
    per_socket: np.ndarray,
) -> np.ndarray:
    """PWR's socket model for many nodes at once (``per_socket`` 0: no CPU figures → 0 W)."""
    per_core = VCPU_PER_CORE * 1000
    cores = -(-cpu_milli // per_core)
    working = np.maximum(0, cores - np.maximum(0, free_milli) // per_core)
    k = np.maximum(per_socket, 1)
    sockets = -(-cores // k)
    active = np.minimum(sockets, -(-working // k))
    watts = active * full_w + (sockets - active) * idle_w
    return np.where(per_socket > 0, watts, 0.0)


def normalise(raw: np.ndarray, feasible: np.ndarray) -> np.ndarray:
    """Min-max to 0–100 (integer) over feasible nodes; all equal gives 100."""
    out = np.zeros(len(raw), dtype=np.int64)
    values = raw[feasible]
    if not len(values):
        return out
    lo, hi = int(values.min()), int(values.max())
    if hi == lo:
        out[feasible] = 100
    else:
        out[feasible] = (values - lo) * 100 // (hi - lo)
    return out


class PwrPlacement(PlacementPolicy):
    name = "pwr"
    summary = "least added node power, binary GPUs + CPU sockets (PWR, CCGrid '25)"
    #: Needs power figures per GPU model, which a live partition's generic GPUs do not have.
    engines = frozenset({PACK, REPLAY})

    def reset(self, ctx: RunContext) -> None:
        cluster = ctx.cluster
        power = ClusterPower.build(cluster, EnergySettings())
        self.busy_gain = (power.tdp_w - power.idle_w).astype(np.float64)
        self.node_cpu = cluster.cpu_milli.astype(np.int64)
        self.cpu_idle = np.array([c.idle_w if c else 0.0 for c in power.cpu])
        self.cpu_full = np.array([c.full_w if c else 0.0 for c in power.cpu])
        self.per_socket = np.array([c.cores if c else 0 for c in power.cpu], dtype=np.int64)
        self._gpu = np.full(cluster.size, -1, dtype=np.int64)

    def _cpu_w(self, free: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        return sockets_power(
            self.node_cpu[nodes],
            free,
            self.cpu_idle[nodes],
            self.cpu_full[nodes],
            self.per_socket[nodes],
        )

    def raw_scores(self, pod: PodRequest, state: ClusterState, nodes: np.ndarray) -> np.ndarray:
        """int(power before − power after) for ``nodes`` (≤ 0), and the sharing GPU chosen."""
        free_cpu = state.cpu_free[nodes]
        added = self._cpu_w(free_cpu - pod.cpu_milli, nodes) - self._cpu_w(free_cpu, nodes)
        if pod.is_sharing:
            free = state.gpu_free[nodes]
            fits = state.gpu_exists[nodes] & (free >= pod.gpu_milli)
            # a GPU with nothing on it starts drawing TDP; one already in use adds nothing
            cost = np.where(free == GPU_MILLI, self.busy_gain[nodes][:, None], 0.0)
            cost = np.where(fits, cost, np.inf)
            best = cost.argmin(axis=1)  # first minimum: lowest index on ties
            self._gpu[nodes] = best
            added = added + cost[np.arange(len(nodes)), best]
        elif pod.needs_gpu:
            added = added + pod.num_gpu * self.busy_gain[nodes]
        return np.trunc(-added).astype(np.int64)

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        nodes = np.flatnonzero(feasible)
        raw = np.zeros(len(feasible), dtype=np.int64)
        raw[nodes] = self.raw_scores(pod, state, nodes)
        return normalise(raw, feasible)

    def pick_gpus(self, pod: PodRequest, state: ClusterState, node: int) -> tuple[int, ...]:
        if pod.is_sharing:
            return (int(self._gpu[node]),)
        return super().pick_gpus(pod, state, node)


class PwrFgdPlacement(PwrPlacement):
    name = "pwr+fgd"
    summary = "w·fgd + (1 − w)·pwr, w = 0.5 (PWR's combination, CCGrid '25)"

    def reset(self, ctx: RunContext) -> None:
        super().reset(ctx)
        self.fgd = FgdPlacement()
        self.fgd.reset(ctx)

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        pwr = super().score(pod, state, feasible).astype(np.float64)
        fgd = self.fgd.score(pod, state, feasible).astype(np.float64)
        return FGD_WEIGHT * fgd + (1.0 - FGD_WEIGHT) * pwr

    def pick_gpus(self, pod: PodRequest, state: ClusterState, node: int) -> tuple[int, ...]:
        return self.fgd.pick_gpus(pod, state, node)
