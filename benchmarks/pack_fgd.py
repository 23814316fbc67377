"""Time one pack run on the default openb trace: the whole ``schedlab pack`` command (with and
without figures) and the engine alone; pods/s, peak memory.

The FGD paper's own simulator takes about 10 minutes for this run on 2 vCPU (~55 ms per pod).

    python benchmarks/pack_fgd.py [--policy fgd] [--seed 42] [--inflate 1.3] [--repeat 5]
"""

from __future__ import annotations

import argparse

from _common import median_timing, peak_rss_mib, require_openb, time_cli, timed

from schedlab.engines.pack import PackConfig, run_pack
from schedlab.traces.alibaba import read_node_list, read_pod_list


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="fgd")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--inflate", type=float, default=1.3)
    ap.add_argument("--repeat", type=int, default=5, help="runs of each (medians are printed)")
    args = ap.parse_args()
    openb = require_openb()
    nodes, pod_list = openb / "openb_node_list_gpu_node.csv", openb / "openb_pod_list_default.csv"
    argv = ["pack", "--nodes", str(nodes), "--pods", str(pod_list), "--policy", args.policy]
    argv += ["--seed", str(args.seed), "--inflate", str(args.inflate), "--out", "run"]
    print(f"policy {args.policy}, seed {args.seed}, inflate {args.inflate}")
    print(time_cli(argv, args.repeat).line("whole CLI run (schedlab pack, with figures)"))
    print(time_cli([*argv, "--no-figures"], args.repeat).line("whole CLI run, --no-figures"))
    cluster, pods = read_node_list(nodes), read_pod_list(pod_list)
    runs: list[tuple[float, float]] = []
    for _ in range(args.repeat):
        with timed(runs):
            result = run_pack(cluster, pods, PackConfig(args.policy, args.seed, args.inflate))
    engine = median_timing(runs)
    n = len(result.pods)
    print(engine.line("engine alone (run_pack)"))
    print(f"{n} pods: {n / engine.cpu:,.0f} pods per engine CPU second")
    print(f"unallocated GPU % at 100: {result.summary()['unallocated_gpu_pct']['100']:.3f}")
    print(f"rescored candidate states: {int(result.extra['rescored_states']):,}")
    print(f"peak memory (engine runs): {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
