"""Pods and nodes, read from the API server's JSON into the few fields the scheduler decides on.

This module is the only one that knows where Kubernetes keeps each fact (see docs/kubernetes.md
for the table): GPUs in ``nvidia.com/gpu`` (whole devices) or the ``alibabacloud.com/gpu-milli``
and ``gpu-count`` annotations (a share of each of that many GPUs), a gang in the scheduler-plugins
``scheduling.x-k8s.io/pod-group`` label (its ``minMember`` from the PodGroup object, else the
``schedlab.io/min-member`` annotation), the queue in ``kueue.x-k8s.io/queue-name``,
``kai.scheduler/queue`` or ``schedlab.io/queue`` (in that order), else the namespace. A pod
whose resources cannot be read (``12Gx``) is kept with ``problem`` set, so it
is reported and never bound, instead of failing the cycle.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from schedlab.errors import InputError
from schedlab.model.cluster import GPU_MILLI
from schedlab.model.gpu_models import is_known_model, model_index
from schedlab.serve.kubernetes.quantity import mib_down, mib_up, milli_up, parse_quantity, whole

GPU_RESOURCE = "nvidia.com/gpu"
GPU_MILLI_KEY = "alibabacloud.com/gpu-milli"
GPU_COUNT_KEY = "alibabacloud.com/gpu-count"
#: Node labels naming the GPU model: GPU Feature Discovery's, then the FGD simulator's.
MODEL_LABELS = ("nvidia.com/gpu.product", "alibabacloud.com/gpu-card-model")
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
MIN_MEMBER_KEY = "schedlab.io/min-member"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: Labels naming a pod's queue, by precedence (Kueue's, KAI's, schedlab's); else its namespace.
QUEUE_LABELS = (QUEUE_LABEL, "kai.scheduler/queue", "schedlab.io/queue")
#: Which of those named the queue (a pod's ``queue_kind``), or none: its namespace.
QUEUE_KINDS = ("kueue", "kai", "schedlab")
NAMESPACE_KIND = "namespace"
CHECKPOINT_KEY = "schedlab.io/checkpoint"
ESTIMATE_KEY = "schedlab.io/runtime-estimate"
#: Annotation schedlab writes on bind: the GPU indices chosen on the node (``0,1`` or ``3``).
DEVICES_KEY = "schedlab.io/gpu-devices"
#: Pods finished for good: they hold nothing.
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
#: Run-time estimate of a pod that gives none (a year: "longer than anything else").
UNLIMITED_SECONDS = 365 * 86400.0

Obj = Mapping[str, Any]


def timestamp(text: object) -> float:
    """An RFC 3339 time (``2026-11-27T10:00:00Z``) as Unix seconds; 0 when absent."""
    if not isinstance(text, str) or not text:
        return 0.0
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


_GFD = re.compile(r"^(?:NVIDIA|TESLA)[-_ ]+", re.IGNORECASE)


def gpu_model(label: str) -> str:
    """A node's GPU label as a schedlab model name (``NVIDIA-A100-SXM4-80GB`` → ``A100-80G``,
    ``Tesla-V100-SXM2-16GB`` → ``V100M16``); ``GPU`` for a model schedlab does not know."""
    text = _GFD.sub("", label.strip()).upper()
    if is_known_model(text):
        return text
    for prefix, memory, name in (
        ("A100", "80GB", "A100-80G"),
        ("V100", "32GB", "V100M32"),
        ("V100", "16GB", "V100M16"),
    ):
        if text.startswith(prefix) and memory in text:
            return name
    head = re.split(r"[-_ ]", text, maxsplit=1)[0]
    return head if is_known_model(head) else "GPU"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One node as the scheduler needs it."""

    name: str
    gpus: int
    model: str  # a schedlab model name; "GPU" for an unnamed or unknown one
    cpu_milli: int
    memory_mib: int
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    ready: bool
    problem: str = ""  # why its capacity could not be read (then it counts as having none)

    @property
    def available(self) -> bool:
        """Takes new pods: not cordoned, Ready, and readable."""
        return self.ready and not self.unschedulable and not self.problem

    @property
    def state(self) -> str:
        if self.problem:
            return "unreadable"
        if self.unschedulable:
            return "cordoned"
        return "Ready" if self.ready else "NotReady"

    @property
    def model_index(self) -> int:
        return model_index(self.model) if self.gpus else -1


