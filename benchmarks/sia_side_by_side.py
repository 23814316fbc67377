"""schedlab's Sia beside Sia's own simulator on Pollux's workload-6, as each is run.

Sia's simulator (``siasosp23/artifacts``, folder ``sia-simulator/``) runs
``python multi_simulator.py WORKLOAD.csv --policy=sia --policy_p_val=-0.5 --mip_lambda_a=0.01
--mip_lambda_n=1.1 --interval=60 --project_throughputs --share_max_replicas`` (its
``run_experiment.sh`` settings) on its default cluster, 64 GPUs: 6 nodes × 4 T4 (``aws``),
3 × 8 RTX 2080 Ti, 2 × 8 A100 (``dgx-ext``), each type with its measured tables, one CBC MILP per
60 s interval through cvxpy. schedlab runs the same workload with the cluster and synthetic
per-type speeds of ``schedlab reproduce sia`` (docs/goodput.md: the same 64 GPUs in 4-GPU
nodes, the shipped tables scaled per type, one HiGHS MILP per interval):
``schedlab replay --cluster 6x4:T4+6x4:RTX2080Ti+4x4:A100 --speed T4=1,RTX2080Ti=1.65,A100=2.41
--trace W.csv --apps traces --policy sia``. The two runs therefore do the same kind of work on
the same jobs and GPU count but not the same arithmetic, so only their cost and their average
JCTs are printed, not a per-job comparison. ``--jobs N`` keeps the first N arrivals (written to a
temporary CSV both sides read), as ``schedlab reproduce sia --quick`` keeps 48.

The artifact is never installed by schedlab: point ``SCHEDLAB_SIA`` at its ``sia-simulator``
folder and ``SCHEDLAB_SIA_PYTHON`` at an interpreter with its requirements (Python 3.10,
numpy 1.23, pandas < 2 — its table lookups call ``DataFrame.append`` —, scipy, pymoo 0.4.2,
cvxpy with CBC, psutil, autograd). Without them the script times schedlab alone.

    python benchmarks/sia_side_by_side.py [--jobs 48] [--side both|schedlab|artifact]
        [--artifact-timeout 2400] [--logs DIR]
"""

from __future__ import annotations

import argparse
import ast
import csv
import os
import re
import sys
import tempfile
from pathlib import Path

from _common import SHARED, compile_schedlab
from pollux_side_by_side import Run, log_file, report, timed

POLLUX = SHARED / "data" / "goodput" / "pollux"
WORKLOAD = POLLUX / "workloads" / "workload-6.csv"
CLUSTER = "6x4:T4+6x4:RTX2080Ti+4x4:A100"
SPEED = "T4=1,RTX2080Ti=1.65,A100=2.41"
ARTIFACT_ARGS = [
    "--policy=sia",
    "--policy_p_val=-0.5",
    "--mip_lambda_a=0.01",
    "--mip_lambda_n=1.1",
    "--interval=60",
    "--project_throughputs",
    "--share_max_replicas",
]
SIM_TIME = re.compile(r"SIMULATOR TIME:\s*(\d+)")


def first_jobs(source: Path, count: int | None, folder: Path) -> Path:
    """The workload's first ``count`` rows (arrival order, as the file is) in ``folder``."""
    if count is None:
        return source
    lines = source.read_text().splitlines()
    out = folder / f"{source.stem}-first{count}.csv"
    out.write_text("\n".join(lines[: count + 1]) + "\n")
    return out


def ours(workload: Path, logs: Path | None) -> Run:
    with tempfile.TemporaryDirectory(prefix="schedlab-bench-") as tmp:
        argv = [sys.executable, "-m", "schedlab", "replay", "--cluster", CLUSTER]
        argv += ["--speed", SPEED, "--trace", str(workload), "--apps", str(POLLUX / "traces")]
        argv += ["--policy", "sia", "--out", "run"]
        wall, cpu, _, _ = timed(argv, tmp, None, log_file(logs, "schedlab", "sia"))
        with open(Path(tmp) / "run" / "jobs.csv", newline="") as f:
            jcts = {row["job_id"]: float(row["jct"]) for row in csv.DictReader(f)}
    return Run(wall, cpu, jcts)


def artifact(folder: str, python: str, workload: Path, timeout: float, logs: Path | None) -> Run:
    """The artifact's run; after each interval it prints the JCTs of the completed jobs."""
    argv = [python, "multi_simulator.py", str(workload), *ARTIFACT_ARGS]
    wall, cpu, out, finished = timed(argv, folder, timeout, log_file(logs, "artifact", "sia"))
    if not finished:
        times = SIM_TIME.findall(out)
        return Run(wall, cpu, {}, int(times[-1]) if times else 0)
    dicts = [line for line in out.splitlines() if line.startswith("{")]
    return Run(wall, cpu, {k: float(v) for k, v in ast.literal_eval(dicts[-1]).items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, help="keep the first N jobs (default: all 160)")
    parser.add_argument("--side", choices=["both", "schedlab", "artifact"], default="both")
    parser.add_argument("--artifact-timeout", type=float, default=2400.0)
    parser.add_argument("--logs", type=Path, help="keep each process's output in this folder")
    args = parser.parse_args()
    if not WORKLOAD.is_file():
        sys.exit(f"benchmark needs {WORKLOAD} (not found)")
    if args.jobs is not None and args.jobs < 1:
        sys.exit(f"--jobs must be at least 1 (got {args.jobs})")
    if args.logs is not None:
        args.logs.mkdir(parents=True, exist_ok=True)
    folder = os.environ.get("SCHEDLAB_SIA")
    python = os.environ.get("SCHEDLAB_SIA_PYTHON", sys.executable)
    compile_schedlab()
    with tempfile.TemporaryDirectory(prefix="schedlab-sia-") as tmp:
        workload = first_jobs(WORKLOAD, args.jobs, Path(tmp))
        jobs = len(workload.read_text().splitlines()) - 1
        print(f"Sia: workload-6, {jobs} jobs, 64 GPUs of three types (CPU s, whole process)")
        mine = ours(workload, args.logs) if args.side != "artifact" else None
        theirs = None
        if folder and args.side != "schedlab":
            theirs = artifact(folder, python, workload, args.artifact_timeout, args.logs)
    print(report("sia", mine, theirs), flush=True)
    if not folder and args.side != "schedlab":
        print("(set SCHEDLAB_SIA and SCHEDLAB_SIA_PYTHON to time Sia's simulator beside)")


if __name__ == "__main__":
    main()
