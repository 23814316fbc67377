"""The ElasticFlow large simulation: the ten ITP clusters (1, 2, 3, 5, 6 on 512 GPUs; 4, 7, 8, 9
on 1,024; 10 on 256) and the Philly sample (256 GPUs) under every deadline policy, 60 s slot,
A100 tables — DSR per trace and policy, and the wall time each policy took.

    python benchmarks/elasticflow_large.py [--workers 2] [--policies ...] [--traces ...]

Writes runs.csv, table.md (DSR per trace × policy), times.md (seconds per policy) and dsr.png to
--out and prints both tables and the total wall time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
from _common import SHARED, output_folder, print_whole_process

from schedlab.experiments.deadline_study import (
    LARGE_CLUSTERS,
    LARGE_POLICIES,
    DeadlineRun,
    large_runs,
    run_study,
)
from schedlab.report.deadline_figures import grouped_bars, markdown_table

#: Traces known to take longest (1,024-GPU clusters): started first so no worker idles at the end.
SLOW = {"cluster04", "cluster07", "cluster08", "cluster09"}
SLOW_POLICIES = {"elasticflow", "edf-elastic", "chronus"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("runs/elasticflow-large"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--policies", nargs="+", default=list(LARGE_POLICIES))
    ap.add_argument("--traces", nargs="+", default=list(LARGE_CLUSTERS))
    args = ap.parse_args()
    if not (SHARED / "traces" / "elasticflow-itp").is_dir():
        sys.exit(f"needs the public traces under {SHARED / 'traces'} (not found)")
    runs = large_runs(SHARED, tuple(args.policies), tuple(args.traces))
    settings = {"workers": args.workers, "policies": args.policies, "traces": args.traces}
    with output_folder(args.out, "ElasticFlow large simulation", settings) as out:
        _study(runs, args.workers, args.policies, out)
    print(f"wrote {args.out}")


def _study(runs: list[DeadlineRun], workers: int, policies: list[str], out: Path) -> None:
    started = time.perf_counter()

    def done(row: dict[str, object]) -> None:
        print(
            f"  {row['trace']:>14} {row['policy']:>12}: DSR {row['dsr']:.3f} "
            f"in {row['wall_seconds']:.1f} s",
            flush=True,
        )

    rows = run_study(
        runs,
        workers,
        on_done=done,
        slow_first=lambda r: r.label in SLOW and r.policy in SLOW_POLICIES,
    )
    total = time.perf_counter() - started
    rows.to_csv(out / "runs.csv", index=False)
    dsr = rows.pivot(index="trace", columns="policy", values="dsr")[policies].reset_index()
    times = (
        rows.groupby("policy", sort=False)["wall_seconds"]
        .agg(["sum", "max"])
        .rename(columns={"sum": "seconds (all traces)", "max": "slowest trace"})
        .reset_index()
    )
    (out / "table.md").write_text(markdown_table(dsr) + "\n")
    (out / "times.md").write_text(markdown_table(times, "{:.1f}") + "\n")
    grouped_bars(
        out / "dsr.png",
        list(dsr["trace"]),
        {p: list(dsr[p]) for p in policies},
        "ITP clusters and Philly, 60 s slot",
    )
    print(markdown_table(dsr))
    print()
    print(markdown_table(times, "{:.1f}"))
    print(f"\n{len(rows)} runs in {total:.1f} s with {workers} workers")
    pd.Series({"wall_seconds": round(total, 1), "workers": workers}).to_json(out / "total.json")


if __name__ == "__main__":
    main()
    print_whole_process("the large simulation")
