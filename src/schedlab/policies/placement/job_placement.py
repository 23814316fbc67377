"""Placement policies that decide a whole job at once, with the network in view.

Per-node scoring (:class:`~schedlab.policies.placement.base.PlacementPolicy`) suits a job that
fits on one node. Network-aware placement (Titan, vClos, HiveD cells, …) must see the whole job:
which hosts its ranks land on decides which links its collective crosses. A
:class:`JobPlacementPolicy` is handed every GPU job as a :class:`JobRequest` and returns the full
allocation (or ``None``: the job waits). The gang framework calls it instead of scoring nodes, so
the ordering policies (fifo, sjf, tiresias, …) drive it unchanged.

The context gives such a policy the run's topology (``ctx.topology``, host index = node index)
and, in replay with a network, a read-only view of the live network (``ctx.network``): link
utilisation, link capacities and the jobs on them.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from schedlab.errors import InputError
from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.network.plan import NetPlan
from schedlab.policies.api import REPLAY, SERVE, PolicyContext
from schedlab.policies.placement.base import PlacementPolicy, PodRequest, node_model_bits


@dataclass(frozen=True, slots=True)
class JobRequest:
    """One job's placement request: ``job`` is its index in the run's job table (-1: unknown,
    e.g. a conformance probe), the rest as in the gang framework."""

    job: int
    num_gpus: int
    cpu_milli: int
    memory_mib: int
    model_mask: int
    per_node: int = 0
    nodes: int = 0
    exclusive: bool = False


class JobPlacementPolicy(PlacementPolicy):
    """Base of whole-job placements. Subclasses implement :meth:`place_job`.

    ``requires_topology``: the policy cannot run without ``--topology`` (engines refuse it before
    any work). Pack places pods one by one and has no jobs, so these policies run in replay and
    serve only.
    """

    engines: ClassVar[frozenset[str]] = frozenset({REPLAY, SERVE})
    requires_topology: ClassVar[bool] = True
    #: It reserves links or circuits with its allocations (a :class:`NetPlan`): only a scheduler
    #: that carries plans onto its starts may drive it (the registry refuses the others).
    makes_plans: ClassVar[bool] = False
    _last_plan: tuple[int, Allocation, NetPlan] | None = None

    def reset(self, ctx: PolicyContext) -> None:
        if self.requires_topology and ctx.topology is None:
            raise InputError(
                f"placement '{self.name}' needs the network under the cluster: give --topology"
            )
        self.ctx = ctx
        self.model_bits = node_model_bits(ctx.cluster)
        # Verdicts of never_places hold for this cluster only: serve resets on each cycle's nodes.
        self._never_places: dict[tuple[int, int, int, int, bool], str | None] = {}
        self._last_plan = None

    def place_whole(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        """:meth:`place_job`, held to the job's fixed geometry when it has one.

        A job that asks for ``per_node`` GPUs on each of ``nodes`` nodes (Slurm's ``-N2
        --gres=gpu:8``), or for whole nodes (``exclusive``), gets exactly that or waits: an
        allocation of another shape would be refused by the cluster (serve) or run a job the
        user did not ask for (replay).
        """
        allocation = self.place_job(request, state)
        if allocation is None or not (request.per_node > 0 or request.exclusive):
            return allocation
        return allocation if fits_geometry(request, allocation, state) else None

    def never_places(self, request: JobRequest) -> str | None:
        """Why this policy can never place ``request`` on this cluster, or None.

        Tried once per job shape on the empty cluster and network: every placement here is at its
        most permissive there (free GPUs, free links and ports only shrink as jobs start), so a
        shape that fails then would wait for ever and block a FIFO queue behind it.
        """
        from schedlab.network.plan import NetLedger

        shape = (
            request.num_gpus,
            request.model_mask,
            request.per_node,
            request.nodes,
            request.exclusive,
        )
        cache = self._never_places
        if shape not in cache:
            empty = self.ctx.cluster.new_state()
            empty.net = NetLedger()
            probe = JobRequest(
                -1,
                request.num_gpus,
                0,
                0,
                request.model_mask,
                request.per_node,
                request.nodes,
                request.exclusive,
            )
            placed = self.place_whole(probe, empty)
            cache[shape] = (
                None
                if placed is not None
                else f"placement '{self.name}' cannot place {request.num_gpus} GPUs"
                f"{_geometry(request)} on this network even when it is empty"
            )
        return cache[shape]

    @abstractmethod
    def place_job(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        """The whole allocation for ``request`` on ``state`` (read-only), or ``None``."""

    def planned(self, job: int, allocation: Allocation, plan: NetPlan) -> Allocation:
        """Return ``allocation`` from :meth:`place_job` with the plan made for it, which the
        scheduler then fetches with :meth:`plan_for`."""
        self._last_plan = (job, allocation, plan)
        return allocation

    def plan_for(self, job: int, allocation: Allocation) -> NetPlan | None:
        """The plan made with ``allocation``, the last one :meth:`place_job` returned for
        ``job`` (None: it came without a plan)."""
        last = self._last_plan
        if last is not None and last[0] == job and last[1] == allocation:
            return last[2]
        return None

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        """Fewest free GPUs first: used only for GPU-less jobs, which the network ignores."""
        return -state.gpu_free_sum.astype(np.float64)


def free_gpus_by_node(
    state: ClusterState, request: JobRequest, model_bits: np.ndarray
) -> np.ndarray:
    """Whole free GPUs per node where the job's CPU, memory and GPU model allow it, else 0."""
    ok = (state.cpu_free >= request.cpu_milli) & (state.mem_free >= request.memory_mib)
    ok &= (model_bits & request.model_mask) != 0
    return np.where(ok, state.gpu_full_count, 0)


def lowest_free_gpus(state: ClusterState, node: int, count: int) -> tuple[int, ...]:
    """The ``count`` lowest-index wholly free GPUs of ``node``."""
    free = np.flatnonzero(state.gpu_exists[node] & (state.gpu_free[node] >= GPU_MILLI))
    if len(free) < count:
        raise ValueError(f"node {node} has {len(free)} free GPUs, {count} asked")
    return tuple(int(g) for g in free[:count])


def _geometry(request: JobRequest) -> str:
    if request.per_node > 0:
        return f" as {max(request.nodes, 1)} node(s) × {request.per_node}"
    return " on whole nodes" if request.exclusive else ""


def fits_geometry(request: JobRequest, allocation: Allocation, state: ClusterState) -> bool:
    """``allocation`` has the shape the job fixed: ``per_node`` GPUs on each of ``nodes``
    distinct nodes, and for an exclusive job only nodes with every GPU free."""
    nodes = [node for node, _ in allocation]
    if len(set(nodes)) != len(nodes):
        return False
    if request.per_node > 0:
        if len(nodes) != max(request.nodes, 1):
            return False
        if any(len(gpus) != request.per_node for _, gpus in allocation):
            return False
    if request.exclusive:
        whole = state.gpu_full_count[nodes] == state.cluster.num_gpus[nodes]
        return bool(whole.all())
    return True
