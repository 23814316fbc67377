"""Options that do not apply to the run asked for are refused, not ignored.

A command often has options for several kinds of run (``replay`` and ``replay --sharing``, pack
and replay grids); an option given to a run that has no use for it would silently change nothing,
and the user would read results made without it. Each command names, per kind of run, the
options that do not apply and why; :func:`refuse_given` stops with one line naming the first one
given, before any work.

"Given" means set to something other than the parser's default: an option written out at its
default value changes nothing either way.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from schedlab.errors import InputError


def flag(dest: str) -> str:
    """``net_sharing`` → ``--net-sharing``."""
    return "--" + dest.replace("_", "-")


def given(args: argparse.Namespace, parser: argparse.ArgumentParser | None, dest: str) -> bool:
    """Whether ``dest`` was set away from its default (None, False or empty without a parser)."""
    value = getattr(args, dest, None)
    if parser is not None:
        return value != parser.get_default(dest)
    return value not in (None, False, [], ())


def refuse_given(
    args: argparse.Namespace,
    dests: Iterable[str],
    why: str,
    parser: argparse.ArgumentParser | None = None,
) -> None:
    """Stop at the first of ``dests`` that is given: ``'--window' <why>``."""
    for dest in dests:
        if given(args, parser, dest):
            raise InputError(f"'{flag(dest)}' {why}")
