"""Time the default pack grid (6 policies × 10 seeds on the openb default trace) end to end.

Runs the real CLI (``schedlab sweep``) in a subprocess, as a user would, and reports wall time,
runs per minute and peak memory of the workers.

    python benchmarks/pack_sweep.py [--workers 2] [--seeds 42-51] [--out /tmp/schedlab-sweep]
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import peak_rss_mib, print_whole_process, require_openb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    openb = require_openb()
    out = args.out or Path(tempfile.mkdtemp(prefix="schedlab-sweep-"))
    cmd = [
        sys.executable,
        "-m",
        "schedlab",
        "sweep",
        "--nodes",
        str(openb / "openb_node_list_gpu_node.csv"),
        "--pods",
        str(openb / "openb_pod_list_default.csv"),
        "--seeds",
        args.seeds,
        "--inflate",
        "1.3",
        "--workers",
        str(args.workers),
        "--out",
        str(out),
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - t0
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    cpu = sum(float(r["wall_seconds"]) for r in rows)
    print(
        f"{len(rows)} runs with {args.workers} workers: {wall:.1f} s wall "
        f"({len(rows) / wall * 60:.0f} runs/min; {cpu:.1f} s of run time summed)"
    )
    print(f"peak memory of one worker: {peak_rss_mib(children=True):.0f} MiB")
    print(f"results in {out}")


if __name__ == "__main__":
    main()
    print_whole_process("the pack grid")
