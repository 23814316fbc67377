"""``schedlab policies``: what can be named on the command line, one line each."""

from __future__ import annotations

import argparse

from rich.table import Table

from schedlab.commands.common import add_plugin_option, stdout
from schedlab.policies.catalog import BUILTIN, KINDS, Listing


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "policies",
        help="list the policies with one line each",
        description=(
            "List every registered policy by kind, with one line each: the built-in ones and "
            "the plugins (installed 'schedlab.policies' entry points, and any --plugin given)."
        ),
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON array on stdout: each policy's kind, name, summary, engines, "
        "capabilities, --param keys with their defaults, and where it comes from",
    )
    add_plugin_option(p)
    p.set_defaults(run=run)


#: Table titles by kind.
TITLES = {
    "placement": "placement policies (pack --policy, replay --placement)",
    "ordering": "orderings (replay --policy; any placement; optional --backfill)",
    "sizing": "whole-cluster policies (replay --policy; they pick sizes, leases or slices)",
}


def _runs_in(entry: Listing) -> str:
    notes = [
        word
        for word, on in (
            ("stateful", entry.stateful),
            ("preemptive", entry.preemptive),
            ("own placement", not entry.uses_placement),
        )
        if on
    ]
    return " ".join(entry.engines) + (f" ({', '.join(notes)})" if notes else "")


def _table(title: str, rows: list[tuple[Listing, str | None]]) -> Table:
    table = Table(title=title, title_justify="left", show_header=True)
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("what it does")
    table.add_column("runs in")
    table.add_column("from")
    for entry, origin in rows:
        table.add_row(
            entry.name,
            entry.summary,
            _runs_in(entry),
            "schedlab" if origin is None else f"plugin {origin}",
        )
    return table


def _has_installed_plugins() -> bool:
    from importlib.metadata import entry_points

    return bool(entry_points(group="schedlab.policies"))


def _parameters(cls: type) -> dict[str, object]:
    """The ``--param`` keys of a policy class with their defaults (JSON-ready)."""
    import inspect

    out: dict[str, object] = {}
    for key, p in inspect.signature(cls.__init__).parameters.items():  # type: ignore[misc]
        if key in ("self", "slot", "args", "kwargs") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = None if p.default is inspect.Parameter.empty else p.default
        if isinstance(default, tuple):
            default = list(default)
        out[key] = (
            default
            if isinstance(default, str | int | float | bool | list)
            else (None if default is None else str(default))
        )
    return out


def _as_json(rows: list[tuple[Listing, str | None, type]]) -> str:
    import json

    entries = [
        {
            "kind": entry.kind,
            "name": entry.name,
            "summary": entry.summary,
            "engines": list(entry.engines),
            "stateful": entry.stateful,
            "preemptive": entry.preemptive,
            "uses_placement": entry.uses_placement,
            "parameters": _parameters(cls),
            "from": "schedlab" if origin is None else f"plugin {origin}",
        }
        for kind in KINDS
        for entry, origin, cls in rows
        if entry.kind == kind
    ]
    return json.dumps(entries, indent=2)


def _with_plugins(references: list[str]) -> list[tuple[Listing, str | None, type]]:
    """Every policy read from its class (built-ins and plugins): imports them all."""
    from schedlab.policies.api import capabilities
    from schedlab.policies.plugins import load_references, plugins, reference_of
    from schedlab.policies.registry import ordering_classes, placement_classes, sizing_classes

    load_references(references)
    plugged = {p.name: p.reference for p in plugins()}
    rows = []
    for kind, classes in (
        ("placement", placement_classes()),
        ("ordering", ordering_classes()),
        ("sizing", sizing_classes()),
    ):
        for name, cls in classes.items():
            caps = capabilities(cls)
            entry = Listing(
                kind,
                name,
                cls.summary,
                caps["engines"],  # type: ignore[arg-type]
                stateful=bool(caps["stateful"]),
                preemptive=bool(caps["preemptive"]),
                uses_placement=bool(caps["uses_placement"]),
                reference=reference_of(cls),
            )
            rows.append((entry, plugged.get(name), cls))
    return rows


def run(args: argparse.Namespace) -> int:
    if args.json:  # parameters come from the classes: every policy module is imported
        print(_as_json(_with_plugins(args.plugin)))
        return 0
    if args.plugin or _has_installed_plugins():
        rows = [(entry, origin) for entry, origin, _ in _with_plugins(args.plugin)]
    else:  # the declared table: no policy module imported, so the listing is instant
        rows = [(entry, None) for entry in BUILTIN]
    for kind in KINDS:
        stdout.print(_table(TITLES[kind], [r for r in rows if r[0].kind == kind]))
    return 0
