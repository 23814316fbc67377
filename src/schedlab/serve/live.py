"""Slurm's jobs and nodes as the read-only :class:`Snapshot` a policy decides on.

Rebuilt from scratch every cycle, from what Slurm reports and nothing else, so a scheduler killed
at any moment and started again sees exactly what it would have seen had it kept running. Each job
the scheduler manages falls in one class:

* **queued**: pending and held (``sbatch --hold``, or held again by schedlab) and not marked
  rejected. These are the snapshot's pending jobs.
* **running**: running, configuring, completing or suspended; it holds the GPUs Slurm reports.
* **launching**: pending, released, pinned to nodes (``ReqNodeList``) that can take it now. Slurm
  will start it there within a moment, so it counts as running on its pinned nodes: placing
  anything on those GPUs would double-book them.
* **stranded**: pending, released, but pinned where it cannot run (the node was drained or went
  down, or the node is full, e.g. after a requeue). It is held again and placed afresh in the same
  cycle, so it counts as queued.

Which jobs are schedlab's at all, and which of those Slurm would let run now, is decided in
:mod:`schedlab.serve.classify`: only schedlab's jobs enter the job table; running jobs of other
owners only occupy their GPUs (a policy can neither place nor preempt them). Held jobs marked
rejected (``Comment=schedlab: rejected: …``) are left alone. Unavailable nodes stay in the
cluster (a job too big for the nodes that are up now is not impossible) but none of their GPUs is
free.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from schedlab.model.cluster import GPU_MILLI, Cluster, ClusterState
from schedlab.model.gpu_models import ANY_MODEL_MASK, is_known_model, model_index
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import PENDING, RUNNING, Allocation, JobRuntime, Snapshot
from schedlab.policies.api import never_fits
from schedlab.serve.classify import classify
from schedlab.serve.slurm_state import MARK_QUEUED, MARK_RELEASED, JobInfo, NodeInfo

#: The model of a node whose GRES names no type, or a type schedlab does not know.
UNNAMED_MODEL = model_index("GPU")
#: Run-time estimate of a job without a time limit (one year: "longer than anything else").
UNLIMITED_SECONDS = 365 * 86400.0


def node_model(node: NodeInfo) -> int:
    """Index into :data:`GPU_MODELS` for a node (-1: no GPUs)."""
    if node.gpus == 0:
        return -1
    return (
        model_index(node.gpu_type)
        if node.gpu_type and is_known_model(node.gpu_type)
        else (UNNAMED_MODEL)
    )


def build_cluster(nodes: list[NodeInfo]) -> Cluster:
    """The partition's nodes as a schedlab cluster, in the order Slurm's names sort naturally."""
    return Cluster(
        names=np.asarray([n.name for n in nodes], dtype=object),
        cpu_milli=np.asarray([n.cpus * 1000 for n in nodes], dtype=np.int64),
        memory_mib=np.asarray([n.memory_mib for n in nodes], dtype=np.int64),
        num_gpus=np.asarray([n.gpus for n in nodes], dtype=np.int64),
        model=np.asarray([node_model(n) for n in nodes], dtype=np.int64),
        source="slurm",
    )


def impossible_reason(job: JobInfo, nodes: list[NodeInfo]) -> str | None:
    """Why ``job`` can never run on these nodes (counting drained and down ones), or None.

    Slurm names GPU types freely, so the type is matched by name here; the counting is the
    check every engine shares (:func:`schedlab.policies.api.never_fits`).
    """
    if job.gpu_type:
        typed = [n for n in nodes if n.gpu_type.lower() == job.gpu_type.lower()]
        if not typed:
            kinds = sorted({n.gpu_type or "untyped" for n in nodes if n.gpus})
            return f"unknown GPU model '{job.gpu_type}' (nodes have: {', '.join(kinds) or 'none'})"
        nodes = typed
    return never_fits(
        build_cluster(nodes),
        job.num_gpus,
        per_node=job.gpus_per_node,
        nodes=job.node_count,
        where="the partition",
        what=f" '{job.gpu_type}'" if job.gpu_type else "",
    )


def model_mask(job: JobInfo) -> int:
    """Bitmask of the GPU models ``job`` may use (its GRES type, if it names one)."""
    if not job.gpu_type:
        return ANY_MODEL_MASK
    if is_known_model(job.gpu_type):
        return 1 << model_index(job.gpu_type)
    return 1 << UNNAMED_MODEL


@dataclass
class LiveView:
    """One cycle's picture of the cluster: the snapshot plus the map back to Slurm's job ids."""

    snapshot: Snapshot
    cluster: Cluster
    nodes: list[NodeInfo]
    infos: list[JobInfo]  # by snapshot job index
    queued: list[int] = field(default_factory=list)  # job ids, as the policy sees them pending
    running: list[int] = field(default_factory=list)
    launching: list[int] = field(default_factory=list)
    stranded: dict[int, str] = field(default_factory=dict)  # job id → why it must be re-placed
    impossible: list[tuple[JobInfo, str]] = field(default_factory=list)  # held, never fits: why
    problems: list[tuple[int, str]] = field(default_factory=list)  # (job id, what was odd)
    claim: list[int] = field(default_factory=list)  # queued without the ownership marker yet
    waiting: dict[int, str] = field(default_factory=dict)  # schedlab's, not eligible now: why
    limited: dict[int, str] = field(default_factory=dict)  # released, kept back by a limit
    foreign_held: list[int] = field(default_factory=list)  # held by someone after release
    split: list[tuple[JobInfo, list[int]]] = field(default_factory=list)  # array tasks to split

    def index_of(self, job_id: int) -> int:
        return self._index[job_id]

    def __post_init__(self) -> None:
        self._index = {info.job_id: i for i, info in enumerate(self.infos)}

    @property
    def idle(self) -> bool:
        """Nothing waits for the scheduler and nothing it placed is still running."""
        return (
            not (self.queued or self.running or self.launching or self.waiting or self.limited)
            and not self.split
        )


def _occupy(state: ClusterState, alloc: list[tuple[int, list[int]]]) -> Allocation | None:
    """Take whole GPUs for one job; GPU indices Slurm did not name (or named twice) are replaced by
    free ones. Returns the allocation taken, or None (and takes nothing) if it does not fit."""
    taken: list[tuple[int, tuple[int, ...]]] = []
    for node, wanted in alloc:
        free_row = state.gpu_free[node]
        exists = state.gpu_exists[node]
        count = len(wanted)
        ok = [
            g for g in wanted if 0 <= g < len(free_row) and exists[g] and free_row[g] == GPU_MILLI
        ]
        ok = list(dict.fromkeys(ok))
        if len(ok) < count:
            spare = [
                int(g) for g in np.flatnonzero(exists & (free_row == GPU_MILLI)) if g not in ok
            ]
            ok += spare[: count - len(ok)]
        if len(ok) < count:
            return None
        taken.append((node, tuple(sorted(ok))))
    for node, gpus in taken:
        state.allocate(node, gpus, 0, 0, GPU_MILLI if gpus else 0, len(gpus))
    return tuple(taken)


def _split(total: int, nodes: list[int], state: ClusterState) -> list[tuple[int, list[int]]]:
    """A per-job GPU count over pinned nodes: fill them in order (Slurm chooses the real split)."""
    out, left = [], total
    for node in nodes:
        n = min(left, int(state.gpu_full_count[node]))
        out.append((node, [-1] * n))
        left -= n
    if left > 0 and out:
        node, gpus = out[-1]
        out[-1] = (node, gpus + [-1] * left)  # does not fit: _occupy reports it
    return out


def queue_key(job: JobInfo) -> tuple[float, int, int, int]:
    """Submit order; ties by job id, the tasks of one array (which share a submit time, and
    whose ids Slurm hands out as they are split off) in task order."""
    return (job.submit_time, job.array_job_id or job.job_id, job.array_task_id or 0, job.job_id)


def build_view(
    jobs: list[JobInfo],
    nodes: list[NodeInfo],
    now: float,
    reject_impossible: bool = True,
    credit: Mapping[int, tuple[float, float]] | None = None,
    refuse: Callable[[list[JobInfo]], dict[int, str]] | None = None,
) -> LiveView:
    """The snapshot for one cycle (see the module docstring for how jobs are classed).

    ``credit``: GPU-seconds attained and seconds run in earlier runs, by job id, for the jobs
    that checkpoint (:mod:`schedlab.serve.preemption`); every other job starts from nothing.
    ``refuse``: why a job may not be scheduled at all (tenancy: no queue takes it), by job id:
    such a job, queued, is rejected as one that can never fit; running or launching, it keeps
    its GPUs but stays out of the job table (reported among the problems)."""
    cluster = build_cluster(nodes)
    state = cluster.new_state()
    where = {name: i for i, name in enumerate(cluster.names.tolist())}
    view_jobs: list[JobInfo] = []
    classes = classify(jobs, now)
    launching = classes.launching
    queued: list[JobInfo] = []
    impossible: list[tuple[JobInfo, str]] = []
    problems: list[tuple[int, str]] = []
    verdicts: dict[tuple[str, int, int, int], str | None] = {}  # one check per job shape
    refused = refuse(jobs) if refuse is not None else {}
    for job in classes.queued:
        why = refused.get(job.job_id)
        if why is None and reject_impossible:
            shape = (job.gpu_type, job.num_gpus, job.gpus_per_node, job.node_count)
            if shape not in verdicts:
                verdicts[shape] = impossible_reason(job, nodes)
            why = verdicts[shape]
        if why is not None:
            impossible.append((job, why))
            continue
        queued.append(job)
    by_id = {j.job_id: j for j in jobs}
    stranded: dict[int, str] = {}
    for j, why in classes.rehold.items():
        if j in refused:
            impossible.append((by_id[j], refused[j]))
            continue
        stranded[j] = why
        queued.append(by_id[j])
    # Running jobs hold what Slurm says, on every node (available or not); only schedlab's own
    # enter the job table.
    placed_running: list[tuple[JobInfo, Allocation]] = []
    for job in classes.active:
        alloc: list[tuple[int, list[int]]] = []
        for k, name in enumerate(job.nodes):
            if name not in where:
                continue  # a node outside the partition
            if job.gpu_idx:
                idx = list(job.gpu_idx[k])
            else:
                per = job.gpus_per_node or -(-job.gpus_per_job // max(len(job.nodes), 1))
                idx = [-1] * per
            alloc.append((where[name], idx))
        taken = _occupy(state, alloc)
        if taken is None:
            problems.append((job.job_id, "Slurm reports more GPUs in use than the node has"))
            taken = ()
        if job.exclusive:  # the rest of its nodes is no one else's either
            for node, _ in alloc:
                state.set_gpu_free(node, np.zeros(state.gpu_free.shape[1], dtype=np.int64))
        if job.admin_comment in (MARK_QUEUED, MARK_RELEASED):
            if job.job_id in refused:
                problems.append((job.job_id, f"runs outside every queue: {refused[job.job_id]}"))
                continue
            placed_running.append((job, taken))
    # Unavailable nodes lend nothing to new work.
    for i, node in enumerate(nodes):
        if not node.available:
            state.set_gpu_free(i, np.zeros(state.gpu_free.shape[1], dtype=np.int64))
    placed_launching: list[tuple[JobInfo, Allocation]] = []
    for job in launching:
        if job.job_id in refused:  # not started yet: held again, with the reason
            impossible.append((job, refused[job.job_id]))
            continue
        pinned = [where.get(n) for n in job.required_nodes]
        down = [
            n
            for n, i in zip(job.required_nodes, pinned, strict=True)
            if i is None or not nodes[i].available
        ]
        if down:
            stranded[job.job_id] = f"pinned to {','.join(down)}, which cannot run jobs now"
            queued.append(job)
            continue
        ids = [i for i in pinned if i is not None]
        if job.gpus_per_job or not job.gpus_per_node:
            want = _split(job.num_gpus, ids, state)
        else:
            want = [(i, [-1] * job.gpus_per_node) for i in ids]
        taken = _occupy(state, want)
        if taken is None:
            stranded[job.job_id] = f"pinned to {','.join(job.required_nodes)}, which is full"
            queued.append(job)
            continue
        placed_launching.append((job, taken))
    # The job table: every managed job, in submit order (ties: Slurm's job id).
    actives = [j for j, _ in placed_running] + [j for j, _ in placed_launching]
    view_jobs = sorted(actives + queued, key=queue_key)
    index = {j.job_id: i for i, j in enumerate(view_jobs)}
    n = len(view_jobs)
    duration = np.asarray(
        [j.time_limit if math.isfinite(j.time_limit) else UNLIMITED_SECONDS for j in view_jobs],
        dtype=np.float64,
    )
    table = JobTable.from_columns(
        source="slurm",
        job_id=[str(j.job_id) for j in view_jobs],
        submit_time=[j.submit_time for j in view_jobs],
        num_gpus=[j.num_gpus for j in view_jobs],
        duration=duration,
        user=[j.user for j in view_jobs],
        gpu_model_mask=[model_mask(j) for j in view_jobs],
        gpus_per_node=[j.gpus_per_node if j.shaped else 0 for j in view_jobs],
        num_nodes=[max(j.node_count, 1) if j.shaped else 0 for j in view_jobs],
        exclusive=[j.exclusive for j in view_jobs],
    )
    rt = JobRuntime.new(n, duration)
    running_set: dict[int, None] = {}
    for job, alloc in placed_running + placed_launching:
        i = index[job.job_id]
        started = job.start_time if job.active and job.start_time > 0 else now
        size = sum(len(g) for _, g in alloc)
        rt.status[i] = RUNNING
        rt.rate[i] = size / job.num_gpus if job.num_gpus else 1.0
        rt.run_started[i] = started
        rt.progress_from[i] = started
        rt.queued_since[i] = job.submit_time
        rt.alloc_n[i] = size
        rt.allocation[i] = alloc
        running_set[i] = None
    for job_id, (attained, executed) in (credit or {}).items():
        i = index.get(job_id)
        if i is not None:
            rt.attained[i] = attained
            rt.executed[i] = executed
    pending_order = sorted(queued, key=queue_key)
    pending_set: dict[int, None] = {}
    for job in pending_order:
        i = index[job.job_id]
        rt.status[i] = PENDING
        rt.queued_since[i] = job.submit_time
        pending_set[i] = None
    snap = Snapshot(
        now=now,
        jobs=table,
        cluster=cluster,
        state=state,
        runtime=rt,
        work=duration,
        reference_rate=np.ones(n),
        pending_set=pending_set,
        running_set=running_set,
        new_pending=list(pending_set),
        free_gpus=int(state.gpu_free_sum.sum() // GPU_MILLI),
    )
    return LiveView(
        snapshot=snap,
        cluster=cluster,
        nodes=nodes,
        infos=view_jobs,
        queued=[j.job_id for j in pending_order],
        running=[j.job_id for j, _ in placed_running],
        launching=[j.job_id for j, _ in placed_launching],
        stranded=stranded,
        impossible=impossible,
        problems=problems,
        claim=[j for j in classes.claim if j not in {i.job_id for i, _ in impossible}],
        waiting=classes.waiting,
        limited=classes.limited,
        foreign_held=classes.foreign_held,
        split=classes.split,
    )
