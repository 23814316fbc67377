"""Small network cases shared by the network tests: the spec's worked-example fabric and random
job mixes on it."""

from __future__ import annotations

from schedlab.model.snapshot import Allocation
from schedlab.network.collectives import CommSpec
from schedlab.network.generators import leafspine
from schedlab.network.topology import Topology

#: S such that one 100 Gbps link carries it in 75 ms.
BYTES_75MS = 0.075 * 100e9 / 8


def two_by_two(g: int = 4, m: int = 1, spines: int = 2) -> Topology:
    """Leaves L0, L1; hosts h0, h1 on L0 and h2, h3 on L1; 100 Gbps NICs and leaf uplinks."""
    return leafspine(leaves=2, spines=spines, hosts_per_leaf=2, g=g, m=m, nic_gbps=100.0)


def whole_hosts(hosts: list[int], g: int) -> Allocation:
    return tuple((h, tuple(range(g))) for h in hosts)


def shared_link_pair() -> tuple[Topology, list[Allocation], CommSpec]:
    """Two 2-GPU ring jobs (h0↔h2 and h1↔h3) whose only shared links are the one spine's: each
    job needs 75 ms alone on them, C = 200 ms, o = κ = 0."""
    topo = leafspine(leaves=2, spines=1, hosts_per_leaf=2, g=1, m=1, nic_gbps=100.0)
    spec = CommSpec("ring", gradient_bytes=BYTES_75MS, compute=0.2)
    return topo, [((0, (0,)), (2, (0,))), ((1, (0,)), (3, (0,)))], spec
