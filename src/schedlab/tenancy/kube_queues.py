"""Queues from a Kubernetes cluster's own objects (``serve kubernetes --queues-from-cluster``).

Three kinds of object, each where its own controller keeps it; a kind whose CRD is not
installed (404) is simply absent:

* **Kueue** (``kueue.x-k8s.io/v1beta1``): every ClusterQueue is a leaf queue under its cohort;
  Cohort objects (``spec.parent``) nest cohorts, and a cohort no Cohort object describes is
  a plain inner node, as in Kueue. A ClusterQueue's (or Cohort's) ``resourceGroups`` give its
  ``nominalQuota`` (deserved), ``borrowingLimit`` and ``lendingLimit`` per resource, summed
  over its flavors (a flavor without a limit makes the resource unlimited; a ClusterQueue's
  nominal quota plus its borrowing limit is its hard limit); ``fairSharing.weight`` its
  weight; ``preemption`` (``withinClusterQueue``, ``reclaimWithinCohort``,
  ``borrowWithinCohort.policy`` and ``.maxPriorityThreshold``) its preemption rules. A pod
  labelled ``kueue.x-k8s.io/queue-name: Q`` in namespace N belongs to the ClusterQueue of the
  LocalQueue ``N/Q`` (a LocalQueue naming no ClusterQueue is inactive, as in Kueue: its pods
  fall under ``unknown_tenant``).
* **KAI** (``scheduling.run.ai/v2`` Queue): the tree by ``spec.parentQueue``; per resource
  ``quota`` (deserved; -1: all of the parent's share), ``limit`` (-1: none), and the GPU's
  ``overQuotaWeight`` (the queue's weight); ``spec.priority``. KAI's units: GPUs, CPU
  millicores, memory MB (10^6 bytes). A pod labelled ``kai.scheduler/queue: Q`` belongs to Q.
* **ResourceQuota** (core/v1): a namespace whose quotas set ``requests.nvidia.com/gpu`` gets a
  queue of its name with that many GPUs as a hard limit (the smallest, with several quotas); a
  pod with no queue label belongs to its namespace's queue.

Resources: ``nvidia.com/gpu`` → ``gpu``, ``cpu`` → cores, ``memory`` → GiB. Anything wrong in
an object — a missing or negative quota, a KAI parent that does not exist, a LocalQueue naming
no ClusterQueue at all, a cycle, a name two kinds both use — is one line naming the object and
the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from schedlab.errors import InputError
from schedlab.serve.kubernetes.api import KubeError
from schedlab.serve.kubernetes.objects import NAMESPACE_KIND, QUEUE_KINDS
from schedlab.serve.kubernetes.quantity import parse_quantity
from schedlab.tenancy.tree import QueueSpec

CLUSTER_QUEUES = "/apis/kueue.x-k8s.io/v1beta1/clusterqueues"
LOCAL_QUEUES = "/apis/kueue.x-k8s.io/v1beta1/localqueues"
COHORTS = "/apis/kueue.x-k8s.io/v1beta1/cohorts"
KAI_QUEUES = "/apis/scheduling.run.ai/v2/queues"
RESOURCE_QUOTAS = "/api/v1/resourcequotas"
COLLECTIONS = (CLUSTER_QUEUES, LOCAL_QUEUES, COHORTS, KAI_QUEUES, RESOURCE_QUOTAS)

#: Which label named a pod's queue (the ``queue_kind`` a job offers as a tenant attribute).
KUEUE, KAI, _ = QUEUE_KINDS
NAMESPACE = NAMESPACE_KIND
GPU_QUOTA = "requests.nvidia.com/gpu"
#: Kubernetes resource names → tenancy resources, and the factor from the quantity's unit.
KUEUE_RESOURCES = {"nvidia.com/gpu": ("gpu", Fraction(1)), "cpu": ("cpu", Fraction(1)),
                   "memory": ("memory", Fraction(1, 2**30))}  # fmt: skip
KAI_RESOURCES = {"gpu": ("gpu", Fraction(1)), "cpu": ("cpu", Fraction(1, 1000)),
                 "memory": ("memory", Fraction(10**6, 2**30))}  # fmt: skip
PREEMPTION = {
    "withinClusterQueue": "within_cluster_queue",
    "reclaimWithinCohort": "reclaim_within_cohort",
}


@dataclass
class ClusterObjects:
    """The listed objects of each kind (empty where the CRD is not installed)."""

    cluster_queues: list[dict[str, Any]] = field(default_factory=list)
    local_queues: list[dict[str, Any]] = field(default_factory=list)
    cohorts: list[dict[str, Any]] = field(default_factory=list)
    kai_queues: list[dict[str, Any]] = field(default_factory=list)
    resource_quotas: list[dict[str, Any]] = field(default_factory=list)


def read_objects(api: Any) -> ClusterObjects:
    """List every kind; a kind the API server does not serve (404: its CRD is not installed)
    is empty, any other failure is an error naming the collection."""
    lists = []
    for path in COLLECTIONS:
        try:
            lists.append(api.list(path)[0])
        except KubeError as exc:
            if exc.status != 404:
                raise InputError(f"cannot read queues from the cluster ({path}): {exc}") from None
            lists.append([])
    return ClusterObjects(*lists)


def queue_specs(objects: ClusterObjects) -> list[QueueSpec]:
    """Every queue the objects define (see the module docstring), with the rules that send a
    pod there."""
    specs = _kueue(objects) + _kai(objects.kai_queues) + _namespaces(objects.resource_quotas)
    seen: dict[str, str] = {}
    for spec, kind in specs:
        if spec.path in seen and seen[spec.path] != kind:
            raise InputError(
                f"queue {spec.path!r} is both a {seen[spec.path]} and a {kind}: rename one of them"
            )
        seen[spec.path] = kind
    return [spec for spec, _ in specs]


def _name(obj: Mapping[str, Any], kind: str) -> str:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    if not name:
        raise InputError(f"a {kind} without metadata.name")
    ns = meta.get("namespace")
    return f"{ns}/{name}" if ns else name


def _spec(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise InputError(f"{kind} {_name(obj, kind)!r}: spec is not an object")
    return spec


# -- Kueue -------------------------------------------------------------------------------------
def _groups(obj: Mapping[str, Any], kind: str) -> dict[str, dict[str, float]]:
    """``deserved`` (nominal), ``borrowing_limit`` and ``lending_limit`` per resource, summed
    over flavors (a flavor without a limit leaves the resource without one)."""
    name = _name(obj, kind)
    nominal: dict[str, Fraction] = {}
    limits: dict[str, dict[str, list[Fraction | None]]] = {"borrowingLimit": {}, "lendingLimit": {}}
    for g, group in enumerate(_spec(obj, kind).get("resourceGroups") or []):
        for f, flavor in enumerate(group.get("flavors") or []):
            for k, res in enumerate(flavor.get("resources") or []):
                at = f"{kind} {name!r}: spec.resourceGroups[{g}].flavors[{f}].resources[{k}]"
                if res.get("name") not in KUEUE_RESOURCES:
                    continue  # a resource schedlab does not divide
                ours, unit = KUEUE_RESOURCES[res["name"]]
                if res.get("nominalQuota") is None:
                    raise InputError(f"{at}.nominalQuota is missing")
                value = parse_quantity(res["nominalQuota"], f"{at}.nominalQuota")
                nominal[ours] = nominal.get(ours, Fraction(0)) + value * unit
                for lim, per in limits.items():
                    raw = res.get(lim)
                    got = None if raw is None else parse_quantity(raw, f"{at}.{lim}") * unit
                    per.setdefault(ours, []).append(got)

    def summed(per: dict[str, list[Fraction | None]]) -> dict[str, float]:
        return {r: float(sum(v)) for r, v in per.items() if None not in v}  # type: ignore[arg-type]

    return {
        "deserved": {r: float(v) for r, v in nominal.items()},
        "borrowing_limit": summed(limits["borrowingLimit"]),
        "lending_limit": summed(limits["lendingLimit"]),
    }


def _weight(obj: Mapping[str, Any], kind: str) -> float:
    raw = (_spec(obj, kind).get("fairSharing") or {}).get("weight")
    if raw is None:
        return 1.0
    at = f"{kind} {_name(obj, kind)!r}: spec.fairSharing.weight"
    return float(parse_quantity(raw, at))


def _preemption(obj: Mapping[str, Any]) -> dict[str, object]:
    raw = _spec(obj, "ClusterQueue").get("preemption") or {}
    out: dict[str, object] = {ours: raw[k] for k, ours in PREEMPTION.items() if raw.get(k)}
    borrow = raw.get("borrowWithinCohort") or {}
    if borrow.get("policy"):
        out["borrow_within_cohort"] = borrow["policy"]
    if borrow.get("maxPriorityThreshold") is not None:
        out["max_priority_threshold"] = borrow["maxPriorityThreshold"]
    return out


def _chain(name: str, parent_of: Mapping[str, str], kind: str) -> str:
    """``name``'s path from its root through ``parent_of``; a cycle is an error."""
    chain = [name]
    while parent_of.get(chain[-1]):
        up = parent_of[chain[-1]]
        if up in chain:
            raise InputError(f"{kind} {name!r}: its parents form a cycle ({' → '.join(chain)})")
        chain.append(up)
    return "/".join(reversed(chain))


