"""The network under a cluster: hosts, switches and directed links with capacities.

Links have global integer ids so that per-job footprints and the sharing solver work on flat numpy
arrays. The id space is laid out by kind, in this order:

* NIC uplinks (host → leaf), one per NIC, host by host;
* NIC downlinks (leaf → host), same order;
* intra-host links, one per GPU (its NVLink-class port; never shared, as GPUs are not);
* fabric links between switches (parallel links are separate ids), in the order given;
* virtual aggregation links ``agg(s)``, one per switch with in-network aggregation throughput.

Routing needs shortest switch paths; they come from a switch × switch hop-distance matrix
computed once per topology (``scipy.sparse.csgraph``) and the per-(switch, destination) set of
next-hop links derived from it, so any Clos, fat-tree, OCS circuit set or irregular file is routed
by the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from schedlab.errors import InputError
from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import model_index
from schedlab.network.cells import CellChain

#: Switch levels.
LEAF, SPINE, CORE = 1, 2, 3
LEVEL_NAMES = {LEAF: "leaf", SPINE: "spine", CORE: "core"}

#: Link tiers (``Topology.link_tier`` holds an index into this tuple).
TIERS: tuple[str, ...] = ("intra", "host-leaf", "leaf-spine", "spine-core", "leaf-leaf", "agg")
TIER_INTRA, TIER_HOST, TIER_LEAF_SPINE, TIER_SPINE_CORE, TIER_LEAF_LEAF, TIER_AGG = range(6)

#: Default intra-host bandwidth per GPU, Gbps (as in RapidNetSim).
DEFAULT_INTRA_GBPS = 1000.0
#: Largest dense next-hop table kept per topology (entries of S² × the widest out-degree; 32 MB).
HOP_TABLE_ENTRIES = 1 << 22


@dataclass(frozen=True)
class OcsPorts:
    """An optical circuit switch between leaf uplinks and spines: port counts and port rate.

    Circuits are not part of the fabric until :meth:`Topology.with_circuits` installs them.
    """

    leaf_ports: int
    spine_ports: int
    port_gbps: float
    delay: float = 0.01  # seconds charged to each job whose circuits move (ours)


@dataclass(frozen=True)
class Topology:
    """Immutable network description; see the module docstring for the link id layout.

    ``host_leaf`` holds switch ids (of level :data:`LEAF`). ``fabric_src``/``fabric_dst`` are
    switch ids, ``fabric_gbps`` their capacities. ``ina_gbps`` per switch (0: not programmable).
    """

    name: str
    host_gpus: np.ndarray  # int64 (H,)
    host_nics: np.ndarray  # int64 (H,)
    host_nic_gbps: np.ndarray  # float64 (H,)
    host_leaf: np.ndarray  # int64 (H,), switch id
    switch_names: tuple[str, ...]
    switch_level: np.ndarray  # int64 (S,)
    fabric_src: np.ndarray  # int64 (F,)
    fabric_dst: np.ndarray  # int64 (F,)
    fabric_gbps: np.ndarray  # float64 (F,)
    intra_gbps: float = DEFAULT_INTRA_GBPS
    ina_gbps: np.ndarray | None = None  # float64 (S,)
    gpu_model: str = "GPU"
    ocs: OcsPorts | None = None
    host_names: tuple[str, ...] | None = None
    source: str = field(default="<memory>")
    #: HiveD's cell chain from the topology file's ``[[cells]]`` (None: the default chain).
    cells: CellChain | None = None

    def __post_init__(self) -> None:
        h, s = len(self.host_gpus), len(self.switch_names)
        for attr, n in (
            ("host_nics", h),
            ("host_nic_gbps", h),
            ("host_leaf", h),
            ("switch_level", s),
            ("fabric_dst", len(self.fabric_src)),
            ("fabric_gbps", len(self.fabric_src)),
        ):
            if len(getattr(self, attr)) != n:
                raise ValueError(f"Topology.{attr} has {len(getattr(self, attr))} entries, not {n}")
        if self.ina_gbps is None:
            object.__setattr__(self, "ina_gbps", np.zeros(s))
        if self.host_names is None:
            object.__setattr__(self, "host_names", tuple(f"h{i}" for i in range(h)))
        if h and (self.host_gpus < 1).any():
            raise ValueError("every host needs at least one GPU")
        if h and (self.host_nics < 1).any():
            raise ValueError("every host needs at least one NIC")
        if h and (self.switch_level[self.host_leaf] != LEAF).any():
            raise ValueError("hosts must hang off leaf switches")
        if len(self.fabric_gbps) and (self.fabric_gbps <= 0).any():
            raise ValueError("fabric link capacities must be > 0")

    # -- sizes and id layout ---------------------------------------------------------------------
    @property
    def num_hosts(self) -> int:
        return len(self.host_gpus)

    @property
    def num_switches(self) -> int:
        return len(self.switch_names)

    @cached_property
    def total_gpus(self) -> int:
        return int(self.host_gpus.sum())

    @cached_property
    def nic_base(self) -> np.ndarray:
        """Id of host h's NIC 0 uplink; its downlink is that plus :attr:`num_nics`."""
        return np.concatenate([[0], np.cumsum(self.host_nics)[:-1]]).astype(np.int64)

    @cached_property
    def num_nics(self) -> int:
        return int(self.host_nics.sum())

    @cached_property
    def intra_base(self) -> np.ndarray:
        """Id of host h's GPU 0 intra-host link."""
        start = 2 * self.num_nics
        return start + np.concatenate([[0], np.cumsum(self.host_gpus)[:-1]]).astype(np.int64)

    @cached_property
    def fabric_base(self) -> int:
        return 2 * self.num_nics + self.total_gpus

    @cached_property
    def agg_switches(self) -> np.ndarray:
        """Switches with in-network aggregation, in id order (their ``agg`` links follow)."""
        assert self.ina_gbps is not None
        return np.flatnonzero(self.ina_gbps > 0)

    @cached_property
    def agg_link_of(self) -> dict[int, int]:
        base = self.fabric_base + len(self.fabric_src)
        return {int(s): base + i for i, s in enumerate(self.agg_switches)}

    @property
    def num_links(self) -> int:
        return self.fabric_base + len(self.fabric_src) + len(self.agg_switches)

    def nic_up(self, host: int, nic: int) -> int:
        return int(self.nic_base[host]) + nic

    def nic_down(self, host: int, nic: int) -> int:
        return self.num_nics + int(self.nic_base[host]) + nic

    def intra(self, host: int, gpu: int) -> int:
        return int(self.intra_base[host]) + gpu

    def nic_of_gpu(self, host: int, gpu: int) -> int:
        """GPU i of a host with g GPUs and m NICs uses NIC ⌊i·m/g⌋."""
        return gpu * int(self.host_nics[host]) // int(self.host_gpus[host])

    @cached_property
    def link_gbps(self) -> np.ndarray:
        """Capacity of every link id, Gbps."""
        nic = np.repeat(self.host_nic_gbps, self.host_nics)
        intra = np.full(self.total_gpus, float(self.intra_gbps))
        assert self.ina_gbps is not None
        agg = self.ina_gbps[self.agg_switches]
        return np.concatenate([nic, nic, intra, self.fabric_gbps, agg]).astype(np.float64)

    @cached_property
    def link_bytes_per_s(self) -> np.ndarray:
        return self.link_gbps * 1e9 / 8.0

    @cached_property
    def link_tier(self) -> np.ndarray:
        """Index into :data:`TIERS` per link id."""
        lv = self.switch_level
        lo = np.minimum(lv[self.fabric_src], lv[self.fabric_dst])
        hi = np.maximum(lv[self.fabric_src], lv[self.fabric_dst])
        fab = np.where(
            hi == LEAF, TIER_LEAF_LEAF, np.where(lo == LEAF, TIER_LEAF_SPINE, TIER_SPINE_CORE)
        )
        return np.concatenate(
            [
                np.full(2 * self.num_nics, TIER_HOST),
                np.full(self.total_gpus, TIER_INTRA),
                fab,
                np.full(len(self.agg_switches), TIER_AGG),
            ]
        ).astype(np.int64)

    @cached_property
    def leaves(self) -> np.ndarray:
        """Switch ids of the leaves, in id order."""
        return np.flatnonzero(self.switch_level == LEAF)

    @cached_property
    def leaf_rank(self) -> np.ndarray:
        """Per switch: its position among the leaves (-1 for other switches)."""
        rank = np.full(self.num_switches, -1, dtype=np.int64)
        rank[self.leaves] = np.arange(len(self.leaves))
        return rank

    def host_leaf_index(self) -> np.ndarray:
        """Per host: 0-based leaf number (the ``Cluster.rack`` of that host)."""
        return self.leaf_rank[self.host_leaf]

    def describe_link(self, link: int) -> str:
        """Human-readable name of a link id, for messages and debugging."""
        if link < self.num_nics:
            h = int(np.searchsorted(self.nic_base, link, side="right") - 1)
            return f"{self.host_names[h]}.nic{link - self.nic_base[h]}->up"  # type: ignore[index]
        if link < 2 * self.num_nics:
            return self.describe_link(link - self.num_nics).replace("->up", "<-down")
        if link < self.fabric_base:
            h = int(np.searchsorted(self.intra_base, link, side="right") - 1)
            return f"{self.host_names[h]}.gpu{link - self.intra_base[h]}.intra"  # type: ignore[index]
        f = link - self.fabric_base
        if f < len(self.fabric_src):
            a, b = self.switch_names[self.fabric_src[f]], self.switch_names[self.fabric_dst[f]]
            return f"{a}->{b}#{f}"
        s = int(self.agg_switches[f - len(self.fabric_src)])
        return f"agg({self.switch_names[s]})"

    # -- routing support -------------------------------------------------------------------------
    @cached_property
    def hop_distance(self) -> np.ndarray:
        """Switch × switch hop counts over the directed fabric (large value: unreachable)."""
        from scipy.sparse import csr_matrix  # routing only: reading a topology does not need it
        from scipy.sparse.csgraph import shortest_path

        s = self.num_switches
        ones = np.ones(len(self.fabric_src))
        graph = csr_matrix((ones, (self.fabric_src, self.fabric_dst)), shape=(s, s))
        dist = shortest_path(graph, directed=True, unweighted=True)
        dist[~np.isfinite(dist)] = 1e9
        return dist.astype(np.int64)

    @cached_property
    def _out_links(self) -> list[np.ndarray]:
        order = np.argsort(self.fabric_src, kind="stable")
        bounds = np.searchsorted(self.fabric_src[order], np.arange(self.num_switches + 1))
        return [
            (order[bounds[i] : bounds[i + 1]] + self.fabric_base).astype(np.int64)
            for i in range(self.num_switches)
        ]

    @cached_property
    def _next_hop_cache(self) -> dict[tuple[int, int], np.ndarray]:
        return {}

    def next_hops(self, switch: int, target: int) -> np.ndarray:
        """Fabric link ids out of ``switch`` that lie on a shortest path to switch ``target``."""
        key = (switch, target)
        cached = self._next_hop_cache.get(key)
        if cached is not None:
            return cached
        out = self._out_links[switch]
        dist = self.hop_distance
        far = dist[self.fabric_dst[out - self.fabric_base], target]
        hops = out[far == dist[switch, target] - 1]
        self._next_hop_cache[key] = hops
        return hops

    @cached_property
    def _hop_table(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(count, links) per code ``switch · S + target``: how many next hops, and the
        :meth:`next_hops` links padded to the widest switch (count −1: not filled in yet).
        None when such a table would be too large to keep (it is S² × the largest out-degree)."""
        s = self.num_switches
        width = max((len(out) for out in self._out_links), default=0)
        if not width or s * s * width > HOP_TABLE_ENTRIES:
            return None
        return np.full(s * s, -1, dtype=np.int64), np.zeros((s * s, width), dtype=np.int64)

    def next_hop_rows(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`next_hops` of many (switch, target) pairs at once, by code ``switch · S +
        target``: (number of next hops, links padded to a fixed width) per code, rows of a table
        filled the first time a pair is asked for. None when the topology is too large for the
        table (ask :meth:`next_hops` pair by pair then)."""
        table = self._hop_table
        if table is None:
            return None
        count, links = table
        got = count[codes]
        if (got < 0).any():
            s = self.num_switches
            for code in np.unique(codes[got < 0]).tolist():
                hops = self.next_hops(code // s, code % s)
                count[code] = len(hops)
                links[code, : len(hops)] = hops
            got = count[codes]
        return got, links[codes]

    def link_far_end(self, link: int) -> int:
        """Destination switch of a fabric link id."""
        return int(self.fabric_dst[link - self.fabric_base])

    def links_between(self, group_a: list[int], group_b: list[int]) -> frozenset[int]:
        """Fabric link ids joining any switch of one group to any of the other, both ways: the
        links a vClos-style reservation of leaves × spines owns."""
        a, b = np.isin(self.fabric_src, group_a), np.isin(self.fabric_dst, group_b)
        c, d = np.isin(self.fabric_src, group_b), np.isin(self.fabric_dst, group_a)
        return frozenset((np.flatnonzero((a & b) | (c & d)) + self.fabric_base).tolist())

    def switch(self, name: str) -> int:
        """Switch id by name; InputError naming the value when there is none."""
        try:
            return self.switch_names.index(name)
        except ValueError:
            raise InputError(f"no switch {name!r} in topology {self.name!r}") from None

    def reachable(self, a: int, b: int) -> bool:
        return bool(self.hop_distance[a, b] < 1e9)

    # -- OCS circuits ----------------------------------------------------------------------------
    def with_circuits(self, circuits: list[tuple[int, int]]) -> Topology:
        """A copy whose inter-switch fabric is exactly ``circuits``: pairs (leaf, other switch),
        each a bidirectional circuit of the OCS port rate (another leaf: a leaf-to-leaf circuit).

        Raises InputError when a leaf or spine would use more ports than it has.
        """
        if self.ocs is None:
            raise InputError(f"topology {self.name!r} has no optical circuit switch")
        leaf_used = np.zeros(self.num_switches, dtype=np.int64)
        spine_used = np.zeros(self.num_switches, dtype=np.int64)
        src, dst = [], []
        for a, b in circuits:
            if self.switch_level[a] != LEAF:
                raise InputError(f"circuit ({a}, {b}): {self.switch_names[a]} is not a leaf")
            leaf_used[a] += 1
            if self.switch_level[b] == LEAF:
                leaf_used[b] += 1
            else:
                spine_used[b] += 1
            src += [a, b]
            dst += [b, a]
        over = np.flatnonzero(leaf_used > self.ocs.leaf_ports)
        if len(over):
            raise InputError(
                f"circuits use {leaf_used[over[0]]} uplink ports of leaf "
                f"{self.switch_names[over[0]]}, which has {self.ocs.leaf_ports}"
            )
        over = np.flatnonzero(spine_used > self.ocs.spine_ports)
        if len(over):
            raise InputError(
                f"circuits use {spine_used[over[0]]} ports of spine "
                f"{self.switch_names[over[0]]}, which has {self.ocs.spine_ports}"
            )
        n = len(src)
        fresh = replace(
            self,
            fabric_src=np.asarray(src, dtype=np.int64).reshape(n),
            fabric_dst=np.asarray(dst, dtype=np.int64).reshape(n),
            fabric_gbps=np.full(n, float(self.ocs.port_gbps)),
        )
        return fresh


def ocs_moved_jobs(
    old: dict[int, frozenset[tuple[int, int]]], new: dict[int, frozenset[tuple[int, int]]]
) -> list[int]:
    """Jobs whose circuit sets differ between two assignments (job → circuits); each of them is
    charged :attr:`OcsPorts.delay` as an overhead when the OCS is reconfigured."""
    return sorted(j for j in set(old) | set(new) if j in old and j in new and old[j] != new[j])


def check_cluster(topology: Topology, cluster: Cluster) -> None:
    """Raise InputError when a cluster and a topology describe different hosts."""
    if cluster.size != topology.num_hosts:
        raise InputError(
            f"the topology {topology.name!r} has {topology.num_hosts} hosts but the cluster "
            f"{cluster.source} has {cluster.size} nodes"
        )
    bad = np.flatnonzero(cluster.num_gpus != topology.host_gpus)
    if len(bad):
        h = int(bad[0])
        raise InputError(
            f"node {cluster.names[h]} (#{h}) has {int(cluster.num_gpus[h])} GPUs in the cluster "
            f"{cluster.source} but host {topology.host_names[h]} has "  # type: ignore[index]
            f"{int(topology.host_gpus[h])} in the topology {topology.name!r}"
        )


def cluster_for(topology: Topology, cluster: Cluster | None = None) -> Cluster:
    """The cluster to simulate: the given one checked against the topology, or one built from the
    topology (hosts with its GPUs of ``topology.gpu_model``); racks are the hosts' leaves."""
    racks = topology.host_leaf_index().astype(np.int64)
    if cluster is not None:
        check_cluster(topology, cluster)
        return replace(cluster, rack=racks)
    gpus = topology.host_gpus.astype(np.int64)
    try:
        model = model_index(topology.gpu_model)
    except KeyError:
        raise InputError(f"unknown GPU model {topology.gpu_model!r} in field 'model'") from None
    return Cluster(
        names=np.asarray(topology.host_names, dtype=object),
        cpu_milli=gpus * 8000,
        memory_mib=gpus * 64 * 1024,
        num_gpus=gpus,
        model=np.full(topology.num_hosts, model, dtype=np.int64),
        source=topology.source,
        rack=racks,
    )
