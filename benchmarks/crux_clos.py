"""Wall time and peak memory of replay with --net-control crux on the full crux-clos fabric
(173 ToRs, 2,768 GPUs), against the same workload with ECMP and random-phase sharing.

The workload is the Crux study's (schedlab.experiments.crux_study.clos_workload). Every start
and completion re-plans paths, priorities and levels for all running jobs, so the cost grows
with jobs × running jobs.

python benchmarks/crux_clos.py [--jobs 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import peak_rss_mib, print_whole_process

from schedlab.experiments.crux_study import TOPOLOGY, clos_workload
from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.network.generators import parse_topology


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "workload.csv"
        total = parse_topology(TOPOLOGY).total_gpus
        clos_workload(args.jobs, total, args.seed).to_csv(trace, index=False)
        for label, options in (
            ("ecmp + random-phase", {"net_sharing": "random-phase"}),
            ("crux", {"net_control": "crux", "net_sharing": "priority"}),
        ):
            spec = ReplaySpec(
                cluster="",
                trace=str(trace),
                policy="fifo",
                seed=args.seed,
                topology=TOPOLOGY,
                **options,  # type: ignore[arg-type]
            )
            t0, c0 = time.perf_counter(), time.process_time()
            record = run_replay(spec)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            net = record.network
            assert net is not None
            plans = int(net.extra.get("crux_plans", 0))
            print(
                f"{label}: {args.jobs} jobs on {total} GPUs, {wall:.1f} s wall, {cpu:.1f} s CPU"
                + (f", {plans} plans, {int(net.extra['crux_reroutes'])} re-routes" if plans else "")
                + f", {net.footprints} footprints"
            )
    print(f"peak memory {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
    print_whole_process("the Crux study")
