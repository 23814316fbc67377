"""The network under the nodes, from their labels: the same topology object ``replay
--topology`` and ``serve slurm`` give network placements (``locality``, ``titan``, ``hived``,
``fragments-first``, …).

Kueue's topology-aware scheduling and KAI name network levels by node labels; so does schedlab:
``--topology-labels`` lists the label keys from the lowest level up (default
``schedlab.io/leaf,schedlab.io/spine``). A node hangs off the switch its first label names;
each switch hangs off the one the next label names on its nodes. The tree becomes a schedlab
topology by the rules of a Slurm ``topology.conf`` (:class:`schedlab.serve.topology_conf.
SwitchTree`): 100 Gbps per node link, switch links carrying all their down-links. A node without
the lowest label, or a switch whose nodes disagree on its parent, is an error naming it.
"""

from __future__ import annotations

from collections.abc import Sequence

from schedlab.errors import InputError
from schedlab.serve.kubernetes.objects import NodeInfo
from schedlab.serve.kubernetes.view import natural
from schedlab.serve.topology import ServeTopology
from schedlab.serve.topology_conf import SwitchLine, SwitchTree

DEFAULT_LEVELS = ("schedlab.io/leaf", "schedlab.io/spine")


def tree_from_labels(nodes: Sequence[NodeInfo], levels: Sequence[str]) -> SwitchTree:
    """The switch tree the nodes' labels describe (see the module docstring)."""
    if not levels:
        raise InputError("'--topology-labels' names no label")
    source = f"node labels {','.join(levels)}"
    members: dict[str, list[str]] = {}  # switch → its nodes (leaves) or child switches
    parent: dict[str, str] = {}
    level_of: dict[str, int] = {}
    for node in sorted(nodes, key=lambda n: natural(n.name)):
        if not node.gpus:
            continue  # a node without GPUs takes no part in a network placement
        below = node.name
        for k, key in enumerate(levels):
            value = node.labels.get(key)
            if value is None:
                if k == 0:
                    raise InputError(f"node {node.name} has no label {key} ({source})")
                break
            name = value
            if level_of.setdefault(name, k) != k:
                name = f"{key}={value}"
                level_of.setdefault(name, k)
            if below in parent and parent[below] != name:
                raise InputError(
                    f"switch {below} is under both {parent[below]} and {name} ({source}, "
                    f"seen on node {node.name})"
                )
            if below not in parent:
                parent[below] = name
                members.setdefault(name, []).append(below)
            below = name
    switches = tuple(
        SwitchLine(
            name=name,
            line=0,
            switches=tuple(kids) if level_of[name] > 0 else (),
            nodes=tuple(kids) if level_of[name] == 0 else (),
            link_gbps=None,
        )
        for name, kids in sorted(members.items(), key=lambda kv: (level_of[kv[0]], natural(kv[0])))
    )
    return SwitchTree(source=source, switches=switches)


def network_from_labels(nodes: Sequence[NodeInfo], levels: Sequence[str]) -> ServeTopology:
    return ServeTopology(tree=tree_from_labels(nodes, levels))
