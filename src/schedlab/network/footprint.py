"""A job's per-link bytes per iteration, phase by phase: computed once per (re)start or re-route.

``footprint(spec, placement, topology, routing, job)`` turns the collective's rank-level transfers
into flow aggregates (phase, src host, NIC, dst host, NIC), routes each aggregate once and sums
bytes per (phase, link). The result is what the sharing solver and the metrics read; nothing here
depends on other jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from schedlab.errors import InputError
from schedlab.model.snapshot import Allocation
from schedlab.network.collectives import CommSpec, Transfers, transfers
from schedlab.network.routing import Routing
from schedlab.network.topology import Topology

#: Largest (phase, link) key space summed densely rather than by sorting.
DENSE_KEYS = 1 << 23


@dataclass(frozen=True)
class Footprint:
    """Bytes b_{t,l} of one job per iteration: phase t's entries are ``[phase_ptr[t],
    phase_ptr[t+1])`` of ``links``/``nbytes``/``seconds`` (seconds = bytes / capacity)."""

    collective: str
    phase_ptr: np.ndarray
    links: np.ndarray
    nbytes: np.ndarray
    seconds: np.ndarray
    steps: int
    cross_host_bytes: float
    cross_leaf_bytes: float
    hosts: int
    leaves: int
    gpus: int

    @property
    def num_phases(self) -> int:
        return len(self.phase_ptr) - 1

    def phase_times(self) -> np.ndarray:
        """τ_t = max_l b_{t,l}/c_l of every phase, alone on the network."""
        if not len(self.links):
            return np.zeros(self.num_phases)
        out = np.maximum.reduceat(self.seconds, self.phase_ptr[:-1])
        out[np.diff(self.phase_ptr) == 0] = 0.0
        return out

    def comm_time(self, alpha: float) -> float:
        """D⁰ = Σ_t τ_t + α·steps: the collective's time alone on the network."""
        return float(self.phase_times().sum()) + alpha * self.steps

    def link_totals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(links, bytes, seconds) summed over phases, links ascending."""
        links, inv = np.unique(self.links, return_inverse=True)
        return (
            links,
            np.bincount(inv, self.nbytes, len(links)),
            np.bincount(inv, self.seconds, len(links)),
        )


def ranks_of(placement: Allocation, topo: Topology) -> tuple[np.ndarray, np.ndarray]:
    """(host, GPU slot) of every rank, in allocation order; InputError for a GPU the topology
    lacks."""
    hosts, gpus = [], []
    for node, slots in placement:
        if not 0 <= node < topo.num_hosts:
            raise InputError(f"placement names host {node}; the topology has {topo.num_hosts}")
        for g in slots:
            if not 0 <= g < topo.host_gpus[node]:
                raise InputError(
                    f"placement names GPU {g} of host {node}, which has {topo.host_gpus[node]}"
                )
            hosts.append(node)
            gpus.append(g)
    return np.asarray(hosts, dtype=np.int64), np.asarray(gpus, dtype=np.int64)


def channels_of(hosts: np.ndarray, topo: Topology) -> int:
    """Parallel rings: one per NIC, as many as the job's poorest host has."""
    return int(topo.host_nics[np.unique(hosts)].min()) if len(hosts) else 1


class _Entries:
    """(phase, link, bytes) triples, summed at the end."""

    def __init__(self) -> None:
        self.phase: list[np.ndarray] = []
        self.link: list[np.ndarray] = []
        self.nbytes: list[np.ndarray] = []

    def add(self, phase: np.ndarray | int, link: np.ndarray | int, nbytes: np.ndarray | float):
        link = np.atleast_1d(np.asarray(link, dtype=np.int64))
        self.phase.append(np.broadcast_to(np.asarray(phase, dtype=np.int64), link.shape))
        self.link.append(link)
        self.nbytes.append(np.broadcast_to(np.asarray(nbytes, dtype=np.float64), link.shape))

    def freeze(self, num_phases: int, topo: Topology) -> tuple[np.ndarray, ...]:
        if not self.link:
            empty = np.zeros(0, np.int64)
            return np.zeros(num_phases + 1, np.int64), empty, np.zeros(0), np.zeros(0)
        phase = np.concatenate(self.phase)
        link = np.concatenate(self.link)
        nbytes = np.concatenate(self.nbytes)
        key = phase * topo.num_links + link
        size = num_phases * topo.num_links
        if size <= DENSE_KEYS:  # a bincount over every (phase, link) beats sorting the keys
            dense = np.bincount(key, nbytes, size)
            uniq = np.flatnonzero(dense > 0)
            total = dense[uniq]
        else:
            uniq, inv = np.unique(key, return_inverse=True)
            total = np.bincount(inv, nbytes, len(uniq))
            keep = total > 0
            uniq, total = uniq[keep], total[keep]
        ph, ln = uniq // topo.num_links, uniq % topo.num_links
        ptr = np.searchsorted(ph, np.arange(num_phases + 1)).astype(np.int64)
        return ptr, ln.astype(np.int64), total, total / topo.link_bytes_per_s[ln]


