"""Time a replay of a large synthetic Philly-like trace: the whole ``schedlab replay`` command
on the trace written as a job CSV, and the engine alone; jobs/s, peak memory.

Default: 1,000,000 jobs on 10,000 GPUs (1,250 nodes × 8) at 80 % offered load under fifo.

    python benchmarks/replay_synthetic.py [--jobs 1000000] [--cluster 1250x8:V100] [--load 0.8]
        [--repeat 1] [--no-cli]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from _common import median_timing, peak_rss_mib, time_cli, timed

from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.model.jobs import JobTable
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.synthetic_jobs import SyntheticJobSpec, generate_jobs, load_for_gpus


def write_trace(jobs: JobTable, path: Path) -> None:
    """The jobs as schedlab's job CSV, numbers written exactly (``repr`` reads back the same)."""
    rows = zip(
        jobs.job_id.tolist(),
        map(repr, jobs.submit_time.tolist()),
        map(str, jobs.num_gpus.tolist()),
        map(repr, jobs.duration.tolist()),
        jobs.user.tolist(),
        strict=True,
    )
    body = "\n".join(map(",".join, rows))
    path.write_text("job_id,submit_time,num_gpus,duration,user\n" + body + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--cluster", default="1250x8:V100")
    ap.add_argument("--load", type=float, default=0.8)
    ap.add_argument("--policy", default="fifo")
    ap.add_argument("--placement", default="bestfit")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each (medians are printed)")
    ap.add_argument("--no-cli", action="store_true", help="time the engine alone")
    args = ap.parse_args()
    cluster = parse_cluster_spec(args.cluster)
    spec = load_for_gpus(SyntheticJobSpec(jobs=args.jobs), cluster.total_gpus, args.load)
    jobs = generate_jobs(spec, np.random.default_rng(0))
    print(
        f"{len(jobs):,} jobs (mean gap {spec.mean_interarrival:.1f} s, {args.load:.0%} load of "
        f"{cluster.total_gpus:,} GPUs), {args.policy}/{args.placement}"
    )
    if not args.no_cli:
        with tempfile.TemporaryDirectory(prefix="schedlab-bench-") as tmp:
            trace = Path(tmp) / "synthetic.csv"
            write_trace(jobs, trace)
            argv = ["replay", "--cluster", args.cluster, "--trace", str(trace)]
            argv += ["--policy", args.policy, "--placement", args.placement, "--out", "run"]
            print(time_cli(argv, args.repeat).line("whole CLI run (schedlab replay)"))
    run = ReplaySpec(
        cluster=args.cluster, trace="synthetic", policy=args.policy, placement=args.placement
    )
    runs: list[tuple[float, float]] = []
    for _ in range(args.repeat):
        with timed(runs):
            record = run_replay(run, cluster, jobs)
    engine = median_timing(runs)
    done = int(np.isfinite(record.end_time).sum())
    print(engine.line("engine alone (run_replay)"))
    print(
        f"{len(jobs) / engine.cpu:,.0f} jobs per engine CPU second, "
        f"{record.decision_points:,} decision points, {done:,} completed"
    )
    print(f"peak memory (engine runs): {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
