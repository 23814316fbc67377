"""Every share policy on Philly's 15 virtual clusters, quotas derived from their demand.

    python experiments/tenancy_philly.py --out DIR [--quick] [--jobs N] [--policies kai,drf,...]
        [--cluster 80x8:V100] [--seed 0]

Replays the condensed Philly trace (../shared/traces/philly-adaptdl/philly.csv) under fifo with
each share policy (and without tenancy) and writes table.csv, table.md and config.toml to DIR
(complete or absent); see ``schedlab.experiments.tenancy_philly``. ``--quick`` takes the first
4,000 jobs on 80 GPUs (about a minute); ``--jobs N`` the first N jobs on the full cluster; the
full run replays all 82,247 jobs per policy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from schedlab import __version__
from schedlab.errors import InputError
from schedlab.experiments.tenancy_philly import CLUSTER, philly_tenancy_study, philly_trace
from schedlab.output_dir import staged_dir
from schedlab.report.deadline_figures import markdown_table
from schedlab.results import write_config, write_csv
from schedlab.tenancy.registry import NONE, check_share_policy, share_policy_names

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
QUICK_JOBS, QUICK_CLUSTER = 4000, "10x8:V100"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--quick", action="store_true", help=f"first {QUICK_JOBS:,} jobs, 80 GPUs")
    p.add_argument("--policies", default=",".join([NONE, *share_policy_names()]))
    p.add_argument("--jobs", type=int, default=None, help="only the first N jobs by submit time")
    p.add_argument("--cluster", default=None, help=f"default {CLUSTER} ({QUICK_CLUSTER} quick)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shared", type=Path, default=SHARED)
    args = p.parse_args(argv)
    try:
        policies = [check_share_policy(x.strip()) for x in args.policies.split(",") if x.strip()]
        if not philly_trace(args.shared).is_file():
            raise InputError(f"the Philly trace is not at {philly_trace(args.shared)}")
        cluster = args.cluster or (QUICK_CLUSTER if args.quick else CLUSTER)
        if args.jobs is not None and args.jobs < 1:
            raise InputError(f"'--jobs' must be ≥ 1 (got {args.jobs})")
        limit = QUICK_JOBS if args.quick else args.jobs
        with staged_dir(args.out) as out:
            table = philly_tenancy_study(
                args.shared,
                policies,
                cluster,
                limit,
                args.seed,
                progress=lambda name: print(f"replaying under {name}", file=sys.stderr),
            )
            write_csv(out / "table.csv", table)
            (out / "table.md").write_text(markdown_table(table) + "\n", encoding="utf-8")
            write_config(
                out / "config.toml",
                {"cluster": cluster, "policies": policies, "limit": limit or 0, "seed": args.seed},
                f"schedlab {__version__} tenancy study on Philly's virtual clusters",
            )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(markdown_table(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
