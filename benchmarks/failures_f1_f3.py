"""Time F1–F3 (20 seeds × 54 days × 4 checkpoint intervals: 80 replays of the 16,384-GPU job)
on two worker processes, and print their table.

    python benchmarks/failures_f1_f3.py [--workers 2]
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from schedlab.experiments.failure_study import reproduce_f1_f3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    start = time.perf_counter()
    table = reproduce_f1_f3(workers=args.workers)
    wall = time.perf_counter() - start
    with pd.option_context("display.width", 200, "display.max_rows", 100):
        print(table.to_string(index=False))
    print(f"F1–F3: 80 replays on {args.workers} worker(s) in {wall:.1f} s wall")


if __name__ == "__main__":
    main()
