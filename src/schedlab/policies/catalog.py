"""The built-in policies, declared without importing them: name, class path, summary, capabilities.

A command should pay only for the policies it runs, but the policy modules pull in numpy, the
network model and the solvers. So every built-in is declared as plain data in ``catalog.toml``
beside this module: the registry (:mod:`schedlab.policies.registry`) finds a class's
``module:Class`` here and imports that module on the first lookup of its name, and ``schedlab
policies`` lists the table as it is. A test checks the table against the classes themselves, so
it cannot drift from them. Plugins are not in it: they are found by their own entry points.
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
    #: ``module:Class`` of the policy: what the registry imports when the name is first used.
    reference: str = ""


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
            reference=e["class"],
        )
        for e in entries
    )


#: Every built-in policy, in the registry's order.
BUILTIN: tuple[Listing, ...] = _read()


def names(kind: str, engine: str) -> list[str]:
    """Built-in policies of ``kind`` that run in ``engine``, in the registry's order (for help
    texts: a command lists only what it accepts)."""
    return [e.name for e in BUILTIN if e.kind == kind and engine in e.engines]
