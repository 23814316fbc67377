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
with less to send faster.
"""

from __future__ import annotations

from schedlab.model.snapshot import Allocation
from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import footprint
from schedlab.network.routing import Routing
from schedlab.network.sharing import DEFAULT_ALPHA, iteration_time
from schedlab.network.topology import Topology

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


class ReferenceTimes:
    """T_ref of jobs on one topology; the collective's time alone is cached per (collective,
    GPUs, bytes), which the jobs of a trace repeat."""

    def __init__(self, topo: Topology, alpha: float = DEFAULT_ALPHA) -> None:
        self.topo = topo
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