def _kueue(objects: ClusterObjects) -> list[tuple[QueueSpec, str]]:
    cohort_objs = {_name(c, "Cohort"): c for c in objects.cohorts}
    parent_of = {n: str(_spec(c, "Cohort").get("parent") or "") for n, c in cohort_objs.items()}
    out: list[tuple[QueueSpec, str]] = []
    for name, obj in cohort_objs.items():
        out.append(
            (
                QueueSpec(
                    _chain(name, parent_of, "Cohort"), weight=_weight(obj, "Cohort"),
                    **_groups(obj, "Cohort"),
                ),
                "Kueue Cohort",
            )
        )  # fmt: skip
    members: dict[str, list[dict[str, str]]] = {}
    queues = {_name(q, "ClusterQueue"): q for q in objects.cluster_queues}
    for lq in objects.local_queues:
        key = _name(lq, "LocalQueue")
        target = str(_spec(lq, "LocalQueue").get("clusterQueue") or "")
        if not target:
            raise InputError(f"LocalQueue {key!r}: spec.clusterQueue is missing")
        if target not in queues:
            continue  # inactive, as in Kueue: its pods are tenants no queue names
        ns, local = key.split("/", 1)
        members.setdefault(target, []).append(
            {"queue_kind": KUEUE, "namespace": ns, "queue": local}
        )
    for name, obj in queues.items():
        cohort = str(_spec(obj, "ClusterQueue").get("cohort") or "")
        path = f"{_chain(cohort, parent_of, 'Cohort')}/{name}" if cohort else name
        quota = _groups(obj, "ClusterQueue")
        # Kueue's cap on a ClusterQueue: its nominal quota and what it may borrow.
        limit = {r: quota["deserved"].get(r, 0.0) + b for r, b in quota["borrowing_limit"].items()}
        spec = QueueSpec(
            path,
            weight=_weight(obj, "ClusterQueue"),
            preemption=_preemption(obj),
            match=tuple(members.get(name, [])),
            limit=limit,
            **quota,
        )
        out.append((spec, "Kueue ClusterQueue"))
    return out


