"""schedlab beside the ElasticFlow artifact's simulator, as users of each run them: the 195-job
testbed trace (16 × 8 A100, 240 s slot, A100 tables), each policy as a whole process, median
wall and CPU seconds of ``--repeat`` runs, their ratio, and both deadline satisfactory ratios.

The artifact (``pkusys/ElasticFlow``) is not part of schedlab and is never installed by it: point
``SCHEDLAB_ELASTICFLOW`` at its ``ElasticFlow/scheduler`` folder and ``SCHEDLAB_ELASTICFLOW_PYTHON``
at an interpreter with what it imports (numpy, cvxpy with ecos, grpcio, protobuf < 4). Without
them the script says so and times schedlab alone. The network peers named in the network spec
are not timed here: RapidNetSim carries no licence (the spec reads it, never copies it) and
LumosCore is research code with no package on PyPI, so neither installs beside schedlab.

    SCHEDLAB_ELASTICFLOW=/path/ElasticFlow/scheduler SCHEDLAB_ELASTICFLOW_PYTHON=/path/bin/python \\
        python benchmarks/side_by_side.py [--policies edf-greedy gandiva tiresias] [--repeat 5]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import SHARED, Timing, children_cpu, replay_argv, time_cli

TRACE = SHARED / "traces" / "elasticflow-itp" / "simulation" / "195job.csv"
A100 = SHARED / "traces" / "elasticflow-artifact" / "throughputs_A100"
#: schedlab policy → (the artifact's --schedule, its --scheme, schedlab --param settings that
#: match the artifact's own: Tiresias' thresholds and no starvation guard).
POLICIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "edf-greedy": ("edf", "elastic", ()),
    "gandiva": ("gandiva", "gandiva", ()),
    "tiresias": (
        "dlas-gpu",
        "elastic",
        ("--param", "thresholds=3250,7200", "--param", "starvation=0"),
    ),
    "themis": ("themis", "elastic", ()),
    "elasticflow": ("ef-accessctrl", "elastic", ()),
}


def artifact_run(
    folder: Path, python: str, schedule: str, scheme: str
) -> tuple[float, float, float]:
    """(wall, CPU, DSR) of one run of the artifact's simulator, in a fresh log folder."""
    with tempfile.TemporaryDirectory(prefix="elasticflow-") as logs:
        argv = [
            python, "scheduler.py", "--cluster_spec=cluster_specs/n16g8.csv", "--print",
            f"--scheme={scheme}", f"--trace_file={TRACE}", f"--schedule={schedule}",
            f"--log_path={logs}", "--simulation=True", "--scheduling_slot=240",
            "--gpu_type=A100",
        ]  # fmt: skip
        env = {**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}
        before, started = children_cpu(), time.perf_counter()
        done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True)
        wall, cpu = time.perf_counter() - started, children_cpu() - before
        if done.returncode != 0:
            sys.exit(f"the artifact failed ({schedule}):\n{done.stderr[-2000:]}")
        with open(Path(logs) / "final_result.csv", newline="") as fh:
            dsr = float(next(csv.DictReader(fh))["ddl_satis_ratio"])
    return wall, cpu, dsr


def schedlab_dsr(argv: list[str]) -> float:
    """The DSR of one schedlab run (its summary.json)."""
    import json

    with tempfile.TemporaryDirectory(prefix="schedlab-") as tmp:
        subprocess.run(
            [sys.executable, "-m", "schedlab", *argv], cwd=tmp, check=True, capture_output=True
        )
        return float(json.loads((Path(tmp) / "run" / "summary.json").read_text())["dsr"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    ap.add_argument("--repeat", type=int, default=5, help="runs of each (medians are printed)")
    args = ap.parse_args()
    folder = os.environ.get("SCHEDLAB_ELASTICFLOW")
    python = os.environ.get("SCHEDLAB_ELASTICFLOW_PYTHON", sys.executable)
    artifact = Path(folder) if folder and (Path(folder) / "scheduler.py").is_file() else None
    if artifact is None:
        print("ElasticFlow artifact: not installed (set SCHEDLAB_ELASTICFLOW); schedlab alone")
    print(f"195-job trace, 16 x 8 A100, 240 s slot; median of {args.repeat} whole processes")
    print(f"{'policy':<12} {'schedlab CPU':>12} {'wall':>7} {'DSR':>6}   "
          f"{'artifact CPU':>12} {'wall':>7} {'DSR':>6}   {'CPU ratio':>9}")  # fmt: skip
    for name in args.policies:
        schedule, scheme, params = POLICIES[name]
        argv = replay_argv("16x8:A100", TRACE, name, "--slot", "240", "--throughputs", str(A100))
        argv = [*argv[:-2], *params, *argv[-2:]]
        ours: Timing = time_cli(argv, args.repeat)
        line = f"{name:<12} {ours.cpu:>10.2f} s {ours.wall:>5.2f} s {schedlab_dsr(argv):>6.3f}"
        if artifact is not None:
            runs = [artifact_run(artifact, python, schedule, scheme) for _ in range(args.repeat)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            line += f"   {cpu:>10.2f} s {wall:>5.2f} s {runs[0][2]:>6.3f}   {cpu / ours.cpu:>8.1f}×"
        print(line)


if __name__ == "__main__":
    main()
