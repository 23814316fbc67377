"""``schedlab report`` on ``replay --federation`` run folders: one self-contained page with a
table per dispatcher (JCT, queueing, cost, carbon, data moved), a table per site of each run,
the JCT distributions and where the GPU-hours went.

The tables come from each folder's ``summary.json`` (the recorded result: its ``federation``
block), the JCT distribution from ``jobs.csv``. Like the replay report, the page loads nothing
and the same folders give the same bytes.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from schedlab.errors import InputError
from schedlab.report.html_report import (
    _duration,
    _figure,
    _int,
    _num,
    _pct,
    jct_cdf_figure,
)
from schedlab.report.html_report import _value as _get
from schedlab.report.page import best_cells, html_page, inline_svg


def _money(v: float) -> str:
    return f"${v:,.2f}"


def _gb(v: float) -> str:
    return f"{v:,.1f} GB"


def is_federation(folder: Path) -> bool:
    return is_federation_run(folder) or is_federation_grid(folder)


def is_federation_run(folder: Path) -> bool:
    """A ``replay --federation`` run folder: its summary has a ``federation`` block."""
    path = Path(folder) / "summary.json"
    if not path.is_file():
        return False
    try:
        return "federation" in json.loads(path.read_text())
    except (OSError, ValueError):
        return False


def is_federation_grid(folder: Path) -> bool:
    """A ``sweep --federation`` folder: results per federation, trace, dispatcher and seed."""
    path = Path(folder) / "results.csv"
    if not path.is_file() or not (Path(folder) / "runs").is_dir():
        return False
    with open(path) as fh:
        header = fh.readline().strip().split(",")
    return {"federation", "trace", "dispatcher", "seed"} <= set(header)


def grid_runs(folder: Path) -> list[Path]:
    """The run folders of a ``sweep --federation`` folder, in its results' order."""
    results = pd.read_csv(Path(folder) / "results.csv", dtype=str)
    runs = [
        Path(folder) / "runs" / r.federation / r.trace / r.dispatcher / f"seed{r.seed}"
        for r in results.itertuples()
    ]
    missing = next((r for r in runs if not is_federation_run(r)), None)
    if missing is not None:
        raise InputError("the sweep folder lacks a run its results.csv lists", path=str(missing))
    return runs


@dataclass(frozen=True)
class FederationRun:
    folder: Path
    label: str
    fed: dict[str, Any]  # summary.json's federation block
    jct: np.ndarray  # completed jobs' JCTs, ascending


def _need(block: Any, key: str, path: Path, where: str) -> Any:
    if not isinstance(block, dict) or key not in block:
        raise InputError(f"no '{where}{key}' (not a replay --federation summary?)", path=str(path))
    return block[key]


