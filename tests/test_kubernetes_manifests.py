"""deploy/kubernetes: the ClusterRole grants exactly the calls serve kubernetes makes, and the
sample settings are ones the command takes."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from kube_objects import node, pod
from schedlab.serve.config_file import KUBE_KEYS, read_config
from schedlab.serve.journal import Journal
from schedlab.serve.kubernetes.extender import Extender
from schedlab.serve.kubernetes.fake import FakeKube
from schedlab.serve.kubernetes.server import KubeConfig, KubeServer
from schedlab.tenancy.kube_queues import queue_specs, read_objects

DEPLOY = Path(__file__).resolve().parents[1] / "deploy" / "kubernetes"
VERBS = {
    "LIST": "list",
    "WATCH": "watch",
    "GET": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


def resource(path: str) -> tuple[str, str]:
    """(API group, resource[/subresource]) of a REST path."""
    parts = path.strip("/").split("/")
    group = "" if parts[0] == "api" else parts[1]
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    name = rest[0]
    return group, f"{name}/{rest[2]}" if len(rest) > 2 else name


def granted() -> set[tuple[str, str, str]]:
    docs = list(yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text()))
    (role,) = [d for d in docs if d["kind"] == "ClusterRole"]
    return {
        (g, r, v)
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }


def test_cluster_role_is_exactly_the_calls_made(tmp_path: Path) -> None:
    api = FakeKube()
    api.add_node(node("node1"))
    api.add_pod(pod("low", 8, node="node1", phase="Running"))
    api.pods["default/low"]["status"]["startTime"] = "2027-01-15T07:59:50Z"
    api.add_pod(pod("short", 8, created="2027-01-15T07:59:55Z", deadline=60))
    api.add_pod(pod("waits", 8, created="2027-01-15T07:59:56Z"))
    times = iter(1_800_000_000.0 + 10 * k for k in range(10))  # the Lease is renewed too
    config = KubeConfig(policy="srtf", identity="a")
    server = KubeServer(
        api, config, Journal(tmp_path / "j"), clock=lambda: next(times), watch=False
    )
    server.start_watches()
    for _ in range(2):
        for cache in (server.pods, server.nodes, server.groups):
            if cache is not None:
                cache.run_once()
        server.cycle()
    server.binder.flush_events()
    ext = Extender(api, "bestfit", Journal(None))
    ext.start(watch=False)
    api.add_pod(pod("late", 1))  # not in the extender's cache yet: it reads the pod
    ext.bind({"PodName": "late", "PodNamespace": "default", "Node": "node1"})
    queue_specs(read_objects(api))  # what --queues-from-cluster reads
    used = {(*resource(path), VERBS[method]) for method, path in api.calls}
    assert used == granted()


def test_sample_settings_are_valid() -> None:
    settings = read_config(DEPLOY / "serve.toml", KUBE_KEYS)
    assert settings["scheduler_name"] == "schedlab"
    docs = list(yaml.safe_load_all((DEPLOY / "schedlab.yaml").read_text()))
    (config,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert (
        config["data"]["serve.toml"].strip()
        == re.sub(r"^#.*\n", "", (DEPLOY / "serve.toml").read_text()).strip()
    )
    (deploy,) = [d for d in docs if d["kind"] == "Deployment"]
    assert deploy["spec"]["template"]["spec"]["serviceAccountName"] == "schedlab"
