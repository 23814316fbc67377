"""The ``schedlab`` command: parse arguments, dispatch to a sub-command, report errors in one line.

Errors a user can fix (bad files, bad values) print ``schedlab: error: …`` and exit 2; nothing
prints a traceback unless ``SCHEDLAB_DEBUG`` is set. An operating-system error that no command
turned into such a line (a file that vanished, a full disk) is reported the same way, naming the
file. Ctrl-C prints ``schedlab: interrupted`` and exits 130, SIGTERM ``schedlab: terminated`` and
143 (128 + the signal number, as a shell reports a process killed by it); outputs are complete or
absent either way (see :mod:`schedlab.output_dir`).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from importlib import import_module
from types import FrameType
from typing import NoReturn

from schedlab import __version__
from schedlab.errors import SchedlabError

#: Every sub-command: its module under ``schedlab.commands`` and its one-line help. Only the
#: module of the command being run is imported (``schedlab --help`` imports none), so that
#: starting the command does not pay for the libraries of all the others.
COMMANDS: dict[str, str] = {
    "demo": "compare all placement policies on a generated cluster (no files needed)",
    "pack": "place a pod stream once each and measure fragmentation (FGD protocol)",
    "replay": "simulate a job trace over time (queueing, gang starts, preemption)",
    "sweep": "run a grid of pack or replay runs in parallel",
    "trace": "check a job trace and summarise it",
    "gen": "generate Gavel's workloads, or throughput tables from a matrix",
    "report": "compare replay runs in one self-contained HTML page",
    "policies": "list the policies with one line each",
    "serve": "drive a live cluster (Slurm) with a schedlab policy",
    "reproduce": "list and run the reproductions of published results",
    "plan": "split a large model over GPUs: fastest plan that fits, and why others do not",
    "tune": "choose a job's configuration: serverless pipeline plans",
}

EXIT_USAGE = 2
EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(BaseException):
    """SIGTERM arrived: unwind like Ctrl-C does (outputs discarded, workers stopped)."""


def _unwind(signum: int, _frame: FrameType | None) -> None:
    if os.getpid() != _owner[0]:
        # A worker process forked from this one, before it set its own handlers: behave as
        # the defaults would there (Ctrl-C is the parent's business; SIGTERM ends it quietly).
        if signum == signal.SIGTERM:
            os._exit(128 + signum)
        return
    # The first signal starts the clean-up; more of them must not interrupt it half-way.
    for sig in _UNWIND:
        signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated


_UNWIND = (signal.SIGINT, signal.SIGTERM)
#: The process whose main() installed the handlers.
_owner = [os.getpid()]


@contextmanager
def _signals_unwind() -> Iterator[None]:
    """SIGINT and SIGTERM raise in the main thread, so ``finally`` blocks and context managers
    remove partial outputs and stop worker processes on the way out."""
    _owner[0] = os.getpid()
    try:
        previous = {sig: signal.signal(sig, _unwind) for sig in _UNWIND}
    except ValueError:  # not the main thread (main() called from a thread): leave them alone
        yield
        return
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def describe_os_error(exc: OSError) -> str:
    """``No such file or directory at runs/x`` from an OSError, naming its file(s) when known."""
    reason = exc.strerror or str(exc) or exc.__class__.__name__
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"{reason} at {' and '.join(paths)}" if paths else reason


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser with its refusals on one line, as every other refusal of schedlab
    (an unknown option, a value of the wrong type): the usage is one '--help' away. The
    parsers of the sub-commands are of this class too (argparse makes them like their parent)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser(load: Collection[str] = COMMANDS) -> argparse.ArgumentParser:
    """The command-line parser, with the options of the sub-commands in ``load`` (all by
    default)."""
    parser = OneLineParser(
        prog="schedlab",
        description=(
            "Decide where and when deep-learning work runs on a shared GPU cluster, and measure "
            "how well that went."
        ),
        epilog="Run 'schedlab COMMAND --help' for a command's options. Start with 'schedlab demo'.",
    )
    parser.add_argument("--version", action="version", version=f"schedlab {__version__}")
    sub = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    for name, summary in COMMANDS.items():
        if name in load:
            import_module(f"schedlab.commands.{name}").add_parser(sub)
        else:  # listed with its help; its options are read only when it is run
            sub.add_parser(name, help=summary, add_help=False)
    return parser


def _command_in(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names: its first word that is not an option."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser({_command_in(argv)} & set(COMMANDS))
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    debug = bool(os.environ.get("SCHEDLAB_DEBUG"))
    try:
        with _signals_unwind():
            return int(args.run(args))
    except SchedlabError as exc:
        if debug:
            raise
        print(f"schedlab: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # the last line of defence: commands name their files themselves
        if debug:
            raise
        print(f"schedlab: error: {describe_os_error(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("schedlab: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("schedlab: terminated", file=sys.stderr)
        return EXIT_TERMINATED
