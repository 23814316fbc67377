"""``schedlab tune``: choose a job's own configuration before it is scheduled.

``tune serverless`` plans pipelined training on serverless functions (FuncPipe-style): stages,
per-stage function memory, data-parallel degree and micro-batches, exact by exhaustive search or
MILP, against the data-parallel serverless baselines. The formulas are in ``docs/tuning.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from schedlab.commands.common import console, stdout
from schedlab.errors import InputError

SERVERLESS_EXAMPLES = """\
examples:
  schedlab tune serverless --model bert-large --platform aws --batch 64 --out runs/bert
  schedlab tune serverless --model resnet-101 --objective cost --out runs/r101-cost
  schedlab tune serverless --model my-model.json --platform my-cloud.toml --batch 32 \\
      --memory 1024=0.5,2048=1 --max-stages 4 --solver exhaustive --out runs/mine
  schedlab tune serverless profile --model bert-large --out bert-large.json"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune",
        help="choose a job's configuration: serverless pipeline plans",
        description="Choose a job's own configuration before it is scheduled.",
    )
    p.set_defaults(run=_missing_action)
    actions = p.add_subparsers(title="what to tune", dest="tune_target", metavar="TARGET")
    _add_serverless(actions)


def _missing_action(args: argparse.Namespace) -> int:
    raise InputError("name what to tune: 'schedlab tune serverless' (see 'schedlab tune --help')")


def _add_serverless(actions: argparse._SubParsersAction) -> None:
    from schedlab.tune.serverless.search import BASELINES, SOLVERS

    s = actions.add_parser(
        "serverless",
        help="plan pipelined training on serverless functions (FuncPipe-style)",
        description=(
            "Cut a model into pipeline stages, give each stage a function memory size, and pick "
            "the data-parallel degree and micro-batch count that minimise the iteration time or "
            "cost on a serverless platform; compare with data-parallel serverless training. "
            "Writes plan.json, plans.csv (time–cost fronts) and config.toml."
        ),
        epilog=SERVERLESS_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("--model", help="bert-large, bert-base, resnet-50/101/152, or a profile JSON")
    s.add_argument("--platform", default="aws", help="aws, alicloud, or a platform TOML file")
    s.add_argument("--batch", type=int, default=64, help="global batch in samples (default 64)")
    s.add_argument(
        "--objective",
        default="time",
        help="time, cost or weighted:W (W·T/T0 + (1-W)·C/C0 against dp-serverless; default time)",
    )
    s.add_argument("--solver", choices=SOLVERS, default="auto", help="default auto")
    s.add_argument("--max-stages", type=int, default=8, help="most pipeline stages (default 8)")
    s.add_argument("--max-d", type=int, default=64, help="largest data-parallel degree (64)")
    s.add_argument("--max-m", type=int, default=64, help="most micro-batches (default 64)")
    s.add_argument(
        "--optimizer",
        choices=("adam", "sgd"),
        default="adam",
        help="optimizer memory: adam keeps 4× the parameters, sgd 2× (default adam)",
    )
    s.add_argument("--base-mb", type=float, default=500.0, help="runtime memory per function")
    s.add_argument(
        "--no-overlap",
        action="store_true",
        help="storage transfers do not overlap compute (their times add up)",
    )
    s.add_argument(
        "--sync",
        choices=("pipelined", "four-phase"),
        default="pipelined",
        help="the planner's gradient sync: pipelined scatter-reduce (default) or LambdaML's "
        "four-phase all-reduce",
    )
    s.add_argument(
        "--memory",
        metavar="MB=SPEED,...",
        help="replace the platform's memory options, e.g. 1024=0.5,2048=1",
    )
    s.add_argument(
        "--baselines",
        default=",".join(BASELINES),
        help=f"baselines to compare with, comma-separated, or none (default {','.join(BASELINES)})",
    )
    s.add_argument("--json", action="store_true", help="print plan.json on stdout too")
    s.add_argument("--out", type=Path, help="output folder")
    s.set_defaults(run=run_serverless)
    sub = s.add_subparsers(title="actions", dest="serverless_action", metavar="ACTION")
    prof = sub.add_parser(
        "profile",
        help="write a built-in model's layer profile as JSON (to edit and plan with)",
        description="Write a built-in model's layer profile (the JSON --model reads).",
    )
    prof.add_argument("--model", required=True, help="a built-in model name")
    prof.add_argument("--out", required=True, type=Path, help="the JSON file to write")
    prof.set_defaults(run=run_profile)


def parse_memory(text: str) -> dict[float, float]:
    """``1024=0.5,2048=1``: memory sizes (MB) and their speeds."""
    options: dict[float, float] = {}
    for part in text.split(","):
        mb, sep, speed = part.partition("=")
        try:
            size, rate = float(mb), float(speed)
        except ValueError:
            size = rate = -1.0
        if not sep or not (size > 0 and rate > 0) or size in options:
            raise InputError(
                f"'--memory' must look like MB=SPEED,... with positive numbers, each size once "
                f"(got {text!r})"
            )
        options[size] = rate
    return options


def _baselines(text: str) -> list[str]:
    from schedlab.tune.serverless.search import BASELINES

    if text.strip() == "none":
        return []
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in BASELINES]
    if unknown or not names:
        raise InputError(f"'--baselines' takes {', '.join(BASELINES)} or none (got {text!r})")
    return list(dict.fromkeys(names))


