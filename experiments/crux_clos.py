"""Crux on the crux-clos fabric: compute utilisation under --net-control crux against fair
sharing (random-phase) and CASSINI-like interleaving, plus the GPT/BERT calibration of the
sharing rules. Writes table.csv, table.md, figure.png and workload.csv into --out.

python experiments/crux_clos.py --out DIR [--quick] [--jobs N] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from schedlab.errors import InputError
from schedlab.experiments.crux_study import calibrate, run_clos, write_outputs
from schedlab.output_dir import staged_dir

#: Jobs per fabric of the full run and of --quick.
FULL_JOBS, QUICK_JOBS = 600, 40


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--quick", action="store_true", help="6-12 ToRs, 40 jobs, 3 calibration starts")
    p.add_argument("--jobs", type=int, help=f"jobs (default {FULL_JOBS}; --quick {QUICK_JOBS})")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    jobs = args.jobs or (QUICK_JOBS if args.quick else FULL_JOBS)
    started = time.perf_counter()
    try:
        with staged_dir(args.out) as out:
            clos = run_clos(out, jobs, args.seed, args.quick)
            calibration = calibrate(starts=3 if args.quick else 12, seed=args.seed)
            write_outputs(out, clos, calibration)
    except InputError as exc:
        print(f"crux_clos: error: {exc}", file=sys.stderr)
        return 2
    print((args.out / "table.md").read_text())
    print(f"{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
