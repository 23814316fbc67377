"""Which fabric links a flow aggregate (job, src host, dst host, NIC channel) crosses.

Paths are shortest switch paths. A flow is pushed hop by hop from the source leaf: at each switch
the next-hop links on a shortest path to the destination leaf are the candidates, and the mode
decides how the flow's bytes split over them:

* ``ecmp``: all bytes on one candidate, chosen by a fixed 64-bit mix (splitmix64) of (seed, job,
  src host, dst host, channel, switch) — the per-hop hashing of real switches, reproducible
  across runs and Python versions;
* ``spray``: bytes split evenly over the candidates;
* ``source``: split evenly over the candidates that are among the job's reserved links (vClos),
  or, where ``leaf_paths`` names one, the one path reserved for that leaf pair;
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


_U = np.uint64


def splitmix64_array(x: np.ndarray) -> np.ndarray:
    """:func:`splitmix64` of every element of a uint64 array (arithmetic wraps mod 2^64)."""
    x = x + _U(0x9E3779B97F4A7C15)
    x = (x ^ (x >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> _U(27))) * _U(0x94D049BB133111EB)
    return x ^ (x >> _U(31))


def mix_array(*values: int | np.ndarray) -> np.ndarray:
    """:func:`mix` element-wise; scalars broadcast against the arrays."""
    arrays = [np.asarray(v, dtype=np.int64).astype(np.uint64) for v in values]
    h = np.zeros(np.broadcast_shapes(*(a.shape for a in arrays)), dtype=np.uint64)
    for v in arrays:
        h = splitmix64_array(h ^ v)
    return h


def unique_small(key: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)`` for keys in [0, size): by marking a dense table
    when it is small enough (no sort), else by sorting."""
    if size > 1 << 24:
        uniq, inv = np.unique(key, return_inverse=True)
        return uniq, inv.ravel()
    seen = np.zeros(size, dtype=bool)
    seen[key] = True
    uniq = np.flatnonzero(seen)
    rank = np.zeros(size, dtype=np.int64)
    rank[uniq] = np.arange(len(uniq))
    return uniq, rank[key]


