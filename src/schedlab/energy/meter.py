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


class PowerLedger:
    """Cluster power banked exactly between notifications, and per-job energy and carbon.

    Subclasses keep ``gpu_w``, ``cpu_w`` and ``base_w`` up to date at each notification and
    say when a job holds power (:meth:`hold`) and lets go of it (:meth:`let_go`); this class
    does the integration. Per-job figures live in plain lists (an engine notifies at every
    start and stop, so scalar access must be cheap); the numpy views are for results. Carbon
    uses the intensity's cumulative integral, computed once per notification time and
    remembered per job when it took its power, so a job's carbon costs no extra look-up when
    it stops.
    """

    def _start_ledger(self, ci: CarbonSeries, pue: float, jobs: int) -> None:
        self.ci = ci
        self.pue = pue
        self._w = [0.0] * jobs  # facility watts of the job's GPUs while placed
        self._since = [math.nan] * jobs
        self._cum_at = [0.0] * jobs  # the intensity's cumulative integral when it was placed
        self._j = [0.0] * jobs
        self._g = [0.0] * jobs
        self._placed: set[int] = set()
        self.gpu_w = self.cpu_w = self.base_w = 0.0
        self.last = math.nan
        self.last_cum = 0.0
        self.start = math.nan
        self.gpu_j = self.cpu_j = self.base_j = self.carbon_g = 0.0
        self.peak_w = 0.0
        self.ts_time = array("d")
        self.ts_power = array("d")

    # -- results as arrays -------------------------------------------------------------------
    @property
    def job_j(self) -> np.ndarray:
        return np.asarray(self._j)

    @property
    def job_g(self) -> np.ndarray:
        return np.asarray(self._g)

    @property
    def job_w(self) -> np.ndarray:
        return np.asarray(self._w)

    @property
    def job_since(self) -> np.ndarray:
        return np.asarray(self._since)

    @property
    def ts_ci(self) -> np.ndarray:
        """The intensity at every decision point (computed at once, after the run)."""
        return self.ci.at_many(np.asarray(self.ts_time))

    # -- integration -------------------------------------------------------------------------
    @property
    def facility_w(self) -> float:
        return self.pue * (self.gpu_w + self.cpu_w + self.base_w)

    def advance(self, now: float) -> None:
        """Bank the constant power since the last notification up to ``now``."""
        last = self.last
        if now == last:
            return
        if last != last:  # first notification (NaN)
            self.last = self.start = now
            self.last_cum = self.ci.cumulative(now)
            self.peak_w = self.facility_w
            return
        dt = now - last
        if dt > 0:
            cum = self.ci.cumulative(now)
            self.gpu_j += self.gpu_w * dt
            self.cpu_j += self.cpu_w * dt
            self.base_j += self.base_w * dt
            self.carbon_g += self.facility_w * (cum - self.last_cum) / J_PER_KWH
            self.last, self.last_cum = now, cum

    def hold(self, now: float, job: int, watts: float) -> None:
        """From ``now`` (already advanced to) the job draws ``watts`` of facility power."""
        self._w[job] = watts
        self._since[job] = now
        self._cum_at[job] = self.last_cum
        self._placed.add(job)

    def let_go(self, now: float, job: int) -> None:
        """The job stops drawing at ``now`` (already advanced to): bank what it drew."""
        self._bank_job(job, now)
        self._w[job] = 0.0
        self._since[job] = math.nan
        self._placed.discard(job)

    def tick(self, now: float) -> None:
        """A decision point: bank up to ``now`` and record a time-series row."""
        self.advance(now)
        self.ts_time.append(now)
        self.ts_power.append(self.facility_w)

    def finish(self, now: float) -> None:
        """End of the run: bank everything still running up to ``now``."""
        if not math.isfinite(now):
            return
        self.advance(now)
        for job in sorted(self._placed):
            self._bank_job(job, now)
            self._since[job] = now
            self._cum_at[job] = self.last_cum

    def _bank_job(self, job: int, now: float) -> None:
        since = self._since[job]
        if since != since or now <= since:
            return
        w = self._w[job]
        self._j[job] += w * (now - since)
        self._g[job] += w * (self.last_cum - self._cum_at[job]) / J_PER_KWH

    def totals(self) -> EnergyTotals:
        end = self.last if not math.isnan(self.last) else 0.0
        start = self.start if not math.isnan(self.start) else 0.0
        it = self.gpu_j + self.cpu_j + self.base_j
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
        total = float(sum(self._g))
        cum = self.ci.cumulative(now)
        for job in self._placed:
            if now > self._since[job]:
                total += self._w[job] * (cum - self._cum_at[job]) / J_PER_KWH
        return total

    def jobs_energy_j(self, now: float) -> float:
        """Energy the jobs have used up to ``now`` (banked plus what running jobs accrued)."""
        total = float(sum(self._j))
        for job in self._placed:
            since = self._since[job]
            if now > since:
                total += self._w[job] * (now - since)
        return total


