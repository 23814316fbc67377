"""The spec's exact figures, recomputed from the shipped data (each is a test and a README row).

* Zeus (NSDI '23), V100 and A40, ResNet-50/ImageNet batch 256: energy per epoch by power limit,
  the energy-optimal limit, and the limit Zeus's cost η·E + (1 − η)·MAXPOWER·T picks.
* PWR (CCGrid '25): power of the openb cluster empty and with every GPU and socket busy.
* Carbon shifting on a noise-free synthetic preset: the closed-form saving of moving a one-hour
  job from the peak hour to the trough, and the spatial gap between two countries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedlab.energy.carbon import HOUR, PRESETS, parse_ci
from schedlab.energy.curves import PowerCurve
from schedlab.energy.data import country_ci, zeus_groups
from schedlab.energy.power import ClusterPower, EnergySettings
from schedlab.energy.shifting import lowest_carbon_start
from schedlab.model.cluster import Cluster

ZEUS_REFERENCE = ("imagenet", "resnet50", 256, "adadelta")


@dataclass(frozen=True)
class LimitTradeoff:
    """Top limit vs energy-optimal limit of one workload on one GPU."""

    top_w: float
    top_time_s: float
    top_power_w: float
    top_energy_kj: float
    best_w: float
    best_time_s: float
    best_energy_kj: float
    energy_saving: float  # fraction
    time_increase: float  # fraction


def zeus_curve(
    root: Path, gpu: str, group: tuple[str, str, int, str] = ZEUS_REFERENCE
) -> PowerCurve:
    return PowerCurve.from_rows(zeus_groups(root, gpu)[group])


def tradeoff(curve: PowerCurve) -> LimitTradeoff:
    energy = curve.energy_per_epoch()
    best = curve.energy_optimal()
    top, opt = curve.rows[-1], curve.rows[best]
    return LimitTradeoff(
        top.limit_w,
        top.time_per_epoch,
        top.average_power,
        energy[-1] / 1000,
        opt.limit_w,
        opt.time_per_epoch,
        energy[best] / 1000,
        1 - energy[best] / energy[-1],
        opt.time_per_epoch / top.time_per_epoch - 1,
    )


def zeus_cost_limit(curve: PowerCurve, eta: float = 0.5, max_power_w: float = 250.0) -> float:
    """The limit (W) Zeus's cost picks."""
    return curve.rows[curve.zeus_cost_optimal(eta, max_power_w)].limit_w


def median_saving(root: Path, gpu: str) -> tuple[int, float, float]:
    """(groups, median energy saving, median time increase) at each group's optimal limit."""
    savings, stretch = [], []
    for rows in zeus_groups(root, gpu).values():
        t = tradeoff(PowerCurve.from_rows(rows))
        savings.append(t.energy_saving)
        stretch.append(t.time_increase)
    return len(savings), float(np.median(savings)), float(np.median(stretch))


def pwr_cluster_power(cluster: Cluster, root: Path) -> dict[str, float]:
    """kW of GPUs and CPUs with nothing allocated and with every GPU and socket busy."""
    power = ClusterPower.build(cluster, EnergySettings(energy_data=str(root)))
    out = {"empty_gpu": 0.0, "empty_cpu": 0.0, "busy_gpu": 0.0, "busy_cpu": 0.0}
    for node in range(cluster.size):
        gpus = int(cluster.num_gpus[node])
        g0, c0 = power.node_power(cluster, node, [0] * gpus, int(cluster.cpu_milli[node]))
        g1, c1 = power.node_power(cluster, node, [1000] * gpus, 0)
        out["empty_gpu"] += g0 / 1000
        out["empty_cpu"] += c0 / 1000
        out["busy_gpu"] += g1 / 1000
        out["busy_cpu"] += c1 / 1000
    out["empty"] = out["empty_gpu"] + out["empty_cpu"]
    out["busy"] = out["busy_gpu"] + out["busy_cpu"]
    return out


def peak_to_trough_saving(preset: str, slack_h: float = 12.0) -> float:
    """Carbon saved when ``lcs`` moves a 1-hour job arriving at the start of the peak hour of the
    noise-free preset (fraction of the unshifted job's carbon)."""
    series = parse_ci(f"synth:{preset},s=0,days=3")
    arrival = (24 + PRESETS[preset].h_peak) * HOUR
    start = lowest_carbon_start(series, arrival, HOUR, slack_h * HOUR)
    return 1 - series.integral(start, start + HOUR) / series.integral(arrival, arrival + HOUR)


def spatial_kg_per_mwh(root: Path, iso3: str) -> float:
    """kg CO2e of 1 MWh at the country's annual intensity."""
    kwh = 1000.0
    grams = kwh * country_ci(root)[iso3]
    return grams / 1000.0
