"""Time one pack run on the default openb trace: pods/s, wall seconds, peak memory.

The FGD paper's own simulator takes about 10 minutes for this run on 2 vCPU (~55 ms per pod).

    python benchmarks/pack_fgd.py [--policy fgd] [--seed 42] [--inflate 1.3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from _common import peak_rss_mib, require_openb

from schedlab.engines.pack import PackConfig, run_pack
from schedlab.traces.alibaba import read_node_list, read_pod_list


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="fgd")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--inflate", type=float, default=1.3)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    openb = require_openb()
    t0 = time.perf_counter()
    cluster = read_node_list(openb / "openb_node_list_gpu_node.csv")
    pods = read_pod_list(openb / "openb_pod_list_default.csv")
    load = time.perf_counter() - t0
    print(f"read trace: {load:.3f} s ({cluster.size} nodes, {len(pods)} pods)")
    walls = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        result = run_pack(cluster, pods, PackConfig(args.policy, args.seed, args.inflate))
        walls.append(time.perf_counter() - t0)
    best, n = min(walls), len(result.pods)
    print(f"policy {args.policy}, seed {args.seed}, inflate {args.inflate}: {n} pods")
    print(f"wall seconds: best {best:.3f}, all {', '.join(f'{w:.3f}' for w in walls)}")
    print(f"pods/s: {n / best:,.0f}  ({1000 * best / n:.3f} ms per pod)")
    print(f"unallocated GPU % at 100: {result.summary()['unallocated_gpu_pct']['100']:.3f}")
    print(f"rescored candidate states: {int(result.extra['rescored_states']):,}")
    print(f"peak memory: {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