# -- KAI ---------------------------------------------------------------------------------------
def _kai_value(raw: object, at: str, allow_all: bool) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise InputError(f"{at} must be a number (got {raw!r})")
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"{at} must be a number (got {raw!r})") from None
    if value == -1 and allow_all:
        return -1.0
    if value < 0:
        meaning = "-1 means all" if allow_all else "it must be ≥ 0"
        raise InputError(f"{at} is negative (got {raw!r}; {meaning})")
    return value


def _kai(queues: list[dict[str, Any]]) -> list[tuple[QueueSpec, str]]:
    names = {_name(q, "Queue"): q for q in queues}
    parent_of: dict[str, str] = {}
    for name, obj in names.items():
        parent = str(_spec(obj, "Queue").get("parentQueue") or "")
        if parent and parent not in names:
            raise InputError(
                f"Queue {name!r}: spec.parentQueue names {parent!r}, which is no Queue"
            )
        parent_of[name] = parent
    out: list[tuple[QueueSpec, str]] = []
    for name, obj in names.items():
        spec = _spec(obj, "Queue")
        resources = spec.get("resources") or {}
        if not isinstance(resources, Mapping) or not isinstance(resources.get("gpu"), Mapping):
            raise InputError(f"Queue {name!r}: spec.resources.gpu is missing")
        deserved: dict[str, float] = {}
        limit: dict[str, float] = {}
        weight = 1.0
        for key, (ours, unit) in KAI_RESOURCES.items():
            res = resources.get(key)
            if res is None:
                continue
            at = f"Queue {name!r}: spec.resources.{key}"
            if "quota" not in res:
                raise InputError(f"{at}.quota is missing")
            quota = _kai_value(res["quota"], f"{at}.quota", allow_all=True)
            deserved[ours] = quota if quota < 0 else float(Fraction(quota) * unit)
            if res.get("limit") is not None:
                cap = _kai_value(res["limit"], f"{at}.limit", allow_all=True)
                limit[ours] = cap if cap < 0 else float(Fraction(cap) * unit)
            if key == "gpu" and res.get("overQuotaWeight") is not None:
                weight = _kai_value(res["overQuotaWeight"], f"{at}.overQuotaWeight", False)
        priority = spec.get("priority", 0)
        if not _finite(priority):
            raise InputError(
                f"Queue {name!r}: spec.priority must be a finite number (got {priority!r})"
            )
        path = _chain(name, parent_of, "Queue")
        match = ({"queue_kind": KAI, "queue": name},)
        out.append(
            (
                QueueSpec(path, deserved=deserved, limit=limit, weight=weight,
                          priority=float(priority), match=match),
                "KAI Queue",
            )
        )  # fmt: skip
    return out


# -- namespaces --------------------------------------------------------------------------------
def _namespaces(quotas: list[dict[str, Any]]) -> list[tuple[QueueSpec, str]]:
    gpus: dict[str, float] = {}
    for rq in quotas:
        key = _name(rq, "ResourceQuota")
        hard = _spec(rq, "ResourceQuota").get("hard") or {}
        if GPU_QUOTA not in hard:
            continue
        at = f"ResourceQuota {key!r}: spec.hard[{GPU_QUOTA!r}]"
        value = float(parse_quantity(hard[GPU_QUOTA], at))
        ns = key.split("/", 1)[0]
        gpus[ns] = min(gpus.get(ns, value), value)
    return [
        (
            QueueSpec(ns, limit={"gpu": g}, match=({"queue_kind": NAMESPACE, "namespace": ns},)),
            "namespace with a ResourceQuota",
        )
        for ns, g in sorted(gpus.items())
    ]


def _finite(value: object) -> bool:
    """A number (not a boolean), neither NaN nor infinite."""
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
