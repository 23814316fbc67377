"""Which fabric links a flow aggregate (job, src host, dst host, NIC channel) crosses.

Paths are shortest switch paths. A flow is pushed hop by hop from the source leaf: at each switch
the next-hop links on a shortest path to the destination leaf are the candidates, and the mode
decides how the flow's bytes split over them:

* ``ecmp``: all bytes on one candidate, chosen by a fixed 64-bit mix (splitmix64) of (seed, job,
  src host, dst host, channel, switch) — the per-hop hashing of real switches, reproducible
  across runs and Python versions;
* ``spray``: bytes split evenly over the candidates;
* ``source``: split evenly over the candidates that are among the job's reserved links (vClos);
* ``policy``: explicit per-aggregate link shares set by a network controller.

In a symmetric Clos, per-hop even splitting equals an even split over whole paths.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from schedlab.errors import InputError
from schedlab.network.topology import Topology

MODES = ("ecmp", "spray", "source", "policy")
_MASK = (1 << 64) - 1

#: A flow aggregate's key: (src host, dst host, channel).
FlowKey = tuple[int, int, int]


def splitmix64(x: int) -> int:
    """One splitmix64 step: a well-mixed 64-bit value of ``x``."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def mix(*values: int) -> int:
    """Fold integers into one 64-bit hash (order matters)."""
    h = 0
    for v in values:
        h = splitmix64(h ^ (v & _MASK))
    return h


@dataclass(frozen=True)
class Routing:
    """How a job's flows take paths.

    ``reserved`` (for ``source``) is the set of fabric link ids the job owns; ``paths`` (for
    ``policy``) maps a flow key to (link, share) pairs; flows without an entry fall back to ECMP.
    """

    mode: str = "ecmp"
    seed: int = 0
    reserved: frozenset[int] = frozenset()
    paths: Mapping[FlowKey, tuple[tuple[int, float], ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InputError(
                f"unknown routing mode: field 'mode', value {self.mode!r} "
                f"(known: {', '.join(MODES)})"
            )

    def fabric_shares(
        self, topo: Topology, job: int, src_host: int, dst_host: int, channel: int
    ) -> list[tuple[int, float]]:
        """(fabric link, share of the flow's bytes) between the two hosts' leaves."""
        a, b = int(topo.host_leaf[src_host]), int(topo.host_leaf[dst_host])
        if self.mode == "policy":
            explicit = self.paths.get((src_host, dst_host, channel))
            if explicit is not None:
                return list(explicit)
        return self.between(topo, job, src_host, dst_host, channel, a, b)

    def between(
        self, topo: Topology, job: int, src_host: int, dst_host: int, channel: int, a: int, b: int
    ) -> list[tuple[int, float]]:
        """(fabric link, share) from switch ``a`` to switch ``b`` for the given flow aggregate."""
        if a == b:
            return []
        if not topo.reachable(a, b):
            raise InputError(
                f"no path from leaf {topo.switch_names[a]} to leaf {topo.switch_names[b]} in "
                f"topology {topo.name!r}" + (" (no OCS circuits set)" if topo.ocs else "")
            )
        if self.mode == "ecmp" or self.mode == "policy":
            return self._ecmp(topo, job, src_host, dst_host, channel, a, b)
        return self._split(topo, a, b)

    def _ecmp(
        self, topo: Topology, job: int, src: int, dst: int, channel: int, a: int, b: int
    ) -> list[tuple[int, float]]:
        out: list[tuple[int, float]] = []
        x = a
        while x != b:
            hops = topo.next_hops(x, b)
            link = int(hops[mix(self.seed, job, src, dst, channel, x) % len(hops)])
            out.append((link, 1.0))
            x = topo.link_far_end(link)
        return out

    def _split(self, topo: Topology, a: int, b: int) -> list[tuple[int, float]]:
        shares: dict[int, float] = {}
        frontier = {a: 1.0}
        while frontier and set(frontier) != {b}:
            nxt: dict[int, float] = {}
            for x, mass in frontier.items():
                if x == b:
                    nxt[b] = nxt.get(b, 0.0) + mass
                    continue
                hops = topo.next_hops(x, b)
                if self.mode == "source":
                    hops = hops[np.isin(hops, list(self.reserved))]
                    if len(hops) == 0:
                        raise InputError(
                            f"reserved links give no path from {topo.switch_names[x]} toward "
                            f"{topo.switch_names[b]}"
                        )
                part = mass / len(hops)
                for link in hops.tolist():
                    shares[link] = shares.get(link, 0.0) + part
                    far = topo.link_far_end(link)
                    nxt[far] = nxt.get(far, 0.0) + part
            frontier = nxt
        return list(shares.items())
