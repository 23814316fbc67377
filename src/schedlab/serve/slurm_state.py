"""Slurm's JSON records, read into the few fields the serve loop decides on.

``squeue --json`` and ``sinfo --json`` carry dozens of fields whose presence and spelling vary
between Slurm releases; this module is the only place that knows them, so the rest of the serve
package works on :class:`JobInfo` and :class:`NodeInfo`. A field that is missing or null reads as
its neutral value (no GPUs, no limit, not held) rather than failing the cycle.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from schedlab.serve.hostlist import expand_hostlist, gpu_indices, split_outside

#: Job states in which a job holds (or is about to hold, or still holds) its nodes.
ACTIVE_STATES = frozenset({"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STAGE_OUT"})
#: Node flags that make a node unusable for new work.
UNAVAILABLE_FLAGS = frozenset(
    {
        "DRAIN",
        "DRAINING",
        "DRAINED",
        "FAIL",
        "FAILING",
        "MAINTENANCE",
        "MAINT",
        "NOT_RESPONDING",
        "NO_RESPOND",
        "POWER_DOWN",
        "POWERED_DOWN",
        "POWERING_DOWN",
        "POWERING_UP",
        "REBOOT_ISSUED",
        "REBOOT_REQUESTED",
        "INVALID_REG",
    }
)
#: Node base states in which a node can run work.
USABLE_STATES = frozenset({"IDLE", "MIXED", "ALLOCATED", "COMPLETING"})
#: ``Comment`` prefix of a job schedlab has rejected; such a job stays held and is not re-examined.
REJECT_MARK = "schedlab: rejected:"
#: ``AdminComment`` of a job schedlab owns and holds until its policy places it. The Lua
#: job_submit plugin (docs/job_submit.lua) sets it on submission; serve sets it when it claims a
#: job submitted with ``--hold`` and when it holds a job again (preemption, a stranded job).
MARK_QUEUED = "schedlab:queued"
#: ``AdminComment`` of a job schedlab owns and has released onto the nodes its policy chose.
MARK_RELEASED = "schedlab:released"
#: Pending reasons by which Slurm keeps a released job back for a limit (QOS, association,
#: partition): it must not count as about to start.
LIMIT_REASON = re.compile(r"^(QOS|Assoc|Partition).*(Limit|Max|Min)|^(QOS|Assoc)(Grp|Max)")

# gres:gpu:2, gres/gpu:a100:2, gpu:8(S:0-1), gpu (count 1), gpu:a100:2(IDX:0-1)
_GPU_ITEM = re.compile(r"^(?:gres[:/])?gpu(?::([A-Za-z][\w.\-]*))?(?::(\d+))?(?:\(.*\))?$")


@functools.lru_cache(maxsize=4096)
def parse_gpu_tres(text: str | None) -> tuple[int, str]:
    """GPU count and type (``""`` = any) in a TRES/GRES string; ``(0, "")`` when it has none.
    (Cached: a queue repeats a handful of strings thousands of times every cycle.)"""
    count, kind = 0, ""
    # Commas inside parentheses belong to one item (``gpu:2(IDX:0,3)``).
    for item in split_outside(text or "", "(", ")"):
        m = _GPU_ITEM.match(item)
        if m is None:
            continue
        count += int(m.group(2)) if m.group(2) else 1
        kind = kind or (m.group(1) or "")
    return count, kind


def _number(value: Any) -> float | None:
    """A Slurm number: plain, null, or (newer releases) ``{"set", "infinite", "number"}``."""
    if isinstance(value, Mapping):
        if value.get("infinite"):
            return math.inf
        if not value.get("set", True):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def _state(value: Any) -> tuple[str, tuple[str, ...]]:
    """Base state and flags of a job or node state, whatever form the release prints it in."""
    parts = [str(v).upper() for v in value] if isinstance(value, list) else []
    if not parts:
        parts = [p for p in re.split(r"[+\s]", _text(value).upper()) if p]
    base = parts[0] if parts else "UNKNOWN"
    return base, tuple(parts[1:])


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One node as the scheduler needs it."""

    name: str
    gpus: int
    gpu_type: str  # "" when the node's GRES names no type
    state: str
    flags: tuple[str, ...]
    cpus: int
    memory_mib: int
    partitions: tuple[str, ...]
    reason: str = ""

    @property
    def available(self) -> bool:
        """Can take new work now (not down, drained, failing or powered off)."""
        return self.state in USABLE_STATES and not (set(self.flags) & UNAVAILABLE_FLAGS)


