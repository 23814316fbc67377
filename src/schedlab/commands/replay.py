"""``schedlab replay``: simulate a job trace over time under an ordering × placement policy."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from schedlab.commands.common import (
    MIN_SLOT,
    add_plugin_option,
    check_seconds,
    console,
    read_config,
    stdout,
)
from schedlab.commands.option_scope import flag, refuse_given
from schedlab.commands.sharing_options import SHARING_ONLY, add_sharing_options
from schedlab.commands.tenancy_options import TENANCY_HELP, add_tenancy_options
from schedlab.energy.options import ENERGY_CONFIG_KEYS, add_energy_options, energy_spec
from schedlab.errors import InputError
from schedlab.experiments.replay_run import FALLBACKS, ReplaySpec, run_replay, write_run
from schedlab.failures.options import (
    FAILURE_CONFIG_KEYS,
    add_failure_options,
    check_failure_options,
)
from schedlab.network.options import NET_CONTROLS, REPLAY_ROUTING, RULES, resolve_net_control
from schedlab.output_dir import staged_dir
from schedlab.perf.models import parse_speed_factors
from schedlab.policies.api import REPLAY
from schedlab.policies.catalog import names
from schedlab.policies.protection import check_min_runtime
from schedlab.policies.registry import DEFAULT_PLACEMENT
from schedlab.policies.wiring import build
from schedlab.tenancy.spec import CONFIG_KEYS as TENANCY_CONFIG_KEYS
from schedlab.tenancy.spec import spec_from as tenancy_spec

NETWORK_HELP = """\
network model (--topology; without it nothing below applies and replay runs as before):
  Every job is data-parallel. Per iteration it computes C seconds (from the scaling model's
  per-model profile, or the trace's compute_time) and synchronises its gradient (per-model bytes,
  or the trace's gradient_bytes) with a collective (ring by default; hd, a2a, ps, ina) over the
  links its placement implies: NICs, leaf uplinks, spines, cores. Its iteration time is
      T = C + max(0, D - overlap*C)
  where D is the collective's time with the links it shares slowed by --net-sharing:
  isolated (no contention), random-phase (default; others' duty cycles), worst-case (equal split
  whenever shared), maxmin (progressive filling), interleaved (only excess demand hurts),
  priority (strict between the trace's net_priority classes). Trace durations are taken as
  compute time: a job runs at C/T of its trace speed (with --throughputs builtin, T replaces the
  model's own all-reduce). Speeds change only when a job starts, stops or is resized.
  Not modelled: packet-level effects (congestion control, incast, queueing delay), pipeline or
  tensor-parallel traffic, storage and control traffic, link failures.
examples:
  schedlab replay --topology leafspine:leaves=2,spines=2,hosts_per_leaf=4,g=8,m=1,nic_gbps=100 \\
      --trace jobs.csv --policy fifo --placement consolidate --out runs/net
  schedlab replay --cluster 250x8:V100 --trace philly.csv --policy fifo \\
      --topology leafspine:leaves=25,spines=8,hosts_per_leaf=10,g=8,m=1,nic_gbps=100 \\
      --net-sharing worst-case --out runs/philly-net"""


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
            "by '+', e.g. 250x8:V100 or 16x8:A100+8x4:T4.\n\n"
            + NETWORK_HELP
            + "\n\n"
            + TENANCY_HELP
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--cluster", help="node-list CSV, TOML file, or NODESxGPUS[:MODEL]")
    p.add_argument(
        "--federation",
        metavar="FILE",
        help="dispatch the trace across the sites of a federation TOML file (each with its own "
        "cluster, ordering, placement, carbon series and prices; see docs/federation.md)",
    )
    p.add_argument("--trace", help="job trace file")
    p.add_argument(
        "--trace-format",
        help="trace format (default: detected from the header; see 'schedlab trace stats')",
    )
    p.add_argument(
        "--policy",
        help=f"an ordering ({', '.join(names('ordering', REPLAY))}; any placement, optional "
        f"--backfill) or a whole-cluster policy ({', '.join(names('sizing', REPLAY))}); "
        "see 'schedlab policies'",
    )
    p.add_argument(
        "--placement",
        help=f"placement (default bestfit): {', '.join(names('placement', REPLAY))}",
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
        "size), a throughput matrix (Gavel's .json: steps/s per job type and GPU type), or "
        "'builtin' for schedlab's own scaling model",
    )
    p.add_argument(
        "--apps",
        help="folder of measured application tables (Pollux's <app>/placements.csv, "
        "scalability.csv, validation-<batch>.csv): jobs name their application in model_name "
        "and train its whole progress (goodput-aware replay: pollux, sia, pollux-sim-tiresias, "
        "optimus-oracle)",
    )
    p.add_argument(
        "--throughputs-fallback",
        choices=FALLBACKS,
        default=None,
        help="run jobs the throughput tables do not cover (unknown model, missing batch size, "
        "blank cell) on linear scaling of their trace duration, with a warning, instead of "
        "refusing the run",
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
        "--min-runtime",
        type=float,
        metavar="SECONDS",
        help="a run lasts this long before the policy may preempt it, as 'serve slurm "
        "--min-runtime' (default 0)",
    )
    p.add_argument(
        "--grace",
        type=float,
        metavar="SECONDS",
        help="a job the policy wants gone runs on this long (its signal to checkpoint) and is "
        "preempted only if the policy still wants it then, as 'serve slurm --grace' (default 0)",
    )
    p.add_argument(
        "--models",
        help="TOML file of extra [models.NAME] tables for an llm trace (see docs/llm.md)",
    )
    p.add_argument(
        "--llm-profile",
        help="calibration profile of the planner for LLM jobs that name none (default generic)",
    )
    p.add_argument(
        "--until",
        type=float,
        metavar="SECONDS",
        help="stop simulating at this time; jobs still queued or running are recorded as "
        "unfinished (default: run until every job is done)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        metavar="SECONDS",
        help="a run of a job without its own time_limit is killed after this long, as Slurm's "
        "--time / DefaultTime (default: no limit); a generic trace may also give time_limit, "
        "array and dependency per job (README: Slurm's habits in replay)",
    )
    p.add_argument(
        "--slot",
        type=float,
        help="decide once per round of this many seconds (default: at every event)",
    )
    net = p.add_argument_group("network (see docs/network.md)")
    net.add_argument(
        "--topology",
        help="a network under the cluster: a TOML file or NAME:key=value,... (leafspine, vclos, "
        "ocs, fattree, titan, crux-clos, lingjun:PATH); --cluster may then be left out",
    )
    net.add_argument(
        "--net-sharing",
        choices=RULES,
        help="how jobs sharing a link slow each other (default random-phase)",
    )
    net.add_argument(
        "--net-routing",
        choices=REPLAY_ROUTING,
        help="ecmp: one hashed path per flow aggregate, seeded by --seed (default); "
        "spray: bytes split evenly over all shortest paths; source: at each (re)start a job "
        "reserves one least-loaded shortest path per pair of its leaves, which no other job's "
        "flows use (where none is free it shares the least-held link)",
    )
    net.add_argument(
        "--net-control",
        choices=NET_CONTROLS,
        help="who decides paths: ecmp or spray (the same as --net-routing with that value), or "
        "crux: at every start and stop a Crux controller routes each cross-leaf flow aggregate "
        "and sets priority levels that --net-sharing priority enforces (default: --net-routing)",
    )
    add_energy_options(p)
    add_failure_options(p)
    add_tenancy_options(p)
    add_plugin_option(p)
    p.add_argument(
        "--config",
        type=Path,
        help="a run's config.toml: repeat that run (options given on the command line win)",
    )
    p.add_argument("--out", required=True, type=Path, help="output folder")
    add_sharing_options(p)
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
    "apps": str,
    "speed": str,
    "params": list,
    "restart_overhead": float,
    "resize_overhead": float,
    "min_runtime": float,
    "grace": float,
    "time_limit": float,
    "slot": float,
    "until": float,
    "models": str,
    "llm_profile": str,
    "plugin": list,
    "throughputs_fallback": str,
    "topology": str,
    "net_sharing": str,
    "net_routing": str,
    "net_control": str,
    **ENERGY_CONFIG_KEYS,
    **FAILURE_CONFIG_KEYS,
    **TENANCY_CONFIG_KEYS,
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

    required = ("trace", "policy") if pick("topology") else ("cluster", "trace", "policy")
    missing = [f"--{k}" for k in required if pick(k) is None]
    if missing:
        raise InputError(
            f"missing {', '.join(missing)} (give it on the command line or in --config)"
        )
    for name in ("restart_overhead", "resize_overhead", "min_runtime", "grace"):
        check_seconds(f"--{name.replace('_', '-')}", pick(name, 0.0))
    until = pick("until")
    if until is not None:
        check_seconds("--until", until)
    time_limit = pick("time_limit")
    if time_limit is not None and not (time_limit > 0 and math.isfinite(time_limit)):
        raise InputError(f"'--time-limit' must be > 0 seconds (got {time_limit})")
    slot = pick("slot")
    if slot is not None:
        check_seconds("--slot", slot, MIN_SLOT)
    seed = pick("seed", 0)
    if seed < 0:
        raise InputError(f"'--seed' must be ≥ 0 (got {seed})")
    refuse_given(args, SHARING_ONLY, "applies to 'replay --sharing' only")
    for net in ("net_control", "net_routing", "net_sharing"):
        if pick(net) and not pick("topology"):
            raise InputError(f"'{flag(net)}' needs '--topology'")
    control, routing, sharing = resolve_net_control(
        pick("net_control"), pick("net_routing"), pick("net_sharing")
    )
    failures = pick("failures")  # "" is refused, not taken for "none"
    check_failure_options(failures, pick("checkpoint"), pick("failure_reaction"))
    if pick("apps") and pick("throughputs"):
        raise InputError("'--apps' and '--throughputs' are two performance models: give one")
    fallback = pick("throughputs_fallback") or None  # config.toml writes "" for none
    if fallback is not None and not pick("throughputs"):
        raise InputError("'--throughputs-fallback' needs '--throughputs'")
    spec = ReplaySpec(
        cluster=pick("cluster") or "",
        trace=pick("trace"),
        policy=pick("policy"),
        placement=pick("placement", DEFAULT_PLACEMENT),
        backfill=args.backfill or bool(cfg.get("backfill", False)),
        seed=seed,
        trace_format=pick("trace_format") or None,
        throughputs=pick("throughputs") or None,
        apps=pick("apps") or None,
        speed=parse_speed_factors(pick("speed", "")),
        params={**parse_params(list(cfg.get("params", []))), **parse_params(args.param)},  # type: ignore[call-overload]
        restart_overhead=pick("restart_overhead", 0.0),
        resize_overhead=pick("resize_overhead", 0.0),
        min_runtime=pick("min_runtime", 0.0),
        grace=pick("grace", 0.0),
        time_limit=time_limit,
        slot=slot,
        plugins=tuple(dict.fromkeys([*cfg.get("plugin", []), *args.plugin])),  # type: ignore[misc]
        throughputs_fallback=fallback,
        topology=pick("topology") or None,
        net_sharing=sharing,
        net_routing=routing,
        net_control=control,
        energy=energy_spec(args, cfg),
        until=until,
        models=pick("models") or None,
        llm_profile=pick("llm_profile") or None,
        failures=failures or None,
        checkpoint=pick("checkpoint") or None,
        failure_reaction=pick("failure_reaction") or None,
        tenancy=tenancy_spec(pick),
    )
    # every refusal before any work
    check_min_runtime(
        spec.policy, build(REPLAY, spec.choice).scheduler, spec.min_runtime, spec.grace
    )
    return spec


def run(args: argparse.Namespace) -> int:
    if args.federation:  # several sites, imported only for them
        from schedlab.commands.replay_federation import run_federation_command

        return run_federation_command(args)
    if args.sharing:  # the sharing engine, imported only for it
        from schedlab.commands.replay_sharing import run_sharing_command

        return run_sharing_command(args)
    spec = spec_from_args(args)
    with staged_dir(args.out) as out:  # an unwritable --out fails here, before the run
        with console.status(f"replaying {spec.label} under {spec.policy}"):
            record = run_replay(spec)
        summary = write_run(out, spec, record)
    for warning in record.policy_report.get("warnings", []):
        console.print(f"schedlab: warning: {warning}", markup=False)
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
