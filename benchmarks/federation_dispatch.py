"""What the score-based dispatchers cost on a deep queue: a window of Philly across the study's
three sites (us / es / no, 640 V100, the 2022 carbon series), engine alone and whole CLI.

python benchmarks/federation_dispatch.py [--days 2] [--load 1.5] [--data 0] [--repeat 1]
    [--dispatchers greenest earliest-finish "joint (1,0,1)"] [--settings LINES]
    [--restart-overhead S]

``greenest`` sends nearly every job to ``no`` (the lowest carbon), where a queue of hundreds
builds up: every dispatch then estimates ``W_k``, the earliest start at each site behind its
queue. Each run prints CPU seconds (the figure to compare on a shared machine) and a digest of
the outputs (jobs.csv, sites.csv, timeseries.csv, summary.json without its wall-clock field), so
that two versions of the code can be shown to give the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path

from _common import SHARED, time_cli

from schedlab.experiments.federation_study import Case, federation_text, study_jobs

PHILLY = SHARED / "traces" / "philly-adaptdl" / "philly.csv"
CARBON = SHARED / "data" / "carbon" / "hourly"


def window_trace(path: Path, days: float, load: float) -> int:
    """The study's Philly window as a generic trace (so the CLI reads the same jobs)."""
    jobs = study_jobs(str(PHILLY), load, days)
    rows = ["job_id,submit_time,num_gpus,duration"]
    for i, (t, n, d) in enumerate(
        zip(jobs.submit_time.tolist(), jobs.num_gpus.tolist(), jobs.duration.tolist(), strict=True)
    ):
        rows.append(f"p{i},{t!r},{n},{d!r}")
    path.write_text("\n".join(rows) + "\n")
    return len(jobs)


def digest(out: Path) -> str:
    """sha256 of the run's outputs, the summary's wall-clock seconds left out."""
    h = hashlib.sha256()
    for name in ("jobs.csv", "sites.csv", "timeseries.csv"):
        h.update((out / name).read_bytes())
    summary = json.loads((out / "summary.json").read_text())
    summary["federation"].pop("wall_seconds", None)
    h.update(json.dumps(summary, sort_keys=True).encode())
    return h.hexdigest()[:16]


def kept(outcome: object) -> str:
    """How often the sites' ``W_k`` plans were kept or rebuilt (versions that keep them)."""
    if not hasattr(outcome, "plans_kept"):
        return ""
    return f", W_k plan kept {outcome.plans_kept:,} / rebuilt {outcome.plans_rebuilt:,} times"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=float, default=2.0, help="window length (default 2 days)")
    ap.add_argument("--load", type=float, default=1.5, help="arrival-rate factor (default 1.5)")
    ap.add_argument(
        "--data", default="0", help="input data at us: 0, per_gpu:20 or per_gpu:200 (GB)"
    )
    ap.add_argument("--repeat", type=int, default=1, help="CLI runs per dispatcher (median)")
    ap.add_argument(
        "--settings",
        default="",
        help="more [federation] lines, e.g. 'reconsider = \"periodic:600\"' (\\n between lines)",
    )
    ap.add_argument("--restart-overhead", type=float, default=0.0, help="seconds (default 0)")
    ap.add_argument(
        "--dispatchers", nargs="+", default=["greenest", "earliest-finish", "joint (1,0,1)"]
    )
    args = ap.parse_args()
    if not PHILLY.is_file() or not CARBON.is_dir():
        raise SystemExit(f"benchmark needs {PHILLY} and {CARBON} (not found)")
    from schedlab.federation.run import FederationOptions, run_federation, write_federation
    from schedlab.traces.formats import read_jobs

    with tempfile.TemporaryDirectory(prefix="schedlab-fed-bench-") as tmp:
        root = Path(tmp)
        trace = root / "window.csv"
        n = window_trace(trace, args.days, args.load)
        print(
            f"Philly window: {n:,} jobs, {args.days:g} days at load ×{args.load:g}, 3 sites, "
            f"input data {args.data}"
        )
        jobs = read_jobs(trace).jobs
        for name in args.dispatchers:
            case = Case(str(root), str(PHILLY), str(CARBON), name, "01-01", args.load, args.data, 1)
            fed = root / f"{name.replace(' ', '_')}.toml"
            extra = args.settings.replace("\\n", "\n")
            fed.write_text(
                federation_text(case).replace("[federation]\n", f"[federation]\n{extra}\n", 1)
            )
            options = FederationOptions(trace=str(trace), restart_overhead=args.restart_overhead)
            cpu = time.process_time()
            result = run_federation(fed, options, jobs=jobs)
            engine = time.process_time() - cpu
            out = root / f"out-{fed.stem}"
            write_federation(out, result, {"trace": str(trace)})
            deepest = max(int(max(r.ts_queue, default=0)) for r in result.records)
            argv = ["replay", "--federation", str(fed), "--trace", str(trace), "--out", "run"]
            argv += ["--restart-overhead", f"{args.restart_overhead:g}"]
            cli = time_cli(argv, args.repeat)
            g = json.loads((out / "summary.json").read_text())["federation"]["global"]
            print(
                f"{name:>16}: mean JCT {g['jct']['mean']:,.0f} s, mean queueing "
                f"{g['queue_s']['mean']:,.0f} s, {g['carbon_g_per_kwh']:.1f} g CO2e/kWh"
                + (f", {g['moves']} moves ({g['running_moves']} running)" if "moves" in g else "")
            )
            print(
                f"{name:>16}: engine {engine:.2f} s CPU ({result.outcome.dispatch_seconds:.2f} s "
                f"wall in dispatch), deepest queue {deepest}{kept(result.outcome)}; "
                f"{cli.line('whole CLI')}; outputs {digest(out)}"
            )


if __name__ == "__main__":
    main()
