"""One self-contained HTML page for pack runs and pack grids: per pod list, a table with a column
per placement policy (unallocated GPU at 100 % and 130 % arrived, fragmentation, failed pods,
the published figure where there is one) and the three pack figures, inline.

Like the replay reports it loads nothing (inline SVG and CSS under a Content-Security-Policy
that forbids fetches) and gives the same bytes for the same inputs. ``pack`` and the pack grid of
``sweep`` write it as ``report.html``; ``schedlab report`` makes it from pack run folders or a pack
grid folder.
"""

from __future__ import annotations

import html
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import InputError
from schedlab.experiments.pack_sweep import result_rows
from schedlab.experiments.published import reference_for
from schedlab.experiments.seed_stats import ci_half_width, mean_ci
from schedlab.report.colours import figure_looks
from schedlab.report.pack_figures import (
    Curves,
    curve_column,
    curve_columns,
    curve_rows,
    draw_bars_at,
    draw_fragmentation,
    draw_unallocated,
)
from schedlab.results import atomic_write

#: A run's row of the results table (``results.csv``): pods, policy, seed, the ROWS measures,
#: pods_failed, ….
Row = Mapping[str, Any]

#: Rows of the table: (aggregate column, label, digits, whether lower is better).
ROWS = (
    ("unallocated_gpu_pct_100", "Unallocated GPU % at 100 % arrived", 2),
    ("unallocated_gpu_pct_130", "Unallocated GPU % at 130 % arrived", 2),
    ("frag_amount_pct_100", "Fragmented GPU % of capacity at 100 %", 2),
)

PACK_CSS = """
table.grid th, table.grid td { white-space: normal; padding: 5px 8px; font-size: 0.85rem; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
          margin-right: 5px; vertical-align: baseline; }
p.note { color: var(--muted); font-size: 0.85rem; }
"""


def is_pack_run(folder: Path) -> bool:
    """A folder ``schedlab pack`` wrote (its summary has the binned curves)."""
    summary = _read_summary(folder / "summary.json")
    return (
        summary is not None
        and "unallocated_gpu_pct" in summary
        and (folder / "events.csv").is_file()
    )


def is_pack_grid(folder: Path) -> bool:
    """A pack grid folder ``schedlab sweep --nodes … --pods …`` finished."""
    return all(
        (folder / name).is_file() for name in ("grid.json", "results.csv", "curves.csv")
    ) and (
        "frag_amount_pct_100"
        in (folder / "results.csv").read_text(encoding="utf-8").split("\n", 1)[0]
    )


