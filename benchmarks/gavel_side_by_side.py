"""schedlab beside Gavel's simulator on Gavel's own reproduction case, as each is run.

Gavel's driver ``simulate_scheduler_with_generated_jobs.py -c 36:36:36 -s S -e E -l 1200
-p POLICY --seed 0`` generates jobs on the fly, runs 36 V100 + 36 P100 + 36 K80 in 360 s rounds
and stops when jobs S..E−1 are done; schedlab does the same in
:func:`schedlab.experiments.gavel_study.run_case` (its generator, the replay engine, the Gavel
policies). Each side runs as a fresh process; the figure is CPU seconds (user + system) of the
whole process, imports included, median of ``--repeat`` runs — on a shared machine the wall time
measures the other work more than either program — with both average JCTs printed so that the
two runs are seen to be the same run.

The artifact (``stanford-futuredata/gavel``) is not part of schedlab and is never installed by
it: point ``SCHEDLAB_GAVEL`` at its ``scheduler`` folder (RPC stubs compiled) and
``SCHEDLAB_GAVEL_PYTHON`` at an interpreter with what it imports (numpy, cvxpy with ECOS,
grpcio). Without them the script times schedlab alone. The driver prints its figures only
with ``-v``, which also logs every event; ``--artifact-verbose`` passes it (to see that both
ran the same case), the default times the artifact silent, as its sweeps run it.

    python benchmarks/gavel_side_by_side.py [--cases fifo_perf max_min_fairness_perf]
        [--window 4000 5000] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from _common import SHARED, children_cpu, compile_schedlab

#: Gavel's policy names → schedlab's.
POLICIES = {
    "fifo_perf": "gavel-fifo-perf",
    "max_min_fairness_perf": "gavel-max-min-fairness-perf",
    "max_min_fairness": "gavel-max-min-fairness",
}
OURS = """
import sys
from pathlib import Path
from schedlab.experiments.gavel_study import GavelCase, gavel_dir, run_case
from schedlab.perf.throughput_matrix import read_throughput_matrix
matrix = read_throughput_matrix(gavel_dir(Path(sys.argv[1])) / "simulation_throughputs.json")
case = GavelCase(sys.argv[2], window=(int(sys.argv[3]), int(sys.argv[4])))
print(f"Average job completion time: {run_case(case, matrix).average_jct:.3f} seconds")
"""
JCT = re.compile(r"Average job completion time: *([0-9.]+) seconds")


def timed(argv: list[str], cwd: str | None) -> tuple[float, float, str]:
    """Wall and CPU seconds of one process, and what it printed (stdout and stderr)."""
    before, started = children_cpu(), time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - started, children_cpu() - before
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return wall, cpu, done.stdout + done.stderr


def run(argv: list[str], cwd: str | None, repeat: int) -> tuple[float, float, str]:
    runs = [timed(argv, cwd) for _ in range(max(repeat, 1))]
    jcts = {m.group(1) for _, _, out in runs for m in [JCT.search(out)] if m}
    return (
        statistics.median(w for w, _, _ in runs),
        statistics.median(c for _, c, _ in runs),
        ", ".join(sorted(jcts)) or "?",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    parser.add_argument("--window", nargs=2, type=int, default=(4000, 5000))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--artifact-verbose",
        action="store_true",
        help="run the artifact with -v: it prints its average JCT, but also logs every event",
    )
    args = parser.parse_args()
    artifact = os.environ.get("SCHEDLAB_GAVEL")
    python = os.environ.get("SCHEDLAB_GAVEL_PYTHON", sys.executable)
    if not (SHARED / "data" / "goodput" / "gavel").is_dir():
        sys.exit(f"benchmark needs {SHARED / 'data' / 'goodput' / 'gavel'} (not found)")
    compile_schedlab()
    lo, hi = args.window
    print(f"Gavel's driver: -c 36:36:36 -s {lo} -e {hi} -l 1200 --seed 0 (CPU s, whole process)")
    for policy in args.cases:
        with tempfile.TemporaryDirectory(prefix="schedlab-bench-") as tmp:
            ours = [sys.executable, "-c", OURS, str(SHARED), POLICIES[policy], str(lo), str(hi)]
            wall, cpu, jct = run(ours, tmp, args.repeat)
        line = f"{policy}: schedlab {cpu:.2f} s CPU ({wall:.1f} s wall), avg JCT {jct} s"
        if artifact:
            driver = "scripts/drivers/simulate_scheduler_with_generated_jobs.py"
            theirs = [python, driver, "-c", "36:36:36", "-s", str(lo), "-e", str(hi)]
            theirs += ["-l", "1200", "-p", policy, "--seed", "0"]
            if args.artifact_verbose:  # its figures are printed only with -v (and its log)
                theirs.append("-v")
            a_wall, a_cpu, a_jct = run(theirs, artifact, args.repeat)
            line += (
                f"; artifact {a_cpu:.2f} s CPU ({a_wall:.1f} s wall), avg JCT {a_jct} s; "
                f"schedlab {a_cpu / cpu:.1f}× less CPU"
            )
        print(line, flush=True)
    if not artifact:
        print("(set SCHEDLAB_GAVEL and SCHEDLAB_GAVEL_PYTHON to time Gavel's simulator beside)")


if __name__ == "__main__":
    main()
