"""The energy meter: an observer of the replay engine that integrates power exactly.

Cluster power only changes when a job is placed or released, so between two notifications it is
constant; energy is P·Δt and carbon P·∫CI dt over the same interval, with the intensity's own
steps handled exactly by :meth:`CarbonSeries.integral`. A job's own energy is the power of its
GPUs (above nothing: the whole GPU draw, at its power limit) times PUE while it holds them; idle
GPUs, CPU sockets and node base power are the cluster's, not any job's (an attribution choice:
socket power is not additive over the jobs on a node).
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass

import numpy as np

from schedlab.energy.carbon import CarbonSeries
from schedlab.energy.perf import JobCurves
from schedlab.energy.power import ClusterPower
from schedlab.model.cluster import Cluster
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import Allocation

J_PER_KWH = 3.6e6


@dataclass
class EnergyTotals:
    """What a run used, for ``summary.json``."""

    start: float
    end: float
    gpu_j: float
    cpu_j: float
    base_j: float
    facility_j: float
    carbon_g: float
    peak_w: float


class EnergyMeter:
    """Integrates cluster and per-job power and carbon between replay events."""

    def __init__(
        self,
        cluster: Cluster,
        jobs: JobTable,
        power: ClusterPower,
        ci: CarbonSeries,
        limits: np.ndarray | None = None,
        curves: JobCurves | None = None,
    ) -> None:
        self.cluster = cluster
        self.jobs = jobs
        self.power = power
        self.ci = ci
        self.pue = power.settings.pue
        self.measured = power.settings.model == "measured"
        n = len(jobs)
        self.limits = limits if limits is not None else np.ones(n)
        self.curves = curves
        self.job_above_idle = np.zeros(n)  # GPU watts the job adds over its GPUs' idle draw
        self.job_w = np.zeros(n)  # facility watts of the job's GPUs while placed
        self.job_since = np.full(n, math.nan)
        self.job_j = np.zeros(n)
        self.job_g = np.zeros(n)
        self.job_limit = np.full(n, math.nan)
        self.cpu_used = np.zeros(cluster.size, dtype=np.int64)
        self.cpu_w_node = np.array(
            [
                power.node_power(cluster, i, [], int(cluster.cpu_milli[i]))[1]
                for i in range(cluster.size)
            ]
        )
        self.gpu_w = power.idle_gpu_w(cluster)
        self.cpu_w = float(self.cpu_w_node.sum())
        self.base_w = power.settings.node_base_w * cluster.size
        self.last = math.nan
        self.start = math.nan
        self.gpu_j = self.cpu_j = self.base_j = self.carbon_g = 0.0
        self.peak_w = 0.0
        self.ts_power = array("d")
        self.ts_ci = array("d")

    # -- integration -------------------------------------------------------------------------
    @property
    def facility_w(self) -> float:
        return self.pue * (self.gpu_w + self.cpu_w + self.base_w)

    def advance(self, now: float) -> None:
        """Bank the constant power since the last notification up to ``now``."""
        if math.isnan(self.last):
            self.last = self.start = now
            self.peak_w = self.facility_w
            return
        dt = now - self.last
        if dt > 0:
            self.gpu_j += self.gpu_w * dt
            self.cpu_j += self.cpu_w * dt
            self.base_j += self.base_w * dt
            self.carbon_g += self.facility_w * self.ci.integral(self.last, now) / J_PER_KWH
            self.last = now

    def _job_gpu_w(self, job: int, node: int, gpus: int) -> float:
        tdp = float(self.power.tdp_w[node])
        if not self.measured or self.curves is None:
            return gpus * tdp
        model = int(self.cluster.model[node])
        return gpus * tdp * self.curves.power_fraction(job, model, float(self.limits[job]))

    # -- engine notifications ----------------------------------------------------------------
    def placed(self, now: float, job: int, allocation: Allocation) -> None:
        """The job took ``allocation`` at ``now`` (a start, or the second half of a resize)."""
        self.advance(now)
        c = int(self.jobs.cpu_milli[job])
        watts = above_idle = 0.0
        for node, gpus in allocation:
            n = len(gpus)
            w = self._job_gpu_w(job, node, n)
            above_idle += w - n * float(self.power.idle_w[node])
            watts += w
            if c:
                self._cpu(node, c)
        self.gpu_w += above_idle
        self.job_above_idle[job] = above_idle
        self.job_w[job] = watts * self.pue
        self.job_since[job] = now
        self.job_limit[job] = float(self.limits[job])
        self.peak_w = max(self.peak_w, self.facility_w)

    def released(self, now: float, job: int, allocation: Allocation) -> None:
        """The job let go of ``allocation`` at ``now`` (completion, preemption, or resize)."""
        self.advance(now)
        self._bank_job(job, now)
        c = int(self.jobs.cpu_milli[job])
        if c:
            for node, _ in allocation:
                self._cpu(node, -c)
        # What the job added when placed, so a limit changed since then cannot skew the total.
        self.gpu_w -= float(self.job_above_idle[job])
        self.job_above_idle[job] = 0.0
        self.job_w[job] = 0.0
        self.job_since[job] = math.nan

    def tick(self, now: float) -> None:
        """A decision point: bank up to ``now`` and record a time-series row."""
        self.advance(now)
        self.ts_power.append(self.facility_w)
        self.ts_ci.append(self.ci.at(now))

    def finish(self, now: float) -> None:
        """End of the run: bank everything still running up to ``now``."""
        if not math.isfinite(now):
            return
        self.advance(now)
        for job in np.flatnonzero(~np.isnan(self.job_since)).tolist():
            self._bank_job(job, now)
            self.job_since[job] = now

    def _bank_job(self, job: int, now: float) -> None:
        since = float(self.job_since[job])
        if math.isnan(since) or now <= since:
            return
        w = float(self.job_w[job])
        self.job_j[job] += w * (now - since)
        self.job_g[job] += w * self.ci.integral(since, now) / J_PER_KWH

    def _cpu(self, node: int, delta: int) -> None:
        self.cpu_used[node] += delta
        free = int(self.cluster.cpu_milli[node]) - int(self.cpu_used[node])
        w = self.power.node_power(self.cluster, node, [], free)[1]
        self.cpu_w += w - float(self.cpu_w_node[node])
        self.cpu_w_node[node] = w

    # -- results -----------------------------------------------------------------------------
    def totals(self) -> EnergyTotals:
        it = self.gpu_j + self.cpu_j + self.base_j
        end = self.last if not math.isnan(self.last) else 0.0
        start = self.start if not math.isnan(self.start) else 0.0
        return EnergyTotals(
            start,
            end,
            self.gpu_j,
            self.cpu_j,
            self.base_j,
            self.pue * it,
            self.carbon_g,
            self.peak_w,
        )

    def jobs_carbon_g(self, now: float) -> float:
        """Carbon the jobs have emitted up to ``now`` (banked plus what running jobs accrued)."""
        total = float(self.job_g.sum())
        for job in np.flatnonzero(~np.isnan(self.job_since)).tolist():
            since = float(self.job_since[job])
            if now > since:
                total += float(self.job_w[job]) * self.ci.integral(since, now) / J_PER_KWH
        return total
