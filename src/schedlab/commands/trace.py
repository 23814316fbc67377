"""``schedlab trace``: look at a job trace before replaying it.

``trace stats FILE`` prints what a user checks first (jobs, span, GPU mix, run-time percentiles,
deadlines) and what the reader's filters dropped; ``--json`` prints the same to stdout for
scripts. ``trace validate FILE`` reads the whole file and prints ``ok: N jobs`` or the first bad
cell as one line (file:line, column), exiting non-zero.

Instance traces (the Alibaba v2025 DLRM serving trace, ``alibaba-2025``: long-running CN and HN
instances, not jobs) are recognised by their header or named with ``--format alibaba-2025``;
their summary is instances by role, apps, request percentiles, density limits and the peak of
concurrently running instances (:mod:`schedlab.commands.trace_instances`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from schedlab.commands import trace_instances
from schedlab.commands.common import console, stdout
from schedlab.commands.serve import add_import_slurm_parser
from schedlab.commands.serve_kubernetes import add_import_kubernetes_parser
from schedlab.errors import InputError
from schedlab.traces.formats import TRACE_FORMATS, read_jobs
from schedlab.traces.job_common import ReadResult


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "trace",
        help="check a job trace and summarise it",
        description="Read a job trace (any supported format) to check it or summarise it.",
    )
    p.set_defaults(run=lambda args: _usage(p))
    actions = p.add_subparsers(title="actions", dest="trace_action", metavar="ACTION")

    stats = actions.add_parser(
        "stats",
        help="summary table of a trace (jobs, span, GPU mix, run times, dropped jobs)",
        description="Summarise a job trace: what the replay will see and what was filtered out.",
    )
    _common_args(stats)
    stats.add_argument(
        "--json", action="store_true", help="print the summary as JSON on stdout, for scripts"
    )
    stats.add_argument(
        "--gpu",
        help="LLM traces: the GPU model the planner prices GPU-hours on (default H100, 8 per node)",
    )
    stats.set_defaults(run=run_stats)

    validate = actions.add_parser(
        "validate",
        help="read the whole trace and report the first bad value, if any",
        description="Check every row of a job trace; prints 'ok: N jobs' or one error line.",
    )
    _common_args(validate)
    validate.set_defaults(run=run_validate)

    add_import_slurm_parser(actions)
    add_import_kubernetes_parser(actions)

    gen = actions.add_parser(
        "synthetic-llm",
        help="write a generated trace of LLM jobs (pretrain / sft / eval, AcmeTrace's mix)",
        description="Write a generated llm-format trace (see docs/llm.md) for demos and tests.",
    )
    gen.add_argument("--jobs", type=int, default=200, help="number of jobs (default 200)")
    gen.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    gen.add_argument(
        "--mean-gap", type=float, default=120.0, help="mean seconds between arrivals (default 120)"
    )
    gen.add_argument("--out", type=Path, required=True, help="the CSV file to write")
    gen.set_defaults(run=run_synthetic_llm)


def _common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, metavar="FILE", help="the trace file (CSV)")
    p.add_argument(
        "--trace-format",
        "--format",
        dest="trace_format",
        metavar="NAME",
        default=None,
        help=(
            "format of FILE (default: guessed from its header): "
            f"{', '.join([*TRACE_FORMATS, trace_instances.FORMAT])}"
        ),
    )
    p.add_argument(
        "--keep-zero",
        action="store_true",
        help="keep jobs with 0 GPUs or 0 s run time (dropped and counted by default)",
    )
    p.add_argument(
        "--min-duration",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="drop jobs that ran less than this (default: 0, keep all)",
    )


def _usage(p: argparse.ArgumentParser) -> int:
    p.print_help(sys.stderr)
    return 2


def _read(args: argparse.Namespace) -> ReadResult:
    if not math.isfinite(args.min_duration) or args.min_duration < 0:
        raise InputError(f"'--min-duration' must be ≥ 0 seconds (got {args.min_duration:g})")
    return read_jobs(
        args.file,
        args.trace_format,
        drop_zero=not args.keep_zero,
        min_duration=args.min_duration,
    )


def summary(result: ReadResult, args: argparse.Namespace | None = None) -> dict[str, object]:
    """Everything ``trace stats`` shows, as plain JSON-ready values."""
    out: dict[str, object] = {
        "file": result.jobs.source,
        "format": result.format,
        "rows": result.rows,
        "stats": result.jobs.stats(),
        "dropped": dict(result.dropped),
    }
    if result.format == "acme":  # the trace's published statistics, from every row
        from schedlab.traces.acme import acme_stats

        out["acme"] = acme_stats(result.jobs.source)
    if result.jobs.llm is not None:
        from schedlab.traces.llm_stats import llm_stats

        out["llm"] = llm_stats(result.jobs, getattr(args, "gpu", None) or "H100")
    return out


def _fmt(value: object) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 or value == int(value) else f"{value:,.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def run_stats(args: argparse.Namespace) -> int:
    if trace_instances.wanted(args):
        return trace_instances.run_stats(args)
    result = _read(args)
    data = summary(result, args)
    if args.json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return 0
    stats: dict[str, object] = data["stats"]  # type: ignore[assignment]
    table = Table(title=escape(f"{result.jobs.source} ({result.format})"), title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    table.add_row("data rows in file", _fmt(result.rows))
    for key, value in stats.items():
        if key == "span_seconds":
            table.add_row("span", f"{_fmt(value)} s ({float(value) / 86400:,.1f} days)")
        elif key == "by_num_gpus":
            for gpus, count in value.items():  # type: ignore[union-attr]
                table.add_row(f"jobs with {gpus} GPU(s)", _fmt(count))
        elif key == "duration_seconds":
            for name, seconds in value.items():  # type: ignore[union-attr]
                table.add_row(f"run time {name} (s)", _fmt(seconds))
        else:
            table.add_row(key.replace("_", " "), _fmt(value))
    if result.dropped:
        for reason, count in result.dropped.items():
            table.add_row(f"dropped: {reason.replace('_', ' ')}", _fmt(count))
    else:
        table.add_row("dropped", "nothing (no filter applied)")
    stdout.print(table)
    if "acme" in data:
        _print_acme(data["acme"], result.jobs.source)  # type: ignore[arg-type]
    if "llm" in data:
        _print_llm(data["llm"])  # type: ignore[arg-type]
    return 0


def _print_acme(stats: dict, source: str) -> None:
    """The AcmeTrace statistics, beside the published ones when the file is Seren's or Kalos's."""
    cluster = next((c for c in ("Seren", "Kalos") if c.lower() in Path(source).name.lower()), None)
    if cluster is not None:
        from schedlab.experiments.acme_study import compare

        frame = compare(cluster, stats)
        table = Table(title=f"AcmeTrace {cluster}: published (cluster_summary.csv) and this file")
        for col in ("item", "published", "ours", "tolerance", "verdict"):
            table.add_column(col, justify="left" if col == "item" else "right")
        for _, r in frame.iterrows():
            table.add_row(str(r["item"]), _fmt(r["published"]), _fmt(r["ours"]),
                          _fmt(r["tolerance"]), str(r["verdict"]))  # fmt: skip
        stdout.print(table)
        return
    table = Table(title="AcmeTrace statistics (GPU jobs unless stated)")
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    for key, value in stats.items():
        if key == "job_types":
            for name, pct in value.items():
                table.add_row(f"{name}: % jobs / % GPU time",
                              f"{pct['job_pct']:.1f} / {pct['gpu_time_pct']:.1f}")  # fmt: skip
        else:
            table.add_row(key.replace("_", " "), _fmt(value))
    stdout.print(table)


def _print_llm(stats: dict) -> None:
    table = Table(title=f"LLM jobs by model (GPU-hours at the planned rates on {stats['gpu']})")
    for col in ("model", "jobs", "tokens", "GPU-hours", "unplannable jobs"):
        table.add_column(col, justify="left" if col == "model" else "right")
    for name, m in stats["models"].items():
        table.add_row(name, _fmt(m["jobs"]), f"{m['tokens']:.3g}", _fmt(m["gpu_hours"]),
                      _fmt(m["unplannable"]))  # fmt: skip
    stdout.print(table)


def run_validate(args: argparse.Namespace) -> int:
    if trace_instances.wanted(args):
        return trace_instances.run_validate(args)
    result = _read(args)
    n = len(result.jobs)
    line = f"ok: {n} jobs"
    if result.dropped_total:
        parts = ", ".join(f"{k} {v}" for k, v in result.dropped.items() if v)
        line += f" ({result.format}; dropped {result.dropped_total}: {parts})"
    else:
        line += f" ({result.format})"
    stdout.print(line, soft_wrap=True, markup=False)
    if n == 0:
        console.print("warning: every job was dropped by the filters")
    return 0


def run_synthetic_llm(args: argparse.Namespace) -> int:
    from schedlab.output_dir import check_out_file
    from schedlab.results import write_csv
    from schedlab.traces.synthetic_llm import generate_llm_jobs

    if args.jobs < 1:
        raise InputError(f"'--jobs' must be ≥ 1 (got {args.jobs})")
    if not (math.isfinite(args.mean_gap) and args.mean_gap > 0):
        raise InputError(f"'--mean-gap' must be > 0 seconds (got {args.mean_gap})")
    if args.seed < 0:
        raise InputError(f"'--seed' must be ≥ 0 (got {args.seed})")
    check_out_file(args.out)
    frame = generate_llm_jobs(args.jobs, args.seed, args.mean_gap)
    write_csv(args.out, frame)
    console.print(f"wrote {args.out}: {len(frame)} LLM jobs")
    return 0
