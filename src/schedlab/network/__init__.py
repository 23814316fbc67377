"""The network under the cluster: topologies, per-job communication footprints, and iteration
times of jobs that share links. See ``docs/network.md``.

Typical use (what the replay engine does on every start, move or route change)::

    topo = parse_topology("vclos")
    fp = footprint(CommSpec("ring", 400e6, compute=0.2), allocation, topo, Routing("ecmp"), job)
    solver.add(job, fp, spec); solver.solve()   # → iteration times of the jobs that changed
"""

from typing import TYPE_CHECKING

from schedlab.lazy import lazy_exports

if TYPE_CHECKING:
    from schedlab.network.collectives import (
        COLLECTIVES,
        GRADIENT_BYTES,
        CommSpec,
        gradient_bytes,
    )
    from schedlab.network.footprint import Footprint, bytes_for_comm_time, footprint
    from schedlab.network.generators import GENERATORS, parse_topology
    from schedlab.network.routing import Routing
    from schedlab.network.sharing import (
        DEFAULT_ALPHA,
        DEFAULT_RULE,
        RULES,
        SharingSolver,
        iteration_times,
    )
    from schedlab.network.topology import Topology, check_cluster, cluster_for

#: Imported on first use: a replay without a network imports the plain-data modules it needs
#: (the plans on its decisions) and none of the topology, routing or sharing machinery.
lazy_exports(
    __name__,
    {
        **dict.fromkeys(
            ("COLLECTIVES", "GRADIENT_BYTES", "CommSpec", "gradient_bytes"),
            "schedlab.network.collectives",
        ),
        **dict.fromkeys(
            ("Footprint", "bytes_for_comm_time", "footprint"), "schedlab.network.footprint"
        ),
        **dict.fromkeys(("GENERATORS", "parse_topology"), "schedlab.network.generators"),
        "Routing": "schedlab.network.routing",
        **dict.fromkeys(
            ("DEFAULT_ALPHA", "DEFAULT_RULE", "RULES", "SharingSolver", "iteration_times"),
            "schedlab.network.sharing",
        ),
        **dict.fromkeys(("Topology", "check_cluster", "cluster_for"), "schedlab.network.topology"),
    },
)

__all__ = [
    "COLLECTIVES",
    "DEFAULT_ALPHA",
    "DEFAULT_RULE",
    "GENERATORS",
    "GRADIENT_BYTES",
    "RULES",
    "CommSpec",
    "Footprint",
    "Routing",
    "SharingSolver",
    "Topology",
    "bytes_for_comm_time",
    "check_cluster",
    "cluster_for",
    "footprint",
    "gradient_bytes",
    "iteration_times",
    "parse_topology",
]
