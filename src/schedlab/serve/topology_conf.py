"""Slurm's switch tree (``topology.conf``, ``scontrol show topology``) as a schedlab topology.

Slurm's ``topology/tree`` plugin describes the network as switches, one line each::

    SwitchName=leaf1 Nodes=node[1-2]
    SwitchName=leaf2 Nodes=node[3-4] LinkSpeed=200
    SwitchName=spine Switches=leaf[1-2]

``scontrol show topology`` prints the same lines with ``Level=`` added and, on a switch above the
leaves, ``Nodes=`` listing every node below it; both forms are read here. Node and switch lists
are hostlists (``node[1-4,7]``). Keys are case-insensitive, ``#`` starts a comment and a line
ending in ``\\`` continues on the next.

Network placements need hosts on leaf switches, so a switch may have nodes or switches below it,
not both (a node the ``scontrol`` form lists on a higher switch that is not under one of its child
switches is such a node). Levels count from the leaves: a switch with nodes is a leaf, one above
leaves a spine, anything higher a core switch.

Link speeds: Slurm says ``LinkSpeed`` is in arbitrary units and does not use it; schedlab reads
it as the Gbps of every link from that switch down to each of its children (a leaf: each node's
NIC link). Without it a node's link is :data:`DEFAULT_NIC_GBPS` and a switch's link to a child
switch carries everything below that child (a non-blocking tree). ``scontrol show topology``
prints ``LinkSpeed=1`` for a switch whose line gives none, so read from there 1 means unset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from schedlab.errors import InputError
from schedlab.network.topology import CORE, Topology
from schedlab.serve.hostlist import expand_hostlist

#: Gbps of a node's link to its leaf switch when the leaf gives no ``LinkSpeed``.
DEFAULT_NIC_GBPS = 100.0
#: ``LinkSpeed`` that ``scontrol show topology`` prints for a switch whose line has none.
SLURM_DEFAULT_SPEED = 1.0

_KEYS = {"switchname", "switches", "nodes", "linkspeed", "level"}


@dataclass(frozen=True)
class SwitchLine:
    """One switch as its line gives it."""

    name: str
    line: int
    switches: tuple[str, ...]
    nodes: tuple[str, ...]
    link_gbps: float | None  # None: not given


@dataclass(frozen=True)
class SwitchTree:
    """Switches of one ``topology.conf`` (or ``scontrol show topology``), checked to be a forest
    whose nodes hang off leaf switches; :meth:`topology` turns it into a schedlab topology."""

    source: str
    switches: tuple[SwitchLine, ...]

    @cached_property
    def _by_name(self) -> dict[str, SwitchLine]:
        return {s.name: s for s in self.switches}

    @cached_property
    def below(self) -> dict[str, frozenset[str]]:
        """Every node under each switch, however deep."""
        out: dict[str, frozenset[str]] = {}

        def visit(name: str) -> frozenset[str]:
            if name not in out:
                sw = self._by_name[name]
                nodes = set(sw.nodes)
                for child in sw.switches:
                    nodes |= visit(child)
                out[name] = frozenset(nodes)
            return out[name]

        for sw in self.switches:
            visit(sw.name)
        return out

    def direct_nodes(self, sw: SwitchLine) -> tuple[str, ...]:
        """Nodes on ``sw`` itself, not under one of its child switches."""
        under = set().union(*(self.below[c] for c in sw.switches)) if sw.switches else set()
        return tuple(n for n in sw.nodes if n not in under)

    @cached_property
    def height(self) -> dict[str, int]:
        """1 for a leaf, 1 + the highest child's otherwise."""
        out: dict[str, int] = {}

        def visit(name: str) -> int:
            if name not in out:
                children = self._by_name[name].switches
                out[name] = 1 + max((visit(c) for c in children), default=0)
            return out[name]

        for sw in self.switches:
            visit(sw.name)
        return out

    @cached_property
    def leaf_of(self) -> dict[str, str]:
        """The leaf switch of every node the tree names."""
        out: dict[str, str] = {}
        for sw in self.switches:
            if not sw.switches:
                for node in sw.nodes:
                    out[node] = sw.name
        return out

    def _down_gbps(self, name: str, memo: dict[str, float]) -> float:
        """Capacity of the links from switch ``name`` to all its children."""
        if name not in memo:
            sw = self._by_name[name]
            if not sw.switches:
                memo[name] = len(sw.nodes) * (sw.link_gbps or DEFAULT_NIC_GBPS)
            else:
                memo[name] = sum(self._link_gbps(sw, c, memo) for c in sw.switches)
        return memo[name]

    def _link_gbps(self, parent: SwitchLine, child: str, memo: dict[str, float]) -> float:
        if parent.link_gbps is not None:
            return parent.link_gbps
        return self._down_gbps(child, memo) or DEFAULT_NIC_GBPS

    def topology(self, nodes: Sequence[str], gpus: Sequence[int]) -> Topology:
        """The network under these nodes (host ``i`` = ``nodes[i]`` with ``gpus[i]`` GPUs, one
        NIC): every switch of the tree, each node on its leaf. A node the tree does not place, or
        one without GPUs, is an error naming it."""
        names = [s.name for s in self.switches]
        ids = {n: i for i, n in enumerate(names)}
        host_leaf, nic_gbps = [], []
        for node, count in zip(nodes, gpus, strict=True):
            leaf = self.leaf_of.get(node)
            if leaf is None:
                raise InputError(f"node {node} is under no switch of the topology {self.source}")
            if count < 1:
                raise InputError(
                    f"node {node} has no GPUs: a network placement needs GPUs on every node "
                    f"of the partition (topology {self.source})"
                )
            host_leaf.append(ids[leaf])
            nic_gbps.append(self._by_name[leaf].link_gbps or DEFAULT_NIC_GBPS)
        memo: dict[str, float] = {}
        src, dst, gbps = [], [], []
        for sw in self.switches:
            for child in sw.switches:
                rate = self._link_gbps(sw, child, memo)
                src += [ids[sw.name], ids[child]]
                dst += [ids[child], ids[sw.name]]
                gbps += [rate, rate]
        level = [min(self.height[n], CORE) for n in names]
        return Topology(
            name=f"slurm-tree({self.source})",
            host_gpus=np.asarray(gpus, dtype=np.int64).reshape(len(nodes)),
            host_nics=np.ones(len(nodes), dtype=np.int64),
            host_nic_gbps=np.asarray(nic_gbps, dtype=np.float64).reshape(len(nodes)),
            host_leaf=np.asarray(host_leaf, dtype=np.int64).reshape(len(nodes)),
            switch_names=tuple(names),
            switch_level=np.asarray(level, dtype=np.int64).reshape(len(names)),
            fabric_src=np.asarray(src, dtype=np.int64).reshape(len(src)),
            fabric_dst=np.asarray(dst, dtype=np.int64).reshape(len(dst)),
            fabric_gbps=np.asarray(gbps, dtype=np.float64).reshape(len(gbps)),
            host_names=tuple(nodes),
            source=self.source,
        )


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) per line, comments dropped, ``\\`` continuations joined."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        body = raw.split("#", 1)[0].rstrip()
        start, before = pending if pending is not None else (number, "")
        if body.endswith("\\"):
            pending = (start, before + body[:-1] + " ")
            continue
        pending = None
        joined = (before + body).strip()
        if joined:
            out.append((start, joined))
    if pending is not None and pending[1].strip():
        out.append((pending[0], pending[1].strip()))
    return out


