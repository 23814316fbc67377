"""``schedlab policies``: what can be named on the command line, one line each."""

from __future__ import annotations

import argparse

from rich.table import Table

from schedlab.commands.common import stdout
from schedlab.policies.registry import ORDERINGS, PLACEMENT_POLICIES, SIZING_POLICIES


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "policies",
        help="list the policies with one line each",
        description="List every registered policy by kind, with one line each.",
    )
    p.set_defaults(run=run)


def _table(title: str, rows: dict[str, type]) -> Table:
    table = Table(title=title, title_justify="left", show_header=True)
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("what it does")
    for name, cls in rows.items():
        table.add_row(name, cls.summary)
    return table


def run(args: argparse.Namespace) -> int:
    stdout.print(
        _table("placement policies (pack --policy, replay --placement)", PLACEMENT_POLICIES)
    )
    stdout.print(
        _table("orderings (replay --policy; any placement; optional --backfill)", ORDERINGS)
    )
    stdout.print(
        _table(
            "whole-cluster policies (replay --policy; they pick sizes, leases or slices)",
            SIZING_POLICIES,
        )
    )
    return 0
