"""Figures of the deadline study: DSR per policy, ours beside the published references."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
matplotlib.rcParams["svg.hashsalt"] = "schedlab"

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def grouped_bars(
    path: Path,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    title: str,
    ylabel: str = "deadline satisfactory ratio",
) -> None:
    """One bar per series inside each group (missing values leave a gap); PNG at ``path``."""
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(groups) + 2), 3.6), dpi=120)
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for i, (name, values) in enumerate(series.items()):
        heights = [np.nan if v is None else float(v) for v in values]
        ax.bar(x + (i - (len(series) - 1) / 2) * width, heights, width, label=name)
    ax.set_xticks(x, groups, rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.05)
    ax.set_title(title)
    ax.legend(fontsize=8, ncols=min(4, len(series)))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def markdown_table(frame: pd.DataFrame, floats: str = "{:.3f}") -> str:
    """A GitHub-flavoured table of ``frame`` (floats rounded, missing values as '—')."""

    def cell(v: object) -> str:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return "—"
        if isinstance(v, float):
            return floats.format(v)
        return str(v)

    head = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *rows])
