"""Pods and nodes as the read-only :class:`Snapshot` a policy decides on — Kubernetes' side of
what :mod:`schedlab.serve.live` is for Slurm.

Rebuilt from the API server's objects at every cycle (nothing else is kept), so a scheduler
started again after SIGKILL sees what one that never stopped would see:

* **nodes**: every node, in natural name order; cordoned, NotReady and unreadable nodes stay in
  the cluster (a pod too big for the nodes up now is not impossible) but lend nothing;
* **taken**: every bound pod that has not finished holds its CPU, memory and GPUs on its node,
  whoever scheduled it (the API server does not enforce capacity: the scheduler must); GPU
  devices are the ones schedlab wrote on bind (``schedlab.io/gpu-devices``) where it did;
* **jobs**: the policy's jobs are schedlab's pods — one pod, or a gang of pods (all
  the pods of a PodGroup, each a node of a multi-node job: ``gpus_per_node`` the pod's GPUs,
  ``num_nodes`` the pod count). Pending jobs are those not bound yet (a gang: once at least its
  ``minMember`` pods exist); running jobs those bound. Fractional pods (``gpu-milli``) share
  GPUs, which the time-based policies do not model: they are placed after the policy's starts,
  in queue order, by the same placement plugin, on GPU shares (:func:`place_fractional`).

Pods whose node constraints (selector, required affinity, taints) differ are decided in separate
passes, one per set of nodes they may use, in the order their first job queued (see
:func:`schedlab.serve.kubernetes.decide.decide`); in each pass the other nodes lend nothing.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from schedlab.model.cluster import GPU_MILLI, Cluster, ClusterState
from schedlab.model.gpu_models import ANY_MODEL_MASK
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import PENDING, RUNNING, Allocation, JobRuntime, Snapshot
from schedlab.policies.api import never_fits
from schedlab.policies.placement.base import PodRequest, best_fit_gpus
from schedlab.serve.kubernetes.objects import UNLIMITED_SECONDS, NodeInfo, PodInfo


class NodeMasks:
    """Which nodes a pod may use at all, computed once per distinct set of constraints (a
    thousand pods usually share a handful)."""

    def __init__(self, nodes: list[NodeInfo]) -> None:
        self.nodes = nodes
        self._memo: dict[tuple[object, ...], np.ndarray] = {}

    def of(self, pod: PodInfo) -> np.ndarray:
        key = pod.constraints
        mask = self._memo.get(key)
        if mask is None:
            nodes = self.nodes
            mask = np.fromiter((pod.fits_node(n) for n in nodes), bool, len(nodes))
            mask.setflags(write=False)
            self._memo[key] = mask
        return mask


@functools.lru_cache(maxsize=65536)
def natural(name: str) -> tuple[object, ...]:
    """``node2`` before ``node10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


@dataclass
class Job:
    """One job of the policy: a pod, or a gang's pods (name order)."""

    key: str  # the pod's ``namespace/name``, or ``namespace/podgroup/NAME`` for a gang
    pods: list[PodInfo]
    submit: float
    queue: str

    @property
    def head(self) -> PodInfo:
        return self.pods[0]

    @property
    def gang(self) -> bool:
        return "/podgroup/" in self.key

    @property
    def num_gpus(self) -> int:
        return sum(p.gpus for p in self.pods)


@dataclass
class KubeView:
    """One cycle's picture: the snapshot plus the map back to pods."""

    snapshot: Snapshot
    cluster: Cluster
    nodes: list[NodeInfo]
    jobs: list[Job]  # by snapshot job index
    eligible: list[np.ndarray]  # by job index: the nodes its pods may use at all
    fractional: list[PodInfo] = field(default_factory=list)  # pending shares, queue order
    waiting: dict[str, str] = field(default_factory=dict)  # pod key → why it is not offered
    impossible: dict[str, str] = field(default_factory=dict)  # pod key → why it never fits
    problems: list[tuple[str, str]] = field(default_factory=list)  # (pod key, what is wrong)
    pods: dict[str, PodInfo] = field(default_factory=dict)  # every pod seen, by key
    outside: dict[str, str] = field(default_factory=dict)  # job key → why it runs in no queue
    masks: NodeMasks | None = None  # the nodes each pod may use

    @property
    def queued(self) -> list[int]:
        return list(self.snapshot.pending_set)

    @property
    def idle(self) -> bool:
        """Nothing of schedlab's waits or runs."""
        return not self.jobs and not self.fractional and not self.waiting


