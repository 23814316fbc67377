"""Time replays of the 82,247-job Philly trace: jobs/s, wall seconds, peak memory.

python benchmarks/replay_philly.py [--cluster 250x8:V100] [--policies fifo tiresias]
"""

from __future__ import annotations

import argparse
import time

from _common import SHARED, peak_rss_mib

from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

PHILLY = SHARED / "traces" / "philly-adaptdl" / "philly.csv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cluster", default="250x8:V100", help="cluster spec (default 2,000 GPUs)")
    ap.add_argument("--policies", nargs="+", default=["fifo", "tiresias"])
    ap.add_argument("--placement", default="bestfit")
    args = ap.parse_args()
    if not PHILLY.is_file():
        raise SystemExit(f"benchmark needs {PHILLY} (not found)")
    t0 = time.perf_counter()
    jobs = read_jobs(PHILLY).jobs
    cluster = parse_cluster_spec(args.cluster)
    print(
        f"read {len(jobs):,} jobs in {time.perf_counter() - t0:.2f} s; "
        f"cluster {args.cluster} ({cluster.total_gpus:,} GPUs)"
    )
    for policy in args.policies:
        spec = ReplaySpec(
            cluster=args.cluster, trace=str(PHILLY), policy=policy, placement=args.placement
        )
        t0 = time.perf_counter()
        record = run_replay(spec, cluster, jobs)
        wall = time.perf_counter() - t0
        done = int((record.end_time == record.end_time).sum())
        print(
            f"{policy:>10}/{args.placement}: {wall:6.2f} s wall, {len(jobs) / wall:,.0f} jobs/s, "
            f"{record.decision_points:,} decision points, {int(record.preemptions.sum()):,} "
            f"preemptions, {done:,} completed"
        )
    print(f"peak memory: {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
