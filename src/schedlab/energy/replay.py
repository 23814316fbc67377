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

from schedlab.energy.carbon import CarbonSeries
from schedlab.energy.meter import J_PER_KWH, EnergyMeter
from schedlab.energy.perf import JobCurves, PowerLimited
from schedlab.energy.power import ClusterPower
from schedlab.energy.spec import CONFIG_KEYS as CONFIG_KEYS  # re-exported: declared with the spec
from schedlab.energy.spec import EnergySpec
from schedlab.energy.spec import config_entries as config_entries
from schedlab.model.cluster import Cluster
from schedlab.model.jobs import JobTable
from schedlab.perf.models import PerfModel

__all__ = ["EnergyMeter", "EnergyRun", "EnergySpec", "prepare"]


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
