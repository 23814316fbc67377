"""``schedlab replay``: simulate a job trace over time under an ordering × placement policy."""

from __future__ import annotations

import argparse
from pathlib import Path

from schedlab.commands.common import MIN_SLOT, check_out_dir, check_seconds, console, stdout
from schedlab.errors import InputError
from schedlab.experiments.replay_run import FALLBACKS, ReplaySpec, run_replay, write_run
from schedlab.perf.models import parse_speed_factors
from schedlab.policies.registry import ordering_names, placement_names


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay",
        help="simulate a job trace over time (queueing, gang starts, preemption)",
        description=(
            "Replay a training-job trace on a cluster: jobs arrive at their submit times, wait in "
            "the queue the ordering policy ranks, start as gangs where the placement policy puts "
            "them, may be preempted, and finish when their work is done. Writes jobs.csv, "
            "timeseries.csv, summary.json and config.toml into the output folder."
        ),
        epilog=(
            "examples:\n"
            "  schedlab replay --cluster 64x8:V100 --trace philly.csv --policy tiresias "
            "--out runs/tiresias\n"
            "  schedlab replay --cluster cluster.toml --trace jobs.csv --trace-format generic "
            "--policy fifo --backfill --placement consolidate --out runs/fifo-bf\n\n"
            "--cluster takes a node-list CSV, a TOML cluster file, or NODESxGPUS[:MODEL] joined "
            "by '+', e.g. 250x8:V100 or 16x8:A100+8x4:T4."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--cluster", required=True, help="node-list CSV, TOML file, or NODESxGPUS[:MODEL]"
    )
    p.add_argument("--trace", required=True, help="job trace file")
    p.add_argument(
        "--trace-format",
        help="trace format (default: detected from the header; see 'schedlab trace stats')",
    )
    p.add_argument("--policy", required=True, help=f"ordering: {', '.join(ordering_names())}")
    p.add_argument(
        "--placement",
        default="bestfit",
        help=f"placement (default bestfit): {', '.join(placement_names())}",
    )
    p.add_argument("--backfill", action="store_true", help="EASY backfill behind a blocked head")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="ordering parameter, e.g. thresholds=3600,36000 (repeatable)",
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument(
        "--throughputs",
        help="folder of <model>.csv throughput tables (iterations/s by GPU count per batch "
        "size), or 'builtin' for schedlab's own scaling model",
    )
    p.add_argument(
        "--throughputs-fallback",
        choices=FALLBACKS,
        default=None,
        help="run jobs the throughput tables do not cover (unknown model, missing batch size, "
        "blank cell) on linear scaling of their trace duration, with a warning, instead of "
        "refusing the run",
    )
    p.add_argument(
        "--speed", default="", help="GPU speed factors vs the reference, e.g. V100=1,T4=0.4"
    )
    p.add_argument(
        "--restart-overhead",
        type=float,
        default=0.0,
        help="seconds a preempted job needs to restart (default 0)",
    )
    p.add_argument(
        "--resize-overhead",
        type=float,
        default=0.0,
        help="seconds a resized job needs to resume (default 0)",
    )
    p.add_argument(
        "--slot",
        type=float,
        default=None,
        help="decide once per round of this many seconds (default: at every event)",
    )
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.set_defaults(run=run)


def parse_params(items: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"'--param' must look like KEY=VALUE (got {item!r})")
        params[key.strip()] = value.strip()
    return params


def spec_from_args(args: argparse.Namespace) -> ReplaySpec:
    for name in ("restart_overhead", "resize_overhead"):
        check_seconds(f"--{name.replace('_', '-')}", getattr(args, name))
    if args.slot is not None:
        check_seconds("--slot", args.slot, MIN_SLOT)
    if args.seed < 0:
        raise InputError(f"'--seed' must be ≥ 0 (got {args.seed})")
    if args.throughputs_fallback is not None and not args.throughputs:
        raise InputError("'--throughputs-fallback' needs '--throughputs'")
    return ReplaySpec(
        cluster=args.cluster,
        trace=args.trace,
        policy=args.policy,
        placement=args.placement,
        backfill=args.backfill,
        seed=args.seed,
        trace_format=args.trace_format,
        throughputs=args.throughputs,
        speed=parse_speed_factors(args.speed),
        params=parse_params(args.param),
        restart_overhead=args.restart_overhead,
        resize_overhead=args.resize_overhead,
        slot=args.slot,
        throughputs_fallback=args.throughputs_fallback,
    )


def run(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    out = check_out_dir(args.out)
    with console.status(f"replaying {spec.label} under {spec.policy}"):
        record = run_replay(spec)
    summary = write_run(out, spec, record)
    stdout.print(_one_line(summary))
    console.print(f"wrote {out}/jobs.csv, timeseries.csv, summary.json, config.toml")
    return 0


def _fmt(value: object, unit: str = "s") -> str:
    return "n/a" if value is None else f"{float(value):,.0f} {unit}"  # type: ignore[arg-type]


def _one_line(s: dict[str, object]) -> str:
    dsr = f", DSR {s['dsr']:.3f}" if s.get("dsr") is not None else ""
    util = s.get("gpu_utilization")
    return (
        f"{s['policy']}/{s['placement']}: {s['completed']}/{s['jobs']} jobs completed, "
        f"avg JCT {_fmt(s['avg_jct'])}, p99 {_fmt(s['p99_jct'])}, "
        f"avg queue delay {_fmt(s['avg_queue_delay'])}, "
        f"GPU utilisation {'n/a' if util is None else f'{100 * float(util):.1f}%'}{dsr}; "
        f"{s['wall_seconds']} s wall"
    )
