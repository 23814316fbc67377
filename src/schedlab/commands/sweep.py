"""``schedlab sweep``: a grid of runs in parallel processes.

Pack grids (``--nodes`` and ``--pods``): pod lists × placement policies × seeds.
Replay grids (``--cluster`` and ``--traces``/``--synthetic``): traces × policies × placements ×
``--param`` variants × loads × seeds.

Both kinds are resumable (:mod:`schedlab.experiments.grid_dir`): every finished run is kept on
disk as it completes, and rerunning the same command into the same ``--out`` runs only what is
missing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from itertools import product
from pathlib import Path
from typing import Any

from schedlab.commands.common import (
    add_plugin_option,
    check_inflate,
    check_workers,
    console,
    parse_seeds,
    run_resumable,
    stdout,
)
from schedlab.commands.option_scope import given, refuse_given
from schedlab.commands.sharing_options import SHARING_GRID_ONLY, add_sharing_grid_options
from schedlab.commands.sweep_axes import (
    SPEC_OPTIONS,
    add_spec_options,
    axis_names,
    parse_loads,
    parse_param_grid,
    policy_variants,
    spec_fields,
    variant_label,
)
from schedlab.energy.options import ENERGY_OPTIONS, add_energy_options, energy_variants
from schedlab.errors import InputError
from schedlab.experiments.grid_dir import grid_runs, open_grid
from schedlab.experiments.load_scaling import scale_to_load
from schedlab.experiments.parallel import default_workers
from schedlab.experiments.replay_run import ReplaySpec, warn
from schedlab.experiments.workloads import FileWorkload
from schedlab.policies.api import PACK, REPLAY
from schedlab.policies.plugins import load_references
from schedlab.policies.protection import check_min_runtime
from schedlab.policies.registry import (
    pack_study_names,
    parameter_names,
    placement_classes,
    placement_parameter_names,
)
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.tenancy.config import DERIVE, UNKNOWN_TENANT, read_queue_file
from schedlab.tenancy.registry import NONE
from schedlab.tenancy.replay import TenancySpec, config_entries, config_of
from schedlab.traces.alibaba import read_node_list, read_pod_list
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs
from schedlab.traces.job_common import dropped_note

DEFAULT_REPLAY_POLICIES = ("fifo", "sjf", "tiresias")
#: Offered load of a generated workload when no --load is given.
DEFAULT_SYNTHETIC_LOAD = 0.8


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
        "--synthetic",
        type=int,
        metavar="JOBS",
        help="also replay a generated trace of JOBS jobs (Philly's GPU mix, daily arrival "
        "cycle, run times up to 12 h); each seed generates its own, offered exactly --load "
        f"(default {DEFAULT_SYNTHETIC_LOAD}) over its arrival window",
    )
    replay.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="policy parameter; repeat a key for alternatives (each a variant), different keys "
        "are crossed; applies to the policies that take it",
    )
    replay.add_argument(
        "--load",
        help="offered loads to rescale every trace's inter-arrival times to, e.g. 0.5,0.7,0.9",
    )
    add_spec_options(replay)
    replay.add_argument(
        "--tenancy",
        nargs="+",
        metavar="POLICY",
        help="share policies to cross with the orderings (each a variant 'tenancy=NAME'; "
        f"'{NONE}' is the run without tenancy); see docs/tenancy.md",
    )
    replay.add_argument("--queues", help="queue file for the tenancy runs (TOML or YAML)")
    replay.add_argument(
        "--tenant-column",
        action="append",
        default=None,
        metavar="COLUMN",
        help="trace column naming a job's queue (repeatable)",
    )
    replay.add_argument(
        "--derive-deserved", choices=DERIVE, help="demand-share: quotas from the trace's demand"
    )
    replay.add_argument("--unknown-tenant", choices=UNKNOWN_TENANT)
    add_energy_options(p, many=True)
    p.add_argument(
        "--policies",
        nargs="+",
        help="pack: placement policies (default: the six of the FGD study); replay: "
        "orderings, NAME or NAME+backfill (default: fifo sjf tiresias)",
    )
    p.add_argument("--seeds", help="seeds: 42-51, 1,2,3 or 7 (pack default 42-51, replay 0)")
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        help="output folder; rerunning the same grid into it resumes it (finished runs kept)",
    )
    p.add_argument(
        "--force", action="store_true", help="start --out over when it holds a different grid"
    )
    add_sharing_grid_options(p)
    fed = p.add_argument_group(
        "federation grid (--federation: federation files × --traces × --dispatchers × --seeds "
        "of 'replay --federation' runs; see docs/federation.md)"
    )
    fed.add_argument("--federation", nargs="+", metavar="FILE", help="federation TOML files")
    fed.add_argument(
        "--dispatchers", nargs="+", help="dispatchers to compare (default: all of them)"
    )
    add_plugin_option(p)
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="where the runs go: 'local' worker processes (default) or a Ray cluster "
        "(pip install 'ray>=2.9')",
    )
    p.add_argument(
        "--address",
        metavar="HOST:PORT",
        help="with --engine ray: the cluster's head node (default: RAY_ADDRESS, or a Ray of "
        "this machine alone)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="worker processes (default: the number of cores)",
    )
    p.set_defaults(run=run, sweep_parser=p)


#: Options of one kind of grid that the other kind has no use for (each refused there).
PACK_ONLY = ("inflate", "no_figures")
REPLAY_ONLY = (
    "trace_format",
    "placements",
    "synthetic",
    "param",
    "load",
    *(o.field for o in SPEC_OPTIONS),
    *ENERGY_OPTIONS,
)


def _runner(args: argparse.Namespace, local: Callable[..., Any], kind: Any) -> Callable[..., Any]:
    """The local process pool, or Ray with the run/land pair of the grid's ``kind`` module."""
    if args.engine == "local":
        return local
    from schedlab.experiments.ray_engine import run_all_ray

    def on_ray(tasks: Sequence[Any], _workers: int, on_done: Any = None, progress: Any = None):
        return run_all_ray(kind.run_task_files, tasks, kind.land_run, on_done, args.address)

    return on_ray