def read_run(folder: Path) -> tuple[dict[str, Any], np.ndarray]:
    """The federation block and the completed JCTs, checked before anything is drawn."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("run folder not found", path=str(folder))
    summary_path, jobs_path = folder / "summary.json", folder / "jobs.csv"
    for path in (summary_path, jobs_path):
        if not path.is_file():
            raise InputError(f"run folder has no {path.name}", path=str(folder))
    try:
        summary = json.loads(summary_path.read_text())
    except ValueError as exc:
        raise InputError(f"not a JSON file ({exc})", path=str(summary_path)) from None
    fed = _need(summary, "federation", summary_path, "")
    glob = _need(fed, "global", summary_path, "federation.")
    for key in ("jobs", "completed", "jct", "queue_s", "compute_usd", "egress_usd", "egress_gb"):
        _need(glob, key, summary_path, "federation.global.")
    for name, block in _need(fed, "sites", summary_path, "federation.").items():
        for key in ("gpus", "jobs", "gpu_hours", "jct", "queue_s", "egress_gb", "compute_usd"):
            _need(block, key, summary_path, f"federation.sites.{name}.")
    try:
        jobs = pd.read_csv(jobs_path, usecols=["status", "jct"])
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise InputError(f"cannot read the jobs table ({exc})", path=str(jobs_path)) from None
    jct = pd.to_numeric(jobs.loc[jobs["status"] == "completed", "jct"], errors="coerce")
    if jct.isna().any():
        raise InputError("a completed job has no number in 'jct'", path=str(jobs_path))
    return fed, np.sort(jct.to_numpy(dtype=np.float64))


def _label(fed: dict[str, Any]) -> str:
    name = str(fed.get("dispatcher", "?"))
    weights = fed.get("weights") or {}
    if name == "joint" and weights:
        name += " (" + ",".join(f"{weights.get(k, 0):g}" for k in ("time", "cost", "carbon")) + ")"
    return name


def load_federation_runs(folders: Sequence[Path], grid: Path | None = None) -> list[FederationRun]:
    """Read and check every folder; a run is labelled by its dispatcher, and by its place in
    the sweep ``grid`` (federation/trace/seed) or its folder's name where two would look the
    same."""
    read = [(Path(f), *read_run(Path(f))) for f in folders]
    base = [_label(fed) for _, fed, _ in read]
    runs = []
    for (folder, fed, jct), label in zip(read, base, strict=True):
        if grid is not None:
            where = folder.relative_to(grid / "runs").parts
            label = f"{label} · {where[0]}/{where[1]}/{where[-1]}"
        elif base.count(label) > 1:
            label = f"{label} · {folder.name}"
        runs.append(FederationRun(folder, label, fed, jct))
    return runs


# ---------------------------------------------------------------------------------- tables
def _stat(block: dict[str, Any], key: str, stat: str) -> float | None:
    return _get(block.get(key) or {}, stat)


#: column → (header, value from a global or site block, formatter, -1 lower is better / 0)
Column = tuple[str, Callable[[dict[str, Any]], float | None], Callable[[float], str], int]
DISPATCHER_COLUMNS: tuple[Column, ...] = (
    ("Completed", lambda b: _get(b, "completed"), _int, 0),
    ("Mean JCT", lambda b: _stat(b, "jct", "mean"), _duration, -1),
    ("p99 JCT", lambda b: _stat(b, "jct", "p99"), _duration, -1),
    ("Mean queueing", lambda b: _stat(b, "queue_s", "mean"), _duration, -1),
    ("p99 queueing", lambda b: _stat(b, "queue_s", "p99"), _duration, -1),
    ("Data moved", lambda b: _get(b, "egress_gb"), _gb, -1),
    ("Egress", lambda b: _get(b, "egress_usd"), _money, -1),
    ("Compute", lambda b: _get(b, "compute_usd"), _money, -1),
    ("Total cost", lambda b: _sum(b, "compute_usd", "egress_usd"), _money, -1),
    ("Carbon", lambda b: _get(b, "carbon_kg"), lambda v: f"{v:,.2f} kg", -1),
    ("g CO2e/kWh", lambda b: _get(b, "carbon_g_per_kwh"), lambda v: f"{v:.1f}", -1),
    ("Moves", lambda b: _get(b, "moves"), _int, 0),
)
SITE_COLUMNS: tuple[Column, ...] = (
    ("GPUs", lambda b: _get(b, "gpus"), _int, 0),
    ("Jobs", lambda b: _get(b, "jobs"), _int, 0),
    ("GPU-hours", lambda b: _get(b, "gpu_hours"), _num, 0),
    ("Utilisation", lambda b: _get(b, "utilisation"), _pct, 0),
    ("Mean JCT", lambda b: _stat(b, "jct", "mean"), _duration, -1),
    ("Mean queueing", lambda b: _stat(b, "queue_s", "mean"), _duration, -1),
    ("Transfer", lambda b: _get(b, "transfer_s"), _duration, -1),
    ("Data moved", lambda b: _get(b, "egress_gb"), _gb, -1),
    ("Egress", lambda b: _get(b, "egress_usd"), _money, -1),
    ("Compute", lambda b: _get(b, "compute_usd"), _money, -1),
    ("Site kWh", lambda b: _get(b, "site_energy_kwh"), _num, 0),
    ("Site carbon", lambda b: _get(b, "site_carbon_kg"), lambda v: f"{v:,.2f} kg", -1),
    ("Moves in", lambda b: _get(b, "moves_in"), _int, 0),
    ("Moves out", lambda b: _get(b, "moves_out"), _int, 0),
)


def _sum(block: dict[str, Any], *keys: str) -> float | None:
    values = [_get(block, k) for k in keys]
    return None if any(v is None for v in values) else float(sum(values))  # type: ignore[arg-type]


def table(row_names: Sequence[str], blocks: Sequence[dict[str, Any]], columns, first: str) -> str:
    """Rows (a dispatcher or a site) × columns; a column nobody has is left out; the best of a
    column as shown in bold (none when all show the same)."""
    e = html.escape
    shown = [c for c in columns if any(c[1](b) is not None for b in blocks)]
    cells: list[list[str]] = [[] for _ in blocks]
    for _, value, fmt, better in shown:
        values = [value(b) for b in blocks]
        texts = ["—" if v is None else fmt(v) for v in values]
        bold = best_cells(texts, values, False) if better else [False] * len(values)
        for row, v, text, b in zip(cells, values, texts, bold, strict=True):
            if v is None:
                row.append('<td class="na">—</td>')
            else:
                row.append(f'<td{" class=best" if b else ""} title="{v:g}">{e(text)}</td>')
    head = "".join(f'<th scope="col">{e(c[0])}</th>' for c in shown)
    body = "".join(
        f'<tr><th scope="row">{e(name)}</th>{"".join(row)}</tr>'
        for name, row in zip(row_names, cells, strict=True)
    )
    return (
        '<div class="table-wrap"><table class="summary">'
        f'<thead><tr><th scope="col">{e(first)}</th>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


# --------------------------------------------------------------------------------- figures
def figure_jct(runs: Sequence[FederationRun]) -> str:
    curves = []
    for run in runs:
        jct = run.jct[run.jct > 0]  # a log axis cannot show zero
        curves.append((run.label, jct, np.arange(1, len(jct) + 1) / max(len(jct), 1), {}))
    return jct_cdf_figure(curves, "fig-fed-jct", "CDF of job completion time per dispatcher")


def figure_shares(runs: Sequence[FederationRun]) -> str:
    """Each run's GPU-hours split by site (stacked to 100 %)."""
    fig, ax = _figure(height=0.6 + 0.45 * len(runs))
    sites = list(dict.fromkeys(name for r in runs for name in r.fed["sites"]))
    left = np.zeros(len(runs))
    totals = np.array(
        [sum(float(b["gpu_hours"]) for b in r.fed["sites"].values()) or 1.0 for r in runs]
    )
    y = np.arange(len(runs))
    for site in sites:
        share = (
            np.array([float(r.fed["sites"].get(site, {}).get("gpu_hours", 0.0)) for r in runs])
            / totals
        )
        ax.barh(y, 100 * share, left=100 * left, label=site, height=0.6)
        left += share
    ax.set_yticks(y, [r.label for r in runs], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("Share of the GPU-hours (%)")
    ax.legend(frameon=False, fontsize=8, ncols=min(len(sites), 8), loc="lower left",
              bbox_to_anchor=(0.0, 1.0))  # fmt: skip
    return inline_svg(fig, "fig-fed-shares", "Share of the GPU-hours by site per dispatcher")


# ------------------------------------------------------------------------------------ page
def render_federation_page(runs: Sequence[FederationRun], title: str | None = None) -> str:
    e = html.escape
    title = title or f"Federation report: {len(runs)} run{'s' if len(runs) != 1 else ''}"
    dispatchers = table(
        [r.label for r in runs],
        [{**r.fed["global"]} for r in runs],
        DISPATCHER_COLUMNS,
        "Dispatcher",
    )
    per_site = "".join(
        f'<h3>{e(r.label)}</h3><p class="lead">{e(_settings(r.fed))}</p>'
        + table(list(r.fed["sites"]), list(r.fed["sites"].values()), SITE_COLUMNS, "Site")
        for r in runs
    )
    body = f"""<p class="lead">{len(runs)} federated replay run{"s" if len(runs) != 1 else ""}.
The best value of each column as shown is in <b>bold</b>; — means undefined.</p>
<h2 id="dispatchers">By dispatcher</h2>
{dispatchers}
<dl class="defs">
<dt>JCT</dt><dd>end − submit on the manager's clock, completed jobs.</dd>
<dt>Queueing</dt><dd>start − arrival at the site that ran the job (summed over the sites a moved
job waited at).</dd>
<dt>Data moved</dt><dd>GB sent over the WAN: input staged to the run site, moves, output back.</dd>
<dt>Carbon</dt><dd>the jobs' energy at each site's grid (and the WAN's, with
<code>wan_kwh_per_gb</code>).</dd>
</dl>
<h2 id="sites">By site</h2>
{per_site}
<p class="lead">Jobs, JCT, queueing, transfer, data moved and dollars count each job at the site
where it ended; site kWh and carbon are what that site's meter measured.</p>
<h2 id="figures">Figures</h2>
<div class="figures">
<figure id="fed-jct">{figure_jct(runs)}<figcaption><b>JCT distribution.</b> Cumulative share of
completed jobs per dispatcher.</figcaption></figure>
<figure id="fed-shares">{figure_shares(runs)}<figcaption><b>Where the GPU-hours went.</b> Each
run's GPU-hours split by site.</figcaption></figure>
</div>"""
    return html_page(title, body, [(r.label, r.folder) for r in runs])


def _settings(fed: dict[str, Any]) -> str:
    parts = [
        f"stage-in {fed.get('stage_in', '?')}",
        f"WAN sharing {fed.get('wan_sharing', '?')}",
        f"runtime estimate {fed.get('runtime_estimate', '?')}",
    ]
    if "reconsider" in fed:
        parts.append(
            f"reconsider {fed['reconsider']} (margin {fed.get('move_margin', 0):g}"
            + (", running jobs too)" if fed.get("move_running") else ")")
        )
    g = fed.get("global", {})
    parts.append(f"{g.get('unplaceable', 0)} unplaceable")
    return "; ".join(parts)