def _read_summary(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _defined(runs: Sequence[Row], field: str) -> list[float]:
    """``field`` of the runs where it has a value (a missing cell is None or NaN)."""
    values = (math.nan if r[field] is None else float(r[field]) for r in runs)
    return [v for v in values if not math.isnan(v)]


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


def _policy_stats(runs: Sequence[Row]) -> dict[str, dict[str, Any]]:
    """Per policy of one pod list's runs, over the runs where each is defined: every table
    measure's (mean, 95 % half-width), the mean of pods that did not fit, and the runs."""
    by: dict[str, list[Row]] = {}
    for run in runs:
        by.setdefault(str(run["policy"]), []).append(run)
    stats: dict[str, dict[str, Any]] = {}
    for policy, mine in by.items():
        cell: dict[str, Any] = {"runs": len(mine), "failed": _mean(_defined(mine, "pods_failed"))}
        for field, _, _ in ROWS:
            values = _defined(mine, field)
            sd = statistics.stdev(values) if len(values) >= 2 else math.nan
            cell[field] = (_mean(values), ci_half_width(sd, len(values)))
        stats[policy] = cell
    return stats


def _section(
    label: str,
    curves: Curves,
    runs: Sequence[Row],
    policies: Sequence[str],
    inflate: float,
) -> str:
    from schedlab.report.mpl import plt
    from schedlab.report.page import best_cells, inline_svg

    e = html.escape
    looks = figure_looks(policies, "placement")
    by = _policy_stats([r for r in runs if str(r["pods"]) == label])
    reference = reference_for(label, inflate) or {}
    head = "".join(
        f'<th><span class="swatch" style="background:{looks[p].colour}"></span>{e(p)}</th>'
        for p in policies
    )
    rows = []
    for field, name, digits in ROWS:
        means = [
            by[p][field][0] if p in by and not math.isnan(by[p][field][0]) else None
            for p in policies
        ]
        texts = [
            "—" if m is None else mean_ci(m, by[p][field][1] or math.nan, 1, digits, field)
            for p, m in zip(policies, means, strict=True)
        ]
        bold = best_cells([t.split(" ")[0] for t in texts], means, False)  # type: ignore[arg-type]
        cells = "".join(f"<td{_best(b)}>{e(t)}</td>" for t, b in zip(texts, bold, strict=True))
        rows.append(f"<tr><th>{e(name)}</th>{cells}</tr>")
    if reference:
        cells = "".join(
            f"<td>{e(f'{reference[p]:.2f}') if p in reference else '—'}</td>" for p in policies
        )
        rows.append(f"<tr><th>Published @100 (FGD paper)</th>{cells}</tr>")
    cells = "".join(f"<td>{(by[p]['failed'] if p in by else math.nan):,.1f}</td>" for p in policies)
    rows.append(f"<tr><th>Pods that did not fit (mean)</th>{cells}</tr>")
    cells = "".join(f"<td>{by[p]['runs'] if p in by else 0}</td>" for p in policies)
    rows.append(f'<tr class="meta"><th>Runs</th>{cells}</tr>')
    figures = []
    mine = curve_rows(curves, curve_column(curves, "pods") == label) if "pods" in curves else curves
    for name, fig, caption in (
        (
            "Unallocated GPU",
            draw_unallocated(mine, policies, label),
            "Median over seeds; the band is the inter-quartile range; grey: the ideal.",
        ),
        (
            "Fragmentation",
            draw_fragmentation(mine, policies, label),
            "Fragmented GPU share of capacity and of idle GPUs as pods arrive.",
        ),
        *(
            [
                (
                    "Unallocated GPU at 100 % arrived",
                    draw_bars_at(mine, policies, 100, reference or None, label),
                    "Mean ± sd over seeds (clipped at 0), a dot per seed; red: the published "
                    "figure.",
                )
            ]
            if (curve_column(mine, "bin") == 100).any()
            else []
        ),
    ):
        anchor = e(f"{label}-{name}".lower().replace(" ", "-").replace("%", "pct"))
        svg = inline_svg(fig, f"fig-{anchor}", f"{name}, {label}")
        plt.close(fig)
        caption_html = f"<figcaption><b>{e(name)}.</b> {e(caption)}</figcaption>"
        figures.append(f'<figure id="{anchor}">{svg}{caption_html}</figure>')
    return (
        f'<h2 id="{e(label)}">{e(label)}</h2>'
        f'<div class="table-wrap"><table class="summary grid"><thead><tr><th>metric</th>{head}'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        '<p class="note">Mean ± half-width of the 95 % Student-t interval over seeds, clipped to '
        "0–100 % (brackets when clipped); lowest as shown in <b>bold</b>, every one of a tie.</p>"
        f'<div class="figures">{"".join(figures)}</div>'
    )


def _best(bold: bool) -> str:
    return ' class="best"' if bold else ""


def render_pack_page(
    curves: Curves,
    runs: Sequence[Row],
    policies: Sequence[str],
    inflate: float,
    title: str,
    sources: Sequence[tuple[str, Path]],
) -> str:
    """The page: a section per pod list (the rows' ``pods``), in the order they appear."""
    from schedlab.report.page import html_page, page_head

    labels = list(dict.fromkeys(str(r["pods"]) for r in runs))
    seeds = len({r["seed"] for r in runs})
    body = (
        f'<p class="lead">{len(runs)} pack run{"s" if len(runs) != 1 else ""}: '
        f"{len(policies)} placement polic{'ies' if len(policies) != 1 else 'y'} × "
        f"{seeds} seed(s), inflation {inflate:g}.</p>"
        + "".join(_section(label, curves, runs, policies, inflate) for label in labels)
    )
    page = html_page(title, body, sources)
    return page.replace(page_head(title), page_head(title, PACK_CSS), 1)


def pack_run_page(folders: Sequence[Path], title: str | None = None) -> str:
    """The page of pack run folders (one run each, any policies and seeds)."""
    summaries = []
    for folder in folders:
        summary = _read_summary(folder / "summary.json")
        if summary is None or "unallocated_gpu_pct" not in summary:
            raise InputError("not a pack run folder (no pack summary.json)", path=str(folder))
        workload = Path(str(summary.get("pods_file", folder.name))).stem
        summaries.append({**summary, "workload": workload})
    sources = [
        (f"{s['policy']} seed {s['seed']}", f) for s, f in zip(summaries, folders, strict=True)
    ]
    return pack_page(summaries, sources, title)


def pack_page(
    summaries: Sequence[dict[str, Any]],
    sources: Sequence[tuple[str, Path]],
    title: str | None = None,
) -> str:
    """The page of pack run summaries (each with its ``workload``, the pod list's name)."""
    inflates = {float(s["inflate"]) for s in summaries}
    if len(inflates) != 1:
        raise InputError("pack runs of different inflations cannot share one page")
    policies = list(dict.fromkeys(str(s["policy"]) for s in summaries))
    parts = [curve_columns([s]) for s in summaries]
    curves = {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
    curves["pods"] = np.concatenate(
        [
            np.full(len(part["bin"]), s["workload"], dtype=object)
            for s, part in zip(summaries, parts, strict=True)
        ]
    )
    title = title or f"Pack report: {len(summaries)} run{'s' if len(summaries) != 1 else ''}"
    rows = result_rows(summaries, policies)
    return render_pack_page(curves, rows, policies, inflates.pop(), title, sources)


def pack_grid_page(folder: Path, title: str | None = None) -> str:
    """The page of a finished pack grid (its results.csv and curves.csv)."""
    import pandas as pd  # the grid's tables are read as tables

    table = pd.read_csv(folder / "results.csv", dtype={"pods": "str", "policy": "str"})
    curves = pd.read_csv(folder / "curves.csv", dtype={"pods": "str", "policy": "str"})
    policies = list(dict.fromkeys(table["policy"]))
    inflate = float(table["inflate"].iloc[0])
    title = title or f"Pack grid — {', '.join(dict.fromkeys(table['pods']))}"
    rows = table.to_dict("records")
    return render_pack_page(curves, rows, policies, inflate, title, [("grid", folder)])


def write_page(page: str, out: Path) -> Path:
    atomic_write(out, lambda fh: fh.write(page))
    return out
