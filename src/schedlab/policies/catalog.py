"""What ``schedlab policies`` lists about the built-in policies, declared without importing them.

Listing policies should be instant, but the policy classes pull in numpy and the solvers. Their
names, one-line summaries and capabilities are therefore declared as plain data in
``catalog.toml`` beside this module; a test
checks this table against the classes themselves (:mod:`schedlab.policies.registry`), so it
cannot drift from them. Plugins are not in it: listing them imports them.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

#: Kinds, in listing order.
KINDS = ("placement", "ordering", "sizing")


@dataclass(frozen=True)
class Listing:
    """One built-in policy as ``schedlab policies`` shows it."""

    kind: str
    name: str
    summary: str
    engines: tuple[str, ...]
    stateful: bool = False
    preemptive: bool = False
    uses_placement: bool = True


def _read() -> tuple[Listing, ...]:
    with open(Path(__file__).with_name("catalog.toml"), "rb") as fh:
        entries = tomllib.load(fh)["policy"]
    return tuple(
        Listing(
            e["kind"],
            e["name"],
            e["summary"],
            tuple(e["engines"]),
            stateful="stateful" in e["flags"],
            preemptive="preemptive" in e["flags"],
            uses_placement="own-placement" not in e["flags"],
        )
        for e in entries
    )


#: Every built-in policy, in the registry's order.
BUILTIN: tuple[Listing, ...] = _read()


def names(kind: str, engine: str) -> list[str]:
    """Built-in policies of ``kind`` that run in ``engine``, in the registry's order (for help
    texts: a command lists only what it accepts)."""
    return [e.name for e in BUILTIN if e.kind == kind and engine in e.engines]