def _triples(rows: list[tuple[int, int, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        np.array([r[0] for r in rows], dtype=np.int64),
        np.array([r[1] for r in rows], dtype=np.int64),
        np.array([r[2] for r in rows], dtype=np.float64),
    )


@dataclass(frozen=True)
class Routing:
    """How a job's flows take paths.

    ``reserved`` (for ``source``) is the set of fabric link ids the job owns; ``leaf_paths`` (for
    ``source``, set by replay's reservations) maps a (leaf, leaf) pair to its reserved path, and
    when it is given, switch pairs it does not name (in-network aggregation toward a switch) are
    spread over all shortest paths; ``paths`` (for ``policy``) maps a flow key to (link, share)
    pairs; flows without an entry fall back to ECMP.
    """

    mode: str = "ecmp"
    seed: int = 0
    reserved: frozenset[int] = frozenset()
    paths: Mapping[FlowKey, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    leaf_paths: Mapping[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)

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

    def many(
        self, topo: Topology, job: int, src: np.ndarray, dst: np.ndarray, channel: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`fabric_shares` of many flow aggregates at once: (aggregate index, link, share)
        triples, the same links and shares as one call per aggregate, computed with array
        operations (large jobs have tens of thousands of host-pair aggregates)."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        channel = np.asarray(channel, dtype=np.int64)
        a, b = topo.host_leaf[src], topo.host_leaf[dst]
        far = np.flatnonzero(a != b)
        if self.mode == "policy" and self.paths:
            rows = [
                (int(i), link, share)
                for i in far.tolist()
                for link, share in self.fabric_shares(
                    topo, job, int(src[i]), int(dst[i]), int(channel[i])
                )
            ]
            return _triples(rows)
        ecmp = self.mode in ("ecmp", "policy")
        # Every leaf pair reachable (as Topology.reachable judges): nothing to check pair by pair.
        if ecmp and (topo.hop_distance[a[far], b[far]] < 1e9).all():
            return self._ecmp_many(topo, job, src[far], dst[far], channel[far], far, b[far])
        codes, inv = unique_small(a[far] * topo.num_switches + b[far], topo.num_switches**2)
        pairs = np.stack(np.divmod(codes, topo.num_switches), axis=1)
        for x, y in pairs.tolist():
            if not topo.reachable(x, y):
                self.between(topo, job, -1, -1, 0, x, y)  # raises the no-path error
        if ecmp:
            return self._ecmp_many(topo, job, src[far], dst[far], channel[far], far, b[far])
        rows = []
        for k, (x, y) in enumerate(pairs.tolist()):
            members = far[inv == k]
            split = self._split(topo, x, y)
            rows.append(
                (
                    np.repeat(members, len(split)),
                    np.tile([link for link, _ in split], len(members)),
                    np.tile([share for _, share in split], len(members)),
                )
            )
        if not rows:
            return _triples([])
        return tuple(np.concatenate(c) for c in zip(*rows, strict=True))  # type: ignore[return-value]

    def _ecmp_many(
        self,
        topo: Topology,
        job: int,
        src: np.ndarray,
        dst: np.ndarray,
        channel: np.ndarray,
        index: np.ndarray,
        target: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Hop-by-hop ECMP for many aggregates: one hop of all of them per round.

        The hash of a hop folds the switch into the aggregate's hash of (seed, job, src, dst,
        channel), which is the same at every hop and so computed once."""
        x = topo.host_leaf[src].copy()
        alive = np.arange(len(x))
        out_i, out_l = [], []
        prefix = mix_array(self.seed, job, src, dst, channel)
        while len(alive):
            key = x[alive] * topo.num_switches + target[alive]
            h = splitmix64_array(prefix[alive] ^ x[alive].astype(np.uint64))
            rows = topo.next_hop_rows(key)
            if rows is not None:
                count, table = rows
                pick = (h % count.astype(np.uint64)).astype(np.int64)
                link = table[np.arange(len(key)), pick]
            else:
                uniq, inv = unique_small(key, topo.num_switches**2)
                hops = [
                    topo.next_hops(int(k // topo.num_switches), int(k % topo.num_switches))
                    for k in uniq.tolist()
                ]
                width = max(len(h) for h in hops)
                table = np.zeros((len(hops), width), dtype=np.int64)
                for r, hop in enumerate(hops):
                    table[r, : len(hop)] = hop
                lens = np.array([len(hop) for hop in hops], dtype=np.uint64)
                pick = (h % lens[inv]).astype(np.int64)
                link = table[inv, pick]
            out_i.append(index[alive])
            out_l.append(link)
            x[alive] = topo.fabric_dst[link - topo.fabric_base]
            alive = alive[x[alive] != target[alive]]
        if not out_i:
            return _triples([])
        links = np.concatenate(out_l)
        return np.concatenate(out_i), links, np.ones(len(links))

    def _ecmp(
        self, topo: Topology, job: int, src: int, dst: int, channel: int, a: int, b: int
    ) -> list[tuple[int, float]]:
        out: list[tuple[int, float]] = []
        x = a
        prefix = mix(self.seed, job, src, dst, channel)  # mix(…, x) folds x into it
        while x != b:
            hops = topo.next_hops(x, b)
            link = int(hops[splitmix64(prefix ^ (x & _MASK)) % len(hops)])
            out.append((link, 1.0))
            x = topo.link_far_end(link)
        return out

    def _split(self, topo: Topology, a: int, b: int) -> list[tuple[int, float]]:
        if self.leaf_paths:
            path = self.leaf_paths.get((a, b))
            if path is not None:
                return [(link, 1.0) for link in path]
        restrict = self.mode == "source" and not self.leaf_paths
        shares: dict[int, float] = {}
        frontier = {a: 1.0}
        while frontier and set(frontier) != {b}:
            nxt: dict[int, float] = {}
            for x, mass in frontier.items():
                if x == b:
                    nxt[b] = nxt.get(b, 0.0) + mass
                    continue
                hops = topo.next_hops(x, b)
                if restrict:
                    hops = hops[[link in self.reserved for link in hops.tolist()]]
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
