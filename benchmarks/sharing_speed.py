"""Time the sharing engine: the default openb pod list with its real times, and a large synthetic
mixed-class workload (pods resampled from it, Poisson arrivals at an offered load) on the full
1,213-node cluster. Prints wall and CPU seconds (the machine may be shared: CPU seconds are what
compares across runs), pods/s, peak memory.

    python benchmarks/sharing_speed.py [--policy fgd] [--pods 1000000] [--load 0.8] [--sample 3600]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import peak_rss_mib, require_openb, time_cli

from schedlab.engines.shared_time import SharingConfig, run_sharing
from schedlab.traces.alibaba import read_node_list
from schedlab.traces.alibaba_sharing import read_shared_pods
from schedlab.traces.synthetic_sharing import synthetic_workload


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="fgd")
    ap.add_argument("--pods", type=int, default=1_000_000, help="synthetic pods (0: skip)")
    ap.add_argument("--load", type=float, default=0.8, help="offered load of the synthetic pods")
    ap.add_argument("--sample", type=float, default=3600.0, help="time-series sampling, s")
    ap.add_argument("--repeat", type=int, default=3, help="whole-command runs (median printed)")
    args = ap.parse_args()
    openb = require_openb()
    cluster = read_node_list(openb / "openb_node_list_gpu_node.csv")
    t0 = time.perf_counter()
    base = read_shared_pods(openb / "openb_pod_list_default.csv")
    print(f"read pod list: {time.perf_counter() - t0:.2f} s ({len(base)} pods)")
    for policy in dict.fromkeys([args.policy, "bestfit"]):
        t0, c0 = time.perf_counter(), time.process_time()
        r = run_sharing(cluster, base, SharingConfig(policy))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"default pod list, real times, {policy}: engine alone {wall:.2f} s wall "
            f"(CPU {cpu:.2f} s); peak {r.peak_milli / 1000:.2f} GPUs at {r.peak_time:,.0f} s"
        )
        argv = ["replay", "--sharing", "--placement", policy, "--out", "run"]
        argv += ["--cluster", str(openb / "openb_node_list_gpu_node.csv")]
        argv += ["--trace", str(openb / "openb_pod_list_default.csv")]
        print("  " + time_cli(argv, args.repeat).line("whole CLI run (schedlab replay --sharing)"))
    if args.pods:
        workload = synthetic_workload(
            base, args.pods, args.load, cluster.total_gpus, np.random.default_rng(0)
        )
        t0, c0 = time.perf_counter(), time.process_time()
        r = run_sharing(cluster, workload, SharingConfig(args.policy, sample=args.sample))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        states = np.bincount(r.state, minlength=5).tolist()
        print(
            f"synthetic {args.pods:,} pods, load {args.load}, {args.policy}: {wall:.1f} s, "
            f"CPU {cpu:.1f} s ({args.pods / wall:,.0f} pods/s); states {states}; evictions "
            f"{int(r.evictions.sum())}; peak {r.peak_milli / 1000:.2f} GPUs"
        )
    print(f"peak memory: {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
