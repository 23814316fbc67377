"""The report's network section: link utilisation over time per tier and the communication-share
CDF, for runs replayed with ``--topology`` (their jobs.csv and timeseries.csv have the columns).
Kept apart from the rest of the page so it only appears when some run has network data."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from schedlab.report.html_report import (
    Run,
    _cdf_points,
    _empty_note,
    _figure,
    _figure_series,
    _style,
)
from schedlab.report.page import inline_svg

#: Link tiers drawn, in order (timeseries column suffix, title).
TIERS = (
    ("host_leaf", "host–leaf (NICs)"),
    ("leaf_spine", "leaf–spine"),
    ("spine_core", "spine–core"),
    ("leaf_leaf", "leaf–leaf (OCS)"),
)


def has_network(run: Run) -> bool:
    return "comm_share" in run.jobs.columns or (
        run.timeseries is not None
        and any(c.startswith("link_util_") for c in run.timeseries.columns)
    )


def figure_link_utilisation(runs: Sequence[Run], column: str, title: str) -> str:
    return _figure_series(
        [r for r in runs if r.timeseries is not None and column in r.timeseries.columns],
        f"fig-{column}",
        f"Mean {title} link load (%)",
        f"Mean utilisation of {title} links over time per run",
        lambda r: 100 * r.timeseries[column].to_numpy(dtype=np.float64),  # type: ignore[index]
    )


def figure_comm_share_cdf(runs: Sequence[Run]) -> str:
    fig, ax = _figure(height=3.0)
    drawn = False
    for run in runs:
        if "comm_share" not in run.jobs.columns:
            continue
        share = run.jobs["comm_share"].to_numpy(dtype=np.float64)
        share = np.sort(share[np.isfinite(share)])
        if not len(share):
            continue
        x, y = _cdf_points(100 * share, np.arange(1, len(share) + 1) / len(share))
        ax.step(x, y, where="post", lw=1.6, label=run.label, **_style(run))
        drawn = True
    if drawn:
        ax.legend(frameon=False, fontsize=8, loc="lower right")
    else:
        _empty_note(ax, "no job ran")
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("Communication share of the job's run time (%)")
    ax.set_ylabel("Fraction of jobs")
    return inline_svg(fig, "fig-comm-share", "CDF of the communication share of run time per run")


def network_section(runs: Sequence[Run]) -> str:
    """The section's HTML, or "" when no run was replayed with a network."""
    net_runs = [r for r in runs if has_network(r)]
    if not net_runs:
        return ""
    e = html.escape
    figures = []
    for suffix, title in TIERS:
        column = f"link_util_{suffix}"
        if any(r.timeseries is not None and column in r.timeseries.columns for r in net_runs):
            caption = (
                f"Mean load of the {title} links (bytes carried per second over capacity, "
                "averaged over the tier's links)."
            )
            svg = figure_link_utilisation(net_runs, column, title)
            figures.append((f"{title} link utilisation", svg, caption))
    figures.append(
        (
            "Communication share",
            figure_comm_share_cdf(net_runs),
            "Share of each job's run time spent communicating beyond what overlaps its compute.",
        )
    )
    body = "".join(
        f'<figure id="net-{i}">{svg}<figcaption><b>{e(name)}.</b> {e(caption)}</figcaption>'
        "</figure>"
        for i, (name, svg, caption) in enumerate(figures)
    )
    return f'<h2 id="network">Network</h2>\n<div class="figures">{body}</div>'
