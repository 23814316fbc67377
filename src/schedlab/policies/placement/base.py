"""The placement plugin interface and the framework that runs it.

A placement policy is a small object, in the manner of kube-scheduler's framework:

* ``score(pod, state, feasible)`` gives every node a score at once (numpy; higher wins);
* ``pick_gpus(pod, state, node)`` chooses the devices inside the chosen node.

Feasibility (enough CPU and memory, an allowed GPU model, enough GPUs with enough free share, and
for serving instances enough RDMA NIC share and room under the app's per-node limit) is shared
code, so no policy can get it wrong. Ties between top-scoring nodes go to the first node in
a seeded random order fixed for the whole run (``tie_rank``); plain name order would pile pods onto
the same nodes and move results by close to a percentage point.

Policies never mutate the state they are shown: they return decisions, the engine applies them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from schedlab.engines.decision_check import checked_gpus, checked_scores, guarded, nan_score
from schedlab.model.cluster import GPU_MILLI, Cluster, ClusterState
from schedlab.model.gpu_models import ANY_MODEL_MASK
from schedlab.policies.api import ENGINES, Policy, PolicyContext


@dataclass(frozen=True, slots=True)
class PodRequest:
    """What one pod asks for; ``gpu_milli`` is the share on each of ``num_gpu`` GPUs."""

    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    model_mask: int = ANY_MODEL_MASK
    name: str = ""
    #: Share of one RDMA NIC (%, 100 = a whole NIC); checked where the cluster models RDMA.
    rdma: int = 0
    #: App the pod belongs to (-1: none) and the most pods of that app one node may hold (-1: any).
    app: int = -1
    max_per_node: int = -1

    @property
    def is_sharing(self) -> bool:
        """Asks for part of one GPU."""
        return self.num_gpu == 1 and 0 < self.gpu_milli < GPU_MILLI

    @property
    def needs_gpu(self) -> bool:
        return self.num_gpu > 0 and self.gpu_milli > 0

    @property
    def gpu_total_milli(self) -> int:
        return self.num_gpu * self.gpu_milli


#: The context a placement policy is reset with: the one context type of every policy.
RunContext = PolicyContext


@dataclass(frozen=True, slots=True)
class Placement:
    node: int
    gpus: tuple[int, ...]


class PlacementPolicy(Policy, ABC):
    """Base of every placement plugin. Subclasses set ``name`` and ``summary`` and implement
    :meth:`score`; they override :meth:`pick_gpus` when they choose devices differently from
    best fit."""

    engines: ClassVar[frozenset[str]] = frozenset(ENGINES)

    @abstractmethod
    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        """Scores for all nodes (entries of infeasible nodes are ignored)."""

    def pick_gpus(self, pod: PodRequest, state: ClusterState, node: int) -> tuple[int, ...]:
        return best_fit_gpus(pod, state.gpu_free[node], state.gpu_exists[node])


# -- shared pieces ----------------------------------------------------------------------------
def node_model_bits(cluster: Cluster) -> np.ndarray:
    """Per node, the bit of its GPU model (0 for nodes without GPUs)."""
    return np.where(cluster.model >= 0, np.left_shift(1, np.maximum(cluster.model, 0)), 0)


def feasible_nodes(pod: PodRequest, state: ClusterState, model_bits: np.ndarray) -> np.ndarray:
    """Nodes where the pod fits now: CPU, memory, model, and enough GPUs with enough share; RDMA
    NIC share (where the cluster models it) and the app's per-node limit when the pod has them."""
    ok = (state.cpu_free >= pod.cpu_milli) & (state.mem_free >= pod.memory_mib)
    if pod.rdma and state.rdma_free is not None:
        ok &= state.rdma_free >= pod.rdma
    if pod.max_per_node > 0 and pod.app >= 0:
        ok &= state.app_count(pod.app) < pod.max_per_node
    if pod.needs_gpu:
        ok &= (model_bits & pod.model_mask) != 0
        if pod.gpu_milli == GPU_MILLI:
            ok &= state.gpu_full_count >= pod.num_gpu
        else:
            ok &= (state.gpu_free >= pod.gpu_milli).sum(axis=1) >= pod.num_gpu
    return ok


def best_fit_gpus(pod: PodRequest, free: np.ndarray, exists: np.ndarray) -> tuple[int, ...]:
    """Fitting GPUs in ascending free share, lowest index first among equals.

    For a sharing pod that is the fitting GPU with the least free share; for whole-GPU pods it is
    the lowest-index fully free GPUs.
    """
    if not pod.needs_gpu:
        return ()
    fitting = np.flatnonzero(exists & (free >= pod.gpu_milli))
    order = np.argsort(free[fitting], kind="stable")
    return tuple(int(g) for g in fitting[order[: pod.num_gpu]])


def choose_node(scores: np.ndarray, feasible: np.ndarray, tie_rank: np.ndarray) -> int:
    """The feasible node with the highest score; ties go to the lowest ``tie_rank``. A NaN
    score among the feasible nodes (no node is then highest) raises ValueError."""
    candidates = np.flatnonzero(feasible)
    s = scores[candidates]
    top = candidates[s == s.max()]
    if not len(top):
        raise ValueError("a feasible node's score is NaN")
    return int(top[np.argmin(tie_rank[top])]) if len(top) > 1 else int(top[0])


class Placer:
    """Runs one policy over a cluster state: filter, score, choose, pick GPUs.

    This is the framework part every engine shares; the engine applies the returned
    :class:`Placement` to its state.
    """

    def __init__(self, policy: PlacementPolicy, ctx: PolicyContext, tie_rank: np.ndarray) -> None:
        self.policy = policy
        self.ctx = ctx
        self.tie_rank = tie_rank
        self.model_bits = node_model_bits(ctx.cluster)
        guarded(policy, "reset", policy.reset, ctx)

    def place(
        self, pod: PodRequest, state: ClusterState, exclude: set[int] | None = None
    ) -> Placement | None:
        """Where ``pod`` goes now (None: nowhere); ``exclude`` lists nodes not to use. The
        policy's answers are checked (:mod:`schedlab.engines.decision_check`)."""
        feasible = feasible_nodes(pod, state, self.model_bits)
        if exclude:
            feasible[list(exclude)] = False
        if not feasible.any():
            return None
        policy = self.policy
        scores = checked_scores(
            policy, guarded(policy, "score", policy.score, pod, state, feasible), feasible
        )
        try:
            node = choose_node(scores, feasible, self.tie_rank)
        except ValueError:
            raise nan_score(policy, scores, feasible) from None
        return Placement(node, self._gpus(pod, state, node))

    def place_on(self, pod: PodRequest, state: ClusterState, node: int) -> Placement:
        """``pod`` on ``node``, which the engine chose (it fits there): the policy is asked
        for its scores as ever, and for the GPUs."""
        feasible = np.zeros(state.cluster.size, dtype=bool)
        feasible[node] = True
        policy = self.policy
        checked_scores(
            policy, guarded(policy, "score", policy.score, pod, state, feasible), feasible
        )
        return Placement(node, self._gpus(pod, state, node))

    def _gpus(self, pod: PodRequest, state: ClusterState, node: int) -> tuple[int, ...]:
        policy = self.policy
        gpus = guarded(policy, "pick_gpus", policy.pick_gpus, pod, state, node)
        count = pod.num_gpu if pod.needs_gpu else 0
        return checked_gpus(policy, gpus, state, node, count, pod.gpu_milli)