@dataclass(frozen=True, slots=True)
class JobInfo:
    """One job as the scheduler needs it. Times are Unix seconds; ``time_limit`` is seconds."""

    job_id: int
    name: str
    user: str
    partition: str
    state: str
    reason: str
    priority: float
    gpus_per_node: int  # 0 when the GPUs are asked per job (--gpus) or not at all
    gpus_per_job: int  # 0 when the GPUs are asked per node (--gres=gpu:N)
    gpu_type: str
    node_count: int
    nodes: tuple[str, ...]
    gpu_idx: tuple[tuple[int, ...], ...]  # per entry of ``nodes``, when Slurm printed it
    required_nodes: tuple[str, ...]
    submit_time: float
    start_time: float
    end_time: float
    time_limit: float  # inf: no limit
    restart_count: int
    comment: str
    admin_comment: str = ""
    dependency: str = ""  # e.g. "afterok:12(unfulfilled)"; "" when none is left
    eligible_time: float = 0.0  # --begin while held; 0 when none
    array_job_id: int = 0  # the array a task belongs to (0: not an array)
    array_task_id: int | None = None  # None for a plain job or an array's unsplit rest
    array_tasks: str = ""  # the unsplit rest of an array ("2-6%2"), else ""
    array_max_tasks: int = 0  # the array's throttle (``%N``), 0 when none
    reservation: str = ""
    exclusive: bool = False  # --exclusive: shares none of its nodes
    account: str = ""  # --account (a queue for tenancy)

    @property
    def shaped(self) -> bool:
        """Asks for a fixed number of GPUs on each of a fixed number of nodes."""
        return bool(self.gpus_per_node) and not self.gpus_per_job

    @property
    def num_gpus(self) -> int:
        """GPUs the job runs on in total (a gang)."""
        if self.gpus_per_job:
            return self.gpus_per_job
        return self.gpus_per_node * max(self.node_count, 1)

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def held(self) -> bool:
        """Pending with priority 0 (Slurm's hold): waiting for the scheduler."""
        return self.pending and (self.priority == 0 or self.reason.startswith("JobHeld"))

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def finished(self) -> bool:
        return not self.pending and not self.active

    @property
    def rejected(self) -> bool:
        return self.comment.startswith(REJECT_MARK)

    @property
    def marked_queued(self) -> bool:
        """Owned by schedlab and meant to be held until placed."""
        return self.admin_comment == MARK_QUEUED

    @property
    def marked_released(self) -> bool:
        """Owned by schedlab and released onto the nodes its policy chose."""
        return self.admin_comment == MARK_RELEASED

    @property
    def user_held(self) -> bool:
        """Held by its owner (``sbatch --hold``): the unmarked way to hand a job to schedlab."""
        return self.pending and self.priority == 0 and self.reason == "JobHeldUser"

    @property
    def array_rest(self) -> bool:
        """The record of an array's tasks that are not split off yet (not itself runnable)."""
        return bool(self.array_tasks) and self.array_task_id is None

    @property
    def label(self) -> str:
        """The id a user sees in ``squeue`` (``ARRAY_TASK`` for an array task)."""
        if self.array_job_id and self.array_task_id is not None:
            return f"{self.array_job_id}_{self.array_task_id}"
        return str(self.job_id)

    def in_partition(self, partition: str | None) -> bool:
        return partition is None or partition in self.partition.split(",")


