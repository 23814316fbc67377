"""Energy figures of the replay report: power and carbon intensity over time, energy and carbon
per run, and average JCT against carbon (each run a point: runs of one policy at several
budgets trace its trade-off). Only runs made with ``--power-model`` or ``--ci`` are drawn, and
the section is absent when there are none.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from schedlab.report.html_report import (
    Run,
    _empty_note,
    _figure,
    _figure_series,
    _style,
    _time_unit,
    downsample_step,
)
from schedlab.report.page import inline_svg


def _energy(run: Run) -> dict[str, Any] | None:
    block = run.summary.get("energy")
    return block if isinstance(block, dict) else None


def _with_column(runs: Sequence[Run], column: str) -> list[Run]:
    return [r for r in runs if r.timeseries is not None and column in r.timeseries.columns]


def _column_figure(
    runs: Sequence[Run], column: str, name: str, ylabel: str, alt: str, scale: float = 1.0
) -> str:
    """A time series figure of one ``timeseries.csv`` column over the runs that have it."""
    return _figure_series(
        _with_column(runs, column),
        name,
        ylabel,
        alt,
        lambda r: r.timeseries[column].to_numpy(dtype=np.float64) / scale,  # type: ignore[index]
    )


def figure_power(runs: Sequence[Run]) -> str:
    return _column_figure(
        runs, "power_w", "fig-power", "Facility power (kW)", "Cluster power over time", 1000.0
    )


#: Neutral looks for carbon-intensity series (a grid's series is no policy's).
SERIES_LOOKS = (("#333333", "-"), ("#888888", "--"), ("#333333", ":"), ("#888888", "-."))


def _ci_key(run: Run) -> tuple[str, str, bool, str]:
    """What defines the intensity series a run was charged at (from its config.toml)."""
    config: dict[str, Any] = {}
    try:
        with open(run.folder / "config.toml", "rb") as fh:
            config = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        pass
    label = str(config.get("ci") or (_energy(run) or {}).get("ci") or "")
    return (
        label,
        str(config.get("ci_start") or ""),
        bool(config.get("ci_wrap", True)),
        str(config.get("energy_data") or ""),
    )


def _series_points(key: tuple[str, str, bool, str], group: Sequence[Run]) -> tuple[Any, Any, str]:
    """The series over the group's window: rebuilt exactly from its spec when it can be (a
    preset, a constant, a country or region, a file still there), else the runs' own samples
    merged (each run samples it at its decision points)."""
    starts = [float((_energy(r) or {}).get("window_start") or 0.0) for r in group]
    ends = [float((_energy(r) or {}).get("window_end") or 0.0) for r in group]
    a, b = min(starts), max(ends)
    from schedlab.energy.spec import EnergySpec
    from schedlab.errors import InputError

    label, start, wrap, data = key
    try:
        series = EnergySpec(
            ci=label, ci_start=start or None, ci_wrap=wrap, energy_data=data or None
        ).series()
    except (InputError, OSError, ValueError):
        series = None
    if series is not None and b > a:
        times = np.array([a, *series.steps_between(a, b), b])
        return times, series.at_many(times), "exact"
    samples = [r.timeseries[["time", "ci"]] for r in group if r.timeseries is not None]
    merged = pd.concat(samples).drop_duplicates("time").sort_values("time")
    return (
        merged["time"].to_numpy(),
        merged["ci"].to_numpy(),
        "sampled at the runs' decision points",
    )


def figure_carbon_intensity(runs: Sequence[Run]) -> str:
    """Each distinct intensity series once (runs charged at the same series share one line)."""
    fig, ax = _figure()
    groups: dict[tuple[str, str, bool, str], list[Run]] = {}
    for run in _with_column(runs, "ci"):
        groups.setdefault(_ci_key(run), []).append(run)
    scale, unit = _time_unit(runs)
    for k, (key, group) in enumerate(sorted(groups.items())):
        times, values, how = _series_points(key, group)
        x, y, step = downsample_step(np.asarray(times, float), np.asarray(values, float))
        colour, dash = SERIES_LOOKS[k % len(SERIES_LOOKS)]
        who = "every run" if len(group) == len(runs) else ", ".join(r.label for r in group)
        ax.plot(
            x / scale,
            y,
            lw=1.3,
            color=colour,
            linestyle=dash,
            drawstyle="steps-post" if step else "default",
            label=f"{key[0]} ({who}; {how})",
        )
    if groups:
        ax.legend(frameon=False, fontsize=8)
    else:
        _empty_note(ax, "no intensity recorded")
    ax.set_xlabel(f"Time ({unit})")
    ax.set_ylabel("Carbon intensity (g/kWh)")
    return inline_svg(fig, "fig-ci", "Grid carbon intensity over time")


def figure_energy_carbon(runs: Sequence[Run]) -> str:
    """Energy (kWh) and carbon (kg) per run, side by side."""
    fig, ax = _figure()
    labels = [r.label for r in runs]
    energy = [float((_energy(r) or {}).get("energy_kwh") or np.nan) for r in runs]
    carbon = [float((_energy(r) or {}).get("carbon_kg") or np.nan) for r in runs]
    x = np.arange(len(runs))
    # Quantities, not policies: neutral shades (the policies' colours mean policies).
    ax.bar(x - 0.2, energy, 0.4, label="energy (kWh)", color="#4d4d4d")
    twin = ax.twinx()
    twin.bar(x + 0.2, carbon, 0.4, label="carbon (kg)", color="#a6a6a6")
    ax.set_xticks(x, labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("Energy (kWh)")
    twin.set_ylabel("Carbon (kg CO2e)")
    if all(np.isnan(carbon)):
        _empty_note(twin, "no carbon intensity given (--ci)")
    fig.legend(frameon=False, fontsize=8, loc="upper right")
    return inline_svg(fig, "fig-energy", "Energy and carbon per run")


def figure_jct_vs_carbon(runs: Sequence[Run]) -> str:
    """Average JCT against carbon, one point per run, points of one policy joined."""
    fig, ax = _figure()
    by_policy: dict[str, list[tuple[float, float]]] = {}
    first: dict[str, Run] = {}
    for r in runs:
        carbon = (_energy(r) or {}).get("carbon_kg")
        jct = r.summary.get("avg_jct")
        if carbon is None or jct is None:
            continue
        key = str(r.summary.get("policy", r.label))
        by_policy.setdefault(key, []).append((float(carbon), float(jct) / 3600))
        first.setdefault(key, r)
    for policy, points in by_policy.items():  # in the runs' order; each in its run's look
        points.sort()
        xs, ys = zip(*points, strict=True)
        ax.plot(xs, ys, marker="o", lw=1.2, label=policy, **_style(first[policy]))
    if by_policy:
        ax.legend(frameon=False, fontsize=8)
    else:
        _empty_note(ax, "no run with carbon and completed jobs")
    ax.set_xlabel("Carbon (kg CO2e)")
    ax.set_ylabel("Average JCT (h)")
    return inline_svg(fig, "fig-jct-carbon", "Average JCT against carbon per run")


def energy_figures(runs: Sequence[Run]) -> tuple[tuple[str, str, str], ...]:
    """(name, svg, caption) of each energy figure, or nothing if no run measured energy."""
    measured = [r for r in runs if _energy(r) is not None]
    if not measured:
        return ()
    figures = [
        ("Power over time", figure_power(measured), "Facility power (PUE × IT) of the cluster."),
        (
            "Energy and carbon per run",
            figure_energy_carbon(measured),
            "Facility energy and the carbon it emitted over the run.",
        ),
    ]
    if any("ci" in (_energy(r) or {}) for r in measured):
        figures += [
            (
                "Carbon intensity over time",
                figure_carbon_intensity(measured),
                "The grid's intensity the runs were charged at: each series once, rebuilt from "
                "its specification where it can be.",
            ),
            (
                "JCT against carbon",
                figure_jct_vs_carbon(measured),
                "Each point is a run; runs of one policy (e.g. at several budgets) are joined.",
            ),
        ]
    return tuple(figures)
