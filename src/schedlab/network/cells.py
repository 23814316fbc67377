"""HiveD's cell types as a topology declares them: ``[[cells]] name, child, count`` (§4.5).

HiveD (OSDI '20) sees a cluster as a hierarchy of cells: a cell of one type is ``count`` cells of
its child type, down to single GPUs. A topology TOML may give that chain instead of the default
one (GPU → pair → quad → node, rack = the node's leaf)::

    [[cells]]
    name = "pair"
    child = "gpu"        # the bottom of the chain: one GPU
    count = 2
    [[cells]]
    name = "node"
    child = "pair"
    count = 4            # a node of 8 GPUs: its cells are 8, 2 and 1 GPUs
    [[cells]]
    name = "rack"
    child = "node"
    count = 2            # optional: racks of 2 consecutive hosts

The cells form one chain; the cell whose GPU count is the hosts' is the node; at most one level
(the rack, consecutive hosts by index) may sit above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedlab.errors import InputError

GPU = "gpu"


@dataclass(frozen=True)
class CellChain:
    """The chain bottom-up: ``names[i]`` has ``sizes[i]`` GPUs; ``node`` indexes the node level."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    node: int

    def node_sizes(self) -> tuple[int, ...]:
        """Cell sizes inside a node, the node first, down to single GPUs: (8, 2, 1)."""
        inside = self.sizes[: self.node + 1][::-1]
        return inside if inside[-1] == 1 else (*inside, 1)

    @property
    def nodes_per_rack(self) -> int:
        """Hosts in a rack cell (0: no rack level; the node's leaf is its rack)."""
        if self.node + 1 < len(self.sizes):
            return self.sizes[self.node + 1] // self.sizes[self.node]
        return 0


#: The fields of one ``[[cells]]`` entry.
CELL_KEYS = ("name", "child", "count")


def read_cells(doc: dict[str, Any], where: str, host_gpus: list[int]) -> CellChain | None:
    """The ``[[cells]]`` of a topology document (None when it has none), checked against its
    hosts; InputError naming the file, the entry and the field otherwise."""
    if "cells" not in doc:
        return None
    entries = doc["cells"]
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputError(f"field 'cells' must be an array of tables ([[cells]]) in {where}")
    child_of: dict[str, str] = {}
    count: dict[str, int] = {}
    place: dict[str, str] = {}
    for i, cell in enumerate(entries):
        w = f"{where} [[cells]] #{i + 1}"
        for key in cell:
            if key not in CELL_KEYS:
                raise InputError(
                    f"unknown key in {w}: field {key!r} (known: {', '.join(CELL_KEYS)})"
                )
        name = cell.get("name")
        if not isinstance(name, str) or not name or name == GPU or name in child_of:
            raise InputError(
                f"missing, repeated or reserved cell name in {w}: field 'name', value {name!r}"
            )
        child = cell.get("child")
        if not isinstance(child, str) or not child:
            raise InputError(f"missing cell child in {w}: field 'child', value {child!r}")
        n = cell.get("count")
        if isinstance(n, bool) or not isinstance(n, int) or n < 2:
            raise InputError(f"bad value in {w}: field 'count', value {n!r} (an integer ≥ 2)")
        child_of[name], count[name], place[name] = child, n, w
    parent_of: dict[str, str] = {}
    for name, child in child_of.items():
        if child != GPU and child not in child_of:
            raise InputError(
                f"unknown cell in {place[name]}: field 'child', value {child!r} "
                f"(a [[cells]] name or '{GPU}')"
            )
        if child in parent_of:
            raise InputError(
                f"bad value in {place[name]}: field 'child', value {child!r}: it is already "
                f"the child of {parent_of[child]!r} (the cells form one chain)"
            )
        parent_of[child] = name
    names: list[str] = []
    sizes: list[int] = []
    below, size = GPU, 1
    while below in parent_of:
        below = parent_of[below]
        size *= count[below]
        names.append(below)
        sizes.append(size)
    stray = [n for n in child_of if n not in names]
    if stray:
        raise InputError(
            f"bad value in {place[stray[0]]}: cell {stray[0]!r} is not on the chain that "
            f"starts at child '{GPU}' (the cells form one chain)"
        )
    per_host = sorted(set(host_gpus))
    if len(per_host) != 1:
        raise InputError(f"[[cells]] in {where} need hosts of one GPU count, found {per_host}")
    g = per_host[0]
    if g not in sizes:
        raise InputError(
            f"no cell of {g} GPUs (a node) in the [[cells]] of {where}: field 'count' "
            f"(the cells have {', '.join(map(str, sizes))} GPUs)"
        )
    node = sizes.index(g)
    if len(sizes) > node + 2:
        raise InputError(
            f"bad value in {place[names[node + 2]]}: field 'child', value "
            f"{child_of[names[node + 2]]!r}: above the node ({names[node]!r}) only one level, "
            "the rack, may follow"
        )
    chain = CellChain(tuple(names), tuple(sizes), node)
    per_rack = chain.nodes_per_rack
    if per_rack and len(host_gpus) % per_rack:
        rack = names[node + 1]
        raise InputError(
            f"bad value in {place[rack]}: field 'count', value {per_rack}: "
            f"{len(host_gpus)} hosts do not split into racks of {per_rack}"
        )
    return chain
