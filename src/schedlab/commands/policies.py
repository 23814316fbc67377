"""``schedlab policies``: what can be named on the command line, one line each."""

from __future__ import annotations

import argparse

from rich.table import Table

from schedlab.commands.common import stdout
from schedlab.policies.registry import PLACEMENT_POLICIES


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "policies",
        help="list the policies with one line each",
        description="List every registered policy by kind, with one line each.",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    table = Table(title="placement policies", title_justify="left", show_header=True)
    table.add_column("name", style="bold")
    table.add_column("what it does")
    for name, cls in PLACEMENT_POLICIES.items():
        table.add_row(name, cls.summary)
    stdout.print(table)
    return 0
