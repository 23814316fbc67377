"""An in-memory API server for tests and the benchmark: the calls ``serve kubernetes`` makes,
with their Kubernetes semantics (a second bind is 409 Conflict, a bind of a deleted pod 404, a
watch from a compacted version 410 Gone, a Lease write with a stale resourceVersion 409), and
faults on demand (:meth:`FakeKube.fail`).
"""

from __future__ import annotations

import copy
import itertools
import re
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from schedlab.serve.kubernetes.api import Gone, KubeError

Obj = dict[str, Any]
_POD = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)(?:/(binding|status|eviction))?$")
_LEASE = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases(?:/([^/]+))?$")
_EVENTS = re.compile(r"^/api/v1/namespaces/([^/]+)/events$")
_NODE = re.compile(r"^/api/v1/nodes(?:/([^/]+))?(?:/(status))?$")
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"
RESOURCE_QUOTAS = "/api/v1/resourcequotas"


def _merge(into: Obj, patch: Mapping[str, Any]) -> None:
    for k, v in patch.items():
        if isinstance(v, Mapping) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        elif v is None:
            into.pop(k, None)
        else:
            into[k] = copy.deepcopy(v)


def _serialised(method: Any) -> Any:
    """One call at a time, as the scheduler sends some in parallel from a thread pool."""

    def call(self: FakeKube, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            result = method(self, *args, **kwargs)
            return list(result) if method.__name__ == "watch" else result

    call.__name__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class FakeKube:
    """Pods, nodes, PodGroups (``None``: the CRD is not installed), Leases and Events."""

    def __init__(self, podgroups: bool = True) -> None:
        self.lock = threading.RLock()
        self.pods: dict[str, Obj] = {}
        self.nodes: dict[str, Obj] = {}
        self.podgroups: dict[str, Obj] | None = {} if podgroups else None
        self.leases: dict[str, Obj] = {}
        #: Other collections by path, objects by ``namespace/name`` (or name): ResourceQuotas,
        #: and the custom resources a test installs (a path not here answers 404).
        self.objects: dict[str, dict[str, Obj]] = {RESOURCE_QUOTAS: {}}
        self.events: list[Obj] = []
        self.pdb_blocked: set[str] = set()  # pod keys a PodDisruptionBudget protects
        self.calls: list[tuple[str, str]] = []
        self._rv = itertools.count(1)
        self.version = 0
        self.log: list[tuple[int, str, str, Obj]] = []  # (version, collection, type, object)
        self.compacted = 0  # versions up to this one are gone for watches
        self._faults: dict[tuple[str, str], list[KubeError]] = {}

    # -- set-up and faults -----------------------------------------------------------------
    def _bump(self, collection: str, kind: str, obj: Obj) -> None:
        self.version = next(self._rv)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        self.log.append((self.version, collection, kind, copy.deepcopy(obj)))

    def add_node(self, obj: Obj) -> None:
        self.nodes[obj["metadata"]["name"]] = obj
        self._bump("nodes", "ADDED", obj)

    def add_pod(self, obj: Obj) -> None:
        meta = obj["metadata"]
        self.pods[f"{meta['namespace']}/{meta['name']}"] = obj
        self._bump("pods", "ADDED", obj)

    def add_podgroup(self, namespace: str, name: str, min_member: int) -> None:
        assert self.podgroups is not None
        obj = {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"minMember": min_member},
        }
        self.podgroups[f"{namespace}/{name}"] = obj
        self._bump("podgroups", "ADDED", obj)

    def add_object(self, path: str, obj: Obj) -> None:
        """An object of the collection at ``path`` (its CRD installed, if it is a custom one)."""
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        self.objects.setdefault(path, {})[key] = obj
        self._bump(path, "ADDED", obj)

    def update_pod(self, key: str, patch: Mapping[str, Any]) -> None:
        _merge(self.pods[key], patch)
        self._bump("pods", "MODIFIED", self.pods[key])

    def delete_pod(self, key: str) -> None:
        obj = self.pods.pop(key)
        self._bump("pods", "DELETED", obj)

    def compact(self) -> None:
        """Forget every version so far: watches from them get 410 Gone."""
        self.compacted = self.version

    def fail(self, method: str, pattern: str, error: KubeError, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` on a path matching ``pattern`` fail."""
        self._faults.setdefault((method, pattern), []).extend([error] * times)

    def _fault(self, method: str, path: str) -> None:
        for (m, pattern), errors in self._faults.items():
            if m == method and errors and re.search(pattern, path):
                raise errors.pop(0)

    # -- the API -------------------------------------------------------------------------------
    def _collection(self, path: str) -> tuple[str, dict[str, Obj]]:
        if path == "/api/v1/pods":
            return "pods", self.pods
        if path == "/api/v1/nodes":
            return "nodes", self.nodes
        if path == PODGROUPS:
            if self.podgroups is None:
                raise KubeError(
                    404,
                    f"GET {path}: 404 NotFound: the server could not find the requested resource",
                )
            return "podgroups", self.podgroups
        if path in self.objects:
            return path, self.objects[path]
        raise KubeError(404, f"GET {path}: 404 NotFound")

    @_serialised
    def list(self, path: str, params: Mapping[str, Any] | None = None) -> tuple[list[Obj], str]:
        self.calls.append(("LIST", path))
        self._fault("LIST", path)
        _, objects = self._collection(path)
        return [copy.deepcopy(o) for o in objects.values()], str(self.version)

    @_serialised
    def watch(
        self,
        path: str,
        resource_version: str,
        timeout: float = 60.0,
        params: Mapping[str, Any] | None = None,
    ) -> Iterator[tuple[str, Obj]]:
        self.calls.append(("WATCH", path))
        self._fault("WATCH", path)
        name, _ = self._collection(path)
        since = int(resource_version or 0)
        if since < self.compacted:
            raise Gone(410, f"WATCH {path}: 410 Expired: too old resource version: {since}")
        for version, collection, kind, obj in list(self.log):
            if version > since and collection == name:
                yield kind, copy.deepcopy(obj)

    @_serialised
    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Obj:
        self.calls.append(("GET", path))
        self._fault("GET", path)
        m = _LEASE.match(path)
        if m and m.group(2):
            key = f"{m.group(1)}/{m.group(2)}"
            if key not in self.leases:
                raise KubeError(404, f"GET {path}: 404 NotFound")
            return copy.deepcopy(self.leases[key])
        m = _POD.match(path)
        if m:
            key = f"{m.group(1)}/{m.group(2)}"
            if key not in self.pods:
                raise KubeError(404, f"GET {path}: 404 NotFound")
            return copy.deepcopy(self.pods[key])
        raise KubeError(404, f"GET {path}: 404 NotFound")

    @_serialised
    def post(self, path: str, body: Mapping[str, Any]) -> Obj:
        self.calls.append(("POST", path))
        self._fault("POST", path)
        m = _POD.match(path)
        if m and m.group(3) == "binding":
            return self._bind(f"{m.group(1)}/{m.group(2)}", body)
        if m and m.group(3) == "eviction":
            key = f"{m.group(1)}/{m.group(2)}"
            if key not in self.pods:
                raise KubeError(404, f"POST {path}: 404 NotFound")
            if key in self.pdb_blocked:
                why = "Cannot evict pod as it would violate the pod's disruption budget."
                raise KubeError(429, f"POST {path}: 429 TooManyRequests: {why}")
            self.delete_pod(key)
            return {}
        m = _LEASE.match(path)
        if m and not m.group(2):
            key = f"{m.group(1)}/{body['metadata']['name']}"
            if key in self.leases:
                raise KubeError(409, f"POST {path}: 409 AlreadyExists")
            obj = copy.deepcopy(dict(body))
            self.leases[key] = obj
            self._bump("leases", "ADDED", obj)
            return copy.deepcopy(obj)
        if _EVENTS.match(path):
            self.events.append(copy.deepcopy(dict(body)))
            return {}
        m = _NODE.match(path)
        if m and not m.group(1):
            self.add_node(copy.deepcopy(dict(body)))
            return {}
        raise KubeError(404, f"POST {path}: 404 NotFound")

    def _bind(self, key: str, body: Mapping[str, Any]) -> Obj:
        path = f"/api/v1/namespaces/{key.replace('/', '/pods/', 1)}/binding"
        pod = self.pods.get(key)
        if pod is None:
            raise KubeError(404, f'POST {path}: 404 NotFound: pods "{key}" not found')
        if pod["spec"].get("nodeName"):
            on = pod["spec"]["nodeName"]
            raise KubeError(
                409, f"POST {path}: 409 Conflict: pod {key} is already assigned to {on}"
            )
        target = body["target"]["name"]
        pod["spec"]["nodeName"] = target
        notes = (body.get("metadata") or {}).get("annotations") or {}
        pod["metadata"].setdefault("annotations", {}).update(notes)
        conditions = [
            c
            for c in pod.setdefault("status", {}).get("conditions") or []
            if c.get("type") != "PodScheduled"
        ]
        pod["status"]["conditions"] = [*conditions, {"type": "PodScheduled", "status": "True"}]
        self._bump("pods", "MODIFIED", pod)
        return {"kind": "Status", "status": "Success"}

    @_serialised
    def put(self, path: str, body: Mapping[str, Any]) -> Obj:
        self.calls.append(("PUT", path))
        self._fault("PUT", path)
        m = _LEASE.match(path)
        if m and m.group(2):
            key = f"{m.group(1)}/{m.group(2)}"
            current = self.leases.get(key)
            if current is None:
                raise KubeError(404, f"PUT {path}: 404 NotFound")
            if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                raise KubeError(409, f"PUT {path}: 409 Conflict: the object has been modified")
            obj = copy.deepcopy(dict(body))
            self.leases[key] = obj
            self._bump("leases", "MODIFIED", obj)
            return copy.deepcopy(obj)
        raise KubeError(404, f"PUT {path}: 404 NotFound")

    @_serialised
    def patch(self, path: str, body: Mapping[str, Any], strategic: bool = False) -> Obj:
        self.calls.append(("PATCH", path))
        self._fault("PATCH", path)
        m = _POD.match(path)
        if m:
            key = f"{m.group(1)}/{m.group(2)}"
            if key not in self.pods:
                raise KubeError(404, f"PATCH {path}: 404 NotFound")
            pod = self.pods[key]
            status = dict(body.get("status") or {})
            conditions = status.pop("conditions", None)
            if conditions is not None:  # strategic merge: by condition type
                old = [
                    c
                    for c in pod.setdefault("status", {}).get("conditions") or []
                    if c.get("type") not in {x["type"] for x in conditions}
                ]
                pod["status"]["conditions"] = old + [dict(c) for c in conditions]
            _merge(pod, {**body, "status": status} if status or "status" in body else body)
            self._bump("pods", "MODIFIED", pod)
            return copy.deepcopy(pod)
        m = _NODE.match(path)
        if m and m.group(1) in self.nodes:
            _merge(self.nodes[m.group(1)], body)
            self._bump("nodes", "MODIFIED", self.nodes[m.group(1)])
            return {}
        raise KubeError(404, f"PATCH {path}: 404 NotFound")

    @_serialised
    def delete(self, path: str, body: Mapping[str, Any] | None = None) -> Obj:
        self.calls.append(("DELETE", path))
        m = _POD.match(path)
        if m:
            key = f"{m.group(1)}/{m.group(2)}"
            if key not in self.pods:
                raise KubeError(404, f"DELETE {path}: 404 NotFound")
            self.delete_pod(key)
            return {}
        raise KubeError(404, f"DELETE {path}: 404 NotFound")
