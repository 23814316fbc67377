"""``schedlab replay``: simulate a job trace over time under an ordering × placement policy."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from schedlab.commands.common import (
    add_plugin_option,
    console,
    read_config,
    stdout,
)
from schedlab.energy.options import ENERGY_CONFIG_KEYS, add_energy_options, energy_spec
from schedlab.errors import InputError
from schedlab.experiments.replay_run import ReplaySpec, run_replay, write_run
from schedlab.output_dir import staged_dir
from schedlab.perf.models import parse_speed_factors
from schedlab.policies.api import REPLAY
from schedlab.policies.registry import DEFAULT_PLACEMENT, ordering_names, placement_names
from schedlab.policies.wiring import build


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
    p.add_argument("--cluster", help="node-list CSV, TOML file, or NODESxGPUS[:MODEL]")
    p.add_argument("--trace", help="job trace file")
    p.add_argument(
        "--trace-format",
        help="trace format (default: detected from the header; see 'schedlab trace stats')",
    )
    p.add_argument("--policy", help=f"ordering: {', '.join(ordering_names())}")
    p.add_argument(
        "--placement", help=f"placement (default bestfit): {', '.join(placement_names())}"
    )
    p.add_argument("--backfill", action="store_true", help="EASY backfill behind a blocked head")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="ordering parameter, e.g. thresholds=3600,36000 (repeatable)",
    )
    p.add_argument("--seed", type=int, help="random seed (default 0)")
    p.add_argument(
        "--throughputs",
        help="folder of <model>.csv throughput tables (iterations/s by GPU count per batch "
        "size), or 'builtin' for schedlab's own scaling model",
    )
    p.add_argument("--speed", help="GPU speed factors vs the reference, e.g. V100=1,T4=0.4")
    p.add_argument(
        "--restart-overhead",
        type=float,
        help="seconds a preempted job needs to restart (default 0)",
    )
    p.add_argument(
        "--resize-overhead", type=float, help="seconds a resized job needs to resume (default 0)"
    )
    p.add_argument(
        "--slot",
        type=float,
        help="decide once per round of this many seconds (default: at every event)",
    )
    add_energy_options(p)
    add_plugin_option(p)
    p.add_argument(
        "--config",
        type=Path,
        help="a run's config.toml: repeat that run (options given on the command line win)",
    )
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.set_defaults(run=run)


#: Keys of a replay run's config.toml (what :func:`schedlab.experiments.replay_run.write_run`
#: records), with their types.
CONFIG_KEYS: dict[str, type] = {
    "cluster": str,
    "trace": str,
    "trace_format": str,
    "policy": str,
    "placement": str,
    "backfill": bool,
    "seed": int,
    "throughputs": str,
    "speed": str,
    "params": list,
    "restart_overhead": float,
    "resize_overhead": float,
    "slot": float,
    "plugin": list,
    **ENERGY_CONFIG_KEYS,
}


def parse_params(items: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"'--param' must look like KEY=VALUE (got {item!r})")
        params[key.strip()] = value.strip()
    return params


def spec_from_args(args: argparse.Namespace) -> ReplaySpec:
    """The run the command line asks for: defaults < ``--config`` < the options given."""
    cfg = read_config(args.config, CONFIG_KEYS) if args.config is not None else {}
    if cfg.get("slot") == 0:
        del cfg["slot"]  # how a config file says "at every event"

    def pick(key: str, default: object = None) -> Any:
        value = getattr(args, key)
        return value if value is not None else cfg.get(key, default)

    missing = [f"--{k}" for k in ("cluster", "trace", "policy") if pick(k) is None]
    if missing:
        raise InputError(
            f"missing {', '.join(missing)} (give it on the command line or in --config)"
        )
    for name in ("restart_overhead", "resize_overhead"):
        value = pick(name, 0.0)
        if not value >= 0:
            raise InputError(f"'--{name.replace('_', '-')}' must be ≥ 0 (got {value})")
    seed = pick("seed", 0)
    if seed < 0:
        raise InputError(f"'--seed' must be ≥ 0 (got {seed})")
    spec = ReplaySpec(
        cluster=pick("cluster"),
        trace=pick("trace"),
        policy=pick("policy"),
        placement=pick("placement", DEFAULT_PLACEMENT),
        backfill=args.backfill or bool(cfg.get("backfill", False)),
        seed=seed,
        trace_format=pick("trace_format") or None,
        throughputs=pick("throughputs") or None,
        speed=parse_speed_factors(pick("speed", "")),
        params={**parse_params(list(cfg.get("params", []))), **parse_params(args.param)},  # type: ignore[call-overload]
        restart_overhead=pick("restart_overhead", 0.0),
        resize_overhead=pick("resize_overhead", 0.0),
        slot=pick("slot"),
        plugins=tuple(dict.fromkeys([*cfg.get("plugin", []), *args.plugin])),  # type: ignore[misc]
        energy=energy_spec(args, cfg),
    )
    build(REPLAY, spec.choice)  # every refusal before any work
    return spec


def run(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    with staged_dir(args.out) as out:  # an unwritable --out fails here, before the run
        with console.status(f"replaying {spec.label} under {spec.policy}"):
            record = run_replay(spec)
        summary = write_run(out, spec, record)
    stdout.print(_one_line(summary))
    console.print(f"wrote {args.out}/jobs.csv, timeseries.csv, summary.json, config.toml")
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
