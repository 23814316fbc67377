"""The one contract every policy meets, whichever engine runs it.

There are three kinds of policy — placement (where a pod or job goes), ordering (which job runs
first, over the shared queue scheduler) and whole-cluster scheduling policies (they size, lease or
slice themselves) — but one way to start them: ``reset(ctx)`` with a :class:`PolicyContext`, the
same type for all three. A round-based policy takes ``slot`` as a constructor parameter.

Every policy class declares what it can do (:class:`Policy`), so the registry can refuse an
option combination a policy would silently ignore and the conformance suite
(:mod:`schedlab.testing`) knows which engines to run it in and what to check:

* ``engines``: where it runs — ``pack`` (one placement per pod), ``replay`` (simulation over
  time), ``serve`` (a live cluster);
* ``uses_placement``: it asks the placement policy where its jobs go (``--placement`` matters);
* ``stateful``: its decisions depend on what it saw at earlier decision points, not only on the
  snapshot in front of it (one that runs in serve carries that state across serve's per-cycle
  resets with ``export_state`` / ``import_state``);
* ``preemptive``: it may stop running jobs;
* ``elastic``: it chooses each job's GPU count itself (others start a job on exactly its request).

:func:`never_fits` is the shared "this job can never run on this cluster" check, and
:func:`tie_order` the seeded random node rank that breaks placement ties in every engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from schedlab.metrics.fragmentation import TargetWorkload
from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import ANY_MODEL_MASK, GPU_MODELS

if TYPE_CHECKING:
    from schedlab.model.jobs import JobTable
    from schedlab.network.topology import Topology
    from schedlab.perf.models import PerfModel
    from schedlab.policies.placement.gang import GangPlacer

#: The engines a policy may declare.
PACK, REPLAY, SERVE = "pack", "replay", "serve"
ENGINES: tuple[str, ...] = (PACK, REPLAY, SERVE)
#: What a policy that only works in simulated time declares.
REPLAY_ONLY: frozenset[str] = frozenset({REPLAY})


@dataclass(frozen=True)
class PolicyContext:
    """What a policy may know before its first decision, the same type in every engine.

    ``rng`` is the run's random generator (the only randomness a policy may use) and
    ``tie_rank`` the seeded node order that breaks placement ties. ``jobs``, ``perf`` and
    ``placer`` exist where jobs run over time (replay and serve); pack has pods, not jobs.
    """

    cluster: Cluster
    target: TargetWorkload | None
    rng: np.random.Generator
    jobs: JobTable | None = None
    perf: PerfModel | None = None
    placer: GangPlacer | None = None
    tie_rank: np.ndarray | None = None
    engine: str = REPLAY
    #: The network under the cluster (``--topology``; host index = node index), if any.
    topology: Topology | None = None
    #: Replay's live network (read-only to policies): link utilisation, the jobs on each link.
    network: Any = None


class Policy:
    """The root of every policy: the declared capabilities and the one ``reset(ctx)``.

    The placement, ordering and scheduling base classes all derive from it, so a policy of any
    kind is started the same way and describes itself the same way.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    #: Engines the policy runs in.
    engines: ClassVar[frozenset[str]] = frozenset({REPLAY, SERVE})
    #: It places its jobs through the placement policy (so ``--placement`` changes its result).
    uses_placement: ClassVar[bool] = True
    #: Its decisions depend on earlier decision points, not only on the current snapshot.
    stateful: ClassVar[bool] = False
    #: It may stop running jobs (instances may override: a parameter can switch it on).
    preemptive: bool = False
    #: It sizes jobs itself: its Start and Resize decisions may give a job from one GPU up to
    #: all the cluster has (its declared range), where any other policy's give exactly what the
    #: job asked for. Every engine checks which (:mod:`schedlab.engines.decision_check`).
    elastic: ClassVar[bool] = False
    #: Control of NICs or switches its decisions need beyond choosing nodes (e.g. "link
    #: reservations", "OCS circuits"; "" for none; instances may override, as a parameter can
    #: switch it on). Serve refuses such a policy: Slurm only chooses nodes.
    network_control: str = ""

    def reset(self, ctx: PolicyContext) -> None:
        """Called once before a run (in serve: before each decision on a fresh job table);
        policies with state, caches or randomness take what they need from ``ctx`` here."""

    def export_state(self) -> dict[str, Any]:
        """What a stateful policy must carry to its next ``reset`` to decide as if it had never
        stopped: JSON-ready, with jobs named by their ids (``ctx.jobs.job_id``), never by index.

        Serve numbers jobs afresh every cycle and may be restarted at any time: it exports the
        state after each decision, journals it, and imports it after the next reset (also in a
        new process, from the journal). Stateless policies carry nothing.
        """
        return {}

    def import_state(self, state: Mapping[str, Any]) -> None:
        """Take back what :meth:`export_state` gave, after ``reset`` on a new job table (jobs
        it names that are no longer in the table are dropped)."""


