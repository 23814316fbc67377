"""serve kubernetes --extender behind a real kube-scheduler (built from the same release as the
dev API server): kube-scheduler filters, scores and binds every pod through schedlab."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kube_live import create_pod, fresh_namespace, live_cluster
from kube_objects import pod
from schedlab.serve.journal import read_journal
from test_serve_kubernetes_e2e import RUN, CapacityWatch, phases

pytestmark = pytest.mark.kubernetes

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {kubeconfig}
leaderElection:
  leaderElect: false
profiles:
- schedulerName: {name}
extenders:
- urlPrefix: http://127.0.0.1:{port}
  filterVerb: filter
  prioritizeVerb: prioritize
  bindVerb: bind
  weight: 5
  nodeCacheCapable: true
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_kube_scheduler_places_through_the_extender(tmp_path: Path) -> None:
    api, kubeconfig = live_cluster()
    binary = os.environ.get("SCHEDLAB_KUBE_SCHEDULER", "")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip(
            "no kube-scheduler binary: SCHEDLAB_KUBE_SCHEDULER unset (scripts/k8s-dev-cluster.sh)"
        )
    ns = fresh_namespace(api, "e2e-ext")
    port = free_port()
    config = tmp_path / "scheduler.yaml"
    config.write_text(CONFIG.format(kubeconfig=os.environ["KUBECONFIG"], name=ns, port=port))
    journal = tmp_path / "extender.jsonl"
    ext = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "schedlab",
            "serve",
            "kubernetes",
            "--extender",
            "--quiet",
            "--placement",
            "bestfit",
            "--listen",
            f"127.0.0.1:{port}",
            "--kubeconfig",
            str(kubeconfig),
            "--journal",
            str(journal),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    sched = subprocess.Popen(
        [binary, "--config", str(config), "--secure-port", "0", "-v", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        sizes = [8, 4, 2, 2, 1, 1, 4, 8]
        with CapacityWatch(api, {ns}) as watch:
            for k, g in enumerate(sizes):
                create_pod(api, pod(f"w{k}", g, ns=ns, scheduler=ns, annotations={RUN: "2"}))
            for k in range(4):
                create_pod(
                    api, pod(f"f{k}", ns=ns, scheduler=ns, milli=500, annotations={RUN: "1"})
                )
            deadline = time.time() + 90
            while time.time() < deadline:
                states = {p["status"].get("phase") for p in phases(api, ns).values()}
                if states == {"Succeeded"}:
                    break
                time.sleep(0.5)
        assert watch.violations == []
        pods = phases(api, ns)
        assert {k: p["status"].get("phase") for k, p in pods.items()} == dict.fromkeys(
            pods, "Succeeded"
        )
        for p in pods.values():  # every pod bound through schedlab, with its devices
            assert "schedlab.io/gpu-devices" in p["metadata"]["annotations"]
        starts = [r for r in read_journal(journal) if r["action"] == "start"]
        assert sorted(r["job"] for r in starts) == sorted(f"{ns}/{k}" for k in pods)
    finally:
        sched.terminate()
        ext.terminate()
        sched.wait(timeout=10)
        ext.wait(timeout=10)
