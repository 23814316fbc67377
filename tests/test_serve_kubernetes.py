"""serve kubernetes against the in-memory API server: binding, gangs, shares, reasons, faults."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from kube_objects import node, pod
from schedlab.errors import InputError
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.kubernetes.api import KubeError
from schedlab.serve.kubernetes.fake import FakeKube
from schedlab.serve.kubernetes.quantity import parse_quantity
from schedlab.serve.kubernetes.server import KubeConfig, KubeServer

T0 = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def make(
    api: FakeKube, tmp_path: Path, clock: Clock | None = None, identity: str = "a", **kw: object
) -> KubeServer:
    config = KubeConfig(policy=str(kw.pop("policy", "fifo")), identity=identity, **kw)  # type: ignore[arg-type]
    server = KubeServer(
        api, config, Journal(tmp_path / f"{identity}.jsonl"), clock=clock or Clock(), watch=False
    )
    server.start_watches()
    return server


def cycle(server: KubeServer):  # type: ignore[no-untyped-def]
    for cache in (server.pods, server.nodes, server.groups):
        if cache is not None:
            cache.run_once()
    report = server.cycle()
    server.binder.flush_events()  # Events go out from a thread of their own
    return report


def records(server: KubeServer, action: str | None = None) -> list[dict]:
    server.journal.sync()
    assert server.journal.path is not None
    return [r for r in read_journal(server.journal.path) if action is None or r["action"] == action]


def cluster(n: int = 2, gpus: int = 8, **kw: object) -> FakeKube:
    api = FakeKube(podgroups=bool(kw.pop("podgroups", True)))
    for i in range(1, n + 1):
        api.add_node(node(f"node{i}", gpus, **kw))  # type: ignore[arg-type]
    return api


def bound(api: FakeKube) -> dict[str, str]:
    return {k: p["spec"]["nodeName"] for k, p in api.pods.items() if p["spec"].get("nodeName")}


# -- quantities ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        ("0.1", Fraction(1, 10)),
        ("64Gi", Fraction(64 * 2**30)),
        ("1.5Gi", Fraction(1610612736)),
        ("1k", Fraction(1000)),
        ("2e3", Fraction(2000)),
        ("100M", Fraction(10**8)),
        ("250u", Fraction(250, 10**6)),
    ],
)
def test_quantities_parse_exactly(text: str, value: Fraction) -> None:
    assert parse_quantity(text, "x") == value


@pytest.mark.parametrize("text", ["12Gx", "", "Gi", "1.2.3", "-1", "1 Gi", "0x10"])
def test_malformed_quantities_are_refused_by_name(text: str) -> None:
    with pytest.raises(InputError, match="pod p cpu"):
        parse_quantity(text, "pod p cpu")


# -- binding ------------------------------------------------------------------------------------
def test_pods_are_bound_once_with_their_devices(tmp_path: Path) -> None:
    api = cluster(2)
    api.add_pod(pod("a", 8))
    api.add_pod(pod("b", 4, created="2026-01-01T00:00:01Z"))
    api.add_pod(pod("c", 2, created="2026-01-01T00:00:02Z"))
    server = make(api, tmp_path, placement="bestfit")
    report = cycle(server)
    assert report.started == 3
    # bestfit: a fills node1; b and c share node2 (the fuller node after b).
    assert bound(api) == {"default/a": "node1", "default/b": "node2", "default/c": "node2"}
    notes = {
        k: p["metadata"]["annotations"]["schedlab.io/gpu-devices"] for k, p in api.pods.items()
    }
    assert notes == {"default/a": "0,1,2,3,4,5,6,7", "default/b": "0,1,2,3", "default/c": "4,5"}
    assert cycle(server).started == 0  # nothing is bound twice
    assert sorted(c for c in api.calls if c[1].endswith("/binding")) == [
        ("POST", "/api/v1/namespaces/default/pods/a/binding"),
        ("POST", "/api/v1/namespaces/default/pods/b/binding"),
        ("POST", "/api/v1/namespaces/default/pods/c/binding"),
    ]
    starts = records(server, "start")
    assert [(r["job"], r["nodes"], r["gpu_idx"]) for r in starts] == [
        ("default/a", ["node1"], [[0, 1, 2, 3, 4, 5, 6, 7]]),
        ("default/b", ["node2"], [[0, 1, 2, 3]]),
        ("default/c", ["node2"], [[4, 5]]),
    ]


def test_pods_of_other_schedulers_are_counted_never_moved(tmp_path: Path) -> None:
    api = cluster(2)
    api.add_pod(pod("theirs", 6, scheduler="default-scheduler", node="node1", phase="Running"))
    api.add_pod(pod("mine", 4))
    server = make(api, tmp_path)
    cycle(server)
    assert bound(api) == {"default/theirs": "node1", "default/mine": "node2"}
    assert not [c for c in api.calls if "theirs" in c[1]]


def test_cpu_and_memory_are_planned(tmp_path: Path) -> None:
    api = cluster(2, cpu="8", memory="64Gi")
    api.add_pod(pod("big-cpu", 1, cpu="6"))
    api.add_pod(pod("more-cpu", 1, cpu="3", created="2026-01-01T00:00:01Z"))
    server = make(api, tmp_path, placement="bestfit")
    cycle(server)
    placed = bound(api)
    assert placed["default/big-cpu"] != placed["default/more-cpu"]  # 6 + 3 > 8 CPUs


def test_gang_waits_for_min_member_then_binds_all(tmp_path: Path) -> None:
    api = cluster(4)
    api.add_pod(pod("w-0", 8, group="w", min_member=3))
    api.add_pod(pod("w-1", 8, group="w", min_member=3))
    server = make(api, tmp_path)
    cycle(server)
    assert bound(api) == {}
    reason = api.pods["default/w-0"]["status"]["conditions"][0]
    assert reason["reason"] == "Unschedulable"
    assert "2 of its 3 pods (minMember) exist" in reason["message"]
    api.add_pod(pod("w-2", 8, group="w", min_member=3))
    cycle(server)
    assert sorted(bound(api).values()) == ["node1", "node2", "node3"]
    (start,) = records(server, "start")
    assert start["job"] == "default/podgroup/w" and start["gpus"] == 24


def test_gang_min_member_from_the_podgroup_object(tmp_path: Path) -> None:
    api = cluster(2)
    api.add_podgroup("default", "pg", 2)
    api.add_pod(pod("p-0", 2, group="pg"))
    server = make(api, tmp_path)
    cycle(server)
    assert bound(api) == {}
    api.add_pod(pod("p-1", 2, group="pg"))
    cycle(server)
    assert len(bound(api)) == 2


def test_gang_that_does_not_fit_binds_nothing(tmp_path: Path) -> None:
    api = cluster(2)
    api.add_pod(pod("x", 4, scheduler="other", node="node1", phase="Running"))
    for k in range(2):
        api.add_pod(pod(f"g-{k}", 8, group="g", min_member=2))
    server = make(api, tmp_path)
    cycle(server)
    assert bound(api) == {"default/x": "node1"}


def test_fractional_pods_share_gpus(tmp_path: Path) -> None:
    api = cluster(1, gpus=2)
    for k in range(4):
        api.add_pod(pod(f"f{k}", milli=500, created=f"2026-01-01T00:00:0{k}Z"))
    api.add_pod(pod("f4", milli=500, created="2026-01-01T00:00:05Z"))
    server = make(api, tmp_path, placement="bestfit")
    cycle(server)
    placed = bound(api)
    assert len(placed) == 4  # two halves on each of the two GPUs; the fifth waits
    devices = sorted(
        api.pods[k]["metadata"]["annotations"]["schedlab.io/gpu-devices"] for k in placed
    )
    assert devices == ["0", "0", "1", "1"]
    waiting = api.pods["default/f4"]["status"]["conditions"][-1]
    assert waiting["message"] == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."


def test_node_selector_taints_and_cordon(tmp_path: Path) -> None:
    api = FakeKube()
    api.add_node(node("node1", labels={"pool": "a"}))
    api.add_node(node("node2", labels={"pool": "b"}))
    api.add_node(node("node3", taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"}]))
    api.add_node(node("node4", unschedulable=True))
    api.add_pod(pod("want-b", 1, selector={"pool": "b"}))
    tol = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    api.add_pod(pod("tolerant", 8, tolerations=tol, selector={"kubernetes.io/hostname": "node3"}))
    api.add_pod(pod("plain", 8, created="2026-01-01T00:00:01Z"))
    api.nodes["node3"]["metadata"]["labels"]["kubernetes.io/hostname"] = "node3"
    server = make(api, tmp_path)
    cycle(server)
    placed = bound(api)
    assert placed["default/want-b"] == "node2"
    assert placed["default/tolerant"] == "node3"
    assert placed["default/plain"] == "node1"  # node3 tainted, node4 cordoned, node2 partly used


def test_not_ready_node_lends_nothing(tmp_path: Path) -> None:
    api = FakeKube()
    api.add_node(node("node1", ready=False))
    api.add_pod(pod("p", 1))
    server = make(api, tmp_path)
    cycle(server)
    assert bound(api) == {}
    message = api.pods["default/p"]["status"]["conditions"][-1]["message"]
    assert message == "0/1 nodes are available: 1 node(s) were not ready."


# -- reasons --------------------------------------------------------------------------------
def test_reasons_and_events_only_when_they_change(tmp_path: Path) -> None:
    api = cluster(1)
    api.add_pod(pod("big", 8))
    api.add_pod(pod("waits", 4, created="2026-01-01T00:00:01Z"))
    server = make(api, tmp_path)
    cycle(server)
    patches = [
        c for c in api.calls if c == ("PATCH", "/api/v1/namespaces/default/pods/waits/status")
    ]
    assert len(patches) == 1
    for _ in range(3):
        cycle(server)
    patches = [
        c for c in api.calls if c == ("PATCH", "/api/v1/namespaces/default/pods/waits/status")
    ]
    assert len(patches) == 1
    kinds = sorted((e["involvedObject"]["name"], e["reason"]) for e in api.events)
    assert kinds == [("big", "Scheduled"), ("waits", "FailedScheduling")]


# -- bad input and faults ---------------------------------------------------------------------
def test_malformed_quantity_is_journaled_and_never_bound(tmp_path: Path) -> None:
    api = cluster(1)
    api.add_pod(pod("bad", 1, memory="12Gx"))
    server = make(api, tmp_path)
    cycle(server)
    cycle(server)
    assert bound(api) == {}
    (warning,) = records(server, "warning")
    assert warning["job"] == "default/bad"
    assert "memory request: malformed quantity '12Gx'" in warning["reason"]
    condition = api.pods["default/bad"]["status"]["conditions"][-1]
    assert "malformed quantity '12Gx'" in condition["message"]


def test_pod_larger_than_any_node_is_rejected_with_a_reason(tmp_path: Path) -> None:
    api = cluster(2)
    api.add_pod(pod("huge", 16))
    server = make(api, tmp_path)
    cycle(server)
    cycle(server)
    (reject,) = records(server, "reject")
    assert reject["reason"] == "asks for 16 GPUs per node; the largest node has 8"
    assert bound(api) == {}


def test_node_without_gpu_label_counts_as_unnamed_gpus(tmp_path: Path) -> None:
    api = FakeKube()
    bare = node("node1")
    del bare["metadata"]["labels"]["nvidia.com/gpu.product"]
    api.add_node(bare)
    api.add_pod(pod("p", 2))
    server = make(api, tmp_path)
    cycle(server)
    assert bound(api) == {"default/p": "node1"}
    assert server.serve_record()["node_models"] == ["GPU"]


def test_bind_conflict_is_accepted_not_retried(tmp_path: Path) -> None:
    api = cluster(1)
    api.add_pod(pod("p", 1))
    api.fail("POST", "pods/p/binding", KubeError(409, "POST …/binding: 409 Conflict"))
    server = make(api, tmp_path)
    cycle(server)
    (err,) = records(server, "error")
    assert err["job"] == "default/p" and "conflict: already bound" in err["reason"]
    assert len([c for c in api.calls if c[1].endswith("/binding")]) == 1


def test_pod_deleted_before_bind_is_journaled(tmp_path: Path) -> None:
    api = cluster(1)
    api.add_pod(pod("p", 1))
    server = make(api, tmp_path)
    server.pods.run_once()
    api.delete_pod("default/p")  # gone from the API server, still in the cache
    server.cycle()
    (err,) = records(server, "error")
    assert "deleted between the decision and the bind" in err["reason"]


def test_gang_bind_failing_midway_keeps_bound_pods_and_completes_next(tmp_path: Path) -> None:
    api = cluster(3)
    for k in range(3):
        api.add_pod(pod(f"g-{k}", 8, group="g", min_member=3))
    api.fail("POST", "pods/g-1/binding", KubeError(500, "POST …: 500 InternalError"))
    server = make(api, tmp_path)
    cycle(server)
    assert sorted(bound(api)) == ["default/g-0", "default/g-2"]
    (start,) = records(server, "start")
    assert start["partial"] and list(start["failed"]) == ["default/g-1"]
    cycle(server)
    assert sorted(bound(api)) == ["default/g-0", "default/g-1", "default/g-2"]
    assert len(set(bound(api).values())) == 3  # the rest went to the node left


def test_watch_410_relists_and_is_journaled(tmp_path: Path) -> None:
    api = cluster(1)
    server = make(api, tmp_path)
    cycle(server)
    api.add_pod(pod("p", 1))
    api.compact()
    server.pods.run_once()  # 410: the cache lists again
    report = cycle(server)
    assert report.started == 1
    (note,) = [r for r in records(server, "warning") if "watch of pods" in r["reason"]]
    assert note["reason"] == "watch of pods expired (410 Gone): listed again"


def test_unreachable_or_unauthorised_api_server_is_one_line(tmp_path: Path) -> None:
    api = cluster(1)
    api.fail("LIST", "/api/v1/pods", KubeError(401, "LIST /api/v1/pods: 401 Unauthorized"))
    config = KubeConfig(policy="fifo", identity="a")
    server = KubeServer(api, config, Journal(tmp_path / "j.jsonl"), watch=False)
    with pytest.raises(KubeError, match="401"):
        server.start_watches()


def test_missing_podgroup_crd_is_a_warning(tmp_path: Path) -> None:
    api = cluster(2, podgroups=False)
    api.add_pod(pod("g-0", 1, group="g", min_member=2))
    api.add_pod(pod("g-1", 1, group="g", min_member=2))
    server = make(api, tmp_path)
    cycle(server)
    assert len(bound(api)) == 2
    (warning,) = records(server, "warning")
    assert "PodGroup CRD" in warning["reason"]


# -- one active instance --------------------------------------------------------------------
def test_standby_waits_on_the_lease_and_takes_over_when_it_expires(tmp_path: Path) -> None:
    api = cluster(1)
    clock = Clock()
    first = make(api, tmp_path, clock, identity="first", lease_seconds=10)
    second = make(api, tmp_path, clock, identity="second", lease_seconds=10)
    cycle(first)
    api.add_pod(pod("p", 1))
    assert cycle(second).started == 0  # standby
    clock.t += 5
    cycle(first)  # renews
    clock.t += 8
    assert cycle(second).started == 0  # renewed 8 s ago: still the first's
    clock.t += 3  # the first stopped renewing 11 s ago
    api.add_pod(pod("q", 1))
    assert cycle(second).started == 1
    assert [r["action"] for r in records(second) if r["action"] in ("lead", "standby")] == [
        "standby",
        "lead",
    ]
    assert api.leases["default/schedlab"]["spec"]["holderIdentity"] == "second"


def test_restart_binds_nothing_twice_and_journals_finishes(tmp_path: Path) -> None:
    api = cluster(1)
    api.add_pod(pod("p", 2))
    first = make(api, tmp_path, identity="a")
    cycle(first)
    api.update_pod("default/p", {"status": {"phase": "Succeeded"}})
    again = make(api, tmp_path, identity="a")  # same journal, as after SIGKILL
    again.lease.identity = "a"
    cycle(again)
    assert len([c for c in api.calls if c[1].endswith("/binding")]) == 1
    (finish,) = records(again, "finish")
    assert finish["job"] == "default/p" and finish["state"] == "Succeeded" and finish["recovered"]


def test_shadow_binds_nothing(tmp_path: Path) -> None:
    api = cluster(1)
    api.add_pod(pod("p", 1))
    server = make(api, tmp_path, shadow=True)
    cycle(server)
    assert bound(api) == {}
    assert records(server, "start")[0]["job"] == "default/p"


def test_preemption_evicts_through_the_eviction_api(tmp_path: Path) -> None:
    api = cluster(1)
    api.add_pod(pod("low", 8, node="node1", phase="Running", created="2026-01-01T00:00:00Z"))
    api.pods["default/low"]["status"]["startTime"] = "2027-01-15T07:59:50Z"  # T0 - 10 s
    api.add_pod(pod("short", 8, created="2026-01-01T00:00:05Z", deadline=60))
    server = make(api, tmp_path, policy="srtf", grace=5)
    cycle(server)
    assert "default/low" not in api.pods
    (pre,) = records(server, "preempt")
    assert pre["job"] == "default/low" and pre["nodes"] == ["node1"]
    assert [c for c in api.calls if c[1].endswith("/eviction")] == [
        ("POST", "/api/v1/namespaces/default/pods/low/eviction")
    ]


def test_pdb_blocks_eviction(tmp_path: Path) -> None:
    api = cluster(1)
    api.add_pod(pod("low", 8, node="node1", phase="Running"))
    api.pdb_blocked.add("default/low")
    api.add_pod(pod("short", 8, created="2026-01-01T00:00:05Z", deadline=60))
    server = make(api, tmp_path, policy="srtf")
    cycle(server)
    cycle(server)  # still forbidden: journaled once
    assert "default/low" in api.pods
    (protect,) = records(server, "protect")
    assert "PodDisruptionBudget" in protect["reason"]
    assert bound(api) == {"default/low": "node1"}


def test_takeover_journals_the_runs_it_did_not_start(tmp_path: Path) -> None:
    api = cluster(2)
    clock = Clock()
    api.add_pod(pod("p", 2))
    api.add_pod(pod("g-0", 1, group="g", min_member=2))
    api.add_pod(pod("g-1", 1, group="g", min_member=2))
    first = make(api, tmp_path, clock, identity="first", lease_seconds=4)
    cycle(first)
    assert len(bound(api)) == 3
    clock.t += 5  # the first was killed: its Lease expired
    second = make(api, tmp_path, clock, identity="second", lease_seconds=4)
    cycle(second)
    starts = records(second, "start")
    assert [(r["job"], r["pods"], r["recovered"]) for r in starts] == [
        ("default/p", ["default/p"], True),
        ("default/podgroup/g", ["default/g-0", "default/g-1"], True),
    ]
    api.update_pod("default/p", {"status": {"phase": "Succeeded"}})
    cycle(second)
    (finish,) = records(second, "finish")
    assert finish["job"] == "default/p" and finish["state"] == "Succeeded"
    assert len([c for c in api.calls if c[1].endswith("/binding")]) == 3


# -- serve check ----------------------------------------------------------------------------
def busy_run(tmp_path: Path, policy: str = "fifo", placement: str = "bestfit") -> Path:
    """Arrivals over several cycles, pods finishing, a gang, shares, a node selector."""
    api = cluster(3)
    api.nodes["node2"]["metadata"]["labels"]["pool"] = "b"
    clock = Clock()
    server = make(api, tmp_path, clock, policy=policy, placement=placement)
    server._write(None, "serve", **server.serve_record())
    sizes = [8, 4, 2, 1, 4, 8, 2, 2, 1, 4]
    for step in range(6):
        for k in range(step, len(sizes), 3):
            name = f"s{step}-{k}"
            stamp = f"2027-01-15T08:00:{10 + step:02d}Z"
            api.add_pod(pod(name, sizes[k], created=stamp, deadline=60 * (k + 1)))
        if step == 1:
            for k in range(3):
                api.add_pod(
                    pod(f"g-{k}", 2, group="g", min_member=3, created="2027-01-15T08:00:11Z")
                )
            api.add_pod(pod("sel", 2, selector={"pool": "b"}, created="2027-01-15T08:00:11Z"))
            api.add_pod(pod("f", milli=300, created="2027-01-15T08:00:11Z"))
        cycle(server)
        clock.t += 10
        for key, p in list(api.pods.items()):
            if p["spec"].get("nodeName") and (hash(key) + step) % 2 == 0:
                api.update_pod(key, {"status": {"phase": "Succeeded"}})
    server.journal.sync()
    assert server.journal.path is not None
    return server.journal.path


@pytest.mark.parametrize(
    ("policy", "placement"), [("fifo", "bestfit"), ("sjf", "gpu-packing"), ("fifo", "fgd")]
)
def test_check_rederives_every_start(tmp_path: Path, policy: str, placement: str) -> None:
    from schedlab.serve.kubernetes.check import check

    path = busy_run(tmp_path, policy, placement)
    result = check(path)
    starts = [r for r in read_journal(path) if r["action"] == "start"]
    assert result.starts == len(starts) > 10
    assert result.agree, result.mismatches


def test_check_finds_a_start_the_policy_would_not_make(tmp_path: Path) -> None:
    from schedlab.serve.kubernetes.check import check

    path = busy_run(tmp_path)
    lines = path.read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if '"action":"start"' in ln and '"node1"' in ln)
    lines[k] = lines[k].replace('"node1"', '"node3"', 1)
    path.write_text("\n".join(lines) + "\n")
    result = check(path)
    assert not result.agree
    assert result.mismatches[0].live == ["node3"] or "node3" in (result.mismatches[0].live or [])


# -- the network from node labels -------------------------------------------------------------
def labelled(n: int = 4, leaf_nodes: int = 2) -> FakeKube:
    api = FakeKube()
    for i in range(1, n + 1):
        labels = {"schedlab.io/leaf": f"leaf{(i - 1) // leaf_nodes + 1}", "schedlab.io/spine": "s"}
        api.add_node(node(f"node{i}", labels=labels))
    return api


def test_network_placement_keeps_a_gang_under_one_leaf(tmp_path: Path) -> None:
    from schedlab.serve.kubernetes.check import check

    api = labelled()
    # node1 (leaf1) is half taken: a gang of two 8-GPU pods fits only under leaf2 in one leaf.
    api.add_pod(pod("x", 4, scheduler="other", node="node1", phase="Running"))
    for k in range(2):
        api.add_pod(pod(f"g-{k}", 8, group="g", min_member=2))
    server = make(api, tmp_path, placement="locality")
    server._write(None, "serve", **server.serve_record())
    cycle(server)
    assert sorted(v for k, v in bound(api).items() if "/g-" in k) == ["node3", "node4"]
    (serve,) = records(server, "serve")
    assert serve["topology"] == "node labels schedlab.io/leaf,schedlab.io/spine"
    assert "[[switches]]" in serve["topology_toml"]
    # serve check assumes no other scheduler's pods (the journal cannot say): here it
    # re-derives the start on the empty cluster, under leaf1, and says they differ.
    (miss,) = check(server.journal.path).mismatches  # type: ignore[arg-type]
    assert (miss.live, miss.derived) == (["node3", "node4"], ["node1", "node2"])


def test_check_rederives_network_placements(tmp_path: Path) -> None:
    from schedlab.serve.kubernetes.check import check

    api = labelled(6, leaf_nodes=3)
    clock = Clock()
    server = make(api, tmp_path, clock, placement="locality")
    server._write(None, "serve", **server.serve_record())
    for step in range(4):
        for k in range(2 + step % 2):
            api.add_pod(
                pod(f"s{step}g-{k}", 4 + 4 * (step % 2), group=f"s{step}g", min_member=2 + step % 2)
            )
        api.add_pod(pod(f"s{step}p", 2 + step, created=f"2027-01-15T08:00:0{step}Z"))
        cycle(server)
        clock.t += 5
    result = check(server.journal.path)  # type: ignore[arg-type]
    assert result.starts >= 4 and result.agree, result.mismatches


def test_network_placement_without_labels_is_refused(tmp_path: Path) -> None:
    api = cluster(2)
    server = make(api, tmp_path, placement="locality")
    with pytest.raises(InputError, match=r"node node1 has no label schedlab\.io/leaf"):
        server.serve_record()


# -- a run as a replay workload -------------------------------------------------------------
def unbroken_run(tmp_path: Path) -> KubeServer:
    """Arrivals over cycles and pods ending, whole GPUs and gangs, no other scheduler; a
    gang's pods end together (a replay job ends as one)."""
    api = cluster(3)
    clock = Clock()
    server = make(api, tmp_path, clock, placement="bestfit")
    server._write(None, "serve", **server.serve_record())
    sizes = [8, 4, 2, 1, 4, 8, 2, 2, 1, 4, 1, 2]
    ends: dict[str, float] = {}

    def step_on() -> None:
        cycle(server)
        for r in records(server, "start"):
            for p in r["pods"]:
                ends.setdefault(p, clock.t + 10 * (1 + sum(map(ord, r["job"])) % 3))
        clock.t += 5
        for key, end in ends.items():
            if end <= clock.t and api.pods[key]["status"]["phase"] != "Succeeded":
                api.update_pod(key, {"status": {"phase": "Succeeded"}})

    for step in range(10):
        for k in range(step % 3 + 1):
            name = f"s{step}-{k}"
            stamp = f"2027-01-15T08:00:{step:02d}Z"
            api.add_pod(pod(name, sizes[(step + k) % len(sizes)], created=stamp))
        if step == 2:
            for m in range(2):
                api.add_pod(
                    pod(f"g-{m}", 4, group="g", min_member=2, created="2027-01-15T08:00:02Z")
                )
        step_on()
    for _ in range(30):  # until every pod has ended
        step_on()
    cycle(server)
    return server