def run(args: argparse.Namespace) -> int:
    if args.address is not None and args.engine != "ray":
        raise InputError("'--address' is for '--engine ray'")
    if args.engine == "ray":
        from schedlab.experiments.ray_engine import check_address, require_ray

        require_ray()  # before any output: a missing extra is a one-line error, nothing written
        if given(args, getattr(args, "sweep_parser", None), "workers"):
            raise InputError(
                "'--workers' is for the local pool; with '--engine ray' the cluster's CPUs run "
                "the grid"
            )
        check_address(args.address)  # and an address no head node answers at, in seconds
    parser = getattr(args, "sweep_parser", None)
    if args.federation:
        from schedlab.commands.federation_grid import run_federation_grid

        if args.engine != "local":
            raise InputError("a federation grid runs on the local pool ('--engine local')")
        allowed = ("traces", "seeds", "out", "workers", "power_model", "federation",
                   "dispatchers", "force", "engine", "help")  # fmt: skip
        options = [a.dest for a in parser._actions] if parser is not None else []
        refuse_given(args, [d for d in options if d not in allowed],
                     "does not apply to a federation grid (--federation)", parser)  # fmt: skip
        return run_federation_grid(args)
    refuse_given(args, ("dispatchers",), "applies to federation grids (--federation) only", parser)
    pack_mode = args.nodes is not None or args.pods is not None
    replay_mode = args.cluster is not None or args.traces is not None
    if pack_mode == replay_mode:
        raise InputError(
            "give either --nodes and --pods (pack grid) or --cluster and --traces (replay grid)"
        )
    parser = getattr(args, "sweep_parser", None)
    if args.sharing:
        if pack_mode:
            raise InputError("a sharing grid takes --cluster and --traces, not --nodes/--pods")
        if args.engine != "local":
            raise InputError("a sharing grid runs on the local pool ('--engine local')")
        sharing_refused = [d for d in REPLAY_ONLY if d not in ("placements", *ENERGY_OPTIONS)]
        refuse_given(args, sharing_refused, "does not apply to a sharing grid (--sharing)", parser)
        refuse_given(args, (*PACK_ONLY, "policies"), "does not apply to a sharing grid", parser)
        from schedlab.commands.sharing_grid import run_sharing_grid  # the grid's modules, now

        return run_sharing_grid(args)
    refuse_given(args, SHARING_GRID_ONLY[1:], "applies to sharing grids (--sharing) only", parser)
    if pack_mode:
        refuse_given(args, REPLAY_ONLY, "applies to replay grids (--cluster) only", parser)
    else:
        refuse_given(args, PACK_ONLY, "applies to pack grids (--nodes, --pods) only", parser)
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
    manifest = {k: v for k, v in config.items() if k != "workers"}
    resumed = open_grid(args.out, manifest, args.force)  # an unwritable --out fails here
    from schedlab.commands.pack_grid import print_aggregate, run_pack_grid, write_grid_outputs
    from schedlab.experiments import pack_sweep

    runner = _runner(args, pack_sweep.run_grid, pack_sweep)
    with grid_runs(args.out, resumed):
        summaries, wall = run_pack_grid(
            workloads, policies, seeds, inflate, workers, args.plugin, keep=args.out, runner=runner
        )
    _, agg = write_grid_outputs(args.out, summaries, policies, inflate, config, not args.no_figures)
    print_aggregate(agg, inflate)
    console.print(
        f"{len(summaries)} runs in {wall:.1f} s with {workers} worker(s); "
        f"wrote {args.out}/results.csv, aggregate.csv, curves.csv"
        + ("" if args.no_figures else ", figures/, report.html")
    )
    return 0


