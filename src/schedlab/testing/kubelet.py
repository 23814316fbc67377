"""A stand-in for the kubelets of a dev cluster that has none: fake GPU nodes and their pods' lives.

The dev control plane (``scripts/k8s-dev-cluster.sh``) runs a real API server and etcd but no
kubelet, so nothing would ever run a bound pod. This module plays the kubelet for the nodes it
creates (labelled ``kubelet.schedlab.io/simulated``):

* ``nodes``: creates N nodes through the API with ``nvidia.com/gpu``, CPU and memory capacity
  (written through ``nodes/status``, as a kubelet reports it), the GPU model label of GPU Feature
  Discovery, the hostname label and two topology levels (``schedlab.io/leaf`` of K nodes each,
  under one ``schedlab.io/spine``), all Ready;
* ``run``: every ``--period`` seconds moves each pod bound to one of those nodes along: Pending →
  Running (with a start time), then, once it has run for the seconds in its
  ``kubelet.schedlab.io/run-seconds`` annotation, Succeeded (or Failed with exit code 1 when
  ``kubelet.schedlab.io/fail`` is ``"true"``); a pod past its ``activeDeadlineSeconds`` fails with
  reason DeadlineExceeded, and a pod being deleted (an eviction) is removed at once, as a kubelet
  does once its containers have stopped. A pod without the annotation runs until deleted.

It counts nothing and checks nothing: capacity is the scheduler's business.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from schedlab.serve.kubernetes.api import KubeAPI, KubeError
from schedlab.serve.kubernetes.kubeconfig import load_credentials
from schedlab.serve.kubernetes.objects import timestamp

SIMULATED = "kubelet.schedlab.io/simulated"
RUN_SECONDS = "kubelet.schedlab.io/run-seconds"
FAIL = "kubelet.schedlab.io/fail"


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_object(name: str, model: str, leaf: str) -> dict[str, Any]:
    labels = {
        "kubernetes.io/hostname": name,
        "nvidia.com/gpu.product": model,
        "schedlab.io/leaf": leaf,
        "schedlab.io/spine": "spine",
        SIMULATED: "true",
    }
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def node_status(gpus: int, cpus: int, memory_gib: int) -> dict[str, Any]:
    capacity = {
        "cpu": str(cpus),
        "memory": f"{memory_gib}Gi",
        "pods": "110",
        "nvidia.com/gpu": str(gpus),
    }
    stamp = now_text()
    return {
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "simulated by schedlab.testing.kubelet",
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": stamp,
                }
            ],
        }
    }


def create_nodes(
    api: KubeAPI,
    count: int,
    gpus: int,
    model: str = "NVIDIA-A100-SXM4-80GB",
    leaf_nodes: int = 2,
    cpus: int = 64,
    memory_gib: int = 512,
    prefix: str = "node",
) -> list[str]:
    """Create (or leave as they are) ``count`` simulated GPU nodes; their names."""
    names = []
    for k in range(1, count + 1):
        name = f"{prefix}{k}"
        leaf = f"leaf{(k - 1) // leaf_nodes + 1}"
        try:
            api.post("/api/v1/nodes", node_object(name, model, leaf))
        except KubeError as exc:
            if exc.status != 409:
                raise
        api.patch(f"/api/v1/nodes/{name}/status", node_status(gpus, cpus, memory_gib))
        # What the node lifecycle controller (absent here) does once a node is Ready.
        api.patch(f"/api/v1/nodes/{name}", {"spec": {"taints": None}})
        names.append(name)
    return names


RBAC_PATHS = {
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
}


def grant_role(api: KubeAPI, rbac: Path, user: str) -> str:
    """Create the ClusterRole of ``rbac`` (deploy/kubernetes/rbac.yaml) and bind it to the
    token user ``user``, as the dev cluster's scheduler identity; the role's name."""
    import yaml

    role = next(d for d in yaml.safe_load_all(rbac.read_text()) if d and d["kind"] == "ClusterRole")
    name = role["metadata"]["name"]
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{name}-{user}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
    }
    for obj in (role, binding):
        try:
            api.post(RBAC_PATHS[obj["kind"]], obj)
        except KubeError as exc:
            if exc.status != 409:
                raise
            api.put(f"{RBAC_PATHS[obj['kind']]}/{obj['metadata']['name']}", obj)
    return str(name)


class Kubelet:
    """Moves the pods bound to simulated nodes through their lives (see the module docstring)."""

    def __init__(self, api: KubeAPI) -> None:
        self.api = api
        self.nodes: set[str] = set()
        self.stop = False

    def refresh_nodes(self) -> None:
        items, _ = self.api.list("/api/v1/nodes", {"labelSelector": f"{SIMULATED}=true"})
        self.nodes = {n["metadata"]["name"] for n in items}

    def _status(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        meta = pod["metadata"]
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status"
        try:
            self.api.patch(path, {"status": status})
        except KubeError as exc:
            if exc.status != 404:  # deleted meanwhile: nothing to do
                raise

    def step(self, now: float) -> None:
        items, _ = self.api.list("/api/v1/pods", {"fieldSelector": "spec.nodeName!="})
        for pod in items:
            meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
            if spec.get("nodeName") not in self.nodes:
                continue
            phase = status.get("phase") or "Pending"
            if meta.get("deletionTimestamp"):
                path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
                try:
                    self.api.delete(path, {"gracePeriodSeconds": 0})
                except KubeError as exc:
                    if exc.status != 404:
                        raise
                continue
            if phase == "Pending":
                self._status(pod, self._running())
                continue
            if phase != "Running":
                continue
            began = timestamp(status.get("startTime")) or now
            notes = meta.get("annotations") or {}
            deadline = spec.get("activeDeadlineSeconds")
            if deadline is not None and now - began >= float(deadline):
                self._status(pod, self._ended("Failed", 137, "DeadlineExceeded"))
                continue
            run = notes.get(RUN_SECONDS)
            if run is not None and now - began >= float(run):
                failed = str(notes.get(FAIL, "")).lower() == "true"
                code = 1 if failed else 0
                self._status(pod, self._ended("Failed" if failed else "Succeeded", code, ""))

    @staticmethod
    def _running() -> dict[str, Any]:
        stamp = now_text()
        return {
            "phase": "Running",
            "startTime": stamp,
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": stamp},
                {"type": "Ready", "status": "True", "lastTransitionTime": stamp},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": stamp},
            ],
        }

    @staticmethod
    def _ended(phase: str, code: int, reason: str) -> dict[str, Any]:
        stamp = now_text()
        out: dict[str, Any] = {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": stamp}],
            "containerStatuses": [
                {
                    "name": "main",
                    "ready": False,
                    "restartCount": 0,
                    "image": "simulated",
                    "imageID": "",
                    "state": {"terminated": {"exitCode": code, "finishedAt": stamp}},
                }
            ],
        }
        if reason:
            out["reason"] = reason
        return out

    def run(self, period: float) -> None:
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stop", True))
        last_nodes = 0.0
        while not self.stop:
            t = time.time()
            try:
                if t - last_nodes > 5.0:
                    self.refresh_nodes()
                    last_nodes = t
                self.step(t)
            except KubeError as exc:  # the API server restarting: try again next period
                print(f"kubelet stand-in: {exc}", file=sys.stderr, flush=True)
            time.sleep(max(0.0, period - (time.time() - t)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m schedlab.testing.kubelet", description=__doc__.split("\n")[0]
    )
    p.add_argument("--kubeconfig", type=Path, default=None)
    sub = p.add_subparsers(dest="cmd", required=True)
    nodes = sub.add_parser("setup", help="create simulated GPU nodes and grant the scheduler role")
    nodes.add_argument("--nodes", type=int, default=4)
    nodes.add_argument("--gpus", type=int, default=8)
    nodes.add_argument("--model", default="NVIDIA-A100-SXM4-80GB")
    nodes.add_argument("--leaf-nodes", type=int, default=2)
    nodes.add_argument("--cpus", type=int, default=64)
    nodes.add_argument("--memory-gib", type=int, default=512)
    nodes.add_argument("--rbac", type=Path, default=None, help="ClusterRole to grant --user")
    nodes.add_argument("--user", default="schedlab")
    run = sub.add_parser("run", help="play the kubelet of the simulated nodes")
    run.add_argument("--period", type=float, default=0.25)
    args = p.parse_args(argv)
    api = KubeAPI(load_credentials(args.kubeconfig))
    if args.cmd == "setup":
        names = create_nodes(
            api, args.nodes, args.gpus, args.model, args.leaf_nodes, args.cpus, args.memory_gib
        )
        if args.rbac is not None:
            grant_role(api, args.rbac, args.user)
        print(" ".join(names))
        return 0
    Kubelet(api).run(args.period)
    return 0


if __name__ == "__main__":
    sys.exit(main())
