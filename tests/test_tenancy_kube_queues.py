"""Queues read from a Kubernetes cluster's own objects (``serve kubernetes --queues-from-cluster``)
on the fake API server: Kueue ClusterQueues, LocalQueues and Cohorts, KAI Queues, namespace
ResourceQuotas; a server that holds a queue to the limit its KAI Queue sets; and a one-line
error for each kind of bad object."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kube_objects import node, pod
from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.serve.journal import Journal
from schedlab.serve.kubernetes.api import KubeError
from schedlab.serve.kubernetes.fake import FakeKube
from schedlab.serve.kubernetes.objects import parse_pod
from schedlab.serve.kubernetes.server import KubeConfig, KubeServer
from schedlab.serve.kubernetes.status import gather
from schedlab.tenancy.kube_queues import (
    CLUSTER_QUEUES,
    COHORTS,
    KAI_QUEUES,
    LOCAL_QUEUES,
    RESOURCE_QUOTAS,
    queue_specs,
    read_objects,
)
from schedlab.tenancy.replay import TenancySpec
from test_serve_kubernetes import Clock, cycle  # the fake-API helpers


def cluster_queue(name: str, gpus: Any, cohort: str = "", **extra: Any) -> dict:
    res: dict[str, Any] = {"name": "nvidia.com/gpu", "nominalQuota": gpus}
    for key in ("borrowingLimit", "lendingLimit"):
        if key in extra:
            res[key] = extra.pop(key)
    spec: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "nvidia.com/gpu"],
                "flavors": [
                    {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "16"}, res]}
                ],
            }
        ],
        **extra,
    }
    if cohort:
        spec["cohort"] = cohort
    return {"metadata": {"name": name}, "spec": spec}


def local_queue(ns: str, name: str, target: str) -> dict:
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": target}}


def kai_queue(name: str, parent: str = "", gpu: dict | None = None, **resources: dict) -> dict:
    spec: dict[str, Any] = {"resources": {"gpu": gpu if gpu is not None else {"quota": 0}}}
    spec["resources"].update(resources)
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name}, "spec": spec}


def quota(ns: str, gpus: str, name: str = "gpus") -> dict:
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {"hard": {"requests.nvidia.com/gpu": gpus}},
    }


def specs_of(objects: dict[str, list[dict]]) -> dict:
    api = FakeKube()
    for path, objs in objects.items():
        for obj in objs:
            api.add_object(path, obj)
    return {s.path: s for s in queue_specs(read_objects(api))}


def test_kueue_cluster_queues_under_cohorts_with_their_local_queues():
    specs = specs_of(
        {
            CLUSTER_QUEUES: [
                cluster_queue(
                    "team-a", 8, "org", borrowingLimit="16",
                    fairSharing={"weight": "2"},
                    preemption={"reclaimWithinCohort": "Any",
                                "borrowWithinCohort": {"policy": "LowerPriority",
                                                       "maxPriorityThreshold": 100}},
                ),
                cluster_queue("team-b", "12", "org", lendingLimit=4),
                cluster_queue("solo", 2),
            ],
            LOCAL_QUEUES: [local_queue(ns, "lq", "team-a") for ns in ("ns-a", "ns-x")],
            COHORTS: [{"metadata": {"name": "org"}, "spec": {"parent": "company"}}],
        }
    )  # fmt: skip
    a = specs["company/org/team-a"]
    assert a.deserved == {"cpu": 16.0, "gpu": 8.0}
    assert a.borrowing_limit == {"gpu": 16.0} and a.limit == {"gpu": 24.0}
    assert a.weight == 2.0
    assert a.preemption == {
        "reclaim_within_cohort": "Any",
        "borrow_within_cohort": "LowerPriority",
        "max_priority_threshold": 100,
    }
    assert {tuple(sorted(m.items())) for m in a.match} == {
        (("namespace", "ns-a"), ("queue", "lq"), ("queue_kind", "kueue")),
        (("namespace", "ns-x"), ("queue", "lq"), ("queue_kind", "kueue")),
    }
    b = specs["company/org/team-b"]
    assert b.deserved["gpu"] == 12 and b.lending_limit == {"gpu": 4.0} and b.limit == {}
    assert specs["solo"].deserved["gpu"] == 2 and "company/org" in specs


def test_a_local_queue_naming_no_cluster_queue_is_inactive():
    specs = specs_of(
        {CLUSTER_QUEUES: [cluster_queue("q", 4)], LOCAL_QUEUES: [local_queue("ns", "lq", "gone")]}
    )
    assert specs["q"].match == ()


def test_a_flavor_without_a_borrowing_limit_leaves_the_resource_unlimited():
    cq = cluster_queue("q", 4, borrowingLimit=2)
    flavors = cq["spec"]["resourceGroups"][0]["flavors"]
    flavors.append({"name": "spot", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 4}]})
    spec = specs_of({CLUSTER_QUEUES: [cq]})["q"]
    assert spec.deserved["gpu"] == 8 and spec.borrowing_limit == {} and spec.limit == {}


def test_kai_queues_by_parent_with_kai_units():
    specs = specs_of(
        {
            KAI_QUEUES: [
                kai_queue("dept", gpu={"quota": -1, "limit": -1}),
                kai_queue(
                    "team", "dept",
                    gpu={"quota": 8, "limit": 24, "overQuotaWeight": 3},
                    cpu={"quota": 16000, "limit": -1},  # millicores
                    memory={"quota": 1073.741824},  # MB: 1 GiB
                ),
            ]
        }
    )  # fmt: skip
    team = specs["dept/team"]
    assert team.deserved == pytest.approx({"gpu": 8, "cpu": 16.0, "memory": 1.0})
    assert team.limit == {"gpu": 24.0, "cpu": -1.0} and team.weight == 3.0
    assert team.match == ({"queue_kind": "kai", "queue": "team"},)
    assert specs["dept"].deserved == {"gpu": -1.0}


def test_a_namespace_resource_quota_is_a_hard_gpu_limit():
    specs = specs_of({RESOURCE_QUOTAS: [quota("ml", "16"), quota("ml", "12", "tight")]})
    assert specs["ml"].limit == {"gpu": 12.0}  # every quota holds: the smallest
    assert specs["ml"].match == ({"queue_kind": "namespace", "namespace": "ml"},)
    assert specs_of({RESOURCE_QUOTAS: [{"metadata": {"name": "cpu", "namespace": "x"},
                                        "spec": {"hard": {"cpu": "8"}}}]}) == {}  # fmt: skip


GPU_RES = "ClusterQueue 'q': spec.resourceGroups[0].flavors[0].resources[1].nominalQuota"
CYCLE = [
    {"metadata": {"name": "x"}, "spec": {"parent": "y"}},
    {"metadata": {"name": "y"}, "spec": {"parent": "x"}},
]
BAD = [
    ({CLUSTER_QUEUES: [cluster_queue("q", None)]}, f"{GPU_RES} is missing"),
    ({CLUSTER_QUEUES: [cluster_queue("q", "-2")]}, f"{GPU_RES}: negative quantity '-2'"),
    ({CLUSTER_QUEUES: [cluster_queue("q", "8Gx")]}, f"{GPU_RES}: malformed quantity '8Gx'"),
    (
        {LOCAL_QUEUES: [{"metadata": {"name": "lq", "namespace": "ns"}, "spec": {}}]},
        "LocalQueue 'ns/lq': spec.clusterQueue is missing",
    ),
    ({COHORTS: CYCLE}, "Cohort 'x': its parents form a cycle"),
    (
        {KAI_QUEUES: [kai_queue("t", "nope")]},
        "Queue 't': spec.parentQueue names 'nope', which is no Queue",
    ),
    (
        {KAI_QUEUES: [kai_queue("t", gpu={"limit": 4})]},
        "Queue 't': spec.resources.gpu.quota is missing",
    ),
    (
        {KAI_QUEUES: [kai_queue("t", gpu={"quota": -2})]},
        "Queue 't': spec.resources.gpu.quota is negative",
    ),
    (
        {KAI_QUEUES: [kai_queue("t", gpu={"quota": "lots"})]},
        "Queue 't': spec.resources.gpu.quota must be a number",
    ),
    (
        {KAI_QUEUES: [{"metadata": {"name": "t"}, "spec": {}}]},
        "Queue 't': spec.resources.gpu is missing",
    ),
    (
        {RESOURCE_QUOTAS: [quota("ns", "-1")]},
        "ResourceQuota 'ns/gpus': spec.hard['requests.nvidia.com/gpu']: negative",
    ),
    (
        {
            KAI_QUEUES: [kai_queue("team", gpu={"quota": 1})],
            CLUSTER_QUEUES: [cluster_queue("team", 1)],
        },
        "queue 'team' is both a Kueue ClusterQueue and a KAI Queue",
    ),
]


@pytest.mark.parametrize(("objects", "message"), BAD)
def test_a_bad_object_is_one_line_naming_the_object_and_field(objects, message):
    with pytest.raises(InputError) as exc:
        specs_of(objects)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_kinds_not_installed_are_absent_and_other_failures_are_errors():
    api = FakeKube()
    del api.objects[RESOURCE_QUOTAS]  # nothing answers: all 404
    assert queue_specs(read_objects(api)) == []
    api.fail("LIST", "clusterqueues", KubeError(403, "forbidden: clusterqueues"))
    with pytest.raises(InputError, match=r"cannot read queues from the cluster \(/apis/kueue"):
        read_objects(api)


# -- the server ------------------------------------------------------------------------------
def cluster(objects: dict[str, list[dict]]) -> FakeKube:
    api = FakeKube()
    for i in range(1, 5):
        api.add_node(node(f"node{i}", 8))
    for path, objs in objects.items():
        for obj in objs:
            api.add_object(path, obj)
    return api


def serve(api: FakeKube, tmp_path: Path, clock: Clock, **tenancy: Any) -> KubeServer:
    config = KubeConfig(
        policy="fifo", identity="x", tenancy=TenancySpec(**tenancy), queues_from_cluster=True
    )
    server = KubeServer(api, config, Journal(tmp_path / "j.jsonl"), clock=clock, watch=False)
    server.start_watches()
    server._write(None, "serve", **server.serve_record())
    return server


def held(api: FakeKube) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in (parse_pod(o) for o in api.pods.values()):
        if p.bound and not p.terminal:
            out[p.queue] = out.get(p.queue, 0) + p.gpus
    return out


def test_the_server_holds_queues_to_the_limits_their_objects_set(tmp_path: Path):
    # KAI Queue a: 8 deserved, limit 24; ClusterQueue b (LocalQueue lq-b): 8 nominal, may
    # borrow 8 more; the namespace team-c has a ResourceQuota of 8 GPUs.
    api = cluster(
        {
            KAI_QUEUES: [kai_queue("a", gpu={"quota": 8, "limit": 24})],
            CLUSTER_QUEUES: [cluster_queue("b", 8, "org", borrowingLimit=8)],
            LOCAL_QUEUES: [local_queue("default", "lq-b", "b")],
            RESOURCE_QUOTAS: [quota("team-c", "8")],
        }
    )
    for k in range(4):
        api.add_pod(pod(f"a{k}", 8, created=f"2026-01-01T00:00:0{k}Z",
                        labels={"kai.scheduler/queue": "a"}))  # fmt: skip
    clock = Clock()
    server = serve(api, tmp_path, clock, policy="kai")
    cycle(server)
    assert held(api) == {"a": 24}  # the fourth waits at a's limit with a node free
    assert server.tenancy is not None
    tree = server.tenancy.tenancy.tree
    assert {tree.label(q) for q in tree.leaves} == {"a", "org/b", "team-c"}
    for k in range(3):  # a's pods end; b's three and c's two arrive
        api.update_pod(f"default/a{k}", {"status": {"phase": "Succeeded"}})
        api.add_pod(pod(f"b{k}", 8, created=f"2026-01-01T00:01:0{k}Z",
                        labels={"kueue.x-k8s.io/queue-name": "lq-b"}))  # fmt: skip
    for k in range(2):
        api.add_pod(pod(f"c{k}", 8, ns="team-c", created=f"2026-01-01T00:02:0{k}Z"))
    clock.t += 5
    cycle(server)
    # a0-a2 done: a3 runs (8); b takes up to nominal + borrowing (16); c its quota (8).
    assert held(api) == {"a": 8, "lq-b": 16, "team-c": 8}
    status = gather(api, "schedlab", ("default", "schedlab"), server.journal.path, None, clock.t)
    rows = {r["queue"]: r for r in status["tenancy"]}
    assert rows["org/b"]["alloc"]["gpu"] == 16 and rows["org/b"]["deserved"]["gpu"] == 8
    assert rows["team-c"]["alloc"]["gpu"] == 8 and rows["team-c"]["pending"]["gpu"] == 8


def test_a_queue_file_lays_its_settings_over_the_cluster_queues(tmp_path: Path):
    api = cluster({KAI_QUEUES: [kai_queue("a", gpu={"quota": 8})]})
    path = tmp_path / "queues.toml"
    path.write_text('[tenancy]\npolicy = "kai"\n[[queue]]\nname = "a"\nlimit = { gpu = 8 }\n')
    for k in range(2):
        api.add_pod(pod(f"a{k}", 8, labels={"kai.scheduler/queue": "a"}))
    server = serve(api, tmp_path, Clock(), queues=str(path))
    cycle(server)
    assert held(api) == {"a": 8}


def test_cli_needs_a_share_policy_with_queues_from_the_cluster(tmp_path: Path, capsys):
    code = main(["serve", "kubernetes", "--policy", "fifo", "--queues-from-cluster",
                 "--journal", str(tmp_path / "j.jsonl")])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "'--queues-from-cluster' needs '--tenancy POLICY' or '--queues FILE'" in err
    assert not (tmp_path / "j.jsonl").exists()


def test_a_bad_object_stops_the_server_before_it_starts(tmp_path: Path):
    api = cluster({KAI_QUEUES: [kai_queue("a", "gone")]})
    with pytest.raises(InputError, match=r"Queue 'a': spec\.parentQueue names 'gone'"):
        serve(api, tmp_path, Clock(), policy="kai")


def test_the_config_file_may_ask_for_the_clusters_queues(tmp_path: Path, capsys):
    config = tmp_path / "serve.toml"
    config.write_text('policy = "fifo"\nqueues_from_cluster = true\n')
    assert main(["serve", "kubernetes", "--config", str(config)]) == 2
    assert "'--queues-from-cluster' needs '--tenancy POLICY'" in capsys.readouterr().err
    config.write_text('policy = "fifo"\nqueues_from_cluster = "yes"\n')
    assert main(["serve", "kubernetes", "--config", str(config)]) == 2
    assert "queues_from_cluster" in capsys.readouterr().err
