"""The iteration time a trace's run time already holds: a job alone on a compact placement.

A trace that gives a job's run time measured it on the trace's own cluster, communication
included. Charging that run time its communication again when a network is put under the replay
would replay a heavier workload than the trace's (even perfect whole-machine packing would take
longer than the trace says). So a job's speed on the network is its trace speed times
``T_ref / T``: ``T`` its iteration time where it runs (placement, routing, other jobs), ``T_ref``
its iteration time alone on the placement the trace's cluster would have given it — its GPUs on
the fewest hosts, the lowest-index hosts filled one after the other, traffic spread evenly over
every shortest path. Alone on that placement a job takes exactly its trace duration; a
scattered placement, unlucky ECMP paths or other jobs on its links make it slower, a placement
with less to send faster. On a topology with an optical circuit switch the reference fabric is
the non-blocking leaf-spine the switch can wire for one job alone (see :func:`reference_fabric`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from schedlab.model.snapshot import Allocation
from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import footprint
from schedlab.network.routing import Routing
from schedlab.network.sharing import DEFAULT_ALPHA, iteration_time
from schedlab.network.topology import SPINE, Topology

#: How the reference placement routes: evenly over every shortest path (no hash collisions of
#: the job with itself, which a trace's measured run time would average out).
REFERENCE_ROUTING = Routing("spray")


def compact_placement(topo: Topology, gpus: int) -> Allocation:
    """``gpus`` GPUs on the lowest-index hosts, each filled before the next is used."""
    out: list[tuple[int, tuple[int, ...]]] = []
    left = gpus
    for host, have in enumerate(topo.host_gpus.tolist()):
        if left <= 0:
            break
        take = min(int(have), left)
        out.append((host, tuple(range(take))))
        left -= take
    if left > 0:
        raise ValueError(f"{gpus} GPUs do not fit the topology's {topo.total_gpus}")
    return tuple(out)


def reference_fabric(topo: Topology) -> Topology:
    """``topo`` itself, or with an optical circuit switch, the non-blocking leaf-spine the OCS can
    give one job alone: uplink port p of every leaf joined to spine p mod spines at the port rate.

    Spine port counts are not enforced: they bound how many jobs' circuits fit at once, not what
    one job alone on the compact placement gets (OCS-vClos gives it circuits of its own). Nor is
    the wiring a replay starts from used: with fewer ports a leaf than spines it leaves some
    leaves without a path between them. Where a leaf's ports are a multiple of the spines, the
    two wirings are the same."""
    if topo.ocs is None:
        return topo
    spines = np.flatnonzero(topo.switch_level == SPINE)
    ports = np.arange(int(topo.ocs.leaf_ports))
    leaf = np.repeat(topo.leaves.astype(np.int64), len(ports))
    spine = np.tile(spines[ports % len(spines)].astype(np.int64), len(topo.leaves))
    n = 2 * len(leaf)
    return replace(
        topo,
        fabric_src=np.concatenate([leaf, spine]).reshape(n),
        fabric_dst=np.concatenate([spine, leaf]).reshape(n),
        fabric_gbps=np.full(n, float(topo.ocs.port_gbps)),
    )


class ReferenceTimes:
    """T_ref of jobs on one topology; the collective's time alone is cached per (collective,
    GPUs, bytes), which the jobs of a trace repeat."""

    def __init__(self, topo: Topology, alpha: float = DEFAULT_ALPHA) -> None:
        self.topo = reference_fabric(topo)
        self.alpha = alpha
        self._comm: dict[tuple[str, int, float], float] = {}

    def comm_time(self, collective: str, gpus: int, gradient_bytes: float) -> float:
        """D⁰ of the collective alone on the compact placement of ``gpus`` GPUs."""
        key = (collective, gpus, gradient_bytes)
        d0 = self._comm.get(key)
        if d0 is None:
            spec = CommSpec(collective, gradient_bytes)
            placement = compact_placement(self.topo, gpus)
            d0 = footprint(spec, placement, self.topo, REFERENCE_ROUTING).comm_time(self.alpha)
            self._comm[key] = d0
        return d0

    def iteration_time(self, spec: CommSpec, gpus: int) -> float:
        """T_ref = C + κ + max(0, D⁰ − o·C) on the compact placement of ``gpus`` GPUs."""
        return iteration_time(spec, self.comm_time(spec.collective, gpus, spec.gradient_bytes))
