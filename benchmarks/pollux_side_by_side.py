"""schedlab beside Pollux's simulator on Pollux's own workload, as each is run.

Pollux's simulator (``petuum/adaptdl``, tag ``osdi21-artifact``, folder ``simulator/``) runs
``python simulator.py --policy POLICY workloads/workload-6.csv`` on 16 nodes of 4 GPUs with a
60 s scheduling interval; schedlab runs the same workload and traces with
``schedlab replay --cluster 16x4:V100 --trace workload-6.csv --apps traces --policy NAME``.
Each side runs as a fresh process; the figures are CPU seconds (user + system) of the whole
process, imports included, and its wall time, median of ``--repeat`` runs. For Tiresias and
Optimus+Oracle the per-job JCTs of both sides are compared and the count of equal ones printed
(they are equal: the reference results come from this simulator). Pollux's genetic algorithm
is unseeded in the artifact, so for ``pollux`` only the two average JCTs are printed.

The artifact is not part of schedlab and is never installed by it: point ``SCHEDLAB_POLLUX`` at
its ``simulator`` folder and ``SCHEDLAB_POLLUX_PYTHON`` at an interpreter with what its
requirements.txt pins (numpy 1.19, pandas 1.1, scipy 1.5, pymoo 0.4.2). Without them the script
times schedlab alone. An artifact run longer than ``--artifact-timeout`` seconds is stopped and
reported with the simulated time it reached.

    python benchmarks/pollux_side_by_side.py [--cases tiresias optimus pollux]
        [--workload 6] [--repeat 1] [--artifact-timeout 2400] [--logs DIR]
        [--side both|schedlab|artifact]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import SHARED, children_cpu, compile_schedlab

POLLUX = SHARED / "data" / "goodput" / "pollux"
#: The artifact's policy names → schedlab's.
POLICIES = {"tiresias": "pollux-sim-tiresias", "optimus": "optimus-oracle", "pollux": "pollux"}
#: Policies whose runs are deterministic on both sides (per-job JCTs compared).
EXACT = {"tiresias", "optimus"}
SIM_TIME = re.compile(r"SIMULATOR TIME: (\d+)")


@dataclass(frozen=True)
class Run:
    """Median wall and CPU seconds of a side's runs, and the per-job JCTs of its last run
    (empty when the run was stopped); ``reached`` is the simulated time a stopped run got to."""

    wall: float
    cpu: float
    jcts: dict[str, float]
    reached: int | None = None

    @property
    def average(self) -> str:
        return f"{statistics.fmean(self.jcts.values()):.5f}" if self.jcts else "unfinished"


def timed(
    argv: list[str], cwd: str, timeout: float | None, log: Path | None = None
) -> tuple[float, float, str, bool]:
    """Wall and CPU seconds of one process, its stdout, and whether it finished in time. The
    output goes to a file as it is written (``log`` when given, kept there), so that a long run
    can be followed and what a stopped run printed is not lost."""
    with contextlib.ExitStack() as stack:
        if log is None:
            sink = stack.enter_context(tempfile.TemporaryFile("w+"))
        else:
            sink = stack.enter_context(open(log, "w+"))
        before, started = children_cpu(), time.perf_counter()
        with subprocess.Popen(
            argv, cwd=cwd, stdout=sink, stderr=subprocess.PIPE, text=True
        ) as proc:
            try:
                _, err = proc.communicate(timeout=timeout)
                finished = True
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                finished = False
        wall, cpu = time.perf_counter() - started, children_cpu() - before
        sink.seek(0)
        out = sink.read()
    if finished and proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{err[-2000:]}")
    return wall, cpu, out, finished


def log_file(folder: Path | None, side: str, policy: str) -> Path | None:
    return None if folder is None else folder / f"{side}-{policy}.log"


def ours(policy: str, workload: Path, repeat: int, logs: Path | None = None) -> Run:
    runs, jcts = [], {}
    for _ in range(max(repeat, 1)):
        with tempfile.TemporaryDirectory(prefix="schedlab-bench-") as tmp:
            argv = [sys.executable, "-m", "schedlab", "replay", "--cluster", "16x4:V100"]
            argv += ["--trace", str(workload), "--apps", str(POLLUX / "traces")]
            argv += ["--policy", POLICIES[policy], "--out", "run"]
            wall, cpu, _, _ = timed(argv, tmp, None, log_file(logs, "schedlab", policy))
            with open(Path(tmp) / "run" / "jobs.csv", newline="") as f:
                jcts = {row["job_id"]: float(row["jct"]) for row in csv.DictReader(f)}
        runs.append((wall, cpu))
    return Run(statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs), jcts)


def artifact(
    folder: str,
    python: str,
    policy: str,
    workload: Path,
    repeat: int,
    timeout: float,
    logs: Path | None = None,
) -> Run:
    """The artifact's runs; its last printed dict holds the JCT of every completed job."""
    runs, jcts, reached = [], {}, None
    for _ in range(max(repeat, 1)):
        argv = [python, "simulator.py", "--policy", policy, str(workload)]
        wall, cpu, out, finished = timed(argv, folder, timeout, log_file(logs, "artifact", policy))
        runs.append((wall, cpu))
        if not finished:
            times = SIM_TIME.findall(out)
            return Run(wall, cpu, {}, int(times[-1]) if times else 0)
        dicts = [line for line in out.splitlines() if line.startswith("{")]
        jcts = {k: float(v) for k, v in ast.literal_eval(dicts[-1]).items()}
    return Run(
        statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs), jcts, reached
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["tiresias", "optimus"], choices=POLICIES)
    parser.add_argument("--workload", type=int, default=6, choices=range(1, 9))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--artifact-timeout", type=float, default=2400.0)
    parser.add_argument(
        "--side",
        choices=["both", "schedlab", "artifact"],
        default="both",
        help="time one side only (e.g. to run the two sides of a long case at the same time)",
    )
    parser.add_argument(
        "--logs", type=Path, help="keep each process's output in this folder as it runs"
    )
    args = parser.parse_args()
    if args.logs is not None:
        args.logs.mkdir(parents=True, exist_ok=True)
    folder = os.environ.get("SCHEDLAB_POLLUX")
    python = os.environ.get("SCHEDLAB_POLLUX_PYTHON", sys.executable)
    workload = POLLUX / "workloads" / f"workload-{args.workload}.csv"
    if not workload.is_file():
        sys.exit(f"benchmark needs {workload} (not found)")
    compile_schedlab()
    print(f"Pollux's simulator: workload-{args.workload}, 16 nodes x 4 GPUs (CPU s, whole process)")
    for policy in args.cases:
        mine = ours(policy, workload, args.repeat, args.logs) if args.side != "artifact" else None
        theirs = None
        if folder and args.side != "schedlab":
            theirs = artifact(
                folder, python, policy, workload, args.repeat, args.artifact_timeout, args.logs
            )
        print(report(policy, mine, theirs), flush=True)
    if not folder and args.side != "schedlab":
        print("(set SCHEDLAB_POLLUX and SCHEDLAB_POLLUX_PYTHON to time Pollux's simulator beside)")


def report(policy: str, mine: Run | None, theirs: Run | None) -> str:
    """One case's line: each side's CPU and wall, and when both finished, how they compare."""
    parts = [policy]
    if mine is not None:
        parts.append(
            f"schedlab {mine.cpu:.2f} s CPU ({mine.wall:.1f} s wall), avg JCT {mine.average} s"
        )
    if theirs is not None and theirs.reached is not None:
        parts.append(
            f"artifact stopped after {theirs.wall:.0f} s wall ({theirs.cpu:.1f} s CPU) "
            f"at simulated time {theirs.reached} s"
        )
    elif theirs is not None:
        parts.append(
            f"artifact {theirs.cpu:.2f} s CPU ({theirs.wall:.1f} s wall), "
            f"avg JCT {theirs.average} s"
        )
        if mine is not None:
            parts.append(f"schedlab {theirs.cpu / mine.cpu:.1f}x less CPU")
            if policy in EXACT:
                same = sum(mine.jcts.get(k) == v for k, v in theirs.jcts.items())
                parts.append(f"{same}/{len(theirs.jcts)} per-job JCTs equal")
    return parts[0] + ": " + "; ".join(parts[1:])


if __name__ == "__main__":
    main()
