"""Rebuild the ElasticFlow ablation: EDF, EDF + admission control, EDF + elastic scaling and
ElasticFlow on 1,000 synthetic jobs (Poisson arrivals, mean gap 1,500 s) on 64 / 128 / 256 A100s,
beside the paper's DSR.

    python benchmarks/elasticflow_ablation.py [--seeds 0 1 2] [--out runs/elasticflow-ablation]

The workload (``ABLATION_WORKLOAD`` in ``schedlab.experiments.deadline_study``) draws GPU counts
and run times like the 195-job trace; DSR is the mean over seeds. Writes table.csv, table.md
and dsr.png to --out and prints the table.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
from _common import SHARED, output_folder

from schedlab.experiments.deadline_study import (
    ABLATION_GPUS,
    ABLATION_PAPER,
    ABLATION_POLICIES,
    ablation_runs,
    run_study,
)
from schedlab.report.deadline_figures import grouped_bars, markdown_table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("runs/elasticflow-ablation"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    if not (SHARED / "traces" / "elasticflow-artifact").is_dir():
        sys.exit(f"needs the throughput tables under {SHARED / 'traces'} (not found)")
    settings = {"seeds": args.seeds, "workers": args.workers}
    with output_folder(args.out, "ElasticFlow ablation", settings) as out:
        table, rows, started = _study(args.seeds, args.workers, out)
    print(markdown_table(table))
    print(f"\n{len(rows)} runs in {time.perf_counter() - started:.1f} s; wrote {args.out}")


def _study(seeds: list[int], workers: int, out: Path) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    started = time.perf_counter()
    rows = run_study(ablation_runs(SHARED, tuple(seeds)), workers)
    mean = rows.groupby(["gpus", "policy"], sort=False)[["dsr", "rejected", "wall_seconds"]].mean()
    records = []
    for policy in ABLATION_POLICIES:
        record: dict[str, object] = {"policy": policy}
        for i, gpus in enumerate(ABLATION_GPUS):
            record[f"{gpus} GPUs"] = float(mean.loc[(gpus, policy), "dsr"])
            record[f"paper {gpus}"] = ABLATION_PAPER[policy][i]
        record["seconds"] = float(mean.xs(policy, level="policy")["wall_seconds"].sum())
        records.append(record)
    table = pd.DataFrame(records)
    rows.to_csv(out / "runs.csv", index=False)
    table.to_csv(out / "table.csv", index=False)
    (out / "table.md").write_text(markdown_table(table) + "\n")
    grouped_bars(
        out / "dsr.png",
        [f"{g} GPUs" for g in ABLATION_GPUS],
        {p: [mean.loc[(g, p), "dsr"] for g in ABLATION_GPUS] for p in ABLATION_POLICIES},
        f"ablation, 1,000 synthetic jobs, seeds {', '.join(map(str, seeds))}",
    )
    return table, rows, started


if __name__ == "__main__":
    main()
