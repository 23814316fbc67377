"""Time the fixed-size deadline baselines (Themis, Chronus) on the ElasticFlow traces.

    python benchmarks/replay_fixed_size.py [--traces 195job cluster05 cluster04]
                                           [--policies themis chronus]

The 195-job testbed trace runs on 16×8 A100 with 240 s leases; the ITP clusters 5 (3,629 jobs)
and 4 (15,802 jobs) on 64×8 and 128×8 A100 with 60 s leases, as in the ElasticFlow artifact.
Prints the whole ``schedlab replay`` command and the engine alone (wall and CPU seconds), jobs/s,
decision points and the deadline satisfactory ratio.
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import SHARED, median_timing, peak_rss_mib, replay_argv, time_cli, timed

from schedlab.engines.replay import ReplayEngine
from schedlab.model.snapshot import REJECTED
from schedlab.perf.models import ThroughputTable, read_throughput_dir
from schedlab.policies.fixed_size.chronus import Chronus
from schedlab.policies.fixed_size.themis import Themis
from schedlab.policies.registry import make_placement
from schedlab.policies.scheduler import SchedulingPolicy
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

ITP = SHARED / "traces" / "elasticflow-itp" / "simulation"
TABLES = SHARED / "traces" / "elasticflow-artifact" / "throughputs_A100"
#: trace → (cluster, slot seconds)
SETTINGS = {
    "195job": ("16x8:A100", 240.0),
    "cluster05": ("64x8:A100", 60.0),
    "cluster04": ("128x8:A100", 60.0),
}
POLICIES: dict[str, type[SchedulingPolicy]] = {"themis": Themis, "chronus": Chronus}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument("--policies", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    ap.add_argument("--repeat", type=int, default=3, help="runs of each (medians are printed)")
    args = ap.parse_args()
    if not ITP.is_dir() or not TABLES.is_dir():
        raise SystemExit(f"benchmark needs {ITP} and {TABLES} (not found)")
    perf = ThroughputTable(read_throughput_dir(TABLES))
    for trace in args.traces:
        spec, slot = SETTINGS[trace]
        jobs = read_jobs(ITP / f"{trace}.csv").jobs
        cluster = parse_cluster_spec(spec)
        for name in args.policies:
            policy = POLICIES[name]()
            policy.slot = slot  # type: ignore[attr-defined]
            runs: list[tuple[float, float]] = []
            for _ in range(args.repeat):
                engine = ReplayEngine(cluster, jobs, policy, make_placement("bestfit"), perf)
                with timed(runs):
                    rec = engine.run()
            timing = median_timing(runs)
            has = np.isfinite(rec.jobs.deadline)
            met = int((rec.end_time[has] <= rec.jobs.deadline[has]).sum())
            extra = ""
            if isinstance(policy, Chronus):
                extra = "  plans: " + ", ".join(f"{k} {v}" for k, v in policy.solves.items())
            print(
                f"{name:>8} {trace:>10} ({spec}, {slot:.0f} s): "
                f"{len(jobs) / timing.cpu:7,.0f} jobs per engine CPU second, "
                f"{rec.decision_points:,} decision points, "
                f"DSR {met / max(1, int(has.sum())):.3f} ({met}/{int(has.sum())}), "
                f"{int((rec.status == REJECTED).sum())} rejected{extra}"
            )
            argv = replay_argv(spec, ITP / f"{trace}.csv", name, "--slot", str(slot))
            whole = time_cli([*argv, "--throughputs", str(TABLES)], args.repeat)
            print("    " + whole.line("whole CLI run (schedlab replay)"))
            print("    " + timing.line("engine alone"))
    print(f"peak memory: {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
