"""The GreenFlow study: average JCT against carbon for carbon-agnostic (FIFO), lcs,
carbon-scaler and greenflow at budgets of 40–100 % of the agnostic run's job carbon, on the
ElasticFlow 195-job trace and a synthetic deadline trace (16 × 8 A100, measured power limits,
synth:gb2020 carbon).

    python benchmarks/greenflow_study.py [--out runs/greenflow-study] [--workers 2]

Writes table.csv, table.md, same_carbon.md and jct_vs_carbon.png to --out and prints the tables.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from _common import SHARED, output_folder, print_whole_process

from schedlab.experiments.greenflow_study import jct_at_same_carbon, run_study
from schedlab.report.deadline_figures import markdown_table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("runs/greenflow-study"))
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    if not (SHARED / "traces" / "elasticflow-itp").is_dir():
        sys.exit(f"needs the public traces under {SHARED / 'traces'} (not found)")
    with output_folder(args.out, "GreenFlow study", {"workers": args.workers}) as out:
        started = time.perf_counter()
        table = run_study(SHARED, args.workers)
        same = jct_at_same_carbon(table)
        table.to_csv(out / "table.csv", index=False)
        (out / "table.md").write_text(markdown_table(table) + "\n")
        (out / "same_carbon.md").write_text(markdown_table(same) + "\n")
        _figure(table, out / "jct_vs_carbon.png")
    print(markdown_table(table))
    print()
    print(markdown_table(same))
    print(f"\n{len(table)} runs in {time.perf_counter() - started:.1f} s; wrote {args.out}")


def _figure(table: pd.DataFrame, path: Path) -> None:
    workloads = list(dict.fromkeys(table["workload"]))
    fig, axes = plt.subplots(1, len(workloads), figsize=(5.2 * len(workloads), 3.8), dpi=120)
    for ax, workload in zip(list(axes) if len(workloads) > 1 else [axes], workloads, strict=True):
        group = table[table["workload"] == workload]
        curve = group[group["budget"].notna()].sort_values("job_carbon_kg")
        ax.plot(curve["job_carbon_kg"], curve["avg_jct_h"], "o-", label="greenflow (budgets)")
        for _, row in group[group["budget"].isna()].iterrows():
            ax.scatter(row["job_carbon_kg"], row["avg_jct_h"], marker="s", zorder=3)
            ax.annotate(row["policy"], (row["job_carbon_kg"], row["avg_jct_h"]), fontsize=8)
        ax.set_title(workload)
        ax.set_xlabel("job carbon (kg CO2e)")
        ax.set_ylabel("average JCT (h)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
    print_whole_process("the GreenFlow study")
