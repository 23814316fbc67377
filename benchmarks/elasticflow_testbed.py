"""Rebuild the ElasticFlow testbed comparison: every deadline policy on the 195-job trace
(16 × 8 A100, 240 s slot, A100 tables), beside the artifact simulator's and the paper's DSR.

    python benchmarks/elasticflow_testbed.py [--out runs/elasticflow-testbed] [--workers 2]
        [--repeat 5]

Writes table.csv, table.md and dsr.png to --out and prints the table, then times each policy's
whole ``schedlab replay`` command (median of --repeat) beside its engine seconds in the table.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
from _common import SHARED, output_folder, replay_argv, time_cli

from schedlab.experiments.deadline_study import (
    TESTBED_ARTIFACT,
    TESTBED_PAPER,
    run_study,
    testbed_runs,
)
from schedlab.report.deadline_figures import grouped_bars, markdown_table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("runs/elasticflow-testbed"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5, help="whole-command runs per policy")
    args = ap.parse_args()
    if not (SHARED / "traces" / "elasticflow-itp").is_dir():
        sys.exit(f"needs the public traces under {SHARED / 'traces'} (not found)")
    with output_folder(args.out, "ElasticFlow testbed", {"workers": args.workers}) as out:
        started = time.perf_counter()
        rows = run_study(testbed_runs(SHARED), args.workers)
        table = _write(rows, out)
    print(markdown_table(table))
    print(f"\n{len(table)} runs in {time.perf_counter() - started:.1f} s; wrote {args.out}")
    print("\nwhole CLI run (schedlab replay, median of each) beside the engine's wall seconds:")
    for run, engine in zip(testbed_runs(SHARED), table["seconds"], strict=True):
        argv = replay_argv(run.cluster, run.workload, run.policy, "--slot", str(run.slot))
        whole = time_cli([*argv, "--throughputs", str(run.throughputs)], args.repeat)
        print(f"  {whole.line(run.policy)}; engine {engine:.2f} s wall")


def _write(rows: pd.DataFrame, out: Path) -> pd.DataFrame:
    table = pd.DataFrame(
        {
            "policy": rows["policy"],
            "met": rows["met"],
            "rejected": rows["rejected"],
            "dsr": rows["dsr"],
            "artifact": [TESTBED_ARTIFACT.get(p) for p in rows["policy"]],
            "paper": [TESTBED_PAPER.get(p) for p in rows["policy"]],
            "seconds": rows["wall_seconds"],
        }
    )
    table.to_csv(out / "table.csv", index=False)
    (out / "table.md").write_text(markdown_table(table) + "\n")
    grouped_bars(
        out / "dsr.png",
        list(table["policy"]),
        {"schedlab": table["dsr"], "artifact": table["artifact"], "paper": table["paper"]},
        "195-job trace, 16 x 8 A100, 240 s slot",
    )
    return table


if __name__ == "__main__":
    main()
