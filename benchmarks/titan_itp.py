"""Wall time and peak memory of the Titan-on-ITP study (69,351 jobs, five placements on the
4,096-GPU ``titan`` topology): it must finish in at most 15 minutes on a 2-core machine.

python benchmarks/titan_itp.py [--workers 2] [--jobs N]
"""

from __future__ import annotations

import argparse
import time

from _common import SHARED, peak_rss_mib, print_whole_process

from schedlab.experiments.parallel import run_all
from schedlab.experiments.titan_itp import RUNS, ItpRun, itp_files, measure, merged_itp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=None, help="the first N jobs only")
    args = parser.parse_args()
    t0, c0 = time.perf_counter(), time.process_time()
    jobs = merged_itp(itp_files(SHARED), args.jobs)
    rows = run_all(measure, [ItpRun(p, jobs) for p, _ in RUNS], args.workers)
    wall = time.perf_counter() - t0
    for row in rows:
        print(
            f"{row['placement']:>16}: {row['wall_s']:7.1f} s wall, {row['cpu_s']:7.1f} s CPU "
            "in its worker"
        )
    print(f"CPU of the replays: {sum(row['cpu_s'] for row in rows):.1f} s")
    print(
        f"{len(jobs)} jobs × {len(rows)} placements: {wall:.1f} s wall "
        f"({time.process_time() - c0:.1f} s CPU here), peak memory "
        f"{max(peak_rss_mib(), peak_rss_mib(children=True)):.0f} MiB"
    )


if __name__ == "__main__":
    main()
    print_whole_process("the Titan-on-ITP study")
