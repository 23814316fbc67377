"""Time the ``gandiva`` policy on the ElasticFlow traces: the whole ``schedlab replay`` command
and the engine alone (wall and CPU seconds), jobs/s, DSR.

Default runs: the 195-job testbed trace (16 × 8 A100, 240 s slot; the artifact meets 47
deadlines, DSR 0.241) and ITP cluster 4 (15.8k jobs, 128 × 8 A100, 60 s slot).

    python benchmarks/replay_gandiva.py [--param adjust=false ...] [--repeat 3]
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import SHARED, median_timing, peak_rss_mib, replay_argv, time_cli, timed

from schedlab.engines.replay import ReplayEngine
from schedlab.perf.models import ThroughputTable, read_throughput_dir
from schedlab.policies.registry import make_scheduler
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

ITP = SHARED / "traces" / "elasticflow-itp" / "simulation"
A100 = SHARED / "traces" / "elasticflow-artifact" / "throughputs_A100"
RUNS = (("195job.csv", "16x8:A100", 240.0), ("cluster04.csv", "128x8:A100", 60.0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--param", action="append", default=[], help="policy parameter key=value")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each (medians are printed)")
    args = ap.parse_args()
    if not ITP.is_dir() or not A100.is_dir():
        raise SystemExit(f"benchmark needs {ITP} and {A100} (not found)")
    params = dict(p.split("=", 1) for p in args.param)
    perf = ThroughputTable(read_throughput_dir(A100))
    for trace, spec, slot in RUNS:
        jobs = read_jobs(ITP / trace).jobs
        cluster = parse_cluster_spec(spec)
        runs: list[tuple[float, float]] = []
        for _ in range(args.repeat):
            policy, placement = make_scheduler("gandiva", params=params, slot=slot)
            engine = ReplayEngine(cluster, jobs, policy, placement, perf)
            with timed(runs):
                record = engine.run()
        timing = median_timing(runs)
        deadline = record.jobs.deadline
        has = ~np.isnan(deadline)
        met = int((record.end_time[has] <= deadline[has]).sum())
        print(
            f"{trace:>14} on {spec} ({slot:.0f} s slot): "
            f"{len(jobs) / timing.cpu:,.0f} jobs per engine CPU second, "
            f"{record.decision_points:,} decision points, "
            f"DSR {met / has.sum():.4f} ({met} of {int(has.sum())} deadlines met)"
        )
        extra = [f"--param={k}={v}" for k, v in params.items()]
        argv = replay_argv(spec, ITP / trace, "gandiva", "--slot", str(slot), *extra)
        whole = time_cli([*argv, "--throughputs", str(A100)], args.repeat)
        print("    " + whole.line("whole CLI run (schedlab replay)"))
        print("    " + timing.line("engine alone"))
    print(f"peak memory: {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
