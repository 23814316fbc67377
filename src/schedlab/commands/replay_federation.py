"""``schedlab replay --federation FILE``: the trace dispatched across the sites of a federation
file, each running its own ordering and placement (see docs/federation.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from schedlab.commands.common import check_seconds, console, stdout
from schedlab.commands.option_scope import refuse_given
from schedlab.errors import InputError
from schedlab.output_dir import staged_dir
from schedlab.perf.models import parse_speed_factors

#: Replay options a federation refuses: each site names its own in the federation file, or
#: the federation does not model them (it takes --trace, --trace-format, --seed, --throughputs,
#: --speed, --restart-overhead, --until, --power-model, --node-base-w, --gpu-power, --out).
NOT_WITH_FEDERATION = (
    "cluster", "policy", "placement", "backfill", "param", "throughputs_fallback",
    "resize_overhead", "min_runtime", "grace", "models", "llm_profile", "time_limit", "slot",
    "topology", "net_sharing", "net_routing", "net_control", "ci", "ci_start", "ci_wrap", "pue",
    "power_limit", "energy_data", "failures", "checkpoint", "failure_reaction", "tenancy",
    "queues", "tenant_column", "derive_deserved", "unknown_tenant", "plugin", "config",
    "sharing", "mode", "window", "scale_gpus", "overcommit", "interference", "split_cap",
    "inflate", "sample", "filler", "keep_unscheduled",
)  # fmt: skip


def run_federation_command(args: argparse.Namespace) -> int:
    from schedlab.federation.run import FederationOptions, run_federation, write_federation

    refuse_given(
        args,
        NOT_WITH_FEDERATION,
        "does not apply with --federation (each site names its cluster, ordering, placement "
        "and carbon series in the federation file)",
    )
    if not args.trace:
        raise InputError("missing --trace (the jobs to dispatch across the federation)")
    for name in ("restart_overhead", "until"):
        value = getattr(args, name)
        if value is not None:
            check_seconds(f"--{name.replace('_', '-')}", value)
    seed = args.seed or 0
    if seed < 0:
        raise InputError(f"'--seed' must be ≥ 0 (got {seed})")
    options = FederationOptions(
        trace=args.trace,
        trace_format=args.trace_format,
        seed=seed,
        throughputs=args.throughputs,
        speed=parse_speed_factors(args.speed or ""),
        restart_overhead=args.restart_overhead or 0.0,
        until=args.until,
        power_model=args.power_model or "binary",
        gpu_power=args.gpu_power or "",
        node_base_w=args.node_base_w or 0.0,
    )
    config = {
        "federation": str(Path(args.federation).resolve()),
        "trace": str(Path(args.trace).resolve()),
        **({"trace_format": args.trace_format} if args.trace_format else {}),
        "seed": seed,
        **({"throughputs": args.throughputs} if args.throughputs else {}),
        **({"speed": args.speed} if args.speed else {}),
        "restart_overhead": options.restart_overhead,
        **({"until": args.until} if args.until is not None else {}),
        "power_model": options.power_model,
        **({"gpu_power": args.gpu_power} if args.gpu_power else {}),
        "node_base_w": options.node_base_w,
    }
    with staged_dir(args.out) as out:
        with console.status(f"replaying {Path(args.trace).stem} across {args.federation}"):
            result = run_federation(args.federation, options)
        data = write_federation(out, result, config)
    stdout.print(one_line(data["federation"]))
    console.print(
        f"wrote {args.out}/jobs.csv, sites.csv, timeseries.csv, summary.json, config.toml"
    )
    return 0


def _f(value: object, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def one_line(fed: dict) -> str:
    g = fed["global"]
    sites = ", ".join(f"{name} {b['jobs']}" for name, b in fed["sites"].items())
    return (
        f"{fed['dispatcher']}: {g['completed']}/{g['jobs']} jobs completed "
        f"({g['unplaceable']} unplaceable; {sites}), avg JCT {_f(g['jct']['mean'], ',.0f')} s, "
        f"avg queue {_f(g['queue_s']['mean'], ',.0f')} s, compute ${g['compute_usd']:,.2f}, "
        f"egress ${g['egress_usd']:,.2f}, {_f(g['carbon_kg'], ',.1f')} kg CO2e "
        f"({_f(g['carbon_g_per_kwh'], '.1f')} g/kWh)"
        + (f", {g['moves']} move{'' if g['moves'] == 1 else 's'}" if "moves" in g else "")
        + f"; {fed['wall_seconds']} s wall"
    )
