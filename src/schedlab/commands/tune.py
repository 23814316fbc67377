"""``schedlab tune``: choose a job's own configuration before it is scheduled.

``tune serving`` picks a serving pod's GPU type, GPU share and memory, CPU cores and batch size
from few profiling samples (Morphling-style: grid, random, Bayesian optimisation, meta-learned);
``tune serverless`` plans pipelined training on serverless functions (FuncPipe-style): stages,
per-stage function memory, data-parallel degree and micro-batches, exact by exhaustive search or
MILP, against the data-parallel serverless baselines. The formulas are in ``docs/tuning.md``.
"""

from __future__ import annotations

import argparse
import json
import math
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
        help="choose a job's configuration: serving pods, serverless pipeline plans",
        description="Choose a job's own configuration before it is scheduled.",
    )
    p.set_defaults(run=_missing_action)
    actions = p.add_subparsers(title="what to tune", dest="tune_target", metavar="TARGET")
    _add_serving(actions)
    _add_serverless(actions)


def _missing_action(args: argparse.Namespace) -> int:
    raise InputError(
        "name what to tune: 'schedlab tune serving' or 'schedlab tune serverless' "
        "(see 'schedlab tune --help')"
    )


SERVING_EXAMPLES = """\
examples:
  schedlab tune serving --service alpha=5,beta=2.5,kappa=4,m0=1,m=0.05,slo=100 \\
      --tuner bo --budget 30 --load 2000 --out runs/svc
  schedlab tune serving gen --n 250 --seed 0 --out services.csv
  schedlab tune serving train --services services.csv --out meta.npz
  schedlab tune serving --services services.csv --name svc-0210 --tuner meta --meta meta.npz \\
      --out runs/svc-0210
  schedlab tune serving bench --services services.csv --seeds 0-4 --out runs/bench"""