def _hostlist(value: str, key: str, source: str, line: int) -> tuple[str, ...]:
    if value.lower() in ("", "(null)"):
        return ()
    try:
        return tuple(expand_hostlist(value))
    except InputError as exc:
        raise InputError(f"{key}: {exc.message}", path=source, row=line) from None


def _speed(value: str, source: str, line: int, live: bool) -> float | None:
    try:
        speed = float(value)
    except ValueError:
        speed = float("nan")
    if not (speed > 0 and np.isfinite(speed)):
        raise InputError(
            f"LinkSpeed must be a number > 0 (Gbps), got {value!r}", path=source, row=line
        )
    return None if live and speed == SLURM_DEFAULT_SPEED else speed


def _parse_line(text: str, line: int, source: str, live: bool) -> SwitchLine:
    fields: dict[str, str] = {}
    for k, token in enumerate(text.split()):
        key, eq, value = token.partition("=")
        low = key.lower()
        if not eq or not key:
            raise InputError(f"expected KEY=VALUE, got {token!r}", path=source, row=line)
        if k == 0 and low != "switchname":
            raise InputError(
                f"expected a SwitchName= line (schedlab reads topology/tree), got {token!r}",
                path=source,
                row=line,
            )
        if low not in _KEYS:
            raise InputError(
                f"unknown key {key!r} (known: SwitchName, Switches, Nodes, LinkSpeed)",
                path=source,
                row=line,
            )
        if low in fields:
            raise InputError(f"{key} given twice", path=source, row=line)
        fields[low] = value
    name = fields["switchname"]
    if not name or any(ch in name for ch in "[],"):
        raise InputError(f"SwitchName must name one switch, got {name!r}", path=source, row=line)
    speed = fields.get("linkspeed")
    return SwitchLine(
        name=name,
        line=line,
        switches=_hostlist(fields.get("switches", ""), "Switches", source, line),
        nodes=_hostlist(fields.get("nodes", ""), "Nodes", source, line),
        link_gbps=None if speed is None else _speed(speed, source, line, live),
    )


