"""Power, energy and carbon of a ``replay --sharing`` run: an observer of the sharing engine.

Pods share GPUs, so the replay meter's rule (a job draws its whole GPUs at TDP) does not fit.
Here each GPU draws by the share held on it (``binary``: idle when nothing is on it, else TDP;
``linear``: idle + (TDP − idle)·min(1, share/1000)), CPU sockets follow PWR's socket model on
the node's free CPU, and facility power is PUE × (GPUs + sockets + node base). Power only changes
at the engine's event times, so it is banked exactly between them, and carbon is P·∫CI dt over
the same intervals (as in :mod:`schedlab.energy.meter`).

A pod's own energy is its share of full GPUs at the TDP of the node it ran on (share/1000 ×
GPUs × TDP × PUE) while it was placed, segment by segment (an evicted pod may restart on another
model); idle draw, sockets and node base power are the cluster's. ``measured`` power needs a
job's model and its power-limit curve, which pods do not have, and is refused.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from schedlab.energy.carbon import CarbonSeries
from schedlab.energy.meter import J_PER_KWH, PowerLedger
from schedlab.energy.power import VCPU_PER_CORE, ClusterPower
from schedlab.energy.spec import EnergySpec
from schedlab.errors import InputError
from schedlab.model.cluster import GPU_MILLI, Cluster

__all__ = ["SharingEnergyMeter"]


def _ceil_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return -(-a // b)


class SharingEnergyMeter(PowerLedger):
    """What a sharing run drew: the cluster's power over time and each pod's energy."""

    def __init__(
        self,
        spec: EnergySpec,
        cluster: Cluster,
        pod_gpus: np.ndarray,
        pod_share: np.ndarray,
    ) -> None:
        settings = spec.settings()
        if settings.model == "measured":
            raise InputError(
                "'--power-model measured' needs each job's model and power-limit curve, which "
                "pods do not have: use binary or linear with --sharing"
            )
        series = spec.series()
        self._start_ledger(
            series if series is not None else CarbonSeries.constant(0.0, "none"),
            settings.pue,
            len(pod_gpus),
        )
        self.power = ClusterPower.build(cluster, settings)
        self.linear = settings.model == "linear"
        exists = cluster.new_state().gpu_exists
        self._idle = np.where(exists, self.power.idle_w[:, None], 0.0)
        self._tdp = np.where(exists, self.power.tdp_w[:, None], 0.0)
        self._tdp_node = self.power.tdp_w.tolist()
        # PWR's socket model per node, as arrays (nodes without CPU figures draw nothing).
        cpus = self.power.cpu
        self._cpu_milli = cluster.cpu_milli.astype(np.int64)
        self._per_socket = np.array([c.cores if c else 1 for c in cpus], dtype=np.int64)
        self._full_w = np.array([c.full_w if c else 0.0 for c in cpus])
        self._idle_cpu_w = np.array([c.idle_w if c else 0.0 for c in cpus])
        self.base_w = settings.node_base_w * cluster.size
        self.gpu_node_w = self._idle.sum(axis=1)
        self.cpu_node_w = self._sockets(self._cpu_milli.copy())
        self.gpu_w = float(self.gpu_node_w.sum())
        self.cpu_w = float(self.cpu_node_w.sum())
        # Each pod's share of full GPUs, in GPU-milli.
        self._pod_gpu_milli = (pod_gpus.astype(np.int64) * pod_share.astype(np.int64)).tolist()

    # -- node power --------------------------------------------------------------------------
    def _sockets(self, free_milli: np.ndarray) -> np.ndarray:
        """Socket watts per node with ``free_milli`` CPU free (vectorised PWR socket model)."""
        per_core = VCPU_PER_CORE * 1000
        cores = _ceil_div(self._cpu_milli, per_core)
        working = np.maximum(0, cores - np.maximum(0, free_milli) // per_core)
        sockets = _ceil_div(cores, self._per_socket)
        active = np.minimum(sockets, _ceil_div(working, self._per_socket))
        watts = active * self._full_w + (sockets - active) * self._idle_cpu_w
        return np.where(self._cpu_milli > 0, watts, 0.0)

    def _gpu_watts(self, held: np.ndarray, rows: np.ndarray) -> np.ndarray:
        idle, tdp = self._idle[rows], self._tdp[rows]
        if self.linear:
            busy = np.minimum(1.0, np.maximum(0, held) / GPU_MILLI)
            return (idle + (tdp - idle) * busy).sum(axis=1)
        return np.where(held > 0, tdp, idle).sum(axis=1)

    # -- engine notifications ----------------------------------------------------------------
    def step(self, now: float, held: np.ndarray, cpu_free: np.ndarray, nodes: set[int]) -> None:
        """The event time ``now`` is done: bank up to it, then take the power of the ``nodes``
        that changed (``held``: share per GPU slot, ``cpu_free``: free CPU per node)."""
        self.advance(now)
        if nodes:
            rows = np.fromiter(nodes, dtype=np.int64, count=len(nodes))
            gpu = self._gpu_watts(held[rows], rows)
            self.gpu_w += float(gpu.sum() - self.gpu_node_w[rows].sum())
            self.gpu_node_w[rows] = gpu
            cpu = self._sockets(cpu_free.astype(np.int64))[rows]
            self.cpu_w += float(cpu.sum() - self.cpu_node_w[rows].sum())
            self.cpu_node_w[rows] = cpu
        self.peak_w = max(self.peak_w, self.facility_w)

    def placed(self, now: float, pod: int, node: int) -> None:
        self.advance(now)  # banks at the power before this event time's changes
        self.hold(now, pod, self._pod_gpu_milli[pod] / GPU_MILLI * self._tdp_node[node] * self.pue)

    def released(self, now: float, pod: int) -> None:
        self.advance(now)
        self.let_go(now, pod)

    def add_pod_columns(self, pods: pd.DataFrame) -> pd.DataFrame:
        """``energy_kwh`` and (with a carbon series) ``carbon_kg`` per pod, in pod order."""
        self.finish(self.last)
        out = pods.copy()
        out["energy_kwh"] = self.job_j / J_PER_KWH
        if self.ci.label != "none":
            out["carbon_kg"] = self.job_g / 1000.0
        return out
