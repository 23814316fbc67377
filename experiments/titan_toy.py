"""Titan's toy case (ICNP '24), exactly: python experiments/titan_toy.py --out DIR [--quick].

Writes table.csv, table.md and toy.png into DIR. The case is tiny, so --quick changes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from schedlab.experiments.titan_toy import write_toy
from schedlab.output_dir import staged_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--quick", action="store_true", help="accepted; the case is already tiny")
    args = parser.parse_args(argv)
    with staged_dir(args.out) as out:
        table = write_toy(out)
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
