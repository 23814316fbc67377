"""In-network aggregation (GRID-style) for parameter-server jobs: where each worker's gradient
is summed on its way to the PS.

The PS sits beside rank 0. Every remote worker aggregates at one point: a switch on a shortest
path to the PS that has aggregation throughput (``ina_gbps > 0``), or the PS itself. Switches are
visited bottom-up (leaves, spines, cores; by id); at each, the still unassigned workers it can
serve are assigned to it iff that lowers the job's predicted communication time under the given
background link duties. Links below an aggregating switch carry each worker's S, its ``agg`` link
(workers there)·S, links above it one S in push and one in pull (the result is multicast down).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import Footprint, _Entries
from schedlab.network.routing import Routing
from schedlab.network.topology import LEAF, Topology

PUSH, PULL = 0, 1


@dataclass(frozen=True)
class _Job:
    """One parameter-server job on its ranks: what every candidate assignment shares."""

    spec: CommSpec
    host: np.ndarray
    gpu: np.ndarray
    topo: Topology
    routing: Routing
    job: int


def _build(j: _Job, assign: dict[int, int]) -> Footprint:
    """Footprint for a fixed assignment rank → aggregating switch (absent: the PS)."""
    spec, host, gpu, topo, routing, job = j.spec, j.host, j.gpu, j.topo, j.routing, j.job
    size = spec.gradient_bytes
    ps_host, ps_gpu = int(host[0]), int(gpu[0])
    ps_nic = topo.nic_of_gpu(ps_host, ps_gpu)
    ps_leaf = int(topo.host_leaf[ps_host])
    e = _Entries()
    cross_host = cross_leaf = 0.0
    at_switch: dict[int, list[int]] = {}
    for r in range(1, len(host)):
        h, g = int(host[r]), int(gpu[r])
        if h == ps_host:
            e.add(PUSH, topo.intra(h, g), size)
            e.add(PULL, topo.intra(ps_host, ps_gpu), size)
            continue
        nic = topo.nic_of_gpu(h, g)
        leaf = int(topo.host_leaf[h])
        cross_host += 2 * size
        e.add(PUSH, topo.nic_up(h, nic), size)
        e.add(PULL, topo.nic_down(h, nic), size)
        x = assign.get(r)
        if x is None:  # aggregated at the PS: the whole way, both directions
            cross_leaf += 2 * size if leaf != ps_leaf else 0.0
            for link, share in routing.between(topo, job, h, ps_host, nic, leaf, ps_leaf):
                e.add(PUSH, link, size * share)
            for link, share in routing.between(topo, job, ps_host, h, ps_nic, ps_leaf, leaf):
                e.add(PULL, link, size * share)
            e.add(PUSH, topo.nic_down(ps_host, ps_nic), size)
            e.add(PULL, topo.nic_up(ps_host, ps_nic), size)
            continue
        cross_leaf += 2 * size if leaf != x else 0.0
        at_switch.setdefault(x, []).append(r)
        for link, share in routing.between(topo, job, h, ps_host, nic, leaf, x):
            e.add(PUSH, link, size * share)
        for link, share in routing.between(topo, job, ps_host, h, ps_nic, x, leaf):
            e.add(PULL, link, size * share)
    for x, ranks in at_switch.items():
        e.add(PUSH, topo.agg_link_of[x], len(ranks) * size)
        cross_leaf += 2 * size if x != ps_leaf else 0.0
        for link, share in routing.between(topo, job, -1 - x, ps_host, 0, x, ps_leaf):
            e.add(PUSH, link, size * share)
        for link, share in routing.between(topo, job, ps_host, -1 - x, ps_nic, ps_leaf, x):
            e.add(PULL, link, size * share)
        e.add(PUSH, topo.nic_down(ps_host, ps_nic), size)
        e.add(PULL, topo.nic_up(ps_host, ps_nic), size)
    ptr, links, nbytes, seconds = e.freeze(2, topo)
    return Footprint(
        collective="ina",
        phase_ptr=ptr,
        links=links,
        nbytes=nbytes,
        seconds=seconds,
        steps=2,
        cross_host_bytes=cross_host,
        cross_leaf_bytes=cross_leaf,
        hosts=len(np.unique(host)),
        leaves=len(np.unique(topo.host_leaf[host])),
        gpus=len(host),
    )


def predicted_comm(fp: Footprint, background: np.ndarray | None) -> float:
    """Σ_t max_l b_{t,l}·σ_l/c_l with σ_l = 1 + background duty (the random-phase view of a
    newcomer on links others already use)."""
    if not len(fp.links):
        return 0.0
    sigma = 1.0 + (background[fp.links] if background is not None else 0.0)
    stretched = fp.seconds * sigma
    starts = fp.phase_ptr[:-1][np.diff(fp.phase_ptr) > 0]
    return float(np.maximum.reduceat(stretched, starts).sum())


def _below(topo: Topology, leaf: int, x: int, ps_leaf: int) -> bool:
    """Switch ``x`` is above ``leaf`` (reached going up only) on a shortest path to the PS."""
    dist = topo.hop_distance
    up = dist[leaf, x] == topo.switch_level[x] - LEAF
    return bool(up and dist[leaf, x] + dist[x, ps_leaf] == dist[leaf, ps_leaf])


def ina_footprint(
    spec: CommSpec,
    host: np.ndarray,
    gpu: np.ndarray,
    topo: Topology,
    routing: Routing,
    job: int,
    background: np.ndarray | None = None,
) -> Footprint:
    """Greedy bottom-up choice of aggregation points, then the footprint for it."""
    ps_leaf = int(topo.host_leaf[host[0]])
    assign: dict[int, int] = {}
    one = _Job(spec, host, gpu, topo, routing, job)
    best = _build(one, assign)
    best_d = predicted_comm(best, background)
    switches = sorted(topo.agg_switches.tolist(), key=lambda s: (topo.switch_level[s], s))
    for x in switches:
        serve = [
            r
            for r in range(1, len(host))
            if r not in assign
            and host[r] != host[0]
            and _below(topo, int(topo.host_leaf[host[r]]), x, ps_leaf)
        ]
        if not serve:
            continue
        trial = {**assign, **dict.fromkeys(serve, x)}
        fp = _build(one, trial)
        d = predicted_comm(fp, background)
        if d < best_d:
            assign, best, best_d = trial, fp, d
    return best