def tenancy_axis(args: argparse.Namespace) -> list[TenancySpec]:
    """The tenancy variants of a replay grid (``[none]`` without ``--tenancy``), checked."""
    names = list(dict.fromkeys(args.tenancy or [NONE]))
    if args.queues is not None and NONE in names and len(names) == 1:
        names = [read_queue_file(args.queues).policy]
    specs = []
    for name in names:
        shared = name != NONE
        spec = TenancySpec(
            name,
            queues=args.queues if shared else None,
            tenant_key=tuple(args.tenant_column or ()) if shared else (),
            derive_deserved=args.derive_deserved if shared else None,
            unknown_tenant=args.unknown_tenant if shared else None,
        ).check()
        if spec.enabled:
            config_of(spec)  # a bad queue file fails here, before any run
        specs.append(spec)
    if not any(s.enabled for s in specs) and (
        args.queues or args.tenant_column or args.derive_deserved or args.unknown_tenant
    ):
        raise InputError("the tenancy options need '--tenancy POLICY ...'")
    return specs


def tenancy_config(specs: list[TenancySpec]) -> dict[str, object]:
    """What the grid's config.toml records of the tenancy axis (nothing without it)."""
    if not any(s.enabled for s in specs):
        return {}
    first = next(s for s in specs if s.enabled)
    return {
        "tenancy": [s.policy for s in specs],
        **{k: v for k, v in config_entries(first).items() if k != "tenancy"},
    }


def split_backfill(name: str) -> tuple[str, bool]:
    """``fifo+backfill`` → ("fifo", True)."""
    if name.endswith("+backfill"):
        return name[: -len("+backfill")], True
    return name, False


def _check_synthetic_span(jobs: int, loads: Sequence[float], total_gpus: int) -> None:
    """Warn when the generated arrivals would span less than twice the longest run time: such
    a run is mostly the cluster filling and draining, and its load is mostly not on the
    cluster while the jobs arrive."""
    from schedlab.experiments.replay_sweep import SyntheticJobs

    for load in loads or [DEFAULT_SYNTHETIC_LOAD]:
        source = SyntheticJobs(jobs, load)
        span = source.arrival_span(total_gpus)
        if span < 2 * source.duration_max:
            warn(
                f"{jobs} generated jobs at load {load:g} on {total_gpus} GPUs arrive over about "
                f"{span / 3600:.1f} h, less than twice the longest run time "
                f"({source.duration_max / 3600:g} h): the runs are mostly warm-up and drain; "
                "give more jobs"
            )
            return