def test_import_kubernetes_replays_to_the_same_placements(tmp_path: Path, capsys) -> None:
    from schedlab.cli import main
    from schedlab.serve.compare import replay_starts

    server = unbroken_run(tmp_path)
    path = server.journal.path
    assert path is not None
    out = tmp_path / "run.csv"
    assert main(["trace", "import-kubernetes", "--journal", str(path), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "--cluster 3x8:A100-80G" in err and "--policy fifo" in err
    (serve,) = records(server, "serve")
    live = {r["job"]: [tuple(r["nodes"])] for r in records(server, "start")}
    replayed = replay_starts(out, serve)
    assert len(live) >= 15
    assert replayed == live


def test_import_kubernetes_refuses_a_slurm_journal(tmp_path: Path) -> None:
    from schedlab.cli import main

    path = tmp_path / "j.jsonl"
    path.write_text('{"time": 1, "cycle": 0, "job": null, "action": "serve", "policy": "fifo"}\n')
    assert (
        main(
            ["trace", "import-kubernetes", "--journal", str(path), "--out", str(tmp_path / "o.csv")]
        )
        == 2
    )
    assert not (tmp_path / "o.csv").exists()


def test_a_checkpointing_job_keeps_its_credit_through_an_eviction(tmp_path: Path) -> None:
    api = cluster(1)
    clock = Clock()
    low = pod(
        "low", 8, node="node1", phase="Running", annotations={"schedlab.io/checkpoint": "true"}
    )
    api.add_pod(low)
    server = make(api, tmp_path, clock, policy="srtf")
    cycle(server)  # recovered: bound before this journal, began at the first cycle
    clock.t += 30
    api.add_pod(pod("short", 8, created="2027-01-15T08:00:20Z", deadline=60))
    cycle(server)
    (pre,) = records(server, "preempt")
    assert (pre["attained"], pre["executed"]) == (240.0, 30.0)  # 8 GPUs × 30 s
    # Its controller makes it again under the same name: it continues from its credit.
    api.add_pod(pod("low", 8, annotations={"schedlab.io/checkpoint": "true"}))
    again = make(api, tmp_path, clock)  # a restart takes the credit back from the journal
    assert again._credit == {"default/low": (240.0, 30.0)}
    view = again.view()
    i = [j.key for j in view.jobs].index("default/low")
    assert view.snapshot.runtime.attained[i] == 240.0


def test_status_reports_the_lease_pods_reasons_and_queue(tmp_path: Path) -> None:
    from schedlab.serve.kubernetes.status import gather, render, running

    api = cluster(1)
    clock = Clock()
    api.add_pod(pod("big", 8))
    api.add_pod(pod("long", 4, created="2027-01-15T08:00:01Z"))
    api.add_pod(pod("short", 4, created="2027-01-15T08:00:02Z", deadline=60))
    server = make(api, tmp_path, clock, policy="sjf")
    server._write(None, "serve", **server.serve_record())
    cycle(server)
    server.journal.sync()
    status = gather(
        api, "schedlab", ("default", "schedlab"), server.journal.path, None, clock.t + 1
    )
    assert running(status)
    assert status["lease"]["holder"] == "a"
    assert status["pods"] == {"bound, Pending": 1, "waiting": 2}
    # sjf bound the 60 s pod; of the two without an estimate, the older first (big blocks).
    assert bound(api) == {"default/short": "node1"}
    assert [row["job"] for row in status["queue"]] == ["default/big", "default/long"]
    text = "\n".join(render(status))
    assert "lease default/schedlab: held by a" in text
    assert "1  0/1 nodes are available: 1 Insufficient nvidia.com/gpu.  [default/big]" in text
    assert "waiting for policy sjf to place it" in text
    later = gather(api, "schedlab", ("default", "schedlab"), None, None, clock.t + 60)
    assert not running(later)  # nobody renewed it for more than its 15 s


def test_unreachable_api_server_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    from schedlab.cli import main

    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:9', "
        "insecure-skip-tls-verify: true}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    journal = tmp_path / "j.jsonl"
    argv = ["serve", "kubernetes", "--kubeconfig", str(config), "--policy", "fifo"]
    assert main([*argv, "--journal", str(journal), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot reach https://127.0.0.1:9" in err[0]


def test_kubeconfig_with_an_exec_plugin_is_refused_by_name(tmp_path: Path, capsys) -> None:
    from schedlab.cli import main

    config = tmp_path / "kubeconfig"
    config.write_text(
        "current-context: c\nclusters: [{name: k, cluster: {server: 'https://x:6443'}}]\n"
        "users: [{name: u, user: {exec: {command: aws}}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    assert main(["serve", "kubernetes", "--kubeconfig", str(config), "--policy", "fifo"]) == 2
    assert "authenticates with 'exec'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--metrics-port", "99999"], "'--metrics-port' must be a port in 1..65535 (got 99999)"),
        (["--metrics-port", "0"], "'--metrics-port' must be a port in 1..65535 (got 0)"),
        (["--seed", "-1"], "'--seed' must be ≥ 0 (got -1)"),
        (["--lease-seconds", "inf"], "'--lease-seconds' must be ≥ 2 and finite (got inf)"),
        (["--listen", "127.0.0.1:8888"], "'--listen' is where '--extender' listens"),
    ],
)
def test_options_are_checked_before_the_cluster_is_asked(
    extra: list[str], message: str, tmp_path: Path, capsys
) -> None:
    from schedlab.cli import main

    config = tmp_path / "kubeconfig"  # a server nobody answers at: checks come first
    config.write_text(
        "current-context: c\nclusters: [{name: k, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    argv = ["serve", "kubernetes", "--kubeconfig", str(config), "--policy", "fifo", "--quiet"]
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_a_kubeconfig_not_in_utf8_or_not_yaml_is_one_line(tmp_path: Path, capsys) -> None:
    from schedlab.cli import main

    config = tmp_path / "kubeconfig"
    config.write_bytes(b"current-context: \xff\xfe\n")
    assert main(["serve", "kubernetes", "--kubeconfig", str(config), "--policy", "fifo"]) == 2
    assert capsys.readouterr().err.strip() == f"schedlab: error: not a UTF-8 text file at {config}"
    config.write_text("clusters: [\n  - {name: k\n")
    assert main(["serve", "kubernetes", "--kubeconfig", str(config), "--policy", "fifo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a valid kubeconfig" in err[0]


def test_a_start_that_would_over_commit_is_never_bound(tmp_path: Path) -> None:
    """Whatever the policy says: the binder takes every start on a ledger of the cluster as
    the API objects show it, and skips one that does not fit, calling nothing."""
    from schedlab.serve.kubernetes.binder import Binder
    from schedlab.serve.kubernetes.objects import parse_pod

    api = cluster(1)
    api.add_pod(pod("theirs", 6, scheduler="other", node="node1", phase="Running"))
    api.add_pod(pod("p", 4))
    server = make(api, tmp_path)
    view = server.view()
    written: list[dict] = []
    binder = Binder(api, lambda: {"time": 0, "cycle": 1}, written.append)
    ledger = view.snapshot.state.copy()
    p = parse_pod(api.pods["default/p"])
    records_ = binder.bind_jobs([("default/p", [p], ((0, (0, 1, 2, 3)),), {})], ["node1"], ledger)
    assert [r["action"] for r in records_] == ["skip"]
    assert "would over-commit" in records_[0]["reason"]
    assert not [c for c in api.calls if c[1].endswith("/binding")]
