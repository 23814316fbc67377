"""CPU time of the Philly replay with a share policy against the same replay without tenancy.

python benchmarks/tenancy_speed.py [--cluster 80x8:V100] [--policies kai] [--jobs N]

Runs fifo with bestfit over the 82,247-job Philly trace (or its first N jobs), once without
tenancy and once per share policy (its 15 virtual clusters as queues, deserved quotas derived
from their demand), and prints each run's CPU seconds, decision points, reclaims and the ratio
to the run without tenancy. The target for kai is a ratio of at most 1.5.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import SHARED, peak_rss_mib

from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.tenancy.replay import TenancySpec
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

PHILLY = SHARED / "traces" / "philly-adaptdl" / "philly.csv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cluster", default="80x8:V100")
    ap.add_argument("--policies", nargs="+", default=["kai"])
    ap.add_argument("--jobs", type=int, default=None, help="only the first N jobs")
    args = ap.parse_args()
    if not PHILLY.is_file():
        raise SystemExit(f"benchmark needs {PHILLY} (not found)")
    jobs = read_jobs(PHILLY).jobs.sorted_by_submit()
    if args.jobs:
        jobs = jobs.take(np.arange(min(args.jobs, len(jobs))))
    cluster = parse_cluster_spec(args.cluster)
    print(f"{len(jobs):,} jobs on {args.cluster} ({cluster.total_gpus:,} GPUs)")
    base = None
    for policy in ["none", *args.policies]:
        tenancy = TenancySpec(policy, derive_deserved="demand-share") if policy != "none" else None
        spec = ReplaySpec(
            cluster=args.cluster, trace=str(PHILLY), policy="fifo", tenancy=tenancy or TenancySpec()
        )
        t0 = time.process_time()
        record = run_replay(spec, cluster, jobs)
        cpu = time.process_time() - t0
        base = cpu if base is None else base
        reclaims = len(record.tenancy.recorder.reclaims) if record.tenancy is not None else 0
        print(
            f"{policy:>18}: {cpu:7.2f} s CPU ({cpu / base:4.2f}x), "
            f"{record.decision_points:,} decision points, {reclaims:,} reclaims, "
            f"{int((record.status == 3).sum()):,} completed"
        )
    print(f"peak memory: {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