def parse_node(raw: Obj) -> NodeInfo:
    """One node object."""
    meta, spec, status = raw.get("metadata") or {}, raw.get("spec") or {}, raw.get("status") or {}
    name = str(meta.get("name") or "")
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    alloc = status.get("allocatable") or status.get("capacity") or {}
    problem = ""
    try:
        gpus = whole(
            parse_quantity(alloc.get(GPU_RESOURCE, "0"), f"node {name} {GPU_RESOURCE}"),
            f"node {name} {GPU_RESOURCE}",
        )
        cpu = math.floor(parse_quantity(alloc.get("cpu", "0"), f"node {name} cpu") * 1000)
        memory = mib_down(parse_quantity(alloc.get("memory", "0"), f"node {name} memory"))
    except InputError as exc:
        gpus, cpu, memory, problem = 0, 0, 0, str(exc)
    label = next((labels[k] for k in MODEL_LABELS if labels.get(k)), "")
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    taints = tuple(
        Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
        for t in spec.get("taints") or []
    )
    return NodeInfo(
        name=name,
        gpus=gpus,
        model=gpu_model(label) if label else "GPU",
        cpu_milli=cpu,
        memory_mib=memory,
        labels=labels,
        taints=taints,
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready,
        problem=problem,
    )


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # Equal or Exists
    value: str
    effect: str  # "" = every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry of a required node affinity term."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        op = self.operator
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if op == "In":
            return value is not None and value in self.values
        if op == "NotIn":
            return value is None or value not in self.values
        if op in ("Gt", "Lt") and value is not None and self.values:
            try:
                a, b = int(value), int(self.values[0])
            except ValueError:
                return False
            return a > b if op == "Gt" else a < b
        return False


@dataclass(frozen=True, slots=True)
class PodInfo:
    """One pod as the scheduler needs it. Times are Unix seconds."""

    uid: str
    namespace: str
    name: str
    scheduler: str
    node: str  # spec.nodeName ("" while unbound)
    phase: str
    deleting: bool
    created: float
    started: float
    cpu_milli: int
    memory_mib: int
    gpus: int  # GPUs it uses (whole ones, or those it takes a share of)
    gpu_milli: int  # share of each of its GPUs, 1000 for whole GPUs
    priority: int
    group: str  # gang name ("" for a pod on its own)
    min_member: int  # from the annotation (0: none; the PodGroup object may say)
    queue: str
    checkpoint: bool
    estimate: float  # seconds the pod is expected to run (inf: it does not say)
    node_selector: tuple[tuple[str, str], ...]
    affinity: tuple[tuple[Requirement, ...], ...]  # terms (OR) of requirements (AND)
    tolerations: tuple[Toleration, ...]
    devices: tuple[int, ...]  # GPU indices written on bind (empty when unknown)
    scheduled_reason: str  # the PodScheduled condition's reason and message as the pod shows
    scheduled_message: str
    problem: str = ""  # why the pod's request cannot be read: it is reported, never bound
    queue_kind: str = NAMESPACE_KIND  # which label named ``queue`` (QUEUE_KINDS), or none

    @property
    def key(self) -> str:
        """``namespace/name``: how the journal and every message name the pod."""
        return f"{self.namespace}/{self.name}"

    @property
    def group_key(self) -> str:
        return f"{self.namespace}/{self.group}" if self.group else ""

    @property
    def bound(self) -> bool:
        return bool(self.node)

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def holds(self) -> bool:
        """Takes room on its node: bound and not finished (a deleting pod holds until gone)."""
        return self.bound and not self.terminal

    @property
    def fractional(self) -> bool:
        return 0 < self.gpu_milli < GPU_MILLI

    @property
    def constraints(self) -> tuple[object, ...]:
        """What decides which nodes the pod may use (pods alike share one verdict per node)."""
        return (self.node_selector, self.affinity, self.tolerations)

    def fits_node(self, node: NodeInfo) -> bool:
        """Whether the pod may run on ``node`` at all: selector, required affinity, taints."""
        labels = node.labels
        if any(labels.get(k) != v for k, v in self.node_selector):
            return False
        if self.affinity and not any(all(r.matches(labels) for r in t) for t in self.affinity):
            return False
        for taint in node.taints:
            if taint.effect in ("NoSchedule", "NoExecute") and not any(
                t.tolerates(taint) for t in self.tolerations
            ):
                return False
        return True


