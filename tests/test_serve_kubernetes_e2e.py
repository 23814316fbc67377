"""serve kubernetes against a real API server (the dev control plane): pods bound once, gangs
whole, shares, other schedulers' pods counted, nodes never over capacity, every pod Succeeded."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kube_live import create_pod, fresh_namespace, live_cluster
from kube_objects import pod
from schedlab.serve.journal import read_journal
from schedlab.serve.kubernetes.api import KubeAPI
from schedlab.serve.kubernetes.objects import parse_node, parse_pod

pytestmark = pytest.mark.kubernetes
RUN = "kubelet.schedlab.io/run-seconds"


class CapacityWatch:
    """Polls the API server while a run goes on: per node, the CPU, memory and GPU shares of
    bound pods that have not finished never exceed what the node has (from the API objects)."""

    def __init__(self, api: KubeAPI, schedulers: set[str]) -> None:
        self.api = api
        self.schedulers = schedulers  # their pods must name their GPU devices
        self.violations: list[str] = []
        self.polls = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def check(self) -> None:
        nodes = {n.name: n for n in map(parse_node, self.api.list("/api/v1/nodes")[0])}
        used: dict[str, list[int]] = {}  # CPU, memory, GPU milli
        shares: dict[tuple[str, int], int] = {}
        for p in map(parse_pod, self.api.list("/api/v1/pods")[0]):
            if not p.holds or p.node not in nodes:
                continue
            u = used.setdefault(p.node, [0, 0, 0])
            u[0] += p.cpu_milli
            u[1] += p.memory_mib
            u[2] += p.gpus * p.gpu_milli
            if p.gpus:
                if len(p.devices) != p.gpus and p.scheduler in self.schedulers:
                    self.violations.append(f"{p.key}: devices {p.devices} for {p.gpus} GPUs")
                for g in p.devices:
                    shares[(p.node, g)] = shares.get((p.node, g), 0) + p.gpu_milli
        for name, (cpu, mem, gpu) in used.items():
            n = nodes[name]
            if cpu > n.cpu_milli or mem > n.memory_mib or gpu > n.gpus * 1000:
                self.violations.append(f"{name}: {cpu} mCPU, {mem} MiB, {gpu} mGPU in use")
        for (name, g), milli in shares.items():
            if milli > 1000 or g >= nodes[name].gpus:
                self.violations.append(f"{name} GPU {g}: {milli} milli in use")
        self.polls += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self.check()
            self._stop.wait(0.2)

    def __enter__(self) -> CapacityWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.thread.join()


def serve(
    kubeconfig: Path, journal: Path, name: str, *extra: str, until_idle: bool = True
) -> subprocess.Popen[str]:
    argv = [
        sys.executable,
        "-m",
        "schedlab",
        "serve",
        "kubernetes",
        "--kubeconfig",
        str(kubeconfig),
        "--scheduler-name",
        name,
        "--lease-name",
        name,
        "--lease-seconds",
        "4",
        "--interval",
        "0.3",
        "--journal",
        str(journal),
        "--quiet",
        "--policy",
        "fifo",
        *(["--until-idle"] if until_idle else []),
        *extra,
    ]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def phases(api: KubeAPI, ns: str) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in api.list(f"/api/v1/namespaces/{ns}/pods")[0]}


def test_small_run_binds_everything_once(tmp_path: Path) -> None:
    api, kubeconfig = live_cluster()
    ns = fresh_namespace(api, "e2e-small")
    name = ns  # its own scheduler name and Lease: other runs' pods are not its business
    # Another scheduler's pod, bound by hand to node1, holding 6 of its GPUs for the whole run.
    theirs = pod("theirs", 6, ns=ns, scheduler="default-scheduler", annotations={RUN: "600"})
    create_pod(api, theirs)
    binding = {"metadata": {"name": "theirs"}, "target": {"kind": "Node", "name": "node1"}}
    api.post(f"/api/v1/namespaces/{ns}/pods/theirs/binding", binding)
    for k, gpus in enumerate([8, 8, 4, 2, 1]):
        create_pod(api, pod(f"w{k}", gpus, ns=ns, scheduler=name, annotations={RUN: "2"}))
    for k in range(3):
        create_pod(
            api,
            pod(
                f"g-{k}", 2, ns=ns, scheduler=name, group="g", min_member=3, annotations={RUN: "2"}
            ),
        )
    for k in range(3):
        create_pod(api, pod(f"f{k}", ns=ns, scheduler=name, milli=400, annotations={RUN: "1"}))
    journal = tmp_path / "serve.jsonl"
    try:
        with CapacityWatch(api, {name}) as watch:
            proc = serve(kubeconfig, journal, name)
            _, err = proc.communicate(timeout=120)
    finally:
        api.delete(f"/api/v1/namespaces/{ns}/pods/theirs", {"gracePeriodSeconds": 0})
    assert proc.returncode == 0, err
    assert watch.polls > 3 and watch.violations == []
    pods = phases(api, ns)
    mine = {k: p for k, p in pods.items() if k != "theirs"}
    assert {k: p["status"]["phase"] for k, p in mine.items()} == dict.fromkeys(mine, "Succeeded")
    records = list(read_journal(journal))
    starts = [r for r in records if r["action"] == "start"]
    bound_pods = [p for r in starts for p in r["pods"]]
    assert sorted(bound_pods) == sorted(f"{ns}/{k}" for k in mine)  # each exactly once
    gang = [r for r in starts if r["job"] == f"{ns}/podgroup/g"]
    assert len(gang) == 1 and len(gang[0]["nodes"]) == 3 and len(set(gang[0]["nodes"])) == 3
    assert "theirs" not in {p.split("/")[1] for p in bound_pods}
    # theirs held 6 of node1's GPUs throughout: no pod of more than 2 GPUs went there.
    assert all(r["gpus"] <= 2 for r in starts if r["nodes"] == ["node1"])


def workload(ns_a: str, ns_b: str, name: str) -> list[dict[str, Any]]:
    """200 pods over two namespaces: whole pods of 1/2/4/8 GPUs, gangs of 2–4 pods, GPU
    shares; each runs 1 or 2 s on the kubelet stand-in."""
    pods: list[dict[str, Any]] = []
    k = 0
    sizes = [1, 2, 4, 8]
    while len(pods) < 200:
        ns = ns_a if k % 2 == 0 else ns_b
        run = {RUN: str(1 + k % 2)}
        if k % 10 == 3 and len(pods) <= 196:
            members = 2 + k % 3
            for m in range(members):
                pods.append(
                    pod(
                        f"g{k}-{m}",
                        sizes[k % 3],
                        ns=ns,
                        scheduler=name,
                        group=f"g{k}",
                        min_member=members,
                        annotations=run,
                    )
                )
        elif k % 10 == 7:
            pods.append(
                pod(f"f{k}", ns=ns, scheduler=name, milli=250 * (1 + k % 3), annotations=run)
            )
        else:
            pods.append(pod(f"p{k}", sizes[k % 4], ns=ns, scheduler=name, annotations=run))
        k += 1
    return pods[:200]


def starts_of(path: Path) -> list[dict[str, Any]]:
    return [r for r in read_journal(path) if r["action"] == "start"] if path.exists() else []


@pytest.mark.slow  # a minute of a live cluster's time: run with the fidelity suite
def test_200_pods_with_a_kill_and_a_standby_taking_over(tmp_path: Path) -> None:
    from schedlab.serve.kubernetes.check import check

    api, kubeconfig = live_cluster()
    ns_a, ns_b = fresh_namespace(api, "e2e-a"), fresh_namespace(api, "e2e-b")
    name = ns_a
    pods = workload(ns_a, ns_b, name)
    first_j, second_j = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    with CapacityWatch(api, {name}) as watch:
        for obj in pods[:120]:
            create_pod(api, obj)
        first = serve(kubeconfig, first_j, name, "--identity", "first", until_idle=False)
        deadline = time.time() + 30
        while (
            not any(r["action"] == "lead" for r in read_journal(first_j))
            if first_j.exists()
            else True
        ):
            assert time.time() < deadline, "the first instance never took the Lease"
            time.sleep(0.1)
        second = serve(kubeconfig, second_j, name, "--identity", "second")  # the standby
        deadline = time.time() + 60
        while not (
            second_j.exists() and any(r["action"] == "standby" for r in read_journal(second_j))
        ):
            assert time.time() < deadline, "the second instance never waited on the Lease"
            time.sleep(0.1)
        deadline = time.time() + 60
        while len(starts_of(first_j)) < 25 and time.time() < deadline:
            time.sleep(0.2)
        first.kill()  # SIGKILL, mid-run
        first.wait()
        for obj in pods[120:]:
            create_pod(api, obj)
        _, err = second.communicate(timeout=240)
        assert second.returncode == 0, err
        # The first again, on its own journal: it finds its open runs ended.
        again = serve(kubeconfig, first_j, name, "--identity", "first")
        _, err = again.communicate(timeout=60)
        assert again.returncode == 0, err
    assert watch.violations == []
    objects = {**phases(api, ns_a), **{f"b/{k}": v for k, v in phases(api, ns_b).items()}}
    assert len(objects) == 200
    assert {p["status"]["phase"] for p in objects.values()} == {"Succeeded"}
    live = [r for r in starts_of(first_j) + starts_of(second_j) if not r.get("recovered")]
    bound = [p for r in live for p in r.get("bound") or r["pods"]]
    everyone = {f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in pods}
    assert len(starts_of(first_j)) >= 25
    # Every pod bound exactly once (a pod the first bound and did not journal before the kill
    # is found bound by the second, or found done by the first's restart: a recovered start,
    # never a second bind).
    every = starts_of(first_j) + starts_of(second_j)
    recovered = [p for r in every if r.get("recovered") for p in r["pods"]]
    assert sorted(bound + [p for p in recovered if p not in bound]) == sorted(everyone)
    assert len(bound) == len(set(bound))
    # Gangs whole: every gang's pods in one start record, on distinct nodes.
    for r in live:
        if "/podgroup/" in r["job"] and not r.get("partial"):
            assert len(set(r["nodes"])) == len(r["nodes"]) == len(r["pods"])
    records = list(read_journal(second_j))
    assert [r["action"] for r in records if r["action"] in ("lead", "standby")] == [
        "standby",
        "lead",
    ]
    for path in (first_j, second_j):
        result = check(path)
        assert result.agree, result.mismatches
    assert check(second_j).starts > 50


def test_preemption_waits_for_a_disruption_budget_then_evicts(tmp_path: Path) -> None:
    """Every GPU is taken by long pods a PodDisruptionBudget covers: srtf wants one gone for a
    short pod, the Eviction API refuses (429; no disruption controller here ever allows one),
    nothing is evicted and the short pod waits. Once the budget is deleted, a long pod is
    evicted and the short pod is bound on its node."""
    api, kubeconfig = live_cluster()
    ns = fresh_namespace(api, "e2e-evict")
    name = ns
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "keep", "namespace": ns},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"keep": "yes"}}},
    }
    api.post(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", budget)
    nodes = [parse_node(n) for n in api.list("/api/v1/nodes")[0]]
    gpus = [n.gpus for n in nodes if n.available and n.gpus]
    for k, g in enumerate(gpus):
        obj = pod(f"long{k}", g, ns=ns, scheduler=name, labels={"keep": "yes"})
        obj["metadata"]["annotations"][RUN] = "600"
        create_pod(api, obj)
    journal = tmp_path / "serve.jsonl"
    proc = serve(kubeconfig, journal, name, "--policy", "srtf", "--grace", "0", until_idle=False)
    try:
        deadline = time.time() + 60
        # Running, not only bound: the Eviction API lets a Pending pod go whatever the budget.
        while {p["status"].get("phase") for p in phases(api, ns).values()} != {"Running"}:
            assert time.time() < deadline, "the long pods were not all running"
            time.sleep(0.2)
        create_pod(api, pod("short", 1, ns=ns, scheduler=name, deadline=30, annotations={RUN: "1"}))
        deadline = time.time() + 60
        while not any(r["action"] == "protect" for r in read_journal(journal)):
            assert time.time() < deadline, "the budget was never reported"
            time.sleep(0.2)
        assert len(phases(api, ns)) == len(gpus) + 1  # nothing evicted
        assert not phases(api, ns)["short"]["spec"].get("nodeName")
        api.delete(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/keep")
        deadline = time.time() + 60
        while not phases(api, ns)["short"]["spec"].get("nodeName"):
            assert time.time() < deadline, "the short pod was never bound"
            time.sleep(0.2)
        pods = phases(api, ns)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for k in phases(api, ns):  # the long pods would hold the GPUs for ten minutes
            api.delete(f"/api/v1/namespaces/{ns}/pods/{k}", {"gracePeriodSeconds": 0})
    records = list(read_journal(journal))
    (protect, *_) = [r for r in records if r["action"] == "protect"]
    assert "PodDisruptionBudget" in protect["reason"]
    (pre,) = [r for r in records if r["action"] == "preempt"]
    assert pre["job"].split("/")[1] not in pods  # evicted: gone
    assert pods["short"]["spec"]["nodeName"] == pre["nodes"][0]
