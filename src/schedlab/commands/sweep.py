"""``schedlab sweep``: a pack grid of pod lists × policies × seeds in parallel processes."""

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
from schedlab.experiments.workloads import FileWorkload
from schedlab.policies.registry import make_placement, pack_study_names
from schedlab.traces.alibaba import read_node_list, read_pod_list


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="run pack over pod lists × policies × seeds in parallel",
        description=(
            "Run every combination of pod list, policy and seed with the pack protocol, in "
            "parallel worker processes. Writes results.csv (a row per run), aggregate.csv "
            "(mean and sd over seeds), curves.csv (binned curves) and figures/<pod list>/."
        ),
        epilog=(
            "example: schedlab sweep --nodes openb_node_list_gpu_node.csv --pods "
            "openb_pod_list_default.csv --policies random bestfit fgd --seeds 42-51 "
            "--inflate 1.3 --out runs/grid --workers 2"
        ),
    )
    p.add_argument("--nodes", required=True, help="node list CSV")
    p.add_argument("--pods", required=True, nargs="+", help="one or more pod list CSVs")
    p.add_argument(
        "--policies",
        nargs="+",
        default=pack_study_names(),
        help="placement policies (default: the six of the FGD study)",
    )
    p.add_argument("--seeds", default="42-51", help="seeds: 42-51, 1,2,3 or 7 (default 42-51)")
    p.add_argument(
        "--inflate", type=float, default=1.3, help="GPU request ÷ capacity (default 1.3)"
    )
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="worker processes (default: the number of cores)",
    )
    p.add_argument("--no-figures", action="store_true", help="skip the PNG/SVG figures")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    seeds = parse_seeds(args.seeds)
    inflate = check_inflate(args.inflate)
    workers = check_workers(args.workers)
    out = check_out_dir(args.out)
    policies = list(dict.fromkeys(args.policies))
    for name in policies:
        make_placement(name)
    # Validate every input file up front: a bad row fails now, not in a worker an hour in.
    read_node_list(args.nodes)
    for path in args.pods:
        read_pod_list(path)
    labels = [Path(p).stem for p in args.pods]
    if len(set(labels)) != len(labels):
        raise InputError("two '--pods' files share a file name; results are keyed by it")
    workloads = [FileWorkload(args.nodes, p) for p in args.pods]
    summaries, wall = run_pack_grid(workloads, policies, seeds, inflate, workers)
    config = {
        "nodes": str(Path(args.nodes).resolve()),
        "pods": [str(Path(p).resolve()) for p in args.pods],
        "policies": policies,
        "seeds": seeds,
        "inflate": inflate,
        "workers": workers,
    }
    _, agg = write_grid_outputs(out, summaries, policies, inflate, config, not args.no_figures)
    print_aggregate(agg, inflate)
    console.print(
        f"{len(summaries)} runs in {wall:.1f} s with {workers} worker(s); "
        f"wrote {out}/results.csv, aggregate.csv, curves.csv"
        + ("" if args.no_figures else ", figures/")
    )
    return 0
