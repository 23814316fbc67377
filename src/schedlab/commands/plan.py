"""``schedlab plan``: how to split a large model over an allocation, and how fast it then trains.

``schedlab plan --model llama3-70b --cluster 64x8:H100 --batch-tokens 4M`` enumerates every plan
(tensor, pipeline, sequence/context and data parallel, ZeRO stage, micro-batch, recompute),
prints the fastest that fits with its time and memory breakdowns, and says how many plans each
constraint rejected. ``schedlab plan calibrate --points FILE`` fits a profile to measured points.
The formulas are in ``docs/llm.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from schedlab.commands.common import console, stdout
from schedlab.errors import InputError

_CLUSTER = re.compile(r"(\d+)x(\d+):([A-Za-z0-9_.-]+)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan",
        help="split a large model over GPUs: fastest plan that fits, and why others do not",
        description=(
            "Enumerate the parallelism plans of a dense transformer on an allocation (TP, PP, "
            "SP/CP, DP, ZeRO, micro-batch, recompute), estimate memory per GPU and step time, and "
            "print the fastest that fits. See docs/llm.md."
        ),
        epilog=(
            "examples:\n"
            "  schedlab plan --model llama3-70b --cluster 64x8:H100 --batch-tokens 4M\n"
            "  schedlab plan --model internlm-7b --cluster 8x8:A100 --batch 512 --profile "
            "internevo-a100 --top 5\n"
            "  schedlab plan --model gpt-sc21-18b --cluster 32x8:A100 --plan t=8,p=1,r=full "
            "--profile megatron-sc21-a100 --nic-gbps 1600\n"
            "  schedlab plan calibrate --points points.toml --out my-profile.toml"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", help="catalog model (e.g. llama3-405b) or one from --models")
    p.add_argument("--models", type=Path, help="TOML file of extra [models.NAME] tables")
    p.add_argument("--cluster", help="the allocation: NODESxGPUS:MODEL, e.g. 64x8:H100")
    p.add_argument("--topology", help="a network (TOML or NAME:key=value,...): hosts, NICs, paths")
    p.add_argument("--gpu", help="GPU model with --topology (default A100)")
    batch = p.add_mutually_exclusive_group()
    batch.add_argument("--batch-tokens", help="global batch in tokens (4M, 16M, 4194304)")
    batch.add_argument("--batch", type=int, help="global batch in sequences")
    p.add_argument(
        "--flexible-batch",
        action="store_true",
        help="round the batch to the nearest multiple of d·b instead of requiring it",
    )
    p.add_argument("--plan", dest="fixed", help="fix plan fields, e.g. t=8,p=4,z=1,r=selective")
    p.add_argument("--profile", default="generic", help="calibration profile (default generic)")
    p.add_argument("--nic-gbps", type=float, help="NIC rate per node, Gb/s (all NICs together)")
    p.add_argument("--top", type=int, default=10, help="plans to list (default 10)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.set_defaults(run=run)
    actions = p.add_subparsers(title="actions", dest="plan_action", metavar="ACTION")
    cal = actions.add_parser(
        "calibrate",
        help="fit a calibration profile to measured points (largest relative error)",
        description="Fit a profile's constants to measured points; prints the fit and writes TOML.",
    )
    cal.add_argument("--points", type=Path, required=True, help="points TOML (see docs/llm.md)")
    cal.add_argument("--out", type=Path, help="write the fitted profile here (TOML)")
    cal.set_defaults(run=run_calibrate)


def parse_cluster(text: str) -> tuple[int, int, str]:
    """``NODESxGPUS:MODEL`` → its parts; InputError for another form, or for an allocation the
    planner cannot take (none, or more GPUs than it holds)."""
    match = _CLUSTER.fullmatch(text.strip())
    if match is None:
        raise InputError(
            f"'--cluster' must look like NODESxGPUS:MODEL, e.g. 64x8:H100 (got {text!r})"
        )
    from schedlab.perf.llm.space import check_allocation

    nodes, per_node = int(match[1]), int(match[2])
    check_allocation(nodes, per_node, "'--cluster'")
    return nodes, per_node, match[3]


def run(args: argparse.Namespace) -> int:
    from schedlab.perf.llm.hardware import NodeNet, get_gpu
    from schedlab.perf.llm.model import MAX_BATCH, get_model, parse_batch_tokens, read_catalog
    from schedlab.perf.llm.planner import NoPlanError, Options, plan
    from schedlab.perf.llm.profile import get_profile
    from schedlab.perf.llm.space import Shape, parse_plan

    if not args.model:
        raise InputError("missing --model (see 'schedlab plan --help')")
    if (args.cluster is None) == (args.topology is None):
        raise InputError("give exactly one of --cluster and --topology")
    if args.top < 1:
        raise InputError(f"'--top' must be ≥ 1 (got {args.top})")
    extra = read_catalog(args.models) if args.models is not None else None
    model = get_model(args.model, extra)
    profile = get_profile(args.profile)
    topo = None
    if args.cluster is not None:
        if args.gpu is not None:
            raise InputError("'--gpu' goes with --topology; --cluster names its GPU model")
        nodes, per_node, gpu_name = parse_cluster(args.cluster)
        gpu = get_gpu(gpu_name)
        shape = Shape.uniform(nodes, per_node)
        # ``is not None``, not truthiness: 0 is a value to refuse, not "not given".
        net = (
            NodeNet.from_gbps(args.nic_gbps)
            if args.nic_gbps is not None
            else NodeNet.default(gpu, per_node)
        )
    else:
        from schedlab.perf.llm.netcomm import topology_shape

        gpu = get_gpu(args.gpu or "A100")
        if args.nic_gbps is not None:
            raise InputError("'--nic-gbps' goes with --cluster; the topology gives the NICs")
        topo, shape, net = topology_shape(args.topology)
    if args.batch is not None:
        if not 1 <= args.batch <= MAX_BATCH:
            raise InputError(
                f"'--batch' must be ≥ 1 and ≤ {MAX_BATCH:,} sequences (2^24, thousands of times "
                f"the largest published batches; got {args.batch})"
            )
        batch = args.batch
    elif args.batch_tokens is not None:
        batch = parse_batch_tokens(args.batch_tokens, model)
    elif model.batch:
        batch = model.batch
    else:
        raise InputError(f"{model.name} has no published batch: give --batch or --batch-tokens")
    fixed = parse_plan(args.fixed, "'--plan'") if args.fixed else {}
    options = Options.of(fixed, flexible_batch=args.flexible_batch)
    search = plan(model, batch, gpu, shape, profile, net, options, max(args.top, 1))
    if search.best is None:
        raise NoPlanError(search.failure())
    network = None
    if topo is not None:
        from schedlab.perf.llm.netcomm import isolated_comm

        network = isolated_comm(search.best, model, shape, topo, profile)
    payload = _payload(search, profile.name, args.top, network)
    if args.json:
        json.dump(payload, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    _print(search, payload, args.top)
    return 0


def _payload(search: Any, profile: str, top: int, network: dict[str, float] | None) -> dict:
    def row(r: Any) -> dict[str, Any]:
        return {
            "plan": r.plan.label(),
            "batch": r.batch,
            "step_s": r.step_seconds,
            "tokens_per_s": r.tokens_per_s,
            "tgs": r.tgs,
            "mfu": r.mfu,
            "hfu": r.hfu,
            "memory_gb": r.memory_bytes / 1e9,
            "usable_gb": r.usable_bytes / 1e9,
            "time": dict(r.breakdown),
            "memory": {k: v / 1e9 for k, v in r.memory_parts.items() if k != "params_per_gpu"},
        }

    out: dict[str, Any] = {
        "model": search.model.name,
        "params": search.model.params,
        "gpu": search.gpu.name,
        "allocation": search.shape.describe(),
        "gpus": search.shape.total,
        "batch_sequences": search.batch,
        "profile": profile,
        "considered": search.considered,
        "feasible_listed": len(search.ranked[:top]),
        "plans": [row(r) for r in search.ranked[:top]],
        "rejected": [
            {"constraint": r.constraint, "plans": r.count, "example": r.example}
            for r in search.rejections
        ],
    }
    if network is not None:
        out["network"] = network
    return out


def _print(search: Any, payload: dict, top: int) -> None:
    from rich.table import Table

    from schedlab.perf.llm.planner import CONSTRAINTS

    best = search.best
    stdout.print(
        f"{search.model.describe()}\n{search.shape.total} × {search.gpu.name} "
        f"({search.shape.describe()}), global batch {search.batch} sequences "
        f"({search.batch * search.model.seq_len:,} tokens), profile {payload['profile']}; "
        f"{search.considered:,} plans considered"
    )
    table = Table(title=f"fastest plans that fit (top {min(top, len(search.ranked))})")
    for col in ("#", "plan", "step s", "tokens/s", "TGS", "MFU %", "HFU %", "GB/GPU"):
        table.add_column(col, justify="left" if col == "plan" else "right")
    for i, r in enumerate(search.ranked[:top], 1):
        table.add_row(
            str(i),
            r.plan.label(),
            f"{r.step_seconds:.3f}",
            f"{r.tokens_per_s:,.0f}",
            f"{r.tgs:,.1f}",
            f"{100 * r.mfu:.1f}",
            f"{100 * r.hfu:.1f}",
            f"{r.memory_bytes / 1e9:.1f}",
        )
    stdout.print(table)
    t = best.breakdown
    stdout.print(
        f"best: step {best.step_seconds:.3f} s = pipeline {t['compute']:.3f} compute (incl. "
        f"{t['bubble']:.3f} bubble) + TP {t['tp']:.3f} + CP {t['cp']:.3f} + PP {t['pp']:.3f} "
        f"+ DP exposed {t['dp']:.3f} (of {t['grad_seconds']:.3f}) + ZeRO {t['zero']:.3f} + "
        f"optimizer {t['optimizer']:.3f}"
    )
    mem = best.memory_parts
    stdout.print(
        f"memory per GPU {best.memory_bytes / 1e9:.1f} of {best.usable_bytes / 1e9:.1f} GB usable: "
        f"states {mem['states'] / 1e9:.1f}, activations {mem['activations'] / 1e9:.1f}, "
        f"buffers {mem['buffers'] / 1e9:.1f}"
    )
    if "network" in payload:
        net = payload["network"]
        stdout.print(
            f"on the topology's paths (alone): gradient reduction {net['dp_seconds']:.3f} s "
            f"(analytic {net['analytic_dp_seconds']:.3f}), exposed {net['dp_exposed']:.3f} s; "
            f"pipeline transfers {net['pp_seconds']:.3f} s per step"
        )
    if search.rejections:
        why = Table(title="why the other plans do not")
        for col in ("constraint", "plans", "first example"):
            why.add_column(col)
        for r in search.rejections:
            why.add_row(f"{r.constraint}: {CONSTRAINTS[r.constraint]}", f"{r.count:,}", r.example)
        stdout.print(why)


def run_calibrate(args: argparse.Namespace) -> int:
    from schedlab.perf.llm.calibrate import errors, fit, read_points

    points = read_points(args.points)
    with console.status(f"fitting {', '.join(points.fit)} on {len(points.fitted_points)} points"):
        profile, _ = fit(points)
    for p, err in zip(points.points, errors(points.points, profile), strict=True):
        used = "fit" if p.label in points.fit_on else "held out"
        stdout.print(
            f"{p.label:28s} {p.metric} measured {p.value:10.1f} predicted "
            f"{p.predict(profile):10.1f} ({100 * err:+.1f} %, {used})"
        )
    values = ", ".join(f"{k} = {getattr(profile, k):.6g}" for k in points.fit)
    stdout.print(
        f"fitted {values}; largest error on the fitted points {100 * profile.fit_max_error:.2f} %"
    )
    if args.out is not None:
        from schedlab.output_dir import check_out_file

        target = check_out_file(args.out)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(profile.to_toml(), encoding="utf-8")
        partial.replace(target)
        console.print(f"wrote {args.out}")
    return 0
