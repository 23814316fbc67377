"""The network under a served partition: where it comes from, and its hosts in node order.

A network placement (``JobPlacementPolicy``) sees the run's topology with host ``i`` = node ``i``
of the cluster it places on. In serve that cluster is rebuilt from Slurm every cycle (the
partition's nodes, in natural name order), so the topology is built for those nodes, and built
again only when the partition's nodes or their GPU counts change. It comes from:

* ``--topology FILE`` naming a Slurm ``topology.conf`` (any file not ending in ``.toml``), read
  once: the tree of :mod:`schedlab.serve.topology_conf` over the partition's nodes;
* ``--topology SPEC``, any spec ``schedlab replay --topology`` takes (a generator such as
  ``leafspine:...`` or a TOML file): its hosts must be as many as the partition's nodes, with
  the same GPU counts, and are named after them in order;
* otherwise Slurm's own tree (``scontrol show topology``, ``TopologyPlugin=topology/tree``), read
  once at start (Slurm reads ``topology.conf`` only when its controller starts or reconfigures).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from schedlab.errors import InputError
from schedlab.input_files import read_text
from schedlab.model.cluster import Cluster
from schedlab.network.generators import parse_topology
from schedlab.network.topology import Topology, check_cluster
from schedlab.network.topology_toml import topology_as_toml, topology_from_toml_text
from schedlab.serve.client import SlurmClient
from schedlab.serve.live import build_cluster
from schedlab.serve.slurm_state import NodeInfo
from schedlab.serve.topology_conf import SwitchTree, parse_topology_conf

#: Where the tree came from when Slurm gave it.
LIVE_SOURCE = "'scontrol show topology'"


def is_topology_conf(spec: str) -> bool:
    """A ``--topology`` value naming a Slurm topology.conf rather than a replay spec: a path
    ending in ``.conf``, or an existing file that is not TOML."""
    if spec.endswith(".toml"):
        return False
    return spec.endswith(".conf") or Path(spec).is_file()


def read_tree_file(path: Path) -> SwitchTree:
    """A topology.conf file as a switch tree; a file without switch lines is an error."""
    tree = parse_topology_conf(read_text(path, "topology file"), str(path))
    if tree is None:
        raise InputError("no SwitchName lines: not a topology.conf", path=str(path))
    return tree


class ServeTopology:
    """The partition's network for each cycle (see the module docstring)."""

    def __init__(
        self, tree: SwitchTree | None = None, fixed: Topology | None = None, spec: str = ""
    ) -> None:
        self.tree = tree
        self.fixed = fixed
        #: ``--topology`` as replay takes it, for a ``fixed`` one (a TOML file: absolute).
        self.spec = spec
        self._key: tuple[tuple[str, int], ...] | None = None
        self._topology: Topology | None = None

    @classmethod
    def from_spec(cls, spec: str) -> ServeTopology:
        """From ``--topology``: a topology.conf file or a replay topology spec."""
        if is_topology_conf(spec):
            return cls(tree=read_tree_file(Path(spec)))
        replay_spec = str(Path(spec).resolve()) if spec.endswith(".toml") else spec
        return cls(fixed=parse_topology(spec), spec=replay_spec)

    @classmethod
    def from_record(cls, record: dict[str, object]) -> ServeTopology:
        """The network a journal's ``serve`` record keeps (see :meth:`for_replay`); none when
        the run had none."""
        spec = str(record.get("topology_spec") or "")
        text = str(record.get("topology_toml") or "")
        if spec:
            return cls(fixed=parse_topology(spec), spec=spec)
        if text:
            where = "the journal's serve record, field 'topology_toml'"
            return cls(fixed=topology_from_toml_text(text, where))
        return cls()

    @classmethod
    def from_slurm(cls, client: SlurmClient) -> ServeTopology:
        """Slurm's own switch tree (none without ``TopologyPlugin=topology/tree``)."""
        return cls(tree=parse_topology_conf(client.topology(), LIVE_SOURCE, live=True))

    @property
    def available(self) -> bool:
        return self.tree is not None or self.fixed is not None

    @property
    def source(self) -> str:
        if self.tree is not None:
            return self.tree.source
        return self.fixed.source if self.fixed is not None else "none"

    def for_replay(self, nodes: list[NodeInfo]) -> dict[str, str]:
        """What the journal keeps so a replay of the run gets its network: the ``--topology``
        spec replay takes (``topology_spec``), or for a switch tree, which replay cannot read,
        the tree over ``nodes`` in the explicit TOML form (``topology_toml``); {} without one."""
        if self.fixed is not None and self.spec:
            return {"topology_spec": self.spec}
        topo = self.for_nodes(nodes)
        return {"topology_toml": topology_as_toml(topo)} if topo is not None else {}

    def for_nodes(self, nodes: list[NodeInfo], cluster: Cluster | None = None) -> Topology | None:
        """The topology whose host ``i`` is ``nodes[i]`` (None without one); InputError when the
        nodes do not fit it (a node under no switch, a different count or GPU count).
        ``cluster``: the nodes as a cluster, when they are not Slurm's (Kubernetes')."""
        if not self.available:
            return None
        key = tuple((n.name, n.gpus) for n in nodes)
        if key != self._key:
            self._topology = self._build(nodes, cluster)
            self._key = key
        return self._topology

    def _build(self, nodes: list[NodeInfo], cluster: Cluster | None = None) -> Topology:
        names, gpus = [n.name for n in nodes], [n.gpus for n in nodes]
        if self.tree is not None:
            return self.tree.topology(names, gpus)
        assert self.fixed is not None
        check_cluster(self.fixed, cluster if cluster is not None else build_cluster(nodes))
        return replace(self.fixed, host_names=tuple(names))
