"""``schedlab gen``: generate inputs other tools define — Gavel's workloads and table folders.

``gen gavel`` draws Gavel's continuous (or, with ``--lam 0``, static) workload call for call as
Gavel's own simulator does, so the same seed gives the same jobs bit for bit
(:mod:`schedlab.traces.gavel_workload`), and writes it as a generic job CSV. ``gen tables``
turns a throughput matrix (Gavel's JSON) into ``--throughputs DIR`` tables, one folder per
accelerator type.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from schedlab.commands.common import stdout
from schedlab.errors import InputError
from schedlab.output_dir import check_out_file, staged_dir
from schedlab.perf.throughput_matrix import convert_to_tables, read_throughput_matrix
from schedlab.results import atomic_write
from schedlab.traces.gavel_workload import GavelWorkloadSpec, gavel_job_table, job_csv_lines


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gen",
        help="generate Gavel's workloads, or throughput tables from a matrix",
        description="Generate inputs defined by other tools, reproduced exactly.",
    )
    p.set_defaults(run=lambda args: _usage(p))
    actions = p.add_subparsers(title="actions", dest="gen_action", metavar="ACTION")

    gavel = actions.add_parser(
        "gavel",
        help="Gavel's generated workload (identical jobs for the same seed)",
        description=(
            "Draw the jobs Gavel's simulator generates for a seed (its job and inter-arrival "
            "random streams, call for call) and write them as a job CSV for 'schedlab replay "
            "--throughputs FILE.json'. Job ids are Gavel's (0, 1, ...)."
        ),
        epilog=(
            "example:\n  schedlab gen gavel --throughputs "
            "../shared/data/goodput/gavel/simulation_throughputs.json --seed 0 --lam 1200 "
            "-n 6000 --out gavel-seed0.csv"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gavel.add_argument("--throughputs", required=True, help="Gavel's throughput JSON")
    gavel.add_argument("--seed", type=int, default=0, help="Gavel's --seed (default 0)")
    gavel.add_argument(
        "--lam",
        type=float,
        default=1200.0,
        help="mean inter-arrival time in seconds (Gavel's -l; default 1200 = 3 jobs/h; "
        "0 = a static trace, every job at t = 0)",
    )
    gavel.add_argument("-n", "--jobs", type=int, default=6000, help="jobs to draw (default 6000)")
    gavel.add_argument(
        "--multi-gpu", action="store_true", help="jobs of 2, 4 and 8 GPUs too (Gavel's -m)"
    )
    gavel.add_argument(
        "--multi-priority", action="store_true", help="20%% of jobs get priority weight 5"
    )
    gavel.add_argument(
        "--slos", action="store_true", help="deadlines of 1.2, 2 or 10 × the V100 duration"
    )
    gavel.add_argument("--out", required=True, help="job CSV to write")
    gavel.set_defaults(run=run_gavel)

    tables = actions.add_parser(
        "tables",
        help="--throughputs DIR tables from a throughput matrix, one folder per GPU type",
        description=(
            "Write a throughput matrix (Gavel's JSON) as <type>/<model>.csv tables: a row per "
            "batch size, a column per scale factor, steps/s (co-location pairs are left out)."
        ),
    )
    tables.add_argument("matrix", help="Gavel's throughput JSON")
    tables.add_argument("--out", required=True, help="folder to write")
    tables.set_defaults(run=run_tables)


def _usage(p: argparse.ArgumentParser) -> int:
    p.print_help()
    return 2


def run_gavel(args: argparse.Namespace) -> int:
    out = check_out_file(Path(args.out))
    spec = GavelWorkloadSpec(
        seed=args.seed,
        lam=args.lam,
        num_jobs=args.jobs,
        multi_gpu=args.multi_gpu,
        multi_priority=args.multi_priority,
        slos=args.slos,
    )
    matrix = read_throughput_matrix(args.throughputs)
    jobs = gavel_job_table(matrix, spec)
    lines = job_csv_lines(jobs)
    atomic_write(out, lambda fh: fh.write("\n".join(lines) + "\n"))
    stdout.print(f"wrote {len(jobs)} jobs to {out}")
    return 0


def run_tables(args: argparse.Namespace) -> int:
    matrix = read_throughput_matrix(args.matrix)
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise InputError("'--out' must be a folder", path=args.out)
    with staged_dir(Path(args.out)) as stage:
        files = convert_to_tables(matrix, stage)
    stdout.print(f"wrote {len(files)} tables for {len(matrix.types)} GPU types to {args.out}")
    return 0
