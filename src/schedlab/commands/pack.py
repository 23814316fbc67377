"""``schedlab pack``: one pack run (FGD protocol) from files, with its summary, events, figures."""

from __future__ import annotations

import argparse
from pathlib import Path

from schedlab import __version__
from schedlab.commands.common import (
    add_plugin_option,
    check_inflate,
    console,
    progress_bar,
    read_config,
    stdout,
)
from schedlab.engines.pack import PackConfig, run_pack
from schedlab.errors import InputError
from schedlab.experiments.published import reference_for
from schedlab.model.cluster import Cluster
from schedlab.model.pods import PodTable
from schedlab.output_dir import staged_dir
from schedlab.policies.api import PACK
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.results import pack_events, write_config, write_csv, write_json
from schedlab.traces.alibaba import read_node_list, read_pod_list

#: Keys a pack config file may set, with their types (anything else is an error, never ignored).
CONFIG_KEYS: dict[str, type] = {
    "nodes": str,
    "pods": str,
    "policy": str,
    "seed": int,
    "inflate": float,
    "out": str,
    "plugin": list,
}
DEFAULTS: dict[str, object] = {"seed": 42, "inflate": 1.3}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "pack",
        help="place a pod stream once each and measure fragmentation (FGD protocol)",
        description=(
            "Shuffle the pod list with the seed, inflate it to INFLATE × GPU capacity with random "
            "copies, place every pod once with the chosen policy (nothing leaves), and record "
            "unallocated GPU and fragmentation after every pod. Writes summary.json, events.csv, "
            "config.toml and figures/ into the output folder."
        ),
        epilog=(
            "example: schedlab pack --nodes openb_node_list_gpu_node.csv "
            "--pods openb_pod_list_default.csv --policy fgd --seed 42 --inflate 1.3 --out runs/fgd"
        ),
    )
    p.add_argument("--nodes", help="node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
    p.add_argument(
        "--pods", help="pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,...])"
    )
    p.add_argument("--policy", help="placement policy (see 'schedlab policies')")
    p.add_argument("--seed", type=int, help="random seed (default 42)")
    p.add_argument("--inflate", type=float, help="total GPU request ÷ capacity (default 1.3)")
    p.add_argument("--out", help="output folder (created if missing)")
    p.add_argument(
        "--config",
        type=Path,
        help="TOML file with any of the options above; options given on the command line win",
    )
    add_plugin_option(p)
    p.add_argument("--no-figures", action="store_true", help="skip the PNG/SVG figures")
    p.set_defaults(run=run)


def load_config(path: Path) -> dict[str, object]:
    """Read a pack config file; unknown keys and wrong types are errors naming the key."""
    return read_config(path, CONFIG_KEYS)


def resolve(args: argparse.Namespace) -> dict[str, object]:
    """Merge defaults < config file < command line, and check that nothing required is missing."""
    merged: dict[str, object] = dict(DEFAULTS)
    if args.config is not None:
        merged.update(load_config(args.config))
    for key in CONFIG_KEYS:
        value = getattr(args, key)
        if value is not None and value != []:
            merged[key] = value
    missing = [f"--{k}" for k in ("nodes", "pods", "policy", "out") if k not in merged]
    if missing:
        raise InputError(
            f"missing {', '.join(missing)} (give it on the command line or in --config)"
        )
    merged["inflate"] = check_inflate(float(merged["inflate"]))  # type: ignore[arg-type]
    if int(merged["seed"]) < 0:  # type: ignore[call-overload]
        raise InputError(f"'--seed' must be ≥ 0 (got {merged['seed']})")
    return merged


def run(args: argparse.Namespace) -> int:
    cfg = resolve(args)
    plugins = tuple(str(p) for p in cfg.get("plugin", []))  # type: ignore[attr-defined]
    config = PackConfig(str(cfg["policy"]), int(cfg["seed"]), float(cfg["inflate"]), plugins)  # type: ignore[call-overload]
    build(PACK, PolicyChoice(config.policy, plugins=plugins))  # fail before any work
    cluster = read_node_list(str(cfg["nodes"]))
    pods = read_pod_list(str(cfg["pods"]))
    final = Path(str(cfg["out"]))
    with staged_dir(final) as out:  # an unwritable --out fails here, before the run
        summary, wall = _run_and_write(
            cfg, cluster, pods, config, out, not args.no_figures, args.out
        )
    u = summary["unallocated_gpu_pct"]
    at100 = u.get("100")  # type: ignore[union-attr]
    stdout.print(
        f"{config.policy} seed {config.seed}: {summary['pods_total']} pods, "
        f"{summary['pods_failed']} failed; unallocated GPU at 100% arrived: "
        + (f"{at100:.2f}%" if at100 is not None else "n/a (never reached)")
        + f"; {wall:.2f} s"
    )
    console.print(
        f"wrote {final}/summary.json, events.csv, config.toml"
        + ("" if args.no_figures else ", figures/, report.html")
    )
    return 0


def _run_and_write(
    cfg: dict[str, object],
    cluster: Cluster,
    pods: PodTable,
    config: PackConfig,
    out: Path,
    figures: bool,
    final: Path | None = None,
) -> tuple[dict[str, object], float]:
    """The run, then every output file into ``out``; returns the summary and the wall time."""
    with progress_bar() as bar:
        task = bar.add_task(f"pack {config.policy} seed {config.seed}", total=None)
        result = run_pack(
            cluster,
            pods,
            config,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    summary = {
        **result.summary(),
        "nodes_file": str(cfg["nodes"]),
        "pods_file": str(cfg["pods"]),
        "schedlab_version": __version__,
    }
    write_csv(out / "events.csv", pack_events(result))
    write_config(
        out / "config.toml",
        {
            "nodes": str(Path(str(cfg["nodes"])).resolve()),
            "pods": str(Path(str(cfg["pods"])).resolve()),
            **{k: cfg[k] for k in ("policy", "seed", "inflate")},
            **({"plugin": list(config.plugins)} if config.plugins else {}),
        },
        f"schedlab {__version__} pack run; repeat: schedlab pack --config config.toml --out DIR",
    )
    if figures:  # matplotlib is imported for them only
        from schedlab.report.pack_figures import curve_columns, write_pack_figures

        curves = curve_columns([summary])
        label = Path(str(cfg["pods"])).stem
        write_pack_figures(
            curves,
            [config.policy],
            out / "figures",
            f"{label}, seed {config.seed}",
            reference_for(label, config.inflate),
        )
        from schedlab.report.pack_report import pack_page, write_page

        write_page(
            pack_page([{**summary, "workload": label}], [("this run", final or out)]),
            out / "report.html",
        )
    write_json(out / "summary.json", summary)  # last: its presence marks a complete run
    return summary, result.wall_seconds
