"""Wall time and peak memory of the vClos load study (experiments/vclos_load.py): the full sweep
(5 load points × 4 runs of 5,000 jobs on 8,192 GPUs) must take at most 15 minutes on two cores.

python benchmarks/vclos_load.py [--workers 2] [--betas 241 ...] [--quick]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from _common import SHARED, peak_rss_mib, print_whole_process

from schedlab.experiments.vclos_load import QUICK, Setting, run_study

BUDGET_S = 15 * 60


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--betas", type=float, nargs="+")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    setting = QUICK if args.quick else Setting()
    if args.betas:
        setting = replace(setting, betas=tuple(args.betas))
    with tempfile.TemporaryDirectory() as tmp:
        started, cpu0 = time.perf_counter(), time.process_time()
        table = run_study(SHARED, setting, Path(tmp), args.workers)
        wall = time.perf_counter() - started
    columns = ["beta", "run", "completed", "avg_jct", "avg_jwt", "wall_s", "cpu_s"]
    print(table[columns].to_string(index=False))
    cpu = float(table["cpu_s"].sum())
    print(
        f"{len(table)} runs of {setting.jobs:,} jobs, {args.workers} workers: {wall:.0f} s wall "
        f"(budget {BUDGET_S} s); the runs' CPU {cpu:.0f} s (≥ {cpu / args.workers:.0f} s wall on "
        f"{args.workers} free cores), parent CPU {time.process_time() - cpu0:.0f} s; peak memory "
        f"{peak_rss_mib():.0f} MiB (parent), {peak_rss_mib(children=True):.0f} MiB (largest worker)"
    )


if __name__ == "__main__":
    main()
    print_whole_process("the vClos load study")
