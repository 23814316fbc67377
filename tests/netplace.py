"""Helpers for the network placement tests: a started placement on a small topology, and a
cluster state with chosen GPUs taken."""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.model.jobs import JobTable
from schedlab.network.generators import parse_topology
from schedlab.network.plan import NetLedger, NetPlan
from schedlab.network.topology import Topology, cluster_for
from schedlab.policies.api import REPLAY
from schedlab.policies.placement.job_placement import JobPlacementPolicy, JobRequest
from schedlab.policies.wiring import PolicyChoice, build


def started(
    placement: str, topology: str | Topology, params: dict[str, str] | None = None
) -> tuple[JobPlacementPolicy, ClusterState]:
    """The placement object, reset on ``topology``, and an empty state of its cluster."""
    topo = parse_topology(topology) if isinstance(topology, str) else topology
    cluster = cluster_for(topo)
    policies = build(REPLAY, PolicyChoice("fifo", placement=placement, params=params or {}))
    jobs = JobTable.from_columns(job_id=["x"], submit_time=[0.0], num_gpus=[1], duration=[1.0])
    policies.start(cluster, np.random.default_rng(0), jobs=jobs, topology=topo)
    state = cluster.new_state()
    state.net = NetLedger()
    assert isinstance(policies.placement, JobPlacementPolicy)
    return policies.placement, state


def busy(state: ClusterState, node: int, count: int) -> None:
    """Take the ``count`` lowest free GPUs of ``node``."""
    free = np.flatnonzero(state.gpu_free[node] >= GPU_MILLI)[:count]
    state.allocate(node, [int(g) for g in free], 0, 0, GPU_MILLI, len(free))


def request(gpus: int, job: int = 0) -> JobRequest:
    return JobRequest(job, gpus, 0, 0, -1)


def hold(state: ClusterState, job: int, plan: NetPlan) -> None:
    assert state.net is not None
    state.net.hold(job, plan)