def _requests(spec: Obj) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The pod's effective requests and limits: the sum over its containers, or the largest
    init container where that is larger (Kubernetes' rule)."""
    total: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        for k, v in (res.get("requests") or {}).items():
            total.setdefault(k, []).append(v)
        for k, v in (res.get("limits") or {}).items():
            limits.setdefault(k, []).append(v)
            if k not in (res.get("requests") or {}):
                total.setdefault(k, []).append(v)  # a limit alone is the request too
    return total, limits


def _sum(values: list[Any] | None, where: str) -> Any:
    if not values:
        return 0
    out = 0
    for v in values:
        out += parse_quantity(v, where)
    return out


def _affinity(spec: Obj) -> tuple[tuple[Requirement, ...], ...]:
    node = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = []
    for term in node.get("nodeSelectorTerms") or []:
        reqs = tuple(
            Requirement(
                str(e.get("key")), str(e.get("operator")), tuple(map(str, e.get("values") or ()))
            )
            for e in term.get("matchExpressions") or []
        )
        terms.append(reqs)
    return tuple(terms)


def _scheduled(status: Obj) -> tuple[str, str]:
    for c in status.get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return str(c.get("reason") or ""), str(c.get("message") or "")
    return "", ""


def _devices(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        return ()


def parse_pod(raw: Obj) -> PodInfo:
    """One pod object."""
    meta, spec, status = raw.get("metadata") or {}, raw.get("spec") or {}, raw.get("status") or {}
    ns, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    labels = meta.get("labels") or {}
    notes = meta.get("annotations") or {}
    where = f"pod {ns}/{name}"
    problem = ""
    cpu = memory = gpus = 0
    milli = GPU_MILLI
    min_member = 0
    estimate = math.inf
    try:
        requests, limits = _requests(spec)
        cpu = milli_up(_sum(requests.get("cpu"), f"{where} cpu request"))
        memory = mib_up(_sum(requests.get("memory"), f"{where} memory request"))
        gpu_where = f"{where} {GPU_RESOURCE}"
        gpus = whole(
            _sum(limits.get(GPU_RESOURCE) or requests.get(GPU_RESOURCE), gpu_where), gpu_where
        )
        if GPU_MILLI_KEY in notes:
            share = parse_quantity(notes[GPU_MILLI_KEY], f"{where} annotation {GPU_MILLI_KEY}")
            milli = whole(share, f"{where} annotation {GPU_MILLI_KEY}")
            if not 0 < milli <= GPU_MILLI:
                raise InputError(
                    f"{where} annotation {GPU_MILLI_KEY}: must be in 1..1000 (got {milli})"
                )
            count_where = f"{where} annotation {GPU_COUNT_KEY}"
            count = whole(parse_quantity(notes.get(GPU_COUNT_KEY, "1"), count_where), count_where)
            if count < 1:
                raise InputError(f"{count_where}: must be ≥ 1 (got {count})")
            if milli < GPU_MILLI and count != 1:
                raise InputError(
                    f"{count_where}: a share of less than a whole GPU ({GPU_MILLI_KEY} {milli}) "
                    f"is of one GPU (got {count}), as in the openb traces"
                )
            if gpus:
                raise InputError(f"{where}: asks for {GPU_RESOURCE} and {GPU_MILLI_KEY} at once")
            gpus = count
        if MIN_MEMBER_KEY in notes:
            mm_where = f"{where} annotation {MIN_MEMBER_KEY}"
            min_member = whole(parse_quantity(notes[MIN_MEMBER_KEY], mm_where), mm_where)
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None:
            estimate = float(deadline)
        elif ESTIMATE_KEY in notes:
            estimate = float(
                parse_quantity(notes[ESTIMATE_KEY], f"{where} annotation {ESTIMATE_KEY}")
            )
    except InputError as exc:
        problem = str(exc)
    except (TypeError, ValueError) as exc:
        problem = f"{where}: {exc}"
    reason, message = _scheduled(status)
    return PodInfo(
        uid=str(meta.get("uid") or ""),
        namespace=ns,
        name=name,
        scheduler=str(spec.get("schedulerName") or "default-scheduler"),
        node=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or "Pending"),
        deleting=bool(meta.get("deletionTimestamp")),
        created=timestamp(meta.get("creationTimestamp")),
        started=timestamp(status.get("startTime")),
        cpu_milli=cpu,
        memory_mib=memory,
        gpus=gpus,
        gpu_milli=milli if gpus else 0,
        priority=int(spec.get("priority") or 0),
        group=str(labels.get(POD_GROUP_LABEL) or ""),
        min_member=min_member,
        queue=str(next((labels[k] for k in QUEUE_LABELS if labels.get(k)), ns)),
        queue_kind=next(
            (kind for k, kind in zip(QUEUE_LABELS, QUEUE_KINDS, strict=True) if labels.get(k)),
            NAMESPACE_KIND,
        ),
        checkpoint=str(notes.get(CHECKPOINT_KEY, "")).lower() == "true",
        estimate=estimate,
        node_selector=tuple(
            sorted((str(k), str(v)) for k, v in (spec.get("nodeSelector") or {}).items())
        ),
        affinity=_affinity(spec),
        tolerations=tuple(
            Toleration(
                str(t.get("key") or ""),
                str(t.get("operator") or "Equal"),
                str(t.get("value") or ""),
                str(t.get("effect") or ""),
            )
            for t in spec.get("tolerations") or []
        ),
        devices=_devices(str(notes.get(DEVICES_KEY, ""))),
        scheduled_reason=reason,
        scheduled_message=message,
        problem=problem,
    )
