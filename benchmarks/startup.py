"""Start-up time of the ``schedlab`` command: ``--help``, ``policies`` and ``sweep --help``.

Each command runs as a fresh process (as a user types it), ``--repeat`` times; the script prints
the median wall and CPU time and which heavy libraries the process imported. Goal: ≤ 0.3 s for
``schedlab --help`` and ``schedlab policies`` on a 2-core machine.

    python benchmarks/startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from _common import time_cli

COMMANDS = (["--help"], ["policies"], ["sweep", "--help"])
HEAVY = ("numpy", "pandas", "matplotlib", "scipy", "rich")
GOAL = 0.3

PROBE = (
    "import sys, runpy; sys.argv = ['schedlab', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('schedlab', run_name='__main__')\n"
    "except SystemExit:\n    pass\n"
    "print(' '.join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)\n"
)


def _imports(argv: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv], capture_output=True, text=True
    )
    return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    time_cli(["--help"], 1)  # warm the file cache
    print(f"{'command':<22} {'wall s':>7} {'CPU s':>7}  heavy imports (median of {args.repeat})")
    for argv in COMMANDS:
        timing = time_cli(argv, args.repeat)
        label = "schedlab " + " ".join(argv)
        print(f"{label:<22} {timing.wall:>7.3f} {timing.cpu:>7.3f}  {_imports(argv) or '-'}")
    bare = statistics.median(_time_python() for _ in range(args.repeat))
    print(f"{'python -c pass':<22} {bare:>9.3f}  (the interpreter alone)")
    print(f"goal: ≤ {GOAL} s for 'schedlab --help' and 'schedlab policies'")


def _time_python() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
