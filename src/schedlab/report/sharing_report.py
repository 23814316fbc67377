"""The report page of sharing-engine runs (``replay --sharing`` folders): per-class and cluster
tables from each run's ``summary.json``, side by side.

``schedlab report`` builds this page when every folder it is given is a sharing run; replay's
training-job report is unchanged. Only ``summary.json`` is read, and it is checked as strictly as
the replay report checks its own (strict JSON, the fields the tables show present).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.input_files import read_text
from schedlab.model.shared_pods import QOS_ORDER

ENGINE = "sharing"
CLUSTER_ROWS = (
    ("peak allocated GPUs", "peak_allocated_gpus", "{:,.2f}"),
    ("peak at (s)", "peak_time", "{:,.0f}"),
    ("GPU-hours", "gpu_hours", "{:,.2f}"),
    ("mean allocation rate %", "mean_allocation_pct", "{:.3f}"),
    ("mean filler share %", "mean_filler_pct", "{:.3f}"),
    ("mean fragmentation ratio %", "mean_frag_ratio_pct", "{:.2f}"),
)
ENERGY_ROWS = (
    ("facility energy (kWh)", "energy_kwh", "{:,.1f}"),
    ("pods' energy (kWh)", "jobs_energy_kwh", "{:,.1f}"),
    ("mean power (kW)", "mean_power_kw", "{:,.2f}"),
    ("peak power (kW)", "peak_power_kw", "{:,.2f}"),
    ("carbon (kg CO2e)", "carbon_kg", "{:,.1f}"),
    ("pods' carbon (kg CO2e)", "jobs_carbon_kg", "{:,.1f}"),
)
CLASS_ROWS = (
    ("pods", lambda c: c["pods"], "{:,}"),
    ("completed", lambda c: c["completed"], "{:,}"),
    ("unfinished", lambda c: c["unfinished"], "{:,}"),
    ("queueing delay mean (s)", lambda c: c["queueing_delay_s"]["mean"], "{:,.1f}"),
    ("queueing delay p50 (s)", lambda c: c["queueing_delay_s"]["p50"], "{:,.1f}"),
    ("queueing delay p99 (s)", lambda c: c["queueing_delay_s"]["p99"], "{:,.1f}"),
    ("evictions", lambda c: c["evictions"], "{:,}"),
    ("GPU-hours", lambda c: c["gpu_hours"], "{:,.2f}"),
)


def _summary(folder: Path) -> dict[str, Any] | None:
    path = folder / "summary.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(read_text(path), parse_constant=_refuse)
    except ValueError as exc:
        raise InputError(f"summary.json is not valid JSON ({exc})", path=str(path)) from None
    return data if isinstance(data, dict) else None


def _refuse(name: str) -> None:
    raise ValueError(f"{name} is not a number")


def is_sharing_run(folder: Path) -> bool:
    """A folder written by ``replay --sharing``."""
    s = _summary(Path(folder))
    return s is not None and s.get("engine") == ENGINE


def _cell(fmt: str, value: object) -> str:
    return "—" if value is None else html.escape(fmt.format(value))


def sharing_tables(runs: list[tuple[str, dict[str, Any]]]) -> str:
    """The cluster table and one table per QoS class, runs as columns."""
    e = html.escape
    head = "<tr><th></th>" + "".join(f"<th>{e(label)}</th>" for label, _ in runs) + "</tr>"
    try:
        rows = [
            f"<tr><th>{e(name)}</th>"
            + "".join(f"<td>{_cell(fmt, s['cluster'].get(key))}</td>" for _, s in runs)
            + "</tr>"
            for name, key, fmt in CLUSTER_ROWS
        ]
        parts = [f'<h2 id="cluster">Cluster</h2><table>{head}{"".join(rows)}</table>']
        if any(isinstance(s.get("energy"), dict) for _, s in runs):  # runs with --power-model
            rows = [
                f"<tr><th>{e(name)}</th>"
                + "".join(
                    f"<td>{_cell(fmt, (s.get('energy') or {}).get(key))}</td>" for _, s in runs
                )
                + "</tr>"
                for name, key, fmt in ENERGY_ROWS
            ]
            parts.append(
                f'<h2 id="energy">Energy and carbon</h2><table>{head}{"".join(rows)}</table>'
            )
        for q in QOS_ORDER:
            if not any(q in s["classes"] for _, s in runs):
                continue
            rows = [
                f"<tr><th>{e(name)}</th>"
                + "".join(
                    f"<td>{_cell(fmt, get(s['classes'][q]) if q in s['classes'] else None)}</td>"
                    for _, s in runs
                )
                + "</tr>"
                for name, get, fmt in CLASS_ROWS
            ]
            parts.append(f'<h2 id="class-{e(q)}">{e(q)}</h2><table>{head}{"".join(rows)}</table>')
    except (KeyError, TypeError) as exc:
        raise InputError(f"a sharing summary.json lacks the field {exc}") from None
    return "".join(parts)


def render_sharing_page(folders: list[Path], title: str | None = None) -> str:
    """The whole page for sharing runs (no I/O besides reading the summaries)."""
    from schedlab.report.page import html_page

    runs = []
    for folder in folders:
        s = _summary(folder)
        assert s is not None
        runs.append((f"{s.get('placement', '?')} · {folder.name}", s))
    title = title or f"Sharing report: {len(runs)} run{'s' if len(runs) != 1 else ''}"
    body = (
        '<p class="lead">Fractional-GPU runs with QoS classes; — means undefined (no pod of '
        "the class started).</p>" + sharing_tables(runs)
    )
    return html_page(title, body, [(label, f) for (label, _), f in zip(runs, folders, strict=True)])