class EnergyMeter(PowerLedger):
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
        n = len(jobs)
        self._start_ledger(ci, power.settings.pue, n)
        self.cluster = cluster
        self.jobs = jobs
        self.power = power
        self.measured = power.settings.model == "measured"
        self.limits = limits if limits is not None else np.ones(n)
        self.curves = curves
        self._cpu_of = jobs.cpu_milli.tolist()
        self._idle = power.idle_w.tolist()
        self._tdp = power.tdp_w.tolist()
        self._model = cluster.model.tolist()
        self._node_cpu = cluster.cpu_milli.tolist()
        self._above_idle = [0.0] * n  # GPU watts the job adds over its GPUs' idle draw
        self._limit = [math.nan] * n
        self.cpu_used = [0] * cluster.size
        self.cpu_w_node = [
            power.node_power(cluster, i, [], self._node_cpu[i])[1] for i in range(cluster.size)
        ]
        self.gpu_w = power.idle_gpu_w(cluster)
        self.cpu_w = float(sum(self.cpu_w_node))
        self.base_w = power.settings.node_base_w * cluster.size

    @property
    def job_limit(self) -> np.ndarray:
        return np.asarray(self._limit)

    def _job_gpu_w(self, job: int, node: int, gpus: int) -> float:
        tdp = self._tdp[node]
        if not self.measured or self.curves is None:
            return gpus * tdp
        return (
            gpus * tdp * self.curves.power_fraction(job, self._model[node], float(self.limits[job]))
        )

    # -- engine notifications ----------------------------------------------------------------
    def placed(self, now: float, job: int, allocation: Allocation) -> None:
        """The job took ``allocation`` at ``now`` (a start, or the second half of a resize)."""
        self.advance(now)
        c = self._cpu_of[job]
        watts = above_idle = 0.0
        idle = self._idle
        for node, gpus in allocation:
            n = len(gpus)
            w = self._job_gpu_w(job, node, n)
            above_idle += w - n * idle[node]
            watts += w
            if c:
                self._cpu(node, c)
        self.gpu_w += above_idle
        self._above_idle[job] = above_idle
        self.hold(now, job, watts * self.pue)
        self._limit[job] = float(self.limits[job]) if self.measured else 1.0
        facility = self.facility_w
        if facility > self.peak_w:
            self.peak_w = facility

    def released(self, now: float, job: int, allocation: Allocation) -> None:
        """The job let go of ``allocation`` at ``now`` (completion, preemption, or resize)."""
        self.advance(now)
        self.let_go(now, job)
        c = self._cpu_of[job]
        if c:
            for node, _ in allocation:
                self._cpu(node, -c)
        # What the job added when placed, so a limit changed since then cannot skew the total.
        self.gpu_w -= self._above_idle[job]
        self._above_idle[job] = 0.0

    def _cpu(self, node: int, delta: int) -> None:
        self.cpu_used[node] += delta
        free = self._node_cpu[node] - self.cpu_used[node]
        w = self.power.node_power(self.cluster, node, [], free)[1]
        self.cpu_w += w - self.cpu_w_node[node]
        self.cpu_w_node[node] = w
