"""Monolithic vs disaggregated placement of the Alibaba GPU v2025 DLRM serving apps (Prism).

    python experiments/prism_disaggregation.py --out DIR [--quick] [--trace FILE]
        [--seeds 42,43,44] [--loads 0.9,0.95] [--policies fgd,bestfit,random]
        [--cpu-node 256,1536,0,2] [--gpu-node 128,1024,8,4]

Places the instances running at the trace's concurrency peak on a synthesised cluster, once as
CN and HN instances on CPU and GPU nodes, once merged per GPU instance onto GPU nodes of the same
total capacity (see ``schedlab.experiments.prism_study``), and writes table.csv, table.md,
summary.json, fragmentation.png and config.toml to DIR (complete or absent). ``--quick`` keeps one
app in eight, one load (0.9) and one seed: a few seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from schedlab import __version__
from schedlab.errors import SchedlabError
from schedlab.experiments.prism_cluster import parse_shape
from schedlab.experiments.prism_report import write_outputs
from schedlab.experiments.prism_study import StudyConfig, run_study
from schedlab.output_dir import StagedDir
from schedlab.report.deadline_figures import markdown_table
from schedlab.results import write_config
from schedlab.traces.alibaba_2025 import read_alibaba_2025

TRACE = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "traces"
    / "alibaba-gpu-2025"
    / "disaggregated_DLRM_trace.csv"
)


def _list(text: str, kind: type, flag: str) -> tuple:
    try:
        values = tuple(kind(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise SchedlabError(f"'{flag}' must be a comma-separated list (got {text!r})") from None
    if not values:
        raise SchedlabError(f"'{flag}' is empty")
    return values


def config_from(args: argparse.Namespace) -> StudyConfig:
    seeds = _list(args.seeds or ("42" if args.quick else "42,43,44"), int, "--seeds")
    loads = _list(args.loads or ("0.9" if args.quick else "0.9,0.95"), float, "--loads")
    if any(not 0 < load <= 1 for load in loads):
        raise SchedlabError(f"'--loads' must be in (0, 1] (got {args.loads})")
    policies = _list(args.policies, str, "--policies")
    return StudyConfig(
        policies,
        seeds,
        loads,
        app_stride=8 if args.quick else 1,
        cpu_node=parse_shape("cpu-node", args.cpu_node, gpus_allowed=False),
        gpu_node=parse_shape("gpu-node", args.gpu_node, gpus_allowed=True),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true", help="one app in eight, one load, one seed")
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--seeds", default=None, help="default 42,43,44 (42 with --quick)")
    ap.add_argument("--loads", default=None, help="default 0.9,0.95 (0.9 with --quick)")
    ap.add_argument("--policies", default="fgd,bestfit,random")
    ap.add_argument(
        "--cpu-node", default="256,1536,0,2", help="CPU node VCPU,GIB,GPUS,NICS (GPUS 0)"
    )
    ap.add_argument("--gpu-node", default="128,1024,8,4", help="GPU node VCPU,GIB,GPUS,NICS")
    args = ap.parse_args(argv)
    try:
        config = config_from(args)
        stage = StagedDir(args.out)
    except SchedlabError as exc:
        print(f"schedlab: error: {exc}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        instances = read_alibaba_2025(args.trace)
        table, setup = run_study(
            instances, config, progress=lambda s: print(f"  {s}", file=sys.stderr, flush=True)
        )
        settings = {
            "trace": str(args.trace),
            "quick": args.quick,
            "seeds": list(config.seeds),
            "loads": list(config.loads),
            "policies": list(config.policies),
            "cpu_node": args.cpu_node,
            "gpu_node": args.gpu_node,
        }
        write_config(
            stage.path / "config.toml", settings, f"schedlab {__version__} prism disaggregation"
        )
        compare = write_outputs(stage.path, table, setup)
    except SchedlabError as exc:
        stage.discard()
        print(f"schedlab: error: {exc}", file=sys.stderr)
        return 2
    except BaseException:
        stage.discard()
        raise
    stage.commit()
    print(markdown_table(compare, floats="{:.2f}"))
    print(f"\n{len(table)} rows in {time.perf_counter() - started:.1f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