def parse_job(raw: Mapping[str, Any]) -> JobInfo:
    """One entry of ``squeue --json``'s ``jobs``."""
    per_node, kind_node = parse_gpu_tres(_text(raw.get("tres_per_node")))
    per_job, kind_job = parse_gpu_tres(_text(raw.get("tres_per_job")))
    per_task, kind_task = parse_gpu_tres(_text(raw.get("tres_per_task")))
    if per_task and not per_job and not per_node:
        tasks_per_node = int(_number(raw.get("tasks_per_node")) or 0)
        if tasks_per_node:  # --ntasks-per-node with GPUs per task: a per-node request
            per_node = per_task * tasks_per_node
        else:
            per_job = per_task * int(_number(raw.get("tasks")) or 1)
    nodes = tuple(expand_hostlist(_text(raw.get("nodes"))))
    detail = raw.get("gres_detail") or []
    idx = tuple(tuple(gpu_indices(str(d))) for d in detail) if len(detail) == len(nodes) else ()
    limit = _number(raw.get("time_limit"))
    state, _ = _state(raw.get("job_state"))
    return JobInfo(
        job_id=int(_number(raw.get("job_id")) or 0),
        name=_text(raw.get("name")),
        user=_text(raw.get("user_name")),
        account=_text(raw.get("account")),
        partition=_text(raw.get("partition")),
        state=state,
        reason=_text(raw.get("state_reason")),
        priority=_number(raw.get("priority")) or 0.0,
        gpus_per_node=per_node,
        gpus_per_job=per_job,
        gpu_type=kind_node or kind_job or kind_task,
        node_count=int(_number(raw.get("node_count")) or 1),
        nodes=nodes,
        gpu_idx=idx,
        # In natural order, as squeue's text prints a node list (JSON keeps the order given).
        required_nodes=tuple(
            sorted(expand_hostlist(_text(raw.get("required_nodes"))), key=_natural)
        ),
        submit_time=_number(raw.get("submit_time")) or 0.0,
        start_time=_number(raw.get("start_time")) or 0.0,
        end_time=_number(raw.get("end_time")) or 0.0,
        time_limit=math.inf if limit is None or math.isinf(limit) else limit * 60.0,
        restart_count=int(_number(raw.get("restart_cnt")) or 0),
        comment=_text(raw.get("comment")),
        admin_comment=_text(raw.get("admin_comment")),
        dependency=_text(raw.get("dependency")),
        eligible_time=_number(raw.get("eligible_time")) or 0.0,
        array_job_id=int(_number(raw.get("array_job_id")) or 0),
        array_task_id=_task_id(raw.get("array_task_id")),
        array_tasks=_text(raw.get("array_task_string")),
        array_max_tasks=int(_number(raw.get("array_max_tasks")) or 0),
        reservation=_text(raw.get("resv_name") or raw.get("reservation")),
        exclusive=_text(raw.get("shared")).lower() in ("none", "user", "mcs", "exclusive")
        or bool(raw.get("exclusive")),
    )


def _task_id(value: Any) -> int | None:
    number = _number(value)
    if number is None or not math.isfinite(number):
        return None
    return int(number)


def parse_node(raw: Mapping[str, Any]) -> NodeInfo:
    """One entry of ``sinfo --json``'s ``nodes``."""
    gpus, kind = parse_gpu_tres(_text(raw.get("gres")))
    state, flags = _state(raw.get("state"))
    extra = tuple(str(f).upper() for f in raw.get("state_flags") or [])
    return NodeInfo(
        name=_text(raw.get("name")),
        gpus=gpus,
        gpu_type=kind,
        state=state,
        flags=flags + extra,
        cpus=int(_number(raw.get("cpus")) or 0),
        memory_mib=int(_number(raw.get("real_memory")) or 0),
        partitions=tuple(str(p) for p in raw.get("partitions") or []),
        reason=_text(raw.get("reason")),
    )


def _natural(name: str) -> tuple[object, ...]:
    """``node2`` before ``node10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def read_nodes(sinfo: Mapping[str, Any], partition: str | None = None) -> list[NodeInfo]:
    """The partition's nodes (all when ``partition`` is None), in natural name order, once each
    (``sinfo --json`` may list a node once per partition)."""
    seen: dict[str, NodeInfo] = {}
    for raw in sinfo.get("nodes") or []:
        node = parse_node(raw)
        if partition is not None and partition not in node.partitions:
            continue
        seen.setdefault(node.name, node)
    return sorted(seen.values(), key=lambda n: _natural(n.name))


def read_jobs(squeue: Mapping[str, Any], partition: str | None = None) -> list[JobInfo]:
    """The partition's jobs (all when ``partition`` is None), by job id."""
    jobs = (parse_job(raw) for raw in squeue.get("jobs") or [])
    return sorted((j for j in jobs if j.in_partition(partition)), key=lambda j: j.job_id)


def partition_jobs(
    squeue: Mapping[str, Any], partition: str | None, nodes: Iterable[NodeInfo]
) -> list[JobInfo]:
    """The partition's jobs, and the jobs of other partitions running on its nodes (partitions
    may share nodes): those hold GPUs the policy must not plan on, and are never this
    scheduler's to manage, so their ownership marker is dropped (a scheduler of the other
    partition may have set it). By job id; every job when ``partition`` is None."""
    if partition is None:
        return read_jobs(squeue)
    names = {n.name for n in nodes}
    out = []
    for job in read_jobs(squeue):
        if job.in_partition(partition):
            out.append(job)
        elif job.active and names.intersection(job.nodes):
            out.append(dataclasses.replace(job, admin_comment=""))
    return out


def node_names(nodes: Iterable[NodeInfo]) -> list[str]:
    return [n.name for n in nodes]