def parse_topology_conf(text: str, source: str, live: bool = False) -> SwitchTree | None:
    """The switch tree in ``text`` (``None`` when it has no switch line: no topology). ``live``:
    the text is ``scontrol show topology`` output, where ``LinkSpeed=1`` means unset. Errors
    name ``source`` and the line."""
    switches: list[SwitchLine] = []
    seen: dict[str, SwitchLine] = {}
    for line, body in _logical_lines(text):
        sw = _parse_line(body, line, source, live)
        if sw.name in seen:
            raise InputError(
                f"switch {sw.name!r} is already defined on line {seen[sw.name].line}",
                path=source,
                row=line,
            )
        seen[sw.name] = sw
        switches.append(sw)
    if not switches:
        return None
    _check_tree(switches, seen, source)
    tree = SwitchTree(source, tuple(switches))
    _check_nodes(tree, source)
    return tree


def _twice(what: str, first: SwitchLine, again: SwitchLine, source: str) -> InputError:
    """A switch or node listed under a second switch: a tree gives each one parent."""
    return InputError(
        f"{what} is already under switch {first.name!r} (line {first.line}); "
        "each switch and node has one parent in a tree",
        path=source,
        row=again.line,
    )


def _check_tree(switches: list[SwitchLine], by_name: dict[str, SwitchLine], source: str) -> None:
    """Every child exists, has one parent, and no switch is its own ancestor."""
    parent: dict[str, SwitchLine] = {}
    for sw in switches:
        if not sw.switches and not sw.nodes:
            raise InputError(
                f"switch {sw.name!r} has neither Nodes nor Switches", path=source, row=sw.line
            )
        for child in sw.switches:
            if child not in by_name:
                raise InputError(
                    f"switch {sw.name!r} lists unknown switch {child!r} in Switches",
                    path=source,
                    row=sw.line,
                )
            if child == sw.name:
                raise InputError(f"switch {sw.name!r} lists itself", path=source, row=sw.line)
            if child in parent:
                raise _twice(f"switch {child!r}", parent[child], sw, source)
            parent[child] = sw
    for sw in switches:  # one parent each: a cycle is a walk up that comes back
        seen, at = {sw.name}, sw.name
        while at in parent:
            at = parent[at].name
            if at in seen:
                raise InputError(
                    f"switch {sw.name!r} is below itself (a cycle of Switches)",
                    path=source,
                    row=sw.line,
                )
            seen.add(at)


def _check_nodes(tree: SwitchTree, source: str) -> None:
    """Nodes hang off leaf switches only, each off one."""
    leaf_line: dict[str, SwitchLine] = {}
    for sw in tree.switches:
        if sw.switches:
            stray = tree.direct_nodes(sw)
            if stray:
                raise InputError(
                    f"switch {sw.name!r} has both switches and nodes below it ({stray[0]} hangs "
                    "off it directly); schedlab needs every node under a leaf switch",
                    path=source,
                    row=sw.line,
                )
            continue
        for node in sw.nodes:
            if node in leaf_line:
                raise _twice(f"node {node}", leaf_line[node], sw, source)
            leaf_line[node] = sw
