"""``schedlab policies``: what can be named on the command line, one line each."""

from __future__ import annotations

import argparse

from rich.table import Table

from schedlab.commands.common import add_plugin_option, stdout
from schedlab.policies.api import capabilities
from schedlab.policies.plugins import load_references, plugins
from schedlab.policies.registry import ordering_classes, placement_classes, sizing_classes


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "policies",
        help="list the policies with one line each",
        description=(
            "List every registered policy by kind, with one line each: the built-in ones and "
            "the plugins (installed 'schedlab.policies' entry points, and any --plugin given)."
        ),
    )
    add_plugin_option(p)
    p.set_defaults(run=run)


def _runs_in(cls: type) -> str:
    caps = capabilities(cls)
    notes = [
        word
        for word, on in (
            ("stateful", caps["stateful"]),
            ("preemptive", caps["preemptive"]),
            ("own placement", not caps["uses_placement"]),
        )
        if on
    ]
    return " ".join(caps["engines"]) + (f" ({', '.join(notes)})" if notes else "")  # type: ignore[arg-type]


def _table(title: str, rows: dict[str, type], plugged: dict[str, str]) -> Table:
    table = Table(title=title, title_justify="left", show_header=True)
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("what it does")
    table.add_column("runs in")
    table.add_column("from")
    for name, cls in rows.items():
        origin = plugged.get(name)
        table.add_row(
            name, cls.summary, _runs_in(cls), "schedlab" if origin is None else f"plugin {origin}"
        )
    return table


def run(args: argparse.Namespace) -> int:
    load_references(args.plugin)
    plugged = {p.name: p.reference for p in plugins()}
    stdout.print(
        _table(
            "placement policies (pack --policy, replay --placement)", placement_classes(), plugged
        )
    )
    stdout.print(
        _table(
            "orderings (replay --policy; any placement; optional --backfill)",
            ordering_classes(),
            plugged,
        )
    )
    stdout.print(
        _table(
            "whole-cluster policies (replay --policy; they pick sizes, leases or slices)",
            sizing_classes(),
            plugged,
        )
    )
    return 0
