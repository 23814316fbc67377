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

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from schedlab.engines.decision_check import (
    checked_gpus,
    checked_scores,
    guarded,
    nan_score,
    raised,
)
from schedlab.errors import SchedlabError
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

    def score_nodes(
        self, pod: PodRequest, state: ClusterState, nodes: list[int]
    ) -> list[int] | list[float] | None:
        """The scores :meth:`score` would give ``nodes``, one per node; None (the default): not
        offered.

        A policy offers them only if a node's score depends on the request and that node's row
        of the state alone (nothing random, no other node): the framework then keeps each
        request shape's scores and rescores only the nodes whose version moved since.
        """
        return None


# -- shared pieces ----------------------------------------------------------------------------
def node_model_bits(cluster: Cluster) -> np.ndarray:
    """Per node, the bit of its GPU model (0 for nodes without GPUs)."""
    return np.where(cluster.model >= 0, np.left_shift(1, np.maximum(cluster.model, 0)), 0)


def feasible_nodes(
    pod: PodRequest,
    state: ClusterState,
    model_bits: np.ndarray,
    allowed: np.ndarray | None = None,
) -> np.ndarray:
    """Nodes where the pod fits now: CPU, memory, model, and enough GPUs with enough share; RDMA
    NIC share (where the cluster models it) and the app's per-node limit when the pod has them.
    ``allowed``: the nodes of a model the pod accepts, if the caller keeps it (else derived from
    ``model_bits``)."""
    ok = state.cpu_free >= pod.cpu_milli
    ok &= state.mem_free >= pod.memory_mib
    if pod.rdma and state.rdma_free is not None:
        ok &= state.rdma_free >= pod.rdma
    if pod.max_per_node > 0 and pod.app >= 0:
        ok &= state.app_count(pod.app) < pod.max_per_node
    if pod.needs_gpu:
        ok &= (model_bits & pod.model_mask) != 0 if allowed is None else allowed
        if pod.gpu_milli == GPU_MILLI:
            ok &= state.gpu_full_count >= pod.num_gpu
        else:
            ok &= (state.gpu_free >= pod.gpu_milli).sum(axis=1) >= pod.num_gpu
    return ok


def node_fits(pod: PodRequest, state: ClusterState, node: int, allowed: np.ndarray) -> bool:
    """:func:`feasible_nodes` for one node (``allowed``: the nodes of a model the pod accepts),
    in plain Python for the few nodes that changed between two placements."""
    if state.cpu_free.item(node) < pod.cpu_milli or state.mem_free.item(node) < pod.memory_mib:
        return False
    if pod.rdma and state.rdma_free is not None and state.rdma_free.item(node) < pod.rdma:
        return False
    limited = pod.max_per_node > 0 and pod.app >= 0
    if limited and state.app_count(pod.app).item(node) >= pod.max_per_node:
        return False
    if pod.needs_gpu:
        if not allowed.item(node):
            return False
        if pod.gpu_milli == GPU_MILLI:
            return state.gpu_full_count.item(node) >= pod.num_gpu
        share = pod.gpu_milli
        return sum(f >= share for f in state.gpu_free[node].tolist()) >= pod.num_gpu
    return True


def best_fit_gpus(pod: PodRequest, free: np.ndarray, exists: np.ndarray) -> tuple[int, ...]:
    """Fitting GPUs in ascending free share, lowest index first among equals.

    For a sharing pod that is the fitting GPU with the least free share; for whole-GPU pods it is
    the lowest-index fully free GPUs. Plain Python over the node's few slots, where numpy's
    per-call overhead would dominate.
    """
    if not pod.needs_gpu:
        return ()
    share = pod.gpu_milli
    shares = free.tolist()
    if share >= GPU_MILLI:  # whole GPUs: the fully free ones (a missing slot has none free)
        return tuple([g for g, f in enumerate(shares) if f >= share][: pod.num_gpu])
    present = exists.tolist()
    fitting = [g for g, f in enumerate(shares) if f >= share and present[g]]
    fitting.sort(key=shares.__getitem__)  # stable: equal shares keep index order
    return tuple(fitting[: pod.num_gpu])


def choose_node(scores: np.ndarray, feasible: np.ndarray, tie_rank: np.ndarray) -> int:
    """The feasible node with the highest score; ties go to the lowest ``tie_rank``. A NaN
    score among the feasible nodes (no node is then highest) raises ValueError."""
    return choose_among(scores, feasible.nonzero()[0], tie_rank)


