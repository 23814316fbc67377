"""The Prism study's outputs: ``table.csv`` (every run), ``table.md`` (setup, the comparison beside
the paper's figures, every run), ``summary.json`` and ``fragmentation.png``."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from schedlab.experiments.prism_study import DISAGGREGATED, MONOLITHIC, comparison
from schedlab.report.deadline_figures import markdown_table

COLOURS = {MONOLITHIC: "#c0504d", DISAGGREGATED: "#4f81bd"}


def write_outputs(out: Path, table: pd.DataFrame, setup: dict[str, object]) -> pd.DataFrame:
    """Write every output file into ``out``; returns the comparison table."""
    compare = comparison(table)
    table.to_csv(out / "table.csv", index=False)
    (out / "summary.json").write_text(
        json.dumps({"setup": setup, "comparison": compare.to_dict("records")}, indent=2) + "\n"
    )
    (out / "table.md").write_text(markdown(table, compare, setup))
    figure(compare, out / "fragmentation.png")
    return compare


def markdown(table: pd.DataFrame, compare: pd.DataFrame, setup: dict[str, object]) -> str:
    lines = [
        "# Monolithic vs disaggregated placement (Alibaba GPU v2025, Prism)",
        "",
        f"Instances running at the concurrency peak (t = {setup['peak_time_seconds']:,.0f} s): "
        f"{setup['instances']:,} of {setup['apps']} apps — {setup['cn_instances']:,} CN, "
        f"{setup['hn_instances']:,} HN; {setup['merged_instances']:,} monolithic instances "
        "after merging.",
        "",
    ]
    for load, c in setup["clusters"].items():  # type: ignore[attr-defined]
        lines.append(
            f"- load {load}: {c['cpu_nodes']:,} CPU + {c['gpu_nodes']:,} GPU nodes "
            f"(disaggregated), {c['monolithic_nodes']:,} monolithic nodes; "
            + "; ".join(c["node_shapes"])
        )
    lines += [
        "",
        "Fragmentation in % of the cluster's CPU or GPUs after the last placement; change = "
        "disaggregated against monolithic (means over seeds).",
        "",
        markdown_table(compare, floats="{:.2f}"),
        "",
        "Every run:",
        "",
        markdown_table(table, floats="{:.2f}"),
        "",
    ]
    return "\n".join(lines)


def figure(compare: pd.DataFrame, path: Path) -> None:
    """CPU and GPU fragmentation per (load, policy), monolithic beside disaggregated."""
    shapes = compare["shapes"] if "shapes" in compare else ["servers"] * len(compare)
    labels = [
        f"{p}\nload {load:g}\n{s}"
        for s, load, p in zip(shapes, compare["load"], compare["policy"], strict=True)
    ]
    x = range(len(compare))
    fig, axes = plt.subplots(1, 2, figsize=(max(6.0, 1.6 * len(compare)) * 2 / 1.4, 3.8), dpi=120)
    for ax, resource in zip(axes, ("cpu", "gpu"), strict=True):
        for k, (arch, key) in enumerate(((MONOLITHIC, "mono"), (DISAGGREGATED, "disagg"))):
            values = compare[f"{resource}_frag_{key}_pct"]
            ax.bar([i + (k - 0.5) * 0.38 for i in x], values, 0.38, label=arch, color=COLOURS[arch])
        ax.set_xticks(list(x), labels, fontsize=8)
        ax.set_ylabel(f"{resource.upper()} fragmentation (% of cluster)")
        ax.set_title(f"{resource.upper()} fragmentation")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