def _run_replay(args: argparse.Namespace) -> int:
    # The grid runner and what it reads, imported when a replay grid runs (not for --help).
    from schedlab.experiments import replay_sweep
    from schedlab.experiments.replay_sweep import (
        SyntheticJobs,
        finished_run,
        run_grid,
        staged_task,
    )

    if args.cluster is None and args.topology is None:
        raise InputError("a replay grid needs --cluster (or --topology) and --traces")
    if args.traces is None and args.synthetic is None:
        raise InputError("a replay grid needs --cluster and --traces (or --synthetic)")
    seeds = parse_seeds("0" if args.seeds is None else args.seeds)
    workers = check_workers(args.workers)
    fields, options, axes = spec_fields(args)
    energies = energy_variants(args)  # each checked: a bad series fails before any run
    loads = parse_loads(args.load)
    orders = [split_backfill(n) for n in dict.fromkeys(args.policies or DEFAULT_REPLAY_POLICIES)]
    placements = list(dict.fromkeys(args.placements))
    plugins = tuple(args.plugin)
    load_references(plugins)
    placement_keys = {p: placement_parameter_names(p) for p in placements}
    variants = policy_variants(
        [n for n, _ in orders], parse_param_grid(args.param), set().union(*placement_keys.values())
    )

    def cell_params(name: str, placement: str) -> list[dict]:
        """The policy's variants with only the placement parameters this placement takes."""
        own = (parameter_names(name) or set()) | placement_keys[placement]
        kept = ({k: v for k, v in params.items() if k in own} for params in variants[name])
        return list({variant_label(p): p for p in kept}.values())

    for name, backfill in orders:  # every refusal of every combination before any run
        for placement in placements:
            for params in cell_params(name, placement):
                choice = PolicyChoice(name, placement, backfill, params, fields["slot"], plugins)
                check_min_runtime(
                    name, build(REPLAY, choice).scheduler, fields["min_runtime"], fields["grace"]
                )
    tenancies = tenancy_axis(args)
    given = parse_cluster_spec(args.cluster) if args.cluster is not None else None
    topologies = axes.get("topology", [fields["topology"]])
    clusters = []
    for topology in topologies:
        # A topology that disagrees fails here; without --cluster its hosts are the cluster.
        if topology is not None:
            from schedlab.experiments.replay_network import check_static_wiring, topology_cluster

            topo, cluster = topology_cluster(topology, given)
            for placement in placements:
                check_static_wiring(topo, topology, placement_classes().get(placement))
        else:
            cluster = given
        assert cluster is not None
        clusters.append(cluster)
    cluster = clusters[0]
    traces = list(args.traces or [])
    labels = [Path(t).stem for t in traces]
    if args.synthetic is not None:
        if args.synthetic < 2:
            raise InputError(
                f"'--synthetic' must be ≥ 2 jobs, so that they arrive over a time span that "
                f"the load is measured over (got {args.synthetic})"
            )
        labels.append(f"synthetic-{args.synthetic}")
        _check_synthetic_span(args.synthetic, loads, min(c.total_gpus for c in clusters))
    if len(set(labels)) != len(labels):
        raise InputError("two '--traces' files share a file name; results are keyed by it")
    for trace in traces:
        jobs = read_jobs(trace, args.trace_format).jobs  # fail on a bad row before any run
        note = dropped_note(jobs, "; each run's summary.json counts them under 'dropped_jobs'")
        if note is not None:
            warn(note)
        for load, gpus in product(loads, {c.total_gpus for c in clusters}):
            scale_to_load(jobs, gpus, load, trace)
    config = {
        **({"cluster": args.cluster} if args.cluster is not None else {}),
        "traces": [str(Path(t).resolve()) for t in traces],
        **({"synthetic": args.synthetic} if args.synthetic is not None else {}),
        **({"trace_format": args.trace_format} if args.trace_format else {}),
        "policies": [n + ("+backfill" if b else "") for n, b in orders],
        "placements": placements,
        "params": list(dict.fromkeys(args.param)),
        **({"loads": loads} if loads else {}),
        "seeds": seeds,
        **options,
        **{k: getattr(args, k) for k in ENERGY_OPTIONS if getattr(args, k) is not None},
        **({"plugin": list(plugins)} if plugins else {}),
        **tenancy_config(tenancies),
    }
    resumed = open_grid(args.out, config, args.force)  # an unwritable --out fails here
    short = axis_names(axes.get("topology", []))
    for topology, name in short.items():
        console.print(f"topology={name}: {topology}")
    sources: list[tuple[str, str | None]] = [(t, None) for t in traces]
    if args.synthetic is not None:
        sources.append((labels[-1], "synthetic"))
    tasks = []
    for (trace, kind), (name, backfill), placement in product(sources, orders, placements):
        cells = product(
            cell_params(name, placement),
            topologies,
            energies,
            tenancies,
            loads or [DEFAULT_SYNTHETIC_LOAD if kind else None],
            seeds,
        )
        for params, topology, (energy_name, energy), tenancy, load, seed in cells:
            spec = ReplaySpec(
                args.cluster or "", trace, name, placement, backfill, seed, args.trace_format,
                params=params, plugins=plugins, **{**fields, "topology": topology},
                energy=energy, tenancy=tenancy,
            )  # fmt: skip
            synthetic = SyntheticJobs(args.synthetic, load, seed) if kind else None
            axis = {
                **({"topology": short[topology]} if "topology" in axes else {}),
                **energy_name,
                **({"tenancy": tenancy.policy} if tenancy.enabled else {}),
            }
            variant = ";".join(filter(None, (variant_label(params), variant_label(axis))))
            tasks.append(staged_task(spec, args.out, args.out, synthetic, variant, load))
    runner = _runner(args, run_grid, replay_sweep)
    with grid_runs(args.out, resumed):
        summaries, done, wall = run_resumable(
            tasks, finished_run, runner, workers, "replays", args.out
        )
    from schedlab.commands.replay_grid import done_line, print_replay_table, write_replay_grid

    table = write_replay_grid(args.out, summaries, config)
    print_replay_table(table)
    stdout.print(done_line("replays", len(tasks) - done, done, wall, workers, args.out, table))
    return 0