def _add_serving(actions: argparse._SubParsersAction) -> None:
    from schedlab.tune.serving.tuners import TUNERS

    s = actions.add_parser(
        "serving",
        help="tune a model-serving pod (Morphling-style): GPU type, share, memory, cores, batch",
        description=(
            "Search the 720 serving configurations of a service (GPU type × GPU share × GPU "
            "memory × CPU cores × max batch) for the most throughput per dollar within its "
            "latency SLO, profiling one configuration per sample (the analytic model of "
            "docs/tuning.md with 3 % noise). Writes tuned.json, pods.csv (for replay --sharing) "
            "and config.toml."
        ),
        epilog=SERVING_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("--service", help="alpha=MS,beta=MS,kappa=MS,m0=GB,m=GB,slo=MS[,v100=,a100=]")
    s.add_argument("--services", type=Path, help="a population CSV (tune serving gen)")
    s.add_argument("--name", help="with --services: the service to tune")
    s.add_argument("--tuner", choices=TUNERS, default="bo", help="default bo")
    s.add_argument("--budget", type=int, default=30, help="profiling samples (default 30)")
    s.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    s.add_argument("--meta", type=Path, help="meta-weights (tune serving train) for meta tuners")
    s.add_argument("--load", type=float, help="requests/s to serve: replicas in pods.csv")
    s.add_argument(
        "--duration", type=float, default=3600.0, help="pods' lifetime in pods.csv (s, 3600)"
    )
    s.add_argument(
        "--host-mem", type=int, default=4096, help="host memory per CPU core, MiB (4096)"
    )
    s.add_argument("--out", type=Path, help="output folder")
    s.set_defaults(run=run_serving)
    sub = s.add_subparsers(title="actions", dest="serving_action", metavar="ACTION")
    gen = sub.add_parser(
        "gen",
        help="generate a synthetic service population (CSV)",
        description="Draw a synthetic service population (docs/tuning.md) into a CSV file.",
    )
    gen.add_argument("--n", type=int, default=250, help="services (default 250)")
    gen.add_argument("--holdout", type=int, default=50, help="held out for tests (default 50)")
    gen.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    gen.add_argument("--out", type=Path, required=True, help="the CSV file to write")
    gen.set_defaults(run=run_serving_gen)
    train = sub.add_parser(
        "train",
        help="meta-train the learned tuners on a population's training services",
        description="Reptile meta-training (and the pooled ablation) into a .npz file.",
    )
    train.add_argument("--services", type=Path, required=True, help="a population CSV")
    train.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    train.add_argument(
        "--outer-steps", type=int, default=2000, help="Reptile outer steps (default 2000)"
    )
    train.add_argument("--out", type=Path, required=True, help="the .npz file to write")
    train.set_defaults(run=run_serving_train)
    bench = sub.add_parser(
        "bench",
        help="search cost of the tuners over the held-out services",
        description=(
            "Run every tuner on every held-out service and seed; write runs.csv and "
            "summary.csv (median samples until the optimum was sampled, regret)."
        ),
    )
    bench.add_argument("--services", type=Path, help="a population CSV (default: generate 250)")
    bench.add_argument("--meta", type=Path, help="meta-weights (default: train them here)")
    bench.add_argument("--tuners", default=",".join(TUNERS), help="comma-separated tuners")
    bench.add_argument("--seeds", default="0-4", help="seeds, e.g. 0-4 (default)")
    bench.add_argument(
        "--budget", type=int, default=100, help="samples for bo and the meta tuners (100)"
    )
    bench.add_argument("--limit", type=int, help="only the first N held-out services")
    bench.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    bench.add_argument("--out", type=Path, required=True, help="output folder")
    bench.set_defaults(run=run_serving_bench)


def _service(args: argparse.Namespace):
    from schedlab.tune.serving.population import parse_service, read_services

    if (args.service is None) == (args.services is None):
        raise InputError("give exactly one of --service and --services (with --name)")
    if args.service is not None:
        if args.name:
            raise InputError("'--name' goes with --services")
        return parse_service(args.service)
    if not args.name:
        raise InputError("'--services' needs --name (the service to tune)")
    train, test = read_services(args.services)
    for service in (*train, *test):
        if service.name == args.name:
            return service
    raise InputError(f"no service named {args.name!r}", path=str(args.services))


def _check_budget(budget: int) -> None:
    if not 1 <= budget <= 720:
        raise InputError(f"'--budget' must be in 1..720 samples (got {budget})")


def _weights(path: Path | None, tuner: str):
    from schedlab.tune.serving.meta import load
    from schedlab.tune.serving.tuners import LEARNED

    if tuner not in LEARNED:
        if path is not None:
            raise InputError(f"'--meta' goes with the meta tuners, not {tuner}")
        return None
    if path is None:
        raise InputError(
            f"the {tuner} tuner needs --meta FILE (make one with 'schedlab tune serving train')"
        )
    return load(path).for_tuner(tuner)


def run_serving(args: argparse.Namespace) -> int:
    import numpy as np

    from schedlab.output_dir import staged_dir
    from schedlab.results import write_csv, write_json
    from schedlab.tune.serving import outputs, tuners
    from schedlab.tune.serving.model import evaluate

    service = _service(args)
    if args.out is None:
        raise InputError("missing --out (the folder for tuned.json and pods.csv)")
    _check_budget(args.budget)
    if args.seed < 0:
        raise InputError(f"'--seed' must be ≥ 0 (got {args.seed})")
    if args.load is not None and not 0 < args.load < math.inf:
        raise InputError(f"'--load' must be > 0 requests/s and finite (got {args.load})")
    if not 0 < args.duration < math.inf:
        raise InputError(f"'--duration' must be > 0 s and finite (got {args.duration})")
    if args.host_mem < 1:
        raise InputError(f"'--host-mem' must be ≥ 1 MiB (got {args.host_mem})")
    weights = _weights(args.meta, args.tuner)
    perf = evaluate(service)
    if not perf.feasible.any():
        raise InputError(
            "no configuration meets the service's SLO and memory: the configuration space is "
            "empty for it (a larger 'slo' or a smaller model)"
        )
    with staged_dir(args.out) as out:
        with console.status(f"tuning with {args.tuner}, {args.budget} samples"):
            result = tuners.run(args.tuner, perf, args.budget, np.random.default_rng(args.seed),
                                weights)  # fmt: skip
        data = outputs.tuned(service, perf, result, args.budget, args.seed)
        chosen = result.incumbent()
        count = outputs.replicas(args.load, float(perf.throughput[chosen]))
        if count > outputs.MAX_REPLICAS:
            raise InputError(
                f"'--load' {args.load:g} requests/s needs {count:,} replicas of the chosen "
                f"configuration ({float(perf.throughput[chosen]):.1f} requests/s each), more "
                f"than the {outputs.MAX_REPLICAS:,} pods pods.csv may list"
            )
        data["replicas"] = count
        write_json(out / "tuned.json", data)
        write_csv(out / "pods.csv",
                  outputs.pods(perf, chosen, count, args.duration, args.host_mem))  # fmt: skip
        _write_serving_config(out, args)
    c, best = data["config"], data["optimum"]
    stdout.print(
        f"{args.tuner}, {len(result.samples)} samples: {c['gpu']} share {c['share']:g}, "
        f"{c['memory_gb']:g} GB, {c['cores']} cores, batch {c['batch']} — "
        f"{c['throughput_rps']:,.1f} req/s at p99 {c['latency_p99_ms']:.1f} ms, "
        f"${c['price_per_hour']:.3f}/h, J {c['objective']:,.1f} "
        f"(optimum J {best['objective']:,.1f}, regret {100 * data['regret']:.1f} %"
        + (f", found at sample {data['search_cost']}" if data["search_cost"] else ", not found")
        + f"); {count} replica(s) in pods.csv"
    )
    console.print(f"wrote {args.out}/tuned.json, pods.csv, config.toml")
    return 0


def _write_serving_config(out: Path, args: argparse.Namespace) -> None:
    from schedlab import __version__
    from schedlab.results import write_config

    config = {
        **({"service": args.service} if args.service else {}),
        **(
            {"services": str(Path(args.services).resolve()), "name": args.name}
            if args.services
            else {}
        ),
        "tuner": args.tuner,
        "budget": args.budget,
        "seed": args.seed,
        **({"meta": str(Path(args.meta).resolve())} if args.meta else {}),
        **({"load": args.load} if args.load is not None else {}),
        "duration": args.duration,
        "host_mem": args.host_mem,
    }
    write_config(out / "config.toml", config, f"schedlab {__version__} tune serving")


def run_serving_gen(args: argparse.Namespace) -> int:
    from schedlab.output_dir import check_out_file
    from schedlab.results import write_csv
    from schedlab.tune.serving.population import frame, generate

    target = check_out_file(args.out)
    if args.seed < 0:
        raise InputError(f"'--seed' must be ≥ 0 (got {args.seed})")
    train, test = generate(args.n, args.seed, args.holdout)
    write_csv(target, frame(train, test))
    console.print(
        f"wrote {args.out}: {len(train)} training and {len(test)} held-out services "
        "(synthetic, drawn from the distributions of docs/tuning.md)"
    )
    return 0


def run_serving_train(args: argparse.Namespace) -> int:
    from schedlab.output_dir import check_out_file
    from schedlab.tune.serving import meta
    from schedlab.tune.serving.population import read_services

    target = check_out_file(args.out)
    if args.outer_steps < 1:
        raise InputError(f"'--outer-steps' must be ≥ 1 (got {args.outer_steps})")
    train, _ = read_services(args.services)
    with console.status(f"meta-training on {len(train)} services"):
        weights = meta.train(train, args.seed, meta.MetaSettings(outer_steps=args.outer_steps))
    meta.save(target, weights)
    console.print(f"wrote {args.out} (Reptile and pooled weights, {len(train)} services)")
    return 0


def run_serving_bench(args: argparse.Namespace) -> int:
    from schedlab.commands.common import check_workers, parse_seeds
    from schedlab.output_dir import staged_dir
    from schedlab.results import write_csv, write_json
    from schedlab.tune.serving import bench, meta
    from schedlab.tune.serving.population import generate, read_services
    from schedlab.tune.serving.tuners import LEARNED, TUNERS

    names = [n.strip() for n in args.tuners.split(",") if n.strip()]
    unknown = [n for n in names if n not in TUNERS]
    if unknown or not names:
        raise InputError(f"'--tuners' takes {', '.join(TUNERS)} (got {args.tuners!r})")
    seeds = parse_seeds(args.seeds)
    _check_budget(args.budget)
    check_workers(args.workers)
    if args.limit is not None and args.limit < 1:
        raise InputError(f"'--limit' must be ≥ 1 (got {args.limit})")
    if args.services is not None:
        train, test = read_services(args.services)
    else:
        train, test = generate(250, 0, 50)
    if not test:
        raise InputError(
            "the services file holds no held-out ('test') service", path=str(args.services)
        )
    test = test[: args.limit] if args.limit else test
    with staged_dir(args.out) as out:
        weights = None
        if set(names) & set(LEARNED):
            if args.meta is not None:
                weights = meta.load(args.meta)
            else:
                with console.status(f"meta-training on {len(train)} services"):
                    weights = meta.train(train, 0)
                meta.save(out / "meta.npz", weights)
        todo = bench.tasks(test, seeds, names, args.budget, weights)
        from schedlab.experiments.parallel import run_all

        with console.status(f"{len(todo)} tuning runs"):
            rows = run_all(bench.run_task, todo, args.workers)
        runs = pd_frame(rows)
        table = bench.summary(runs)
        write_csv(out / "runs.csv", runs)
        write_csv(out / "summary.csv", table)
        ratios = bench.ratios(table)
        write_json(out / "summary.json", {"services": len(test), "seeds": seeds,
                                          "budget": args.budget, "ratios_over_meta": ratios,
                                          "tuners": table.to_dict(orient="records")})  # fmt: skip
    _print_bench(table, ratios, args.budget)
    console.print(f"wrote {args.out}/runs.csv, summary.csv, summary.json")
    return 0


def pd_frame(rows: list[dict[str, Any]]):
    import pandas as pd

    return pd.DataFrame(rows)


def _print_bench(table: Any, ratios: dict[str, float], budget: int) -> None:
    import math

    from rich.table import Table

    out = Table(title="samples until the optimum was sampled (median over services × seeds)")
    for col in ("tuner", "runs", "found", "median", "÷ meta", "regret@10", "regret@30"):
        out.add_column(col, justify="left" if col == "tuner" else "right")
    for row in table.to_dict(orient="records"):
        med = row["median_search_cost"]
        out.add_row(
            row["tuner"],
            str(row["runs"]),
            str(row["found"]),
            f"{med:g}" if math.isfinite(med) else f"> {budget}",
            f"{ratios[row['tuner']]:.2f}" if row["tuner"] in ratios else "—",
            f"{row['median_regret_10']:.3f}",
            f"{row['median_regret_30']:.3f}",
        )
    stdout.print(out)


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
        if not sep or not (0 < size < math.inf and 0 < rate < math.inf) or size in options:
            raise InputError(
                f"'--memory' must look like MB=SPEED,... with positive finite numbers, each size "
                f"once (got {text!r})"
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
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise InputError(f"'--baselines' names {twice} twice (got {text!r})")
    return names


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