def build_cluster(nodes: list[NodeInfo]) -> Cluster:
    return Cluster(
        names=np.asarray([n.name for n in nodes], dtype=object),
        cpu_milli=np.asarray([n.cpu_milli for n in nodes], dtype=np.int64),
        memory_mib=np.asarray([n.memory_mib for n in nodes], dtype=np.int64),
        num_gpus=np.asarray([n.gpus for n in nodes], dtype=np.int64),
        model=np.asarray([n.model_index for n in nodes], dtype=np.int64),
        source="kubernetes",
    )


def _take(state: ClusterState, node: int, pod: PodInfo) -> tuple[int, ...] | None:
    """Take what a bound pod holds; the GPU devices it was given where they are still free,
    else the best-fitting free ones. None (and nothing taken) when it does not fit."""
    count, milli = (pod.gpus, pod.gpu_milli) if pod.gpus else (0, 0)
    row, exists = state.gpu_free[node], state.gpu_exists[node]
    devices = [g for g in dict.fromkeys(pod.devices) if 0 <= g < len(row) and exists[g]]
    if count and (len(devices) != count or any(row[g] < milli for g in devices)):
        request = PodRequest(pod.cpu_milli, pod.memory_mib, count, milli, ANY_MODEL_MASK)
        if int((exists & (row >= milli)).sum()) < count:
            return None
        devices = list(best_fit_gpus(request, row, exists))
    gpus = tuple(sorted(devices[:count])) if count else ()
    if state.cpu_free[node] < pod.cpu_milli or state.mem_free[node] < pod.memory_mib:
        return None
    state.allocate(node, gpus, pod.cpu_milli, pod.memory_mib, milli, count)
    return gpus


def _no_room(state: ClusterState, node: int) -> None:
    """A node that takes no new pods: nothing of it is free to the policy."""
    state.set_gpu_free(node, np.zeros(state.gpu_free.shape[1], dtype=np.int64))
    state.cpu_free[node] = 0
    state.mem_free[node] = 0


def group_jobs(
    pods: Iterable[PodInfo], min_members: Mapping[str, int]
) -> tuple[list[Job], dict[str, str], list[tuple[str, str]]]:
    """schedlab's pods (not finished, not deleting) as jobs; pods left out with why; problems."""
    singles: list[Job] = []
    gangs: dict[str, list[PodInfo]] = {}
    waiting: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    for pod in pods:
        if pod.group:
            gangs.setdefault(pod.group_key, []).append(pod)
        else:
            singles.append(Job(pod.key, [pod], pod.created, pod.queue))
    jobs = singles
    for gkey, members in gangs.items():
        members.sort(key=lambda p: natural(p.name))
        head = members[0]
        need = max(min_members.get(gkey, 0), max(p.min_member for p in members), 1)
        shapes = {(p.cpu_milli, p.memory_mib, p.gpus, p.gpu_milli) for p in members}
        ns, name = gkey.split("/", 1)
        key = f"{ns}/podgroup/{name}"
        if len(shapes) > 1:
            why = f"gang {gkey}: its pods ask for different resources; a gang's pods must match"
            problems += [(p.key, why) for p in members]
            continue
        if head.fractional:
            why = f"gang {gkey}: GPU shares (gpu-milli) in a gang are not scheduled"
            problems += [(p.key, why) for p in members]
            continue
        bound = [p for p in members if p.bound]
        if not bound and len(members) < need:
            why = f"gang {gkey}: {len(members)} of its {need} pods (minMember) exist"
            waiting.update({p.key: why for p in members})
            continue
        if bound and len(bound) < len(members):
            # Part of a gang bound (a bind failed midway, or pods added later): the bound pods
            # run as one job; the others wait as a job of their own, placed first next cycle.
            jobs.append(Job(key, bound, min(p.created for p in bound), head.queue))
            rest = [p for p in members if not p.bound]
            jobs.append(Job(key + "/rest", rest, min(p.created for p in bound), head.queue))
            continue
        jobs.append(Job(key, members, min(p.created for p in members), head.queue))
    jobs.sort(key=lambda j: (j.submit, natural(j.key)))
    return jobs, waiting, problems


