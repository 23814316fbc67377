"""Time a replay of a large synthetic Philly-like trace: jobs/s, wall seconds, peak memory.

Default: 1,000,000 jobs on 10,000 GPUs (1,250 nodes × 8) at 80 % offered load under fifo.

    python benchmarks/replay_synthetic.py [--jobs 1000000] [--cluster 1250x8:V100] [--load 0.8]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import peak_rss_mib

from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.synthetic_jobs import SyntheticJobSpec, generate_jobs, load_for_gpus


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--cluster", default="1250x8:V100")
    ap.add_argument("--load", type=float, default=0.8)
    ap.add_argument("--policy", default="fifo")
    ap.add_argument("--placement", default="bestfit")
    args = ap.parse_args()
    cluster = parse_cluster_spec(args.cluster)
    t0 = time.perf_counter()
    spec = load_for_gpus(SyntheticJobSpec(jobs=args.jobs), cluster.total_gpus, args.load)
    jobs = generate_jobs(spec, np.random.default_rng(0))
    print(
        f"generated {len(jobs):,} jobs in {time.perf_counter() - t0:.2f} s "
        f"(mean gap {spec.mean_interarrival:.1f} s, {args.load:.0%} load of "
        f"{cluster.total_gpus:,} GPUs)"
    )
    run = ReplaySpec(
        cluster=args.cluster, trace="synthetic", policy=args.policy, placement=args.placement
    )
    t0 = time.perf_counter()
    record = run_replay(run, cluster, jobs)
    wall = time.perf_counter() - t0
    done = int(np.isfinite(record.end_time).sum())
    print(
        f"{args.policy}/{args.placement}: {wall:.1f} s wall, {len(jobs) / wall:,.0f} jobs/s, "
        f"{record.decision_points:,} decision points, {done:,} completed"
    )
    print(f"peak memory: {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
