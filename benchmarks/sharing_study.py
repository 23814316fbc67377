"""Placement in time on a crowded openb cluster: fgd vs bestfit vs random, filler off and on.

The pods created after day 115 (``--window 9936000:``) replayed on the GPU-node cluster scaled to
64 GPUs (same node mix) with inter-arrival gaps ÷ 2.5, so the offered load is about 0.8 and pods
queue. For each placement policy, with and without one ParaSet-like elastic filler, it reports
the LS queueing delay, BE evictions, the time-weighted allocation rate and fragmentation ratio,
and writes ``study.csv`` (one row per run) into ``--out``.

    python benchmarks/sharing_study.py --out runs/sharing-study
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from _common import output_folder, print_whole_process, require_openb

from schedlab.engines.filler import FillerJob
from schedlab.engines.shared_time import SharingConfig, run_sharing
from schedlab.metrics.sharing_metrics import run_summary
from schedlab.model.cluster_scale import scale_cluster
from schedlab.traces.alibaba import read_node_list
from schedlab.traces.alibaba_sharing import compress, offered_load, read_shared_pods, window

POLICIES = ("fgd", "bestfit", "random")
#: Enough work to run from the first arrival to the last (the run stops with the last pod).
FILLER = FillerJob("paraset", work=1e9, r_min=1, r_max=32, m_min=100, m_max=500, cpu_milli=1000)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--compress", type=float, default=2.5)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    openb = require_openb()
    cluster = scale_cluster(read_node_list(openb / "openb_node_list_gpu_node.csv"), args.gpus)
    pods = read_shared_pods(openb / "openb_pod_list_default.csv")
    pods = compress(window(pods, 9_936_000, float("inf")), args.compress)
    rho = offered_load(pods, cluster.total_gpus)
    print(f"{len(pods)} pods on {cluster.size} nodes / {cluster.total_gpus} GPUs, load {rho:.2f}")
    rows = []
    settings = {"gpus": args.gpus, "compress": args.compress, "seed": args.seed}
    with output_folder(args.out, "sharing study", settings) as out:
        for policy in POLICIES:
            for filler in (False, True):
                config = SharingConfig(
                    policy,
                    seed=args.seed,
                    filler=(FILLER,) if filler else (),
                    sample=60.0,
                    filler_outlives_pods=False,
                )
                s = run_summary(run_sharing(cluster, pods, config))
                ls, be, cl = s["classes"]["LS"], s["classes"]["BE"], s["cluster"]
                row = {
                    "policy": policy,
                    "filler": filler,
                    "ls_wait_mean_s": ls["queueing_delay_s"]["mean"],
                    "ls_wait_p99_s": ls["queueing_delay_s"]["p99"],
                    "be_wait_mean_s": be["queueing_delay_s"]["mean"],
                    "be_evictions": be["evictions"],
                    "allocation_pct": cl["mean_allocation_pct"],
                    "filler_pct": cl["mean_filler_pct"],
                    "frag_ratio_pct": cl["mean_frag_ratio_pct"],
                    "unfinished": sum(c["unfinished"] for c in s["classes"].values()),
                    "wall_s": s["wall_seconds"],
                }
                rows.append(row)
                print(row)
        table = pd.DataFrame(rows)
        table.to_csv(out / "study.csv", index=False)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
    print_whole_process("the sharing study")