def capabilities(policy: type | object) -> dict[str, object]:
    """The declared capabilities of a policy class or object, for listings and checks."""
    return {
        "engines": tuple(e for e in ENGINES if e in policy.engines),  # type: ignore[union-attr]
        "uses_placement": bool(policy.uses_placement),  # type: ignore[union-attr]
        "stateful": bool(policy.stateful),  # type: ignore[union-attr]
        "preemptive": bool(policy.preemptive),  # type: ignore[union-attr]
    }


def tie_order(cluster: Cluster, rng: np.random.Generator) -> np.ndarray:
    """A seeded random rank per node (lower wins placement ties), fixed for the whole run.

    Drawn over the name-sorted nodes so that the order of rows in a node file does not change
    the outcome; plain name order would pile work onto the same nodes.
    """
    by_name = np.argsort(cluster.names.astype(str), kind="stable")
    rank = np.empty(cluster.size, dtype=np.int64)
    rank[by_name] = rng.permutation(cluster.size)
    return rank


def model_nodes(cluster: Cluster, model_mask: int) -> np.ndarray:
    """Which nodes have GPUs of a model ``model_mask`` allows."""
    bits = np.left_shift(1, np.maximum(cluster.model, 0))
    return (cluster.model >= 0) & ((bits & model_mask) != 0)


def never_fits(
    cluster: Cluster,
    num_gpus: int,
    model_mask: int = ANY_MODEL_MASK,
    *,
    per_node: int = 0,
    nodes: int = 1,
    where: str = "the cluster",
    what: str = "",
) -> str | None:
    """Why a job of ``num_gpus`` GPUs (``per_node`` on each of ``nodes`` nodes, when it asks per
    node) can never run on ``cluster`` whatever else runs there, or None if some state fits it.

    Counts every node, busy or down: a job too big for the nodes free now is not impossible.
    ``where`` and ``what`` only word the reason ("the partition", "'a100'").
    """
    if num_gpus <= 0 and per_node <= 0:
        return None
    ok = model_nodes(cluster, model_mask)
    if model_mask != ANY_MODEL_MASK and not ok.any():
        present = sorted({GPU_MODELS[m] for m in cluster.model.tolist() if m >= 0})
        return (
            f"asks for a GPU model {where} does not have (it has: {', '.join(present) or 'none'})"
        )
    gpus = cluster.num_gpus[ok]
    widest = int(gpus.max()) if len(gpus) else 0
    if per_node > widest:
        return f"asks for {per_node}{what} GPUs per node; the largest node has {widest}"
    if per_node and nodes > int((gpus >= per_node).sum()):
        return f"asks for {nodes} nodes with {per_node}{what} GPUs each"
    total = int(gpus.sum())
    if num_gpus > total:
        allowed = " of the allowed models" if model_mask != ANY_MODEL_MASK else ""
        return f"needs {num_gpus}{what} GPUs; {where} has {total}{allowed}"
    return None