def run_serverless(args: argparse.Namespace) -> int:
    from schedlab.output_dir import staged_dir
    from schedlab.tune.serverless import outputs, search
    from schedlab.tune.serverless.generators import get_profile
    from schedlab.tune.serverless.objective import parse_objective
    from schedlab.tune.serverless.plan import OPTIMIZERS, Training
    from schedlab.tune.serverless.platform import get_platform

    if not args.model:
        raise InputError("missing --model (see 'schedlab tune serverless --help')")
    if args.out is None:
        raise InputError("missing --out (the folder for plan.json and plans.csv)")
    if not (args.base_mb >= 0):
        raise InputError(f"'--base-mb' must be ≥ 0 (got {args.base_mb})")
    objective = parse_objective(args.objective)
    baseline_names = _baselines(args.baselines)
    limits = search.Limits(args.max_stages, args.max_d, args.max_m)
    training = Training(
        args.batch, OPTIMIZERS[args.optimizer], args.base_mb, not args.no_overlap, args.sync
    )
    platform = get_platform(args.platform)
    if args.memory:
        platform = platform.with_options(parse_memory(args.memory))
    profile = get_profile(args.model)
    search.check_fits_somewhere(profile, platform, training)
    objective = search.anchor(objective, profile, platform, training, limits)
    with staged_dir(args.out) as out:
        with console.status(f"planning {profile.name} on {platform.name}"):
            result = search.plan(profile, platform, training, objective, limits, args.solver)
            if result.best is None:
                raise InputError(
                    f"no plan of {profile.name} fits {platform.name} at batch {training.batch} "
                    f"with at most {limits.max_stages} stages, d ≤ {limits.max_d}, "
                    f"m ≤ {limits.max_m}: give more stages, a larger --max-d, or larger memory"
                )
            baselines = [
                search.baseline(name, profile, platform, training, objective, limits, args.solver)
                for name in baseline_names
            ]
        data = outputs.write(out, profile, platform, training, result, baselines)
        _write_config(out, args, objective)
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print(result, baselines, platform, data)
    console.print(f"wrote {args.out}/plan.json, plans.csv, config.toml")
    return 0


def _write_config(out: Path, args: argparse.Namespace, objective: Any) -> None:
    from schedlab import __version__
    from schedlab.results import write_config

    def path_or_name(value: str) -> str:
        return str(Path(value).resolve()) if Path(value).exists() else value

    config = {
        "model": path_or_name(args.model),
        "platform": path_or_name(args.platform),
        "batch": args.batch,
        "objective": objective.label(),
        "solver": args.solver,
        "max_stages": args.max_stages,
        "max_d": args.max_d,
        "max_m": args.max_m,
        "optimizer": args.optimizer,
        "base_mb": args.base_mb,
        "overlap": not args.no_overlap,
        "sync": args.sync,
        "memory": args.memory or "",
        "baselines": args.baselines,
    }
    write_config(out / "config.toml", config, f"schedlab {__version__} tune serverless")


def _print(result: Any, baselines: list[Any], platform: Any, data: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"{data['model']} on {data['platform']}, batch {data['batch']}, "
                  f"objective {data['objective']}")  # fmt: skip
    ours = result.planner
    columns = ("planner", "plan", "iteration s", "$ / iteration", f"{ours} ×faster",
               f"{ours} cost ×")  # fmt: skip
    for col in columns:
        table.add_column(col, justify="left" if col in ("planner", "plan") else "right")
    vs = data["vs_baselines"]
    for r in (result, *baselines):
        e = r.best
        if e is None:
            table.add_row(r.planner, "no plan fits", "—", "—", "—", "—")
            continue
        ratio = vs.get(r.planner)
        table.add_row(
            r.planner,
            e.plan.label(platform),
            f"{e.t_iter:.3f}",
            f"{e.cost:.6f}",
            f"{ratio['speedup']:.2f}" if ratio else "—",
            f"{ratio['cost_ratio']:.3f}" if ratio else "—",
        )
    stdout.print(table)
    stdout.print(
        f"{result.solver} search over {result.plans_considered:,} plans in "
        f"{result.seconds:.1f} s; the last two columns compare {ours}'s plan with each "
        f"baseline's (cost × below 1: {ours} is cheaper)"
    )


def run_profile(args: argparse.Namespace) -> int:
    from schedlab.output_dir import check_out_file
    from schedlab.results import atomic_write
    from schedlab.tune.serverless.generators import BUILTIN

    if args.model not in BUILTIN:
        raise InputError(f"'--model' must be one of {', '.join(BUILTIN)} (got {args.model!r})")
    target = check_out_file(args.out)
    profile = BUILTIN[args.model]()
    atomic_write(target, lambda fh: fh.write(json.dumps(profile.to_json(), indent=2) + "\n"))
    console.print(f"wrote {args.out} ({len(profile)} layer units)")
    return 0
