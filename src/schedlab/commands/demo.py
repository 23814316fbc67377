"""``schedlab demo``: the whole pack study on a generated openb-like cluster, no files needed."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.table import Table

from schedlab.commands.common import check_inflate, check_workers, console, parse_seeds
from schedlab.errors import InputError
from schedlab.experiments.parallel import default_workers
from schedlab.experiments.workloads import SyntheticWorkload
from schedlab.output_dir import staged_dir
from schedlab.policies.registry import pack_study_names
from schedlab.results import write_csv

DEFAULT_NODES = 1213
DEFAULT_JOBS = 5000
DEFAULT_LOAD = 0.9
#: The replay part: a Philly-like job stream on this cluster, under these orderings.
REPLAY_CLUSTER = "32x8:V100"
#: Run times capped at two days (mean 8,000 s) so that a few thousand jobs keep the cluster busy
#: for most of the run instead of leaving one month-long job alone at the end.
REPLAY_MEAN_DURATION = 8_000.0
REPLAY_MAX_DURATION = 172_800.0
REPLAY_POLICIES = (("fifo", False), ("fifo", True), ("sjf", False), ("tiresias", False))
#: The deadline part: ElasticFlow and its ablation steps on generated deadline jobs, with the
#: built-in scaling model standing in for measured throughput tables.
DEADLINE_CLUSTER = "16x8:A100"
DEADLINE_JOBS = 400
DEADLINE_SLOT = 240.0
MAX_NODES = 20_000


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="compare all placement policies on a generated cluster (no files needed)",
        description=(
            "Generate an openb-like GPU cluster and pod list (node mix by GPU model, CPU-only, "
            "GPU-sharing and multi-GPU pods in the proportions of the Alibaba GPU-2023 trace), "
            "run every placement policy with the pack protocol over a few seeds, print a "
            "comparison table and write the figures; then replay a generated Philly-like job "
            "trace under fifo, fifo+backfill, sjf and tiresias and write an HTML report; then "
            "compare ElasticFlow with its ablation steps on generated deadline jobs."
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
        "--jobs",
        type=int,
        default=DEFAULT_JOBS,
        help=f"jobs in the generated replay trace (default {DEFAULT_JOBS}; 0 skips the replay)",
    )
    p.add_argument(
        "--load",
        type=float,
        default=DEFAULT_LOAD,
        help=f"offered GPU load of the replay trace (default {DEFAULT_LOAD})",
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
    if args.jobs < 0 or args.jobs > 1_000_000:
        raise InputError(f"'--jobs' must be in 0..1000000 (got {args.jobs})")
    if not 0 < args.load <= 10:
        raise InputError(f"'--load' must be in (0, 10] (got {args.load})")
    if args.workload_seed < 0:
        raise InputError(f"'--workload-seed' must be ≥ 0 (got {args.workload_seed})")
    seeds = parse_seeds(args.seeds)
    inflate = check_inflate(args.inflate)
    workers = check_workers(args.workers)
    with staged_dir(args.out) as out:  # an unwritable --out fails here, before any run
        _pack_part(args.nodes, args.workload_seed, seeds, inflate, workers, out, args.out)
        if args.jobs > 0:
            replay = (out / "replay", args.out / "replay")
            _replay_part(args.jobs, args.load, args.workload_seed, workers, *replay)
            _deadline_part(args.workload_seed, workers, out / "deadlines", args.out / "deadlines")
    return 0


def _pack_part(
    nodes: int,
    workload_seed: int,
    seeds: list[int],
    inflate: float,
    workers: int,
    out: Path,
    final: Path,
) -> None:
    """Every placement policy on a generated openb-like cluster: the comparison table and the
    figures (written to ``out``, which becomes ``final``)."""
    # Each part imports what it runs when it runs (``demo --help`` loads none of it).
    from schedlab.commands.pack_grid import print_aggregate, run_pack_grid, write_grid_outputs

    workload = SyntheticWorkload(nodes, workload_seed)
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
    console.print(f"{len(summaries)} runs in {wall:.1f} s; figures in {final}/figures/")


def _deadline_part(seed: int, workers: int, out: Path, final: Path) -> None:
    """ElasticFlow against its ablation steps on generated deadline jobs: DSR per policy."""
    from schedlab.experiments.deadline_study import ABLATION_POLICIES, DeadlineRun, run_study
    from schedlab.experiments.replay_run import BUILTIN_THROUGHPUTS

    workload = f"synthetic:{seed}:{DEADLINE_JOBS}"
    runs = [
        DeadlineRun.of(
            "demo",
            workload,
            "deadlines",
            DEADLINE_CLUSTER,
            name,
            DEADLINE_SLOT,
            BUILTIN_THROUGHPUTS,
        )
        for name in ABLATION_POLICIES
    ]
    console.print(
        f"replaying {DEADLINE_JOBS} generated deadline jobs on {DEADLINE_CLUSTER} "
        f"(built-in scaling model, {DEADLINE_SLOT:.0f} s slot) under {len(runs)} policies"
    )
    started = time.perf_counter()
    rows = run_study(runs, workers)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "results.csv", rows)
    table = Table(title="deadline satisfactory ratio")
    for column in ("policy", "DSR", "met", "rejected", "cluster efficiency", "seconds"):
        table.add_column(column, justify="left" if column == "policy" else "right")
    for row in rows.itertuples(index=False):
        table.add_row(
            row.policy,
            f"{row.dsr:.3f}",
            f"{row.met}/{row.deadline_jobs}",
            str(row.rejected),
            f"{row.cluster_efficiency:.2f}",
            f"{row.wall_seconds:.1f}",
        )
    console.print(table)
    console.print(
        f"{len(rows)} replays in {time.perf_counter() - started:.1f} s; "
        f"table in {final}/results.csv"
    )


def _replay_part(jobs: int, load: float, seed: int, workers: int, out: Path, final: Path) -> None:
    """Orderings compared on a generated Philly-like trace, with an HTML report."""
    from schedlab.commands.replay_grid import print_replay_table, write_replay_grid
    from schedlab.experiments.replay_run import ReplaySpec
    from schedlab.experiments.replay_sweep import SyntheticJobs, run_grid, staged_task

    source = SyntheticJobs(jobs, load, seed, REPLAY_MEAN_DURATION, REPLAY_MAX_DURATION, "poisson")
    tasks = []
    for name, backfill in REPLAY_POLICIES:
        spec = ReplaySpec(
            cluster=REPLAY_CLUSTER, trace=source.label, policy=name, backfill=backfill, seed=seed
        )
        tasks.append(staged_task(spec, out, final, source))
    console.print(
        f"replaying {jobs} Philly-like jobs at {load:.0%} load on {REPLAY_CLUSTER} "
        f"under {len(tasks)} orderings"
    )
    started = time.perf_counter()
    summaries = run_grid(tasks, workers)
    table = write_replay_grid(
        out, summaries, {"cluster": REPLAY_CLUSTER, "jobs": jobs, "load": load, "seed": seed}
    )
    print_replay_table(table)
    console.print(
        f"{len(summaries)} replays in {time.perf_counter() - started:.1f} s; "
        f"report in {final}/report-{source.label}.html"
    )
