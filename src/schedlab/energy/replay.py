"""Energy accounting in a replay run: options, the meter wired to the engine, and the columns it
adds to ``jobs.csv``, ``timeseries.csv`` and ``summary.json``.

Nothing here runs unless ``--power-model`` or ``--ci`` is given, so a plain replay is unchanged
byte for byte. With them, jobs gain ``energy_kwh``, ``carbon_kg`` (only with ``--ci``) and
``power_limit``; the series gains ``power_w`` and ``ci``; the summary gains an ``energy`` block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from schedlab.energy.carbon import CarbonSeries, parse_ci
from schedlab.energy.meter import J_PER_KWH, EnergyMeter
from schedlab.energy.perf import JobCurves, PowerLimited
from schedlab.energy.power import ClusterPower, EnergySettings, parse_gpu_power
from schedlab.model.cluster import Cluster
from schedlab.model.jobs import JobTable
from schedlab.perf.models import PerfModel

__all__ = ["EnergyMeter", "EnergyRun", "EnergySpec", "prepare"]


@dataclass(frozen=True)
class EnergySpec:
    """The energy options of a replay run (what ``config.toml`` records)."""

    power_model: str | None = None
    ci: str | None = None
    ci_start: str | None = None
    ci_wrap: bool = True
    pue: float = 1.0
    node_base_w: float = 0.0
    gpu_power: str = ""
    power_limit: float = 1.0
    energy_data: str | None = None

    @property
    def enabled(self) -> bool:
        return self.power_model is not None or self.ci is not None

    def settings(self) -> EnergySettings:
        return EnergySettings(
            model=self.power_model or "binary",
            pue=self.pue,
            node_base_w=self.node_base_w,
            gpu_power=parse_gpu_power(self.gpu_power),
            power_limit=self.power_limit,
            energy_data=self.energy_data,
        )

    def series(self) -> CarbonSeries | None:
        if self.ci is None:
            return None
        return parse_ci(
            self.ci, start=self.ci_start, wrap=self.ci_wrap, energy_data=self.energy_data
        )

    def check(self) -> None:
        """Every refusal of the energy options, before any work."""
        if self.enabled:
            settings = self.settings()
            if settings.model == "measured" or self.power_limit < 1:
                settings.root  # noqa: B018 - the data folder must exist
            self.series()


@dataclass
class EnergyRun:
    """What a replay with energy accounting needs: the (possibly power-limited) perf model, the
    meter to hand the engine as its observer, and the carbon series policies may plan with."""

    perf: PerfModel
    meter: EnergyMeter
    ci: CarbonSeries | None
    power: ClusterPower
    limits: np.ndarray
    curves: JobCurves | None


def prepare(spec: EnergySpec, cluster: Cluster, jobs: JobTable, perf: PerfModel) -> EnergyRun:
    """Build the meter for ``jobs`` (already in submit order, as the engine numbers them)."""
    settings = spec.settings()
    power = ClusterPower.build(cluster, settings)
    ci = spec.series()
    limits = np.full(len(jobs), settings.power_limit)
    curves = None
    if settings.model == "measured":
        curves = JobCurves(settings.root, jobs)
        curves.check(set(cluster.model[cluster.num_gpus > 0].tolist()))
        perf = PowerLimited(perf, curves, limits)
    meter_ci = ci if ci is not None else CarbonSeries.constant(0.0, "none")
    meter = EnergyMeter(cluster, jobs, power, meter_ci, limits, curves)
    return EnergyRun(perf, meter, ci, power, limits, curves)


def has_carbon(meter: EnergyMeter) -> bool:
    return meter.ci.label != "none"


def add_job_columns(frame: pd.DataFrame, meter: EnergyMeter) -> pd.DataFrame:
    """``energy_kwh``, ``carbon_kg`` (with a carbon series) and ``power_limit`` per job."""
    meter.finish(meter.last)
    out = frame.copy()
    out["energy_kwh"] = meter.job_j / J_PER_KWH
    if has_carbon(meter):
        out["carbon_kg"] = meter.job_g / 1000.0
    out["power_limit"] = meter.job_limit
    return out


def add_series_columns(frame: pd.DataFrame, meter: EnergyMeter) -> pd.DataFrame:
    out = frame.copy()
    out["power_w"] = np.asarray(meter.ts_power, dtype=np.float64)
    if has_carbon(meter):
        out["ci"] = np.asarray(meter.ts_ci, dtype=np.float64)
    return out


def summary_block(meter: EnergyMeter, gpu_seconds: float) -> dict[str, Any]:
    """Totals for ``summary.json``: energy by part, mean and peak power, carbon."""
    meter.finish(meter.last)
    t = meter.totals()
    span = t.end - t.start
    kwh = t.facility_j / J_PER_KWH
    block: dict[str, Any] = {
        "power_model": meter.power.settings.model,
        "pue": meter.pue,
        "energy_kwh": kwh,
        "gpu_energy_kwh": t.gpu_j / J_PER_KWH,
        "cpu_energy_kwh": t.cpu_j / J_PER_KWH,
        "it_energy_kwh": (t.gpu_j + t.cpu_j + t.base_j) / J_PER_KWH,
        "jobs_energy_kwh": float(meter.job_j.sum()) / J_PER_KWH,
        "mean_power_kw": t.facility_j / span / 1000.0 if span > 0 else None,
        "peak_power_kw": t.peak_w / 1000.0,
        "window_start": t.start,
        "window_end": t.end,
    }
    if has_carbon(meter):
        block["ci"] = meter.ci.label
        block["carbon_kg"] = t.carbon_g / 1000.0
        block["jobs_carbon_kg"] = float(meter.job_g.sum()) / 1000.0
        gpu_hours = gpu_seconds / 3600.0
        block["carbon_kg_per_gpu_hour"] = t.carbon_g / 1000.0 / gpu_hours if gpu_hours > 0 else None
    return {k: _finite_or_none(v) for k, v in block.items()}


def _finite_or_none(value: object) -> object:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def attach_policy(policy: object, run: EnergyRun) -> None:
    """Give an energy-aware policy the run's carbon series, power figures and limits (a policy
    declares it wants them with a ``use_energy(run)`` method)."""
    use = getattr(policy, "use_energy", None)
    if callable(use):
        use(run)


#: config.toml keys of the energy options, with their types (added only when energy is on).
CONFIG_KEYS: dict[str, type] = {
    "power_model": str,
    "ci": str,
    "ci_start": str,
    "ci_wrap": bool,
    "pue": float,
    "node_base_w": float,
    "gpu_power": str,
    "power_limit": float,
    "energy_data": str,
}


def config_entries(spec: EnergySpec) -> dict[str, object]:
    """What config.toml records of the energy options (nothing when energy is off)."""
    if not spec.enabled:
        return {}
    return {
        "power_model": spec.power_model or "binary",
        "ci": spec.ci or "",
        "ci_start": spec.ci_start or "",
        "ci_wrap": spec.ci_wrap,
        "pue": spec.pue,
        "node_base_w": spec.node_base_w,
        "gpu_power": spec.gpu_power,
        "power_limit": spec.power_limit,
        "energy_data": spec.energy_data or "",
    }