def choose_among(scores: np.ndarray, candidates: np.ndarray, tie_rank: np.ndarray) -> int:
    """:func:`choose_node` over the feasible nodes' indices (at least one)."""
    s = scores[candidates]
    top = candidates[s == s.max()]
    if len(top) == 1:
        return int(top[0])
    if not len(top):
        raise ValueError("a feasible node's score is NaN")
    return int(top[tie_rank[top].argmin()])


@dataclass(slots=True)
class _Kept:
    """What the framework keeps of one request shape's last placement: each node's choice key
    (score and tie order in one number, -inf where the shape does not fit) at the version the
    node had then, and the node chosen (-1: none fitted)."""

    version: np.ndarray
    key: np.ndarray
    best: int
    #: The state the keys were last brought up to date against, and its ``changes`` then: while
    #: the next placement looks at the same state, its journal names the nodes that moved.
    state: ClusterState | None = None
    mark: int = 0


#: Above this many changed nodes a kept shape is rescored as a whole (vectorised) rather than
#: node by node.
RESCORE_ONE_BY_ONE = 24
#: Scores times the node count stay below this, so that score and tie order fit in one float
#: exactly (larger scores are chosen among without keeping them).
EXACT_KEY = 2.0**52


class Placer:
    """Runs one policy over a cluster state: filter, score, choose, pick GPUs.

    This is the framework part every engine shares; the engine applies the returned
    :class:`Placement` to its state.

    For a policy that offers per-node scores (:meth:`PlacementPolicy.score_nodes`), each
    request shape's feasibility and scores are kept with the node versions they were computed
    at; a later placement of that shape rescores only the nodes whose version moved, and knows
    the winner is the last one or among those, unless the last winner itself got worse. The
    choice is the one a full rescoring would make.
    """

    def __init__(self, policy: PlacementPolicy, ctx: PolicyContext, tie_rank: np.ndarray) -> None:
        self.policy = policy
        self.ctx = ctx
        self.tie_rank = tie_rank
        self.model_bits = node_model_bits(ctx.cluster)
        self._allowed: dict[int, np.ndarray] = {}  # model mask → nodes of an allowed model
        self._kept: dict[tuple[int, ...], _Kept] = {}
        self._node_scores = type(policy).score_nodes is not PlacementPolicy.score_nodes
        #: The policy picks GPUs as the framework does (best fit): no policy code to guard.
        self._own_gpus = type(policy).pick_gpus is PlacementPolicy.pick_gpus
        # A node's choice key is score × n + (n − 1 − tie rank): among feasible nodes the largest
        # key is the highest score, then the lowest tie rank (choose_node's rule).
        self._n = len(tie_rank)
        self._order = (self._n - 1 - tie_rank).astype(np.float64)
        self._order_list = self._order.tolist()
        guarded(policy, "reset", policy.reset, ctx)

    def allowed(self, model_mask: int) -> np.ndarray:
        """Nodes with GPUs of a model in ``model_mask`` (fixed for the run, so kept per mask)."""
        nodes = self._allowed.get(model_mask)
        if nodes is None:
            nodes = self._allowed[model_mask] = (self.model_bits & model_mask) != 0
        return nodes

    def place(
        self, pod: PodRequest, state: ClusterState, exclude: set[int] | None = None
    ) -> Placement | None:
        """Where ``pod`` goes now (None: nowhere); ``exclude`` lists nodes not to use. The
        policy's answers are checked (:mod:`schedlab.engines.decision_check`)."""
        entry = self.entry(pod, state, exclude)
        return None if entry is None else Placement(*entry)

    def entry(
        self, pod: PodRequest, state: ClusterState, exclude: set[int] | None = None
    ) -> tuple[int, tuple[int, ...]] | None:
        """:meth:`place` as an allocation entry ``(node, gpus)``: what a job's allocation is
        made of, without a Placement in between (the gang placer's one-node case)."""
        if self._node_scores and not exclude:
            node = self._choose_kept(pod, state)
        else:
            node = self._choose(pod, state, exclude)
        if node < 0:
            return None
        return node, self._gpus(pod, state, node)

    def place_on(self, pod: PodRequest, state: ClusterState, node: int) -> Placement:
        """``pod`` on ``node``, which the engine chose (it fits there): the policy is asked
        for its scores as ever, and for the GPUs."""
        feasible = np.zeros(state.cluster.size, dtype=bool)
        feasible[node] = True
        self._scores(pod, state, feasible)
        return Placement(node, self._gpus(pod, state, node))

    def _gpus(self, pod: PodRequest, state: ClusterState, node: int) -> tuple[int, ...]:
        policy = self.policy
        if self._own_gpus:
            gpus = best_fit_gpus(pod, state.gpu_free[node], state.gpu_exists[node])
        else:
            gpus = guarded(policy, "pick_gpus", policy.pick_gpus, pod, state, node)
        count = pod.num_gpu if pod.needs_gpu else 0
        return checked_gpus(policy, gpus, state, node, count, pod.gpu_milli)

    def _scores(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        """The policy's scores of every node, checked."""
        policy = self.policy
        return checked_scores(
            policy, guarded(policy, "score", policy.score, pod, state, feasible), feasible
        )

    def _among(self, scores: np.ndarray, feasible: np.ndarray, candidates: np.ndarray) -> int:
        """:func:`choose_among`, a NaN score named as the policy's error."""
        try:
            return choose_among(scores, candidates, self.tie_rank)
        except ValueError:
            raise nan_score(self.policy, scores, feasible) from None

    def _choose(self, pod: PodRequest, state: ClusterState, exclude: set[int] | None) -> int:
        """Filter, score and choose over every node (-1: no node fits)."""
        feasible = feasible_nodes(pod, state, self.model_bits, self.allowed(pod.model_mask))
        if exclude:
            feasible[list(exclude)] = False
        candidates = feasible.nonzero()[0]
        if not len(candidates):
            return -1
        return self._among(self._scores(pod, state, feasible), feasible, candidates)

    def _choose_kept(self, pod: PodRequest, state: ClusterState) -> int:
        """:meth:`_choose` from the shape's kept keys, rescoring the nodes that changed."""
        shape = (
            pod.cpu_milli,
            pod.memory_mib,
            pod.num_gpu,
            pod.gpu_milli,
            pod.model_mask,
            pod.rdma,
            pod.app,
            pod.max_per_node,
        )
        kept = self._kept.get(shape)
        if kept is None:
            return self._keep(shape, pod, state)
        nodes = state.changed_since(kept.mark) if kept.state is state else None
        if nodes is None:
            nodes = (kept.version != state.version).nonzero()[0].tolist()
            kept.state = state
        kept.mark = state.changes
        if len(nodes) > RESCORE_ONE_BY_ONE:
            return self._keep(shape, pod, state)
        if not nodes:
            return kept.best
        allowed = self.allowed(pod.model_mask)
        policy = self.policy
        try:  # guarded(), inline: this runs at nearly every placement
            scores = policy.score_nodes(pod, state, nodes)
        except SchedlabError:
            raise
        except Exception as exc:
            raise raised(policy, "score_nodes", exc) from exc
        if scores is None or len(scores) != len(nodes):
            return self._keep(shape, pod, state)  # the full score() answers (and is checked)
        n, order, keys = self._n, self._order_list, kept.key
        best = kept.best
        top = keys.item(best) if best >= 0 else -math.inf
        stale = False
        for node, score in zip(nodes, scores, strict=True):
            if not abs(score) * n < EXACT_KEY:  # too large to key exactly, or NaN
                return self._keep(shape, pod, state)
            k = score * n + order[node] if node_fits(pod, state, node, allowed) else -math.inf
            keys[node] = k
            kept.version[node] = state.version.item(node)
            if node == best:
                if k < top:  # no longer fits, or scores lower: compare all nodes again
                    stale = True
                top = k
            elif k > top:
                best, top = node, k
        if stale:
            best = int(keys.argmax())
            if keys.item(best) == -math.inf:
                best = -1
        kept.best = best
        return best

    def _keep(self, shape: tuple[int, ...], pod: PodRequest, state: ClusterState) -> int:
        """Filter, score and choose over every node, keeping the keys for the next time."""
        feasible = feasible_nodes(pod, state, self.model_bits, self.allowed(pod.model_mask))
        candidates = feasible.nonzero()[0]
        if not len(candidates):  # nothing fits: kept so, until a node changes
            self._kept[shape] = _Kept(
                state.version.copy(), np.full(self._n, -math.inf), -1, state, state.changes
            )
            return -1
        scores = self._scores(pod, state, feasible)
        best = self._among(scores, feasible, candidates)
        values = np.asarray(scores, dtype=np.float64)
        if not (np.abs(values[candidates]) * self._n < EXACT_KEY).all():
            self._kept.pop(shape, None)  # scores too large to key exactly: nothing kept
            return best
        key = np.full(self._n, -math.inf)
        key[candidates] = values[candidates] * self._n + self._order[candidates]
        self._kept[shape] = _Kept(state.version.copy(), key, best, state, state.changes)
        return best
