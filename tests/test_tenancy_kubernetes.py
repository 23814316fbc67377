"""Tenancy in ``schedlab serve kubernetes`` on a fake API server: a pod's queue from its labels
or namespace, a queue held to its limit while it borrows, reclaim through the Eviction API when
the lender's pods arrive, ``serve status`` rows, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from kube_objects import node, pod
from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.kubernetes.fake import FakeKube
from schedlab.serve.kubernetes.objects import parse_pod
from schedlab.serve.kubernetes.server import KubeConfig, KubeServer
from schedlab.serve.kubernetes.status import gather, render
from schedlab.tenancy.replay import TenancySpec
from tenancy_cases import LIVE_QUEUES
from test_serve_kubernetes import Clock, cycle  # the fake-API helpers


def cluster() -> FakeKube:
    api = FakeKube()
    for i in range(1, 5):
        api.add_node(node(f"node{i}", 8))
    return api


def make(api: FakeKube, tmp_path: Path, clock: Clock, queues: str = LIVE_QUEUES) -> KubeServer:
    path = tmp_path / "queues.toml"
    path.write_text(queues)
    config = KubeConfig(policy="fifo", identity="x", tenancy=TenancySpec(queues=str(path)))
    server = KubeServer(api, config, Journal(tmp_path / "j.jsonl"), clock=clock, watch=False)
    server.start_watches()
    server._write(None, "serve", **server.serve_record())  # as run() does first
    return server


def held(api: FakeKube, queue: str) -> int:
    """GPUs bound to pods of ``queue`` that have not finished."""
    pods = [parse_pod(p) for p in api.pods.values()]
    return sum(p.gpus for p in pods if p.queue == queue and p.bound and not p.terminal)


def team_pod(name: str, team: str, created: str, how: str = "label") -> dict:
    if how == "label":
        return pod(name, 8, created=created, labels={"schedlab.io/queue": team})
    if how == "kueue":
        return pod(name, 8, created=created, labels={"kueue.x-k8s.io/queue-name": team})
    return pod(name, 8, ns=team, created=created)


def test_a_queue_is_held_to_its_limit_then_loses_a_pod_to_the_lenders_queue(tmp_path: Path):
    api = cluster()
    clock = Clock()
    for k in range(4):
        api.add_pod(team_pod(f"a{k}", "a", f"2026-01-01T00:00:0{k}Z"))
    server = make(api, tmp_path, clock)
    cycle(server)
    # a borrows beyond its 8 deserved GPUs up to its limit of 24; its fourth pod waits on a
    # free node.
    assert held(api, "a") == 24
    assert not api.pods["default/a3"]["spec"].get("nodeName")
    clock.t += 5
    cycle(server)
    assert held(api, "a") == 24 and not records(server, "preempt")
    # b's pods arrive (queue named by Kueue's label): one takes the free node, the other
    # reclaims one of a's pods (a is over its fair share of 16).
    api.add_pod(team_pod("b0", "b", "2026-01-01T00:01:00Z", "kueue"))
    api.add_pod(team_pod("b1", "b", "2026-01-01T00:01:01Z", "kueue"))
    clock.t += 5
    cycle(server)
    (pre,) = records(server, "preempt")
    victim = pre["job"]
    assert victim in {"default/a0", "default/a1", "default/a2"}
    assert victim not in api.pods  # evicted
    clock.t += 5
    cycle(server)
    assert held(api, "b") == 16 and held(api, "a") == 16
    # Its controller makes the victim again: it waits in a's queue, nothing is reclaimed back.
    name = victim.split("/")[1]
    api.add_pod(team_pod(name, "a", "2026-01-01T00:00:00Z"))
    clock.t += 5
    cycle(server)
    assert not api.pods[victim]["spec"].get("nodeName")
    assert len(records(server, "preempt")) == 1
    status = gather(api, "schedlab", ("default", "schedlab"), server.journal.path, None, clock.t)
    rows = {r["queue"]: r for r in status["tenancy"]}
    assert rows["a"]["deserved"]["gpu"] == 8 and rows["a"]["alloc"]["gpu"] == 16
    assert rows["a"]["fair_share"]["gpu"] == 16 and rows["a"]["pending"]["gpu"] == 16
    assert rows["b"]["alloc"]["gpu"] == 16 and rows["b"]["pending"]["gpu"] == 0
    text = "\n".join(render(status))
    assert "queues (GPUs):" in text and "borrowed" in text
    # b's pods end: a's waiting pods take the room again, still within its limit.
    for key in ("default/b0", "default/b1"):
        api.update_pod(key, {"status": {"phase": "Succeeded"}})
    clock.t += 5
    cycle(server)
    assert held(api, "a") == 24 and held(api, "b") == 0


def records(server: KubeServer, action: str) -> list[dict]:
    server.journal.sync()
    assert server.journal.path is not None
    return [r for r in read_journal(server.journal.path) if r["action"] == action]


def test_namespace_is_the_queue_without_a_label(tmp_path: Path):
    api = cluster()
    clock = Clock()
    api.add_pod(team_pod("x", "b", "2026-01-01T00:00:00Z", how="namespace"))
    server = make(api, tmp_path, clock)
    cycle(server)
    assert server.tenancy is not None
    assert server.tenancy.tenancy.tree.label(server.tenancy.tenancy.by_id["b/x"]) == "b"
    assert api.pods["b/x"]["spec"].get("nodeName")


def test_serve_record_names_the_tenancy(tmp_path: Path):
    api = cluster()
    server = make(api, tmp_path, Clock())
    record = server.serve_record()
    assert record["tenancy"]["queues"].endswith("queues.toml")
    assert record["tenancy"]["policy"] == "none"  # the file's policy applies


def test_unknown_tenant_key_is_refused(tmp_path: Path):
    with pytest.raises(InputError, match="tenant_key 'account' is not a live job attribute"):
        queues = LIVE_QUEUES.replace("[tenancy]", '[tenancy]\ntenant_key = ["account"]')
        make(cluster(), tmp_path, Clock(), queues)


def test_cli_refuses_a_bad_queue_file_before_anything_opens(tmp_path: Path, capsys):
    bad = tmp_path / "q.toml"
    bad.write_text('[[queue]]\nname = "a"\ndeserved = { gpu = -1.5 }\n')
    journal = tmp_path / "j.jsonl"
    code = main(["serve", "kubernetes", "--policy", "fifo", "--tenancy", "kai",
                 "--queues", str(bad), "--journal", str(journal)])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "q.toml" in err and "Traceback" not in err
    assert not journal.exists()


def test_cli_refuses_tenancy_with_the_extender(tmp_path: Path, capsys):
    code = main(["serve", "kubernetes", "--extender", "--tenancy", "kai"])
    assert code == 2
    assert "--extender" in capsys.readouterr().err


def test_serve_check_refuses_a_tenancy_journal(tmp_path: Path, capsys):
    api = cluster()
    api.add_pod(team_pod("a0", "a", "2026-01-01T00:00:00Z"))
    server = make(api, tmp_path, Clock())
    cycle(server)
    server.journal.close()
    assert main(["serve", "check", "--journal", str(tmp_path / "j.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "re-deriving tenancy decisions from the journal is not supported" in err


def test_a_pod_of_an_unknown_queue_is_told_why_and_the_others_are_served(tmp_path: Path):
    # LIVE_QUEUES says unknown_tenant = "error": queue c is nobody's.
    api = cluster()
    api.add_pod(team_pod("c0", "c", "2026-01-01T00:00:00Z"))
    api.add_pod(team_pod("a0", "a", "2026-01-01T00:00:01Z"))
    clock = Clock()
    server = make(api, tmp_path, clock)
    cycle(server)
    assert api.pods["default/a0"]["spec"].get("nodeName")
    assert not api.pods["default/c0"]["spec"].get("nodeName")  # left pending
    condition = api.pods["default/c0"]["status"]["conditions"][-1]
    assert condition["reason"] == "Unschedulable" and condition["status"] == "False"
    assert "belongs to tenant 'c'" in condition["message"]
    assert 'unknown_tenant = "error"' in condition["message"]
    events = [e for e in api.events if e["involvedObject"]["name"] == "c0"]
    assert [e["reason"] for e in events] == ["FailedScheduling"]
    (reject,) = records(server, "reject")
    assert reject["job"] == "default/c0" and "tenant 'c'" in reject["reason"]
    # More cycles: said once, the server keeps going, other pods keep being served.
    api.add_pod(team_pod("b0", "b", "2026-01-01T00:00:02Z"))
    for _ in range(2):
        clock.t += 5
        cycle(server)
    assert api.pods["default/b0"]["spec"].get("nodeName")
    assert len(records(server, "reject")) == 1
    assert len([e for e in api.events if e["involvedObject"]["name"] == "c0"]) == 1


def test_a_bound_pod_whose_queue_is_gone_keeps_its_node(tmp_path: Path):
    api = cluster()
    for k in range(4):
        running = team_pod(f"x{k}", "x", "2026-01-01T00:00:00Z")
        running["spec"]["nodeName"] = f"node{k + 1}"
        running["status"] = {"phase": "Running"}
        api.add_pod(running)
    api.add_pod(team_pod("a0", "a", "2026-01-01T00:00:01Z"))
    server = make(api, tmp_path, Clock())
    cycle(server)
    assert not api.pods["default/a0"]["spec"].get("nodeName")  # every node is x's
    warnings = [r for r in records(server, "warning") if "outside every queue" in r["reason"]]
    assert sorted(r["job"] for r in warnings) == [f"default/x{k}" for k in range(4)]
    cycle(server)
    assert len([r for r in records(server, "warning") if "outside" in r["reason"]]) == 4


def test_status_counts_the_served_queues_beside_a_pod_no_queue_takes(tmp_path: Path):
    api = cluster()
    api.add_pod(team_pod("c0", "c", "2026-01-01T00:00:00Z"))
    api.add_pod(team_pod("a0", "a", "2026-01-01T00:00:01Z"))
    clock = Clock()
    server = make(api, tmp_path, clock)
    cycle(server)
    status = gather(api, "schedlab", ("default", "schedlab"), server.journal.path, None, clock.t)
    rows = {r["queue"]: r for r in status["tenancy"]}
    assert rows["a"]["alloc"]["gpu"] == 8 and "c" not in rows
    (reason,) = [r for r in status["reasons"] if "tenant 'c'" in r[1]]
    assert reason[2] == ["default/c0"]
