"""The ``schedlab`` command: parse arguments, dispatch to a sub-command, report errors in one line.

Errors a user can fix (bad files, bad values) print ``schedlab: error: …`` and exit 2; nothing
prints a traceback unless ``SCHEDLAB_DEBUG`` is set.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from schedlab import __version__
from schedlab.commands import demo, pack, policies, replay, report, serve, sweep, trace
from schedlab.errors import SchedlabError

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="schedlab",
        description=(
            "Decide where and when deep-learning work runs on a shared GPU cluster, and measure "
            "how well that went."
        ),
        epilog="Run 'schedlab COMMAND --help' for a command's options. Start with 'schedlab demo'.",
    )
    parser.add_argument("--version", action="version", version=f"schedlab {__version__}")
    sub = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    for module in (demo, pack, replay, sweep, trace, report, policies, serve):
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except SchedlabError as exc:
        if os.environ.get("SCHEDLAB_DEBUG"):
            raise
        print(f"schedlab: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("schedlab: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
