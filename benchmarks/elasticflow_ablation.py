"""Rebuild the ElasticFlow ablation: EDF, EDF + admission control, EDF + elastic scaling and
ElasticFlow on 1,000 synthetic jobs (Poisson arrivals, mean gap 1,500 s) on 64 / 128 / 256 A100s,
beside the paper's DSR.

    python benchmarks/elasticflow_ablation.py [--seeds 0 1 2] [--runtimes half trace]
        [--out runs/elasticflow-ablation]

The workload (``ABLATION_RUNTIMES`` in ``schedlab.experiments.deadline_study``) draws GPU counts
like the 195-job trace and run times either at half that trace's length (``half``: tuned so that
the 64-GPU column lands near the paper) or at its own length (``trace``: untuned); DSR is the
mean over seeds. Writes runs.csv, table.csv, table.md and dsr.png (one bar group per run-time
scale and cluster) to --out and prints the table.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
from _common import SHARED, output_folder, print_whole_process

from schedlab.experiments.deadline_study import (
    ABLATION_GPUS,
    ABLATION_PAPER,
    ABLATION_POLICIES,
    ABLATION_RUNTIMES,
    ablation_runs,
    run_study,
)
from schedlab.report.deadline_figures import grouped_bars, markdown_table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("runs/elasticflow-ablation"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--runtimes", nargs="+", choices=list(ABLATION_RUNTIMES), default=list(ABLATION_RUNTIMES)
    )
    args = ap.parse_args()
    if not (SHARED / "traces" / "elasticflow-artifact").is_dir():
        sys.exit(f"needs the throughput tables under {SHARED / 'traces'} (not found)")
    settings = {"seeds": args.seeds, "workers": args.workers, "runtimes": args.runtimes}
    with output_folder(args.out, "ElasticFlow ablation", settings) as out:
        table, rows, started = _study(args.seeds, args.runtimes, args.workers, out)
    print(markdown_table(table))
    print(f"\n{len(rows)} runs in {time.perf_counter() - started:.1f} s; wrote {args.out}")


def _study(
    seeds: list[int], runtimes: list[str], workers: int, out: Path
) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    started = time.perf_counter()
    by_scale = {s: ablation_runs(SHARED, tuple(seeds), runtimes=s) for s in runtimes}
    rows = run_study([run for runs in by_scale.values() for run in runs], workers)
    rows["runtimes"] = [scale for scale, runs in by_scale.items() for _ in runs]
    mean = rows.groupby(["runtimes", "gpus", "policy"], sort=False)[
        ["dsr", "rejected", "wall_seconds"]
    ].mean()
    records = []
    for scale in runtimes:
        for policy in ABLATION_POLICIES:
            record: dict[str, object] = {"run times": scale, "policy": policy}
            for i, gpus in enumerate(ABLATION_GPUS):
                record[f"{gpus} GPUs"] = float(mean.loc[(scale, gpus, policy), "dsr"])
                record[f"paper {gpus}"] = ABLATION_PAPER[policy][i]
            seconds = mean.xs((scale, policy), level=("runtimes", "policy"))["wall_seconds"]
            record["seconds"] = float(seconds.sum())
            records.append(record)
    table = pd.DataFrame(records)
    rows.to_csv(out / "runs.csv", index=False)
    table.to_csv(out / "table.csv", index=False)
    (out / "table.md").write_text(markdown_table(table) + "\n")
    groups = [(scale, gpus) for scale in runtimes for gpus in ABLATION_GPUS]
    grouped_bars(
        out / "dsr.png",
        [f"{gpus} GPUs, {scale}" for scale, gpus in groups],
        {p: [mean.loc[(s, g, p), "dsr"] for s, g in groups] for p in ABLATION_POLICIES},
        f"ablation, 1,000 synthetic jobs, seeds {', '.join(map(str, seeds))}",
    )
    return table, rows, started


if __name__ == "__main__":
    main()
    print_whole_process("the ablation")
