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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.errors import InputError
from schedlab.experiments.pack_sweep import aggregate, results_table
from schedlab.experiments.published import reference_for
from schedlab.experiments.seed_stats import mean_ci
from schedlab.report.colours import figure_looks
from schedlab.report.pack_figures import (
    curves_frame,
    draw_bars_at,
    draw_fragmentation,
    draw_unallocated,
)
from schedlab.results import atomic_write

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


def _section(
    label: str,
    curves: pd.DataFrame,
    table: pd.DataFrame,
    policies: Sequence[str],
    inflate: float,
) -> str:
    from schedlab.report.html_report import _svg, best_cells
    from schedlab.report.mpl import plt

    e = html.escape
    looks = figure_looks(policies, "placement")
    agg = aggregate(table[table["pods"] == label])
    by = {r["policy"]: r for _, r in agg.iterrows()}
    reference = reference_for(label, inflate) or {}
    head = "".join(
        f'<th><span class="swatch" style="background:{looks[p].colour}"></span>{e(p)}</th>'
        for p in policies
    )
    rows = []
    for field, name, digits in ROWS:
        means = [
            float(by[p][f"{field}_mean"])
            if p in by and by[p][f"{field}_mean"] is not None
            else None
            for p in policies
        ]
        texts = [
            "—"
            if m is None
            else mean_ci(m, by[p][f"{field}_ci95"] or float("nan"), 1, digits, field)
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
    failed = table[table["pods"] == label].groupby("policy")["pods_failed"].mean()
    cells = "".join(f"<td>{failed.get(p, float('nan')):,.1f}</td>" for p in policies)
    rows.append(f"<tr><th>Pods that did not fit (mean)</th>{cells}</tr>")
    cells = "".join(f"<td>{int(by[p]['runs']) if p in by else 0}</td>" for p in policies)
    rows.append(f'<tr class="meta"><th>Runs</th>{cells}</tr>')
    figures = []
    mine = curves[curves["pods"] == label] if "pods" in curves else curves
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
            if (mine["bin"] == 100).any()
            else []
        ),
    ):
        anchor = e(f"{label}-{name}".lower().replace(" ", "-").replace("%", "pct"))
        svg = _svg(fig, f"fig-{anchor}", f"{name}, {label}")
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
    curves: pd.DataFrame,
    table: pd.DataFrame,
    policies: Sequence[str],
    inflate: float,
    title: str,
    sources: Sequence[tuple[str, Path]],
) -> str:
    """The page: a section per pod list (``table['pods']``), in the order they appear."""
    from schedlab.report.html_report import html_page, page_head

    labels = list(dict.fromkeys(table["pods"].astype(str)))
    body = (
        f'<p class="lead">{len(table)} pack run{"s" if len(table) != 1 else ""}: '
        f"{len(policies)} placement polic{'ies' if len(policies) != 1 else 'y'} × "
        f"{table['seed'].nunique()} seed(s), inflation {inflate:g}.</p>"
        + "".join(_section(label, curves, table, policies, inflate) for label in labels)
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
    table = results_table(summaries, policies)
    curves = pd.concat(
        [curves_frame([s]).assign(pods=s["workload"]) for s in summaries], ignore_index=True
    )
    title = title or f"Pack report: {len(summaries)} run{'s' if len(summaries) != 1 else ''}"
    return render_pack_page(curves, table, policies, inflates.pop(), title, sources)


def pack_grid_page(folder: Path, title: str | None = None) -> str:
    """The page of a finished pack grid (its results.csv and curves.csv)."""
    table = pd.read_csv(folder / "results.csv", dtype={"pods": "str", "policy": "str"})
    curves = pd.read_csv(folder / "curves.csv", dtype={"pods": "str", "policy": "str"})
    policies = list(dict.fromkeys(table["policy"]))
    inflate = float(table["inflate"].iloc[0])
    title = title or f"Pack grid — {', '.join(dict.fromkeys(table['pods']))}"
    return render_pack_page(curves, table, policies, inflate, title, [("grid", folder)])


def write_page(page: str, out: Path) -> Path:
    atomic_write(out, lambda fh: fh.write(page))
    return out
