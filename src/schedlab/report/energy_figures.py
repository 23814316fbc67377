"""Energy figures of the replay report: power and carbon intensity over time, energy and carbon
per run, and average JCT against carbon (each run a point: runs of one policy at several
budgets trace its trade-off). Only runs made with ``--power-model`` or ``--ci`` are drawn, and
the section is absent when there are none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from schedlab.report.html_report import Run, _empty_note, _figure, _figure_series, _style, _svg


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


def figure_carbon_intensity(runs: Sequence[Run]) -> str:
    return _column_figure(
        runs, "ci", "fig-ci", "Carbon intensity (g/kWh)", "Grid carbon intensity over time"
    )


def figure_energy_carbon(runs: Sequence[Run]) -> str:
    """Energy (kWh) and carbon (kg) per run, side by side."""
    fig, ax = _figure()
    labels = [r.label for r in runs]
    energy = [float((_energy(r) or {}).get("energy_kwh") or np.nan) for r in runs]
    carbon = [float((_energy(r) or {}).get("carbon_kg") or np.nan) for r in runs]
    x = np.arange(len(runs))
    ax.bar(x - 0.2, energy, 0.4, label="energy (kWh)", color=_style(0)["color"])
    twin = ax.twinx()
    twin.bar(x + 0.2, carbon, 0.4, label="carbon (kg)", color=_style(1)["color"])
    ax.set_xticks(x, labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("Energy (kWh)")
    twin.set_ylabel("Carbon (kg CO2e)")
    if all(np.isnan(carbon)):
        _empty_note(twin, "no carbon intensity given (--ci)")
    fig.legend(frameon=False, fontsize=8, loc="upper right")
    return _svg(fig, "fig-energy", "Energy and carbon per run")


def figure_jct_vs_carbon(runs: Sequence[Run]) -> str:
    """Average JCT against carbon, one point per run, points of one policy joined."""
    fig, ax = _figure()
    by_policy: dict[str, list[tuple[float, float]]] = {}
    for r in runs:
        carbon = (_energy(r) or {}).get("carbon_kg")
        jct = r.summary.get("avg_jct")
        if carbon is None or jct is None:
            continue
        key = str(r.summary.get("policy", r.label))
        by_policy.setdefault(key, []).append((float(carbon), float(jct) / 3600))
    for i, (policy, points) in enumerate(sorted(by_policy.items())):
        points.sort()
        xs, ys = zip(*points, strict=True)
        ax.plot(xs, ys, marker="o", lw=1.2, label=policy, **_style(i))
    if by_policy:
        ax.legend(frameon=False, fontsize=8)
    else:
        _empty_note(ax, "no run with carbon and completed jobs")
    ax.set_xlabel("Carbon (kg CO2e)")
    ax.set_ylabel("Average JCT (h)")
    return _svg(fig, "fig-jct-carbon", "Average JCT against carbon per run")


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
                "The grid's intensity the run was charged at.",
            ),
            (
                "JCT against carbon",
                figure_jct_vs_carbon(measured),
                "Each point is a run; runs of one policy (e.g. at several budgets) are joined.",
            ),
        ]
    return tuple(figures)