def build_view(
    pods: Iterable[PodInfo],
    nodes: Iterable[NodeInfo],
    now: float,
    scheduler: str,
    min_members: Mapping[str, int] | None = None,
    credit: Mapping[str, tuple[float, float]] | None = None,
    began: Mapping[str, float] | None = None,
    refuse: Callable[[list[Job]], dict[str, str]] | None = None,
) -> KubeView:
    """The snapshot for one cycle (see the module docstring).

    ``refuse``: why a job may not be scheduled at all (tenancy: no queue takes it), by job
    key: its pods, pending, are told so as pods that can never fit are; bound, they keep what
    they hold but stay out of the job table (``outside``).

    ``min_members``: the PodGroups' ``minMember`` by ``namespace/name``; ``credit``: GPU-seconds
    attained and seconds run in earlier runs, by job key, for jobs that checkpoint; ``began``:
    when each pod's run began, where the scheduler knows it better than the pod's startTime
    (the bind, as the journal has it)."""
    node_list = sorted(nodes, key=lambda n: natural(n.name))
    cluster = build_cluster(node_list)
    state = cluster.new_state()
    where = {n.name: i for i, n in enumerate(node_list)}
    all_pods = {p.key: p for p in pods}
    problems: list[tuple[str, str]] = []
    mine: list[PodInfo] = []
    placed: dict[str, tuple[int, tuple[int, ...]]] = {}
    for pod in sorted(all_pods.values(), key=lambda p: (p.created, natural(p.key))):
        if pod.holds and pod.node in where:
            node = where[pod.node]
            gpus = _take(state, node, pod)
            if gpus is None:
                problems.append(
                    (pod.key, f"node {pod.node} is over-committed: the pod does not fit")
                )
            else:
                placed[pod.key] = (node, gpus)
        if pod.scheduler != scheduler or pod.terminal or pod.deleting:
            continue
        if pod.problem:
            problems.append((pod.key, pod.problem))
            continue
        if pod.bound and pod.node not in where:
            continue  # bound to a node that is gone: nothing to plan
        mine.append(pod)
    for i, node in enumerate(node_list):
        if not node.available:
            _no_room(state, i)
    jobs, waiting, more = group_jobs(mine, min_members or {})
    problems += more
    # Fractional pods are placed outside the policy (see the module docstring).
    fractional = [j.head for j in jobs if not j.gang and j.head.fractional and not j.head.bound]
    jobs = [
        j for j in jobs if not (j.head.fractional and not j.head.bound) and not j.head.fractional
    ]
    impossible: dict[str, str] = {}
    masks = NodeMasks(node_list)
    eligible: list[np.ndarray] = []
    kept: list[Job] = []
    verdicts: dict[tuple[int, int, int], str | None] = {}
    refused = refuse(jobs) if refuse is not None and jobs else {}
    outside: dict[str, str] = {}
    for job in jobs:
        if job.key in refused:
            if any(p.bound for p in job.pods):
                outside[job.key] = refused[job.key]
            else:
                impossible.update(dict.fromkeys((p.key for p in job.pods), refused[job.key]))
            continue
        mask = masks.of(job.head)
        for p in job.pods[1:]:
            if p.constraints != job.head.constraints:
                mask = mask & masks.of(p)
        if not job.head.bound:
            shape = (job.head.gpus, len(job.pods), hash(mask.tobytes()))
            if shape not in verdicts:
                verdicts[shape] = unfit_reason(job, cluster, mask)
            if verdicts[shape] is not None:
                for p in job.pods:
                    impossible[p.key] = str(verdicts[shape])
                continue
        kept.append(job)
        eligible.append(mask)
    for pod in fractional:
        mask = masks.of(pod)
        ok = mask & (cluster.num_gpus >= pod.gpus)
        if not ok.any():
            impossible[pod.key] = (
                f"asks for {pod.gpus} shared GPU(s); no node it may use has that many"
            )
    fractional = [p for p in fractional if p.key not in impossible]
    snapshot = _snapshot(kept, cluster, state, placed, now, credit or {}, began or {})
    return KubeView(
        snapshot=snapshot,
        cluster=cluster,
        nodes=node_list,
        jobs=kept,
        eligible=eligible,
        fractional=fractional,
        waiting=waiting,
        impossible=impossible,
        problems=problems,
        pods=all_pods,
        masks=masks,
        outside=outside,
    )