def _nic(channel: np.ndarray, host: np.ndarray, gpu: np.ndarray, topo: Topology) -> np.ndarray:
    """The NIC a transfer leaves (or enters) ``host`` by: its ring channel's, else its GPU's."""
    nics = topo.host_nics[host]
    return np.where(channel >= 0, channel % nics, gpu * nics // topo.host_gpus[host])


def cross_leaf_aggregates(
    spec: CommSpec, placement: Allocation, topo: Topology
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(src host, dst host, src NIC, bytes per iteration) of every flow aggregate of the job that
    crosses leaves: the unit a network controller routes (its keys are :data:`FlowKey`)."""
    host, gpu = ranks_of(placement, topo)
    tr = transfers(spec, len(host), channels_of(host, topo))
    sh, dh = host[tr.src], host[tr.dst]
    far = topo.host_leaf[sh] != topo.host_leaf[dh]
    sh, dh = sh[far], dh[far]
    snic = _nic(tr.channel[far], sh, gpu[tr.src][far], topo)
    nics = int(topo.host_nics.max()) if topo.num_hosts else 1
    key = (sh * topo.num_hosts + dh) * nics + snic
    uniq, inv = np.unique(key, return_inverse=True)
    total = np.bincount(inv.ravel(), tr.nbytes[far], len(uniq))
    pair, nic = np.divmod(uniq, nics)
    src, dst = np.divmod(pair, topo.num_hosts)
    return src.astype(np.int64), dst.astype(np.int64), nic.astype(np.int64), total


def _route_transfers(
    tr: Transfers,
    host: np.ndarray,
    gpu: np.ndarray,
    topo: Topology,
    routing: Routing,
    job: int,
    entries: _Entries,
) -> tuple[float, float]:
    """Add every transfer's links to ``entries``; returns (cross-host, cross-leaf) bytes."""
    sh, dh = host[tr.src], host[tr.dst]
    sg, dg = gpu[tr.src], gpu[tr.dst]
    local = sh == dh
    if local.any():
        entries.add(tr.phase[local], topo.intra_base[sh[local]] + sg[local], tr.nbytes[local])
    far = ~local
    if not far.any():
        return 0.0, 0.0
    ph, sh, dh, sg, dg = tr.phase[far], sh[far], dh[far], sg[far], dg[far]
    nbytes, chan = tr.nbytes[far], tr.channel[far]
    snic, dnic = _nic(chan, sh, sg, topo), _nic(chan, dh, dg, topo)
    entries.add(ph, topo.nic_base[sh] + snic, nbytes)
    entries.add(ph, topo.num_nics + topo.nic_base[dh] + dnic, nbytes)
    leaf = topo.host_leaf
    cross_leaf = leaf[sh] != leaf[dh]
    if cross_leaf.any():
        # Every transfer of a flow aggregate (src, NIC, dst, NIC) takes the aggregate's links
        # (the ECMP hash and the split depend on nothing else), so transfers are routed as they
        # are, with array operations, rather than grouped first.
        idx = np.flatnonzero(cross_leaf)
        _fabric(entries, ph[idx], sh[idx], dh[idx], snic[idx], nbytes[idx], topo, routing, job)
    return float(nbytes.sum()), float(nbytes[cross_leaf].sum())


def _fabric(
    entries: _Entries,
    phase: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    channel: np.ndarray,
    nbytes: np.ndarray,
    topo: Topology,
    routing: Routing,
    job: int,
) -> None:
    """Add the fabric links of cross-leaf aggregates. Where paths depend on the leaf pair alone
    (``spray``, ``source``), the aggregates are first summed per (phase, src leaf, dst leaf):
    a job spread evenly over many spines would otherwise list every aggregate × every path."""
    if routing.mode in ("spray", "source") and len(phase):
        s = topo.num_switches
        key = (phase * s + topo.host_leaf[src]) * s + topo.host_leaf[dst]
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
        nbytes = np.bincount(inv.ravel(), nbytes, len(first))
        phase, src, dst, channel = phase[first], src[first], dst[first], channel[first]
    at, link, share = routing.many(topo, job, src, dst, channel)
    entries.add(phase[at], link, nbytes[at] * share)


def _a2a_entries(
    size: float, ranks: tuple[np.ndarray, np.ndarray], topo: Topology, routing: Routing, job: int
) -> tuple[_Entries, float, float]:
    """All-to-all without listing its N² transfers: the same entries :func:`_route_transfers`
    adds for them, summed per sender GPU (NIC and intra-host links), per receiver GPU, and per
    (src host, src NIC, dst host) for the fabric, the only fields a route depends on."""
    host, gpu = ranks
    entries = _Entries()
    n = len(host)
    per = size / n
    nic = gpu * topo.host_nics[host] // topo.host_gpus[host]
    hosts, host_of, on_host = np.unique(host, return_inverse=True, return_counts=True)
    same = on_host[host_of]  # ranks on each rank's host, itself included
    entries.add(0, topo.intra_base[host] + gpu, per * (same - 1))
    entries.add(0, topo.nic_base[host] + nic, per * (n - same))
    entries.add(0, topo.num_nics + topo.nic_base[host] + nic, per * (n - same))
    cross_host = per * float((n - same).sum())
    leaf = topo.host_leaf[hosts]
    # Sender groups (host, NIC) × receiving hosts on another leaf.
    groups, group_count = np.unique(host_of * int(topo.host_nics.max()) + nic, return_counts=True)
    g_host, g_nic = np.divmod(groups, int(topo.host_nics.max()))
    gi, hi = np.meshgrid(np.arange(len(groups)), np.arange(len(hosts)), indexing="ij")
    gi, hi = gi.ravel(), hi.ravel()
    far = leaf[g_host[gi]] != leaf[hi]
    gi, hi = gi[far], hi[far]
    nbytes = per * group_count[gi] * on_host[hi]
    phase = np.zeros(len(gi), dtype=np.int64)
    src, dst = hosts[g_host[gi]], hosts[hi]
    _fabric(entries, phase, src, dst, g_nic[gi], nbytes, topo, routing, job)
    return entries, cross_host, float(nbytes.sum())


def footprint(
    spec: CommSpec,
    placement: Allocation,
    topo: Topology,
    routing: Routing,
    job: int = 0,
    ina_background: np.ndarray | None = None,
) -> Footprint:
    """The per-phase, per-link bytes of ``spec``'s collective on ``placement``.

    ``job`` is the job's index (ECMP hashes it). For the ``ina`` collective, aggregation points
    are chosen as in :mod:`schedlab.network.ina`, against ``ina_background`` link duties.
    """
    host, gpu = ranks_of(placement, topo)
    n = len(host)
    entries = _Entries()
    if spec.collective == "ina" and n > 1 and spec.gradient_bytes > 0:
        from schedlab.network.ina import ina_footprint

        return ina_footprint(spec, host, gpu, topo, routing, job, ina_background)
    if spec.collective == "a2a" and n > 1 and spec.gradient_bytes > 0 and routing.mode != "policy":
        entries, cross_host, cross_leaf = _a2a_entries(
            spec.gradient_bytes, (host, gpu), topo, routing, job
        )
        num_phases, steps = 1, n - 1
    else:
        tr = transfers(spec, n, channels_of(host, topo))
        cross_host, cross_leaf = _route_transfers(tr, host, gpu, topo, routing, job, entries)
        num_phases, steps = tr.num_phases, tr.steps
    ptr, links, nbytes, seconds = entries.freeze(num_phases, topo)
    return Footprint(
        collective=spec.collective,
        phase_ptr=ptr,
        links=links,
        nbytes=nbytes,
        seconds=seconds,
        steps=steps,
        cross_host_bytes=cross_host,
        cross_leaf_bytes=cross_leaf,
        hosts=len(np.unique(host)),
        leaves=len(np.unique(topo.host_leaf[host])) if n else 0,
        gpus=n,
    )


def transfers_footprint(
    tr: Transfers,
    placement: Allocation,
    topo: Topology,
    routing: Routing,
    job: int = 0,
    collective: str = "ring",
) -> Footprint:
    """The per-phase, per-link bytes of rank-level transfers built elsewhere (a pipeline's
    point-to-point pairs beside its data-parallel rings, say), routed as :func:`footprint` routes
    a collective's."""
    host, gpu = ranks_of(placement, topo)
    entries = _Entries()
    cross_host, cross_leaf = _route_transfers(tr, host, gpu, topo, routing, job, entries)
    ptr, links, nbytes, seconds = entries.freeze(tr.num_phases, topo)
    return Footprint(
        collective=collective,
        phase_ptr=ptr,
        links=links,
        nbytes=nbytes,
        seconds=seconds,
        steps=tr.steps,
        cross_host_bytes=cross_host,
        cross_leaf_bytes=cross_leaf,
        hosts=len(np.unique(host)),
        leaves=len(np.unique(topo.host_leaf[host])) if len(host) else 0,
        gpus=len(host),
    )


def bytes_for_comm_time(
    spec: CommSpec,
    placement: Allocation,
    topo: Topology,
    routing: Routing,
    target: float,
    alpha: float,
    job: int = 0,
) -> float:
    """Gradient bytes S that make D⁰ on ``placement`` equal ``target`` seconds.

    For calibrating from a communication share s (RapidNetSim's ``gradient=share``): with a
    reference iteration time T^ref, C = (1 − s)·T^ref and S = this(target = s·T^ref). D⁰ is
    linear in S apart from α per step, so one footprint of one byte suffices. ``ina`` is not
    linear (its aggregation points depend on S) and is refused.
    """
    if spec.collective == "ina":
        raise InputError("cannot calibrate the bytes of an 'ina' job from a time")
    unit = footprint(replace(spec, gradient_bytes=1.0), placement, topo, routing, job)
    per_byte = unit.comm_time(0.0)
    latency = alpha * unit.steps
    if per_byte <= 0 or target <= latency:
        raise InputError(
            f"no gradient size gives {target:g} s of communication on this placement "
            f"({unit.gpus} GPUs, latency alone {latency:g} s)"
        )
    return (target - latency) / per_byte
