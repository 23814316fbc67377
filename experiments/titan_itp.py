"""Titan on the Microsoft ITP trace (ICNP '24): python experiments/titan_itp.py --out DIR [--quick]
[--jobs N] [--workers N] [--shared PATH].

Replays the ten ITP clusters merged by submission time on the ``titan`` topology under titan,
fragments-first ("HiveD"), hived, bestfit-machine ("ElasticFlow") and tiresias-skew ("Tiresias"),
FIFO, and writes table.csv, table.md (ours beside the paper's, with ratios to Titan) and
titan_itp.png into DIR. --quick replays the first 400 jobs only (seconds, for tests).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from schedlab.experiments.titan_itp import markdown, run_study, with_ratios, write_study
from schedlab.output_dir import staged_dir

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--quick", action="store_true", help="the first 400 jobs only")
    parser.add_argument("--jobs", type=int, help="the first N jobs by submission time only")
    parser.add_argument("--workers", type=int, default=2, help="parallel replays (default 2)")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared data folder")
    args = parser.parse_args(argv)
    if not (args.shared / "traces" / "elasticflow-itp" / "simulation").is_dir():
        print(f"schedlab: error: no ITP traces under {args.shared}", file=sys.stderr)
        return 2
    with staged_dir(args.out) as out:
        table = run_study(args.shared, args.quick, args.workers, args.jobs)
        write_study(out, table)
    print(markdown(with_ratios(table)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
