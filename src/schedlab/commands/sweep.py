"""``schedlab sweep``: a grid of runs in parallel processes.

Pack grids (``--nodes`` and ``--pods``): pod lists × placement policies × seeds.
Replay grids (``--cluster`` and ``--traces``): traces × orderings × placements × seeds.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from schedlab.commands.common import (
    add_plugin_option,
    check_inflate,
    check_seconds,
    check_workers,
    console,
    parse_seeds,
    progress_bar,
    stdout,
)
from schedlab.commands.pack_grid import print_aggregate, run_pack_grid, write_grid_outputs
from schedlab.commands.replay_grid import print_replay_table, write_replay_grid
from schedlab.errors import InputError
from schedlab.experiments.pack_sweep import default_workers
from schedlab.experiments.replay_network import topology_cluster
from schedlab.experiments.replay_run import ReplaySpec
from schedlab.experiments.replay_sweep import run_grid, staged_task
from schedlab.experiments.workloads import FileWorkload
from schedlab.network.sharing import DEFAULT_RULE, RULES
from schedlab.output_dir import staged_dir
from schedlab.policies.api import PACK, REPLAY
from schedlab.policies.registry import pack_study_names
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.traces.alibaba import read_node_list, read_pod_list
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

DEFAULT_REPLAY_POLICIES = ("fifo", "sjf", "tiresias")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a grid of pack or replay runs in parallel",
        description=(
            "Pack grid (--nodes, --pods): every pod list × placement policy × seed with the pack "
            "protocol; writes results.csv, aggregate.csv, curves.csv and figures/. "
            "Replay grid (--cluster, --traces): every trace × ordering × placement × seed; "
            "writes results.csv, one folder per run under runs/, and one HTML report per trace."
        ),
        epilog=(
            "examples:\n"
            "  schedlab sweep --nodes openb_node_list_gpu_node.csv --pods "
            "openb_pod_list_default.csv --seeds 42-51 --inflate 1.3 --out runs/pack\n"
            "  schedlab sweep --cluster 64x8:V100 --traces philly.csv --policies fifo "
            "fifo+backfill sjf tiresias --placements bestfit consolidate --out runs/replay"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pack = p.add_argument_group("pack grid")
    pack.add_argument("--nodes", help="node list CSV")
    pack.add_argument("--pods", nargs="+", help="one or more pod list CSVs")
    pack.add_argument("--inflate", type=float, default=1.3, help="GPU request ÷ capacity (1.3)")
    pack.add_argument("--no-figures", action="store_true", help="skip the PNG/SVG figures")
    replay = p.add_argument_group("replay grid")
    replay.add_argument("--cluster", help="node-list CSV, TOML file, or NODESxGPUS[:MODEL]")
    replay.add_argument("--traces", nargs="+", help="one or more job trace files")
    replay.add_argument("--trace-format", help="format of every trace (default: detected)")
    replay.add_argument(
        "--placements", nargs="+", default=["bestfit"], help="placement policies (default bestfit)"
    )
    replay.add_argument(
        "--restart-overhead",
        type=float,
        default=0.0,
        help="seconds a preempted job needs to restart (default 0)",
    )
    replay.add_argument(
        "--topology", help="a network under --cluster for every run (see 'replay --help')"
    )
    replay.add_argument(
        "--net-sharing", choices=RULES, help="with --topology: sharing rule (default random-phase)"
    )
    p.add_argument(
        "--policies",
        nargs="+",
        help="pack: placement policies (default: the six of the FGD study); replay: "
        "orderings, NAME or NAME+backfill (default: fifo sjf tiresias)",
    )
    p.add_argument("--seeds", help="seeds: 42-51, 1,2,3 or 7 (pack default 42-51, replay 0)")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    add_plugin_option(p)
    p.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="worker processes (default: the number of cores)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    pack_mode = args.nodes is not None or args.pods is not None
    replay_mode = args.cluster is not None or args.traces is not None
    if pack_mode == replay_mode:
        raise InputError(
            "give either --nodes and --pods (pack grid) or --cluster and --traces (replay grid)"
        )
    return _run_pack(args) if pack_mode else _run_replay(args)


def _run_pack(args: argparse.Namespace) -> int:
    if args.nodes is None or args.pods is None:
        raise InputError("a pack grid needs both --nodes and --pods")
    seeds = parse_seeds("42-51" if args.seeds is None else args.seeds)
    inflate = check_inflate(args.inflate)
    workers = check_workers(args.workers)
    policies = list(dict.fromkeys(args.policies or pack_study_names()))
    for name in policies:
        build(PACK, PolicyChoice(name, plugins=tuple(args.plugin)))
    # Validate every input file up front: a bad row fails now, not in a worker an hour in.
    read_node_list(args.nodes)
    for path in args.pods:
        read_pod_list(path)
    labels = [Path(p).stem for p in args.pods]
    if len(set(labels)) != len(labels):
        raise InputError("two '--pods' files share a file name; results are keyed by it")
    workloads = [FileWorkload(args.nodes, p) for p in args.pods]
    config = {
        "nodes": str(Path(args.nodes).resolve()),
        "pods": [str(Path(p).resolve()) for p in args.pods],
        "policies": policies,
        "seeds": seeds,
        "inflate": inflate,
        "workers": workers,
        **({"plugin": list(args.plugin)} if args.plugin else {}),
    }
    with staged_dir(args.out) as out:  # an unwritable --out fails here, before the runs
        summaries, wall = run_pack_grid(workloads, policies, seeds, inflate, workers, args.plugin)
        _, agg = write_grid_outputs(out, summaries, policies, inflate, config, not args.no_figures)
    print_aggregate(agg, inflate)
    console.print(
        f"{len(summaries)} runs in {wall:.1f} s with {workers} worker(s); "
        f"wrote {args.out}/results.csv, aggregate.csv, curves.csv"
        + ("" if args.no_figures else ", figures/")
    )
    return 0


def split_backfill(name: str) -> tuple[str, bool]:
    """``fifo+backfill`` → ("fifo", True)."""
    if name.endswith("+backfill"):
        return name[: -len("+backfill")], True
    return name, False


def _run_replay(args: argparse.Namespace) -> int:
    if args.cluster is None or args.traces is None:
        raise InputError("a replay grid needs both --cluster and --traces")
    seeds = parse_seeds("0" if args.seeds is None else args.seeds)
    workers = check_workers(args.workers)
    check_seconds("--restart-overhead", args.restart_overhead)
    orders = [split_backfill(n) for n in dict.fromkeys(args.policies or DEFAULT_REPLAY_POLICIES)]
    placements = list(dict.fromkeys(args.placements))
    plugins = tuple(args.plugin)
    for name, backfill in orders:  # every refusal of every combination before any run
        for placement in placements:
            build(REPLAY, PolicyChoice(name, placement, backfill, plugins=plugins))
    cluster = parse_cluster_spec(args.cluster)
    if args.topology is not None:
        topology_cluster(args.topology, cluster)  # a topology that disagrees fails here
    elif args.net_sharing is not None:
        raise InputError("'--net-sharing' needs '--topology'")
    net_sharing = args.net_sharing or DEFAULT_RULE
    labels = [Path(t).stem for t in args.traces]
    if len(set(labels)) != len(labels):
        raise InputError("two '--traces' files share a file name; results are keyed by it")
    for trace in args.traces:
        read_jobs(trace, args.trace_format)  # fail on a bad row before any run starts
    config = {
        "cluster": args.cluster,
        "traces": [str(Path(t).resolve()) for t in args.traces],
        "policies": [n + ("+backfill" if b else "") for n, b in orders],
        "placements": placements,
        "seeds": seeds,
        "restart_overhead": args.restart_overhead,
        **({"plugin": list(plugins)} if plugins else {}),
        **(
            {"topology": args.topology, "net_sharing": net_sharing}
            if args.topology is not None
            else {}
        ),
    }
    with staged_dir(args.out) as out:  # an unwritable --out fails here, before the runs
        tasks = []
        for trace in args.traces:
            for name, backfill in orders:
                for placement in placements:
                    for seed in seeds:
                        spec = ReplaySpec(
                            cluster=args.cluster,
                            trace=trace,
                            policy=name,
                            placement=placement,
                            backfill=backfill,
                            seed=seed,
                            trace_format=args.trace_format,
                            restart_overhead=args.restart_overhead,
                            plugins=plugins,
                            topology=args.topology,
                            net_sharing=net_sharing,
                        )
                        tasks.append(staged_task(spec, out, args.out))
        started = time.perf_counter()
        with progress_bar(transient=False) as bar:
            job = bar.add_task(f"{len(tasks)} replays on {workers} worker(s)", total=len(tasks))
            summaries = run_grid(tasks, workers, on_done=lambda _s: bar.advance(job))
        wall = time.perf_counter() - started
        table = write_replay_grid(out, summaries, config)
    print_replay_table(table)
    stdout.print(
        f"{len(summaries)} replays in {wall:.1f} s with {workers} worker(s); "
        f"wrote {args.out}/results.csv and report-<trace>.html"
    )
    return 0