def unfit_reason(job: Job, cluster: Cluster, mask: np.ndarray) -> str | None:
    """Why ``job`` can never run on the nodes its pods may use (counting busy and down ones)."""
    if not mask.any():
        return "no node matches its node selector, affinity and tolerations"
    sub = Cluster(
        names=cluster.names[mask],
        cpu_milli=cluster.cpu_milli[mask],
        memory_mib=cluster.memory_mib[mask],
        num_gpus=cluster.num_gpus[mask],
        model=cluster.model[mask],
        source=cluster.source,
    )
    head = job.head
    if head.gpus:
        why = never_fits(
            sub, job.num_gpus, per_node=head.gpus, nodes=len(job.pods), where="the cluster"
        )
        if why is not None:
            return why
    if head.cpu_milli > int(sub.cpu_milli.max(initial=0)) or head.memory_mib > int(
        sub.memory_mib.max(initial=0)
    ):
        return "asks for more CPU or memory than any node it may use has"
    return None


def _snapshot(
    jobs: list[Job],
    cluster: Cluster,
    state: ClusterState,
    placed: Mapping[str, tuple[int, tuple[int, ...]]],
    now: float,
    credit: Mapping[str, tuple[float, float]],
    began: Mapping[str, float],
) -> Snapshot:
    n = len(jobs)
    duration = np.asarray(
        [j.head.estimate if math.isfinite(j.head.estimate) else UNLIMITED_SECONDS for j in jobs],
        dtype=np.float64,
    )
    table = JobTable.from_columns(
        source="kubernetes",
        job_id=[j.key for j in jobs],
        submit_time=[j.submit for j in jobs],
        num_gpus=[j.num_gpus for j in jobs],
        duration=duration,
        user=[j.queue for j in jobs],
        cpu_milli=[j.head.cpu_milli for j in jobs],
        memory_mib=[j.head.memory_mib for j in jobs],
        gpus_per_node=[j.head.gpus for j in jobs],
        num_nodes=[len(j.pods) if j.head.gpus else 0 for j in jobs],
        checkpoint=[j.head.checkpoint for j in jobs],
    )
    rt = JobRuntime.new(n, duration)
    pending: dict[int, None] = {}
    running: dict[int, None] = {}
    for i, job in enumerate(jobs):
        rt.queued_since[i] = job.submit
        if job.head.bound:
            alloc: Allocation = tuple(placed[p.key] for p in job.pods if p.key in placed)
            start = min(began.get(p.key) or p.started or now for p in job.pods)
            size = sum(len(g) for _, g in alloc)
            rt.status[i] = RUNNING
            rt.rate[i] = 1.0
            rt.run_started[i] = start
            rt.progress_from[i] = start
            rt.alloc_n[i] = size
            rt.allocation[i] = alloc
            running[i] = None
        else:
            rt.status[i] = PENDING
            pending[i] = None
        attained, executed = credit.get(job.key, (0.0, 0.0))
        rt.attained[i], rt.executed[i] = attained, executed
    return Snapshot(
        now=now,
        jobs=table,
        cluster=cluster,
        state=state,
        runtime=rt,
        work=duration,
        reference_rate=np.ones(n),
        pending_set=pending,
        running_set=running,
        new_pending=list(pending),
        free_gpus=int(state.gpu_free_sum.sum() // GPU_MILLI),
    )
