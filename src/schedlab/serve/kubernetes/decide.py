"""One cycle's decisions on a :class:`KubeView`: the policy's, then the shares of GPUs.

Used alike by the live loop and by ``serve check`` (which rebuilds the view from the journal),
so a decision re-derived from the journal is computed by the very code that made it.

* Jobs whose pods may use different sets of nodes (selectors, affinity, taints) are decided in
  separate passes, one per set, in the order the first job of each set queued; in a pass only
  that set's jobs are pending and the other nodes lend nothing. Each pass sees the starts of the
  passes before it. With no constraints there is one pass: the policy as replay runs it.
* Fractional pods (GPU shares) are then placed one by one in queue order by the same placement
  plugin (filter, score, GPU choice), on the nodes they may use, on what is left.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.engines.decision_check import DecisionCheck
from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.model.gpu_models import ANY_MODEL_MASK
from schedlab.model.snapshot import Decision, Preempt, Start
from schedlab.perf.models import TraceDuration
from schedlab.policies.placement.base import PodRequest
from schedlab.policies.wiring import Policies
from schedlab.serve.kubernetes.objects import PodInfo
from schedlab.serve.kubernetes.view import KubeView


@dataclass(frozen=True)
class ShareStart:
    """A fractional pod placed on ``gpus`` of node index ``node``."""

    pod: PodInfo
    node: int
    gpus: tuple[int, ...]


@dataclass
class Decided:
    decisions: list[Decision]
    shares: list[ShareStart]
    state: dict[str, Any]  # the policies' state after the cycle
    dropped: list[tuple[int, str]]  # (job index, why) starts that did not fit what was left


def _restricted(state: ClusterState, allowed: np.ndarray) -> ClusterState:
    out = state.copy()
    for node in np.flatnonzero(~allowed).tolist():
        out.set_gpu_free(node, np.zeros(out.gpu_free.shape[1], dtype=np.int64))
        out.cpu_free[node] = 0
        out.mem_free[node] = 0
    return out


def take_start(state: ClusterState, view: KubeView, job: int, start: Start) -> str | None:
    """Take a start's room on ``state``: None, or why it does not fit (nothing taken)."""
    head = view.jobs[job].head
    trial = state.copy()
    try:
        for node, gpus in start.allocation:
            trial.allocate(
                node, gpus, head.cpu_milli, head.memory_mib, GPU_MILLI if gpus else 0, len(gpus)
            )
    except ValueError as exc:
        return str(exc)
    for node, gpus in start.allocation:
        state.allocate(
            node, gpus, head.cpu_milli, head.memory_mib, GPU_MILLI if gpus else 0, len(gpus)
        )
    return None


def decide(
    policies: Policies,
    view: KubeView,
    seed: int,
    topology: Any,
    policy_state: dict[str, Any],
) -> Decided:
    """The cycle's decisions (see the module docstring)."""
    snap = view.snapshot
    work = snap.state.copy()
    decisions: list[Decision] = []
    dropped: list[tuple[int, str]] = []
    preempted: set[int] = set()
    state = policy_state
    passes: dict[bytes, list[int]] = {}
    for i in snap.pending_set:
        passes.setdefault(view.eligible[i].tobytes(), []).append(i)
    started_any = False
    for members in passes.values():
        allowed = view.eligible[members[0]]
        sub = dataclasses.replace(
            snap,
            state=_restricted(work, allowed),
            pending_set=dict.fromkeys(members),
            new_pending=list(members),
            _pending=None,
            _running=None,
        )
        policies.start(
            view.cluster,
            np.random.default_rng(seed),
            jobs=snap.jobs,
            perf=TraceDuration(),
            topology=topology,
        )
        policies.import_state(state)
        started_any = True
        assert policies.scheduler is not None
        # Every answer checked as in replay and serve slurm (PolicyError: one line, journaled).
        check = DecisionCheck(policies.scheduler, view.cluster, snap.jobs)
        for d in check.decide(sub):
            if isinstance(d, Start):
                why = take_start(work, view, d.job, d)
                if why is not None:
                    dropped.append((d.job, why))
                    continue
            elif isinstance(d, Preempt):
                if d.job in preempted:
                    continue
                preempted.add(d.job)
            decisions.append(d)
        state = policies.export_state()
    shares: list[ShareStart] = []
    if view.fractional:
        if not started_any:
            policies.start(
                view.cluster,
                np.random.default_rng(seed),
                jobs=snap.jobs,
                perf=TraceDuration(),
                topology=topology,
            )
            policies.import_state(state)
        assert policies.placer is not None
        for pod in view.fractional:
            assert view.masks is not None
            exclude = set(np.flatnonzero(~view.masks.of(pod)).tolist())
            request = PodRequest(
                pod.cpu_milli, pod.memory_mib, pod.gpus, pod.gpu_milli, ANY_MODEL_MASK
            )
            placed = policies.placer.place(request, work, exclude=exclude)
            if placed is None:
                continue
            work.allocate(
                placed.node, placed.gpus, pod.cpu_milli, pod.memory_mib, pod.gpu_milli, pod.gpus
            )
            shares.append(ShareStart(pod, placed.node, tuple(placed.gpus)))
        state = policies.export_state()
    return Decided(decisions, shares, state, dropped)
