"""Pod and node objects as the API server returns them, for the Kubernetes serve tests."""

from __future__ import annotations

from typing import Any


def node(
    name: str,
    gpus: int = 8,
    cpu: str = "64",
    memory: str = "512Gi",
    model: str = "NVIDIA-A100-SXM4-80GB",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "nvidia.com/gpu": str(gpus)}
    return {
        "metadata": {
            "name": name,
            "labels": {"nvidia.com/gpu.product": model, **(labels or {})},
        },
        "spec": {"unschedulable": unschedulable, "taints": taints or []},
        "status": {
            "allocatable": alloc,
            "capacity": alloc,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    gpus: int = 1,
    ns: str = "default",
    cpu: str = "1",
    memory: str = "1Gi",
    created: str = "2026-01-01T00:00:00Z",
    scheduler: str = "schedlab",
    node: str = "",
    phase: str = "Pending",
    group: str = "",
    min_member: int | None = None,
    milli: int | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    selector: dict[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    deadline: int | None = None,
    uid: str = "",
) -> dict[str, Any]:
    notes = dict(annotations or {})
    if min_member is not None:
        notes["schedlab.io/min-member"] = str(min_member)
    if milli is not None:
        notes["alibabacloud.com/gpu-milli"] = str(milli)
        notes.setdefault("alibabacloud.com/gpu-count", "1")
    lab = dict(labels or {})
    if group:
        lab["scheduling.x-k8s.io/pod-group"] = group
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if gpus and milli is None:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "image": "x", "resources": resources}],
    }
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": uid or f"uid-{ns}-{name}",
            "creationTimestamp": created,
            "labels": lab,
            "annotations": notes,
        },
        "spec": spec,
        "status": {"phase": phase},
    }
