"""Wall time of the ElasticFlow large simulation: the ten ITP clusters and the Philly sample
(256–1,024 GPUs, 60 s slot, A100 tables) under every deadline policy, 88 replays on the given
workers. Prints seconds per policy (summed over the traces, slowest trace in brackets) and the
total; the DSR table is ``schedlab reproduce elasticflow``'s.

    python benchmarks/elasticflow_large.py [--workers 2] [--policies ...] [--traces ...]
"""

from __future__ import annotations

import argparse
import sys
import time

from _common import SHARED, peak_rss_mib

from schedlab.experiments.deadline_study import (
    LARGE_CLUSTERS,
    LARGE_POLICIES,
    large_runs,
    run_study,
)
from schedlab.experiments.elasticflow_study import SLOW_POLICIES, SLOW_TRACES


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--policies", nargs="+", default=list(LARGE_POLICIES))
    ap.add_argument("--traces", nargs="+", default=list(LARGE_CLUSTERS))
    args = ap.parse_args()
    if not (SHARED / "traces" / "elasticflow-itp").is_dir():
        sys.exit(f"needs the public traces under {SHARED / 'traces'} (not found)")
    runs = large_runs(SHARED, tuple(args.policies), tuple(args.traces))
    started = time.perf_counter()
    rows = run_study(
        runs,
        args.workers,
        slow_first=lambda r: r.label in SLOW_TRACES and r.policy in SLOW_POLICIES,
    )
    total = time.perf_counter() - started
    times = rows.groupby("policy", sort=False)["wall_seconds"].agg(["sum", "max"])
    for policy, row in times.iterrows():
        print(f"{policy:>12}: {row['sum']:7.1f} s over the traces ({row['max']:.1f} s slowest)")
    print(
        f"{len(rows)} replays in {total:.1f} s wall with {args.workers} workers; "
        f"peak memory {max(peak_rss_mib(), peak_rss_mib(children=True)):.0f} MiB"
    )


if __name__ == "__main__":
    main()
