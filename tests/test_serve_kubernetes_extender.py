"""serve kubernetes --extender: filter, prioritize and bind as kube-scheduler calls them."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from kube_objects import node, pod
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.kubernetes.extender import Extender, serve_extender
from schedlab.serve.kubernetes.fake import FakeKube


def setup(tmp_path: Path, placement: str = "bestfit") -> tuple[FakeKube, Extender]:
    api = FakeKube()
    api.add_node(node("node1"))
    api.add_node(node("node2"))
    api.add_node(node("node3", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))
    api.add_pod(pod("busy", 6, scheduler="default-scheduler", node="node1", phase="Running"))
    ext = Extender(api, placement, Journal(tmp_path / "ext.jsonl"))
    ext.start(watch=False)
    return api, ext


def args(obj: dict, names: list[str]) -> dict:
    return {"Pod": obj, "NodeNames": names}


def test_filter_names_why_each_node_is_out(tmp_path: Path) -> None:
    _, ext = setup(tmp_path)
    answer = ext.filter(args(pod("p", 4), ["node1", "node2", "node3"]))
    assert answer["NodeNames"] == ["node2"]
    assert answer["FailedNodes"] == {"node1": "Insufficient nvidia.com/gpu"}
    assert list(answer["FailedAndUnresolvableNodes"]) == ["node3"]
    too_big = ext.filter(args(pod("q", 16), ["node2"]))
    assert too_big["FailedAndUnresolvableNodes"] == {
        "node2": "node has 8 GPUs, the pod asks for 16"
    }
    bad = ext.filter(args(pod("r", 1, cpu="2x"), ["node2"]))
    assert "malformed quantity '2x'" in bad["FailedAndUnresolvableNodes"]["node2"]


def test_prioritize_scores_by_the_placement(tmp_path: Path) -> None:
    _, ext = setup(tmp_path)
    # bestfit: the fuller node (node1, 2 GPUs free) scores highest for a 1-GPU pod.
    scores = {h["Host"]: h["Score"] for h in ext.prioritize(args(pod("p", 1), ["node1", "node2"]))}
    assert scores == {"node1": 10, "node2": 0}


def test_bind_writes_devices_and_counts_the_pod_at_once(tmp_path: Path) -> None:
    api, ext = setup(tmp_path)
    api.add_pod(pod("p", 2))
    ext.pods.run_once()
    answer = ext.bind({"PodName": "p", "PodNamespace": "default", "PodUID": "u", "Node": "node1"})
    assert answer == {"Error": ""}
    assert api.pods["default/p"]["spec"]["nodeName"] == "node1"
    assert api.pods["default/p"]["metadata"]["annotations"]["schedlab.io/gpu-devices"] == "6,7"
    # Before the watch shows it bound, node1 is already full for the next pod.
    again = ext.filter(args(pod("q", 1), ["node1"]))
    assert again["FailedNodes"] == {"node1": "Insufficient nvidia.com/gpu"}
    (start,) = [r for r in read_journal(tmp_path / "ext.jsonl") if r["action"] == "start"]
    assert start["job"] == "default/p" and start["gpu_idx"] == [[6, 7]]


def test_http_protocol(tmp_path: Path) -> None:
    _, ext = setup(tmp_path)
    server = serve_extender(ext, "127.0.0.1", 0)
    port = server.server_address[1]
    try:
        body = json.dumps(args(pod("p", 4), ["node1", "node2"])).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/filter", body, method="POST")
        with urllib.request.urlopen(req, timeout=5) as reply:
            assert json.load(reply)["NodeNames"] == ["node2"]
    finally:
        server.shutdown()


def test_serve_check_refuses_an_extender_journal(tmp_path: Path, capsys) -> None:
    from schedlab.cli import main

    api, ext = setup(tmp_path)
    api.add_pod(pod("p", 1))
    ext.pods.run_once()
    ext.bind({"PodName": "p", "PodNamespace": "default", "Node": "node2"})
    assert main(["serve", "check", "--journal", str(tmp_path / "ext.jsonl")]) == 2
    assert "kube-scheduler chose the nodes" in capsys.readouterr().err
