"""``schedlab demo``: the whole pack study on a generated openb-like cluster, no files needed."""

from __future__ import annotations

import argparse
from pathlib import Path

from schedlab.commands.common import (
    check_inflate,
    check_out_dir,
    check_workers,
    console,
    parse_seeds,
)
from schedlab.commands.pack_grid import print_aggregate, run_pack_grid, write_grid_outputs
from schedlab.errors import InputError
from schedlab.experiments.pack_sweep import default_workers
from schedlab.experiments.workloads import SyntheticWorkload
from schedlab.policies.registry import pack_study_names

DEFAULT_NODES = 1213
MAX_NODES = 20_000


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="compare all placement policies on a generated cluster (no files needed)",
        description=(
            "Generate an openb-like GPU cluster and pod list (node mix by GPU model, CPU-only, "
            "GPU-sharing and multi-GPU pods in the proportions of the Alibaba GPU-2023 trace), "
            "run every placement policy with the pack protocol over a few seeds, print a "
            "comparison table and write the figures."
        ),
    )
    p.add_argument(
        "--nodes",
        type=int,
        default=DEFAULT_NODES,
        help=f"generated GPU nodes (default {DEFAULT_NODES}, the size of the real trace)",
    )
    p.add_argument("--seeds", default="42-44", help="pack seeds (default 42-44)")
    p.add_argument(
        "--workload-seed",
        type=int,
        default=0,
        help="seed of the cluster and pod generator (default 0)",
    )
    p.add_argument(
        "--inflate", type=float, default=1.3, help="GPU request ÷ capacity (default 1.3)"
    )
    p.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="worker processes (default: the number of cores)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("schedlab-demo"),
        help="output folder (default ./schedlab-demo)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.nodes <= MAX_NODES:
        raise InputError(f"'--nodes' must be in 1..{MAX_NODES} (got {args.nodes})")
    if args.workload_seed < 0:
        raise InputError(f"'--workload-seed' must be ≥ 0 (got {args.workload_seed})")
    seeds = parse_seeds(args.seeds)
    inflate = check_inflate(args.inflate)
    workers = check_workers(args.workers)
    out = check_out_dir(args.out)
    workload = SyntheticWorkload(args.nodes, args.workload_seed)
    cluster, pods = workload.load()
    stats = pods.stats()
    console.print(
        f"generated {cluster.size} nodes / {cluster.total_gpus} GPUs and {stats['pods']} pods "
        f"({stats['cpu_only']} CPU-only, {stats['gpu_sharing']} GPU-sharing, "
        f"{stats['gpu_request']:.0f} GPUs requested)"
    )
    policies = pack_study_names()
    summaries, wall = run_pack_grid([workload], policies, seeds, inflate, workers)
    config = {**workload.describe(), "policies": policies, "seeds": seeds, "inflate": inflate}
    _, agg = write_grid_outputs(out, summaries, policies, inflate, config)
    print_aggregate(agg, inflate)
    console.print(f"{len(summaries)} runs in {wall:.1f} s; figures in {out}/figures/")
    return 0
