"""Time replays of the 82,247-job Philly trace: the whole ``schedlab replay`` command and the
engine alone, wall and CPU seconds, jobs/s, peak memory.

python benchmarks/replay_philly.py [--cluster 250x8:V100] [--policies fifo tiresias] [--repeat 5]
"""

from __future__ import annotations

import argparse

from _common import SHARED, median_timing, peak_rss_mib, time_cli, timed

from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

PHILLY = SHARED / "traces" / "philly-adaptdl" / "philly.csv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cluster", default="250x8:V100", help="cluster spec (default 2,000 GPUs)")
    ap.add_argument("--policies", nargs="+", default=["fifo", "tiresias"])
    ap.add_argument("--placement", default="bestfit")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each (medians are printed)")
    args = ap.parse_args()
    if not PHILLY.is_file():
        raise SystemExit(f"benchmark needs {PHILLY} (not found)")
    jobs = read_jobs(PHILLY).jobs
    cluster = parse_cluster_spec(args.cluster)
    print(f"{len(jobs):,} jobs; cluster {args.cluster} ({cluster.total_gpus:,} GPUs)")
    for policy in args.policies:
        argv = ["replay", "--cluster", args.cluster, "--trace", str(PHILLY), "--policy", policy]
        argv += ["--placement", args.placement, "--out", "run"]
        whole = time_cli(argv, args.repeat)
        spec = ReplaySpec(
            cluster=args.cluster, trace=str(PHILLY), policy=policy, placement=args.placement
        )
        runs: list[tuple[float, float]] = []
        for _ in range(args.repeat):
            with timed(runs):
                record = run_replay(spec, cluster, jobs)
        engine = median_timing(runs)
        done = int((record.end_time == record.end_time).sum())
        print(f"{policy}/{args.placement}:")
        print("  " + whole.line("whole CLI run (schedlab replay)"))
        print("  " + engine.line("engine alone (run_replay)"))
        print(
            f"  {len(jobs) / engine.cpu:,.0f} jobs per engine CPU second, "
            f"{record.decision_points:,} decision points, "
            f"{int(record.preemptions.sum()):,} preemptions, {done:,} completed"
        )
    print(f"peak memory (engine runs): {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
