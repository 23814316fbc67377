"""Policies found by name. Engines ask the registry; they never branch on a policy's class.

Typos get a "did you mean …?" so a sweep does not die an hour in on a misspelt name.
"""

from __future__ import annotations

import difflib

from schedlab.errors import InputError
from schedlab.policies.placement import (
    BestFitPlacement,
    DotProductPlacement,
    FgdPlacement,
    GpuClusteringPlacement,
    GpuPackingPlacement,
    PlacementPolicy,
    RandomPlacement,
)

PLACEMENT_POLICIES: dict[str, type[PlacementPolicy]] = {
    cls.name: cls
    for cls in (
        RandomPlacement,
        DotProductPlacement,
        GpuClusteringPlacement,
        GpuPackingPlacement,
        BestFitPlacement,
        FgdPlacement,
    )
}


def placement_names() -> list[str]:
    """Registered placement policies, in the order of the FGD paper's figures."""
    return list(PLACEMENT_POLICIES)


def make_placement(name: str) -> PlacementPolicy:
    """A fresh policy object for ``name``; unknown names raise InputError with suggestions."""
    try:
        return PLACEMENT_POLICIES[name]()
    except KeyError:
        close = difflib.get_close_matches(name, PLACEMENT_POLICIES, n=2)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise InputError(
            f"unknown placement policy {name!r}{hint} (known: {', '.join(PLACEMENT_POLICIES)})"
        ) from None
