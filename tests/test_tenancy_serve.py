"""Tenancy in ``schedlab serve slurm`` on a fake Slurm: queues by account, reclaim as a requeue,
the queue file's per-queue status, associations from sacctmgr, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.errors import InputError
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.loop import ServeConfig, Server
from schedlab.serve.status import render_tenancy
from schedlab.tenancy.config import TenancyConfig
from schedlab.tenancy.live import association_specs, merge
from schedlab.tenancy.replay import TenancySpec
from schedlab.tenancy.tree import QueueSpec, build_tree

T0 = 1_000_000.0
QUEUES = """[tenancy]
policy = "kai"
tenant_key = ["account"]
[[queue]]
name = "a"
deserved = { gpu = 8 }
[[queue]]
name = "b"
deserved = { gpu = 8 }
"""


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def running(job: int, node: str, account: str) -> dict:
    raw = fake_job(
        job,
        8,
        T0,
        state="RUNNING",
        held=False,
        nodes=node,
        gpu_idx=["gpu:8(IDX:0-7)"],
        start=T0,
        account=account,
    )
    raw["time_limit"] = 600
    return raw


def test_a_queue_over_its_share_loses_a_job_when_the_other_queue_asks(tmp_path: Path):
    queues = tmp_path / "queues.toml"
    queues.write_text(QUEUES)
    fake = FakeSlurm(
        [fake_node("node1"), fake_node("node2")],
        [
            running(1, "node1", "a"),
            running(2, "node2", "a"),
            fake_job(3, 8, T0 + 5, account="b", time_limit=60),
        ],
    )
    cfg = ServeConfig(policy="fifo", tenancy=TenancySpec(queues=str(queues)))
    queue_file = tmp_path / "queue.json"
    srv = Server(
        fake, cfg, Journal(tmp_path / "j.jsonl"), clock=Clock(T0 + 10), queue_file=queue_file
    )
    srv.cycle()
    preempted = [c for c in fake.calls if c[:1] == ["requeuehold"]]
    assert len(preempted) == 1 and preempted[0][1] in ("1", "2")
    records = read_journal(tmp_path / "j.jsonl")
    assert any(r["action"] == "preempt" for r in records)
    data = json.loads(queue_file.read_text())
    rows = {r["queue"]: r for r in data["tenancy"]}
    assert rows["a"]["deserved"]["gpu"] == 8 and rows["b"]["fair_share"]["gpu"] == 8
    # After the decision: b's job placed, a's victim back in the queue.
    assert rows["b"]["alloc"]["gpu"] == 8 and rows["b"]["pending"]["gpu"] == 0
    assert rows["a"]["alloc"]["gpu"] == 8 and rows["a"]["pending"]["gpu"] == 8
    lines = render_tenancy(data)
    assert lines[0] == "queues (GPUs):" and any(line.strip().startswith("b ") for line in lines)


def test_without_the_other_queue_nothing_is_reclaimed(tmp_path: Path):
    queues = tmp_path / "queues.toml"
    queues.write_text(QUEUES)
    fake = FakeSlurm(
        [fake_node("node1"), fake_node("node2")],
        [running(1, "node1", "a"), fake_job(3, 8, T0 + 5, account="a", time_limit=60)],
    )
    cfg = ServeConfig(policy="fifo", tenancy=TenancySpec(queues=str(queues)))
    srv = Server(fake, cfg, Journal(tmp_path / "j.jsonl"), clock=Clock(T0 + 10))
    srv.cycle()
    assert not [c for c in fake.calls if c[:1] == ["requeuehold"]]
    assert any(c[:1] == ["update"] and "ReqNodeList=node2" in c for c in fake.calls) or any(
        "node2" in " ".join(c) for c in fake.calls
    )


# format=Cluster,Account,User,Partition,ParentName,Fairshare,GrpTRES,QOS
SACCTMGR = """cluster|root||||1||normal
cluster|research|||root|40|gres/gpu=12|normal
cluster|research|alice|||1||normal
cluster|infra|||root|60||normal
cluster|infra|bob|||1||normal
"""


def test_associations_become_queues():
    specs = association_specs(SACCTMGR)
    tree = build_tree(specs)
    assert set(tree.names[1:]) == {"research", "research/alice", "infra", "infra/bob"}
    assert tree.limit[tree.index["research"], 0] == 12
    assert tree.shares[tree.index["infra"]] == 60
    leaf = next(q for q in specs if q.path == "research/alice")
    assert leaf.match == ({"account": "research", "user": "alice"},)
    merged = merge(specs, TenancyConfig(queues=(QueueSpec("research", deserved={"gpu": 8}),)))
    by_path = {q.path: q for q in merged.queues}
    assert by_path["research"].deserved == {"gpu": 8}


def test_serve_reads_associations_through_the_client(tmp_path: Path):
    fake = FakeSlurm([fake_node("node1")], [fake_job(3, 2, T0, account="research")])
    fake.associations_text = SACCTMGR
    fake.jobs[3]["user_name"] = "alice"
    cfg = ServeConfig(policy="fifo", tenancy=TenancySpec("kai"), associations=True)
    srv = Server(fake, cfg, Journal(tmp_path / "j.jsonl"), clock=Clock(T0 + 10))
    srv.cycle()
    assert any(c[:1] == ["update"] for c in fake.calls)  # the job was placed
    assert srv.tenancy is not None
    assert srv.tenancy.tenancy.tree.label(srv.tenancy.tenancy.by_id["3"]) == "research/alice"


def test_no_accounting_is_a_clear_error(tmp_path: Path):
    fake = FakeSlurm([fake_node("node1")])
    cfg = ServeConfig(policy="fifo", tenancy=TenancySpec("kai"), associations=True)
    with pytest.raises(InputError, match="cannot read Slurm's associations"):
        Server(fake, cfg, Journal(tmp_path / "j.jsonl"))


def test_a_job_of_an_unknown_account_is_rejected_alone_and_the_others_are_served(
    tmp_path: Path,
):
    queues = tmp_path / "queues.toml"
    queues.write_text(
        QUEUES.replace(
            'tenant_key = ["account"]', 'tenant_key = ["account"]\nunknown_tenant = "error"'
        )
    )
    fake = FakeSlurm(
        [fake_node("node1")],
        [fake_job(3, 2, T0, account="c"), fake_job(4, 2, T0 + 1, account="a")],
    )
    cfg = ServeConfig(policy="fifo", tenancy=TenancySpec(queues=str(queues)))
    srv = Server(fake, cfg, Journal(tmp_path / "j.jsonl"), clock=Clock(T0 + 10))
    srv.cycle()
    # Job 3 is held with the reason in its comment, as a job that can never fit would be;
    # job 4 of a known account starts.
    comment = fake.jobs[3]["comment"]
    assert comment.startswith("schedlab: rejected: belongs to tenant 'c'")
    assert "unknown_tenant = 'error'" in comment
    assert fake.jobs[3]["priority"] == 0  # still held
    assert fake.jobs[4]["priority"] > 0 and fake.jobs[4]["required_nodes"] == "node1"
    rejects = [r for r in read_journal(tmp_path / "j.jsonl") if r["action"] == "reject"]
    assert [r["job"] for r in rejects] == [3] and "tenant 'c'" in rejects[0]["reason"]
    # Later cycles leave the rejected job alone, and keep serving.
    fake.jobs[5] = fake_job(5, 2, T0 + 20, account="b")
    srv.cycle()
    assert fake.jobs[5]["priority"] > 0
    assert len([r for r in read_journal(tmp_path / "j.jsonl") if r["action"] == "reject"]) == 1


def test_a_running_job_whose_account_is_no_queue_keeps_its_gpus(tmp_path: Path):
    queues = tmp_path / "queues.toml"
    queues.write_text(
        QUEUES.replace(
            'tenant_key = ["account"]', 'tenant_key = ["account"]\nunknown_tenant = "error"'
        )
    )
    fake = FakeSlurm(
        [fake_node("node1")],
        [running(1, "node1", "gone"), fake_job(2, 8, T0 + 1, account="a")],
    )
    cfg = ServeConfig(policy="fifo", tenancy=TenancySpec(queues=str(queues)))
    srv = Server(fake, cfg, Journal(tmp_path / "j.jsonl"), clock=Clock(T0 + 10))
    srv.cycle()
    assert fake.jobs[2]["priority"] == 0  # node1's 8 GPUs are still the running job's
    warnings = [r for r in read_journal(tmp_path / "j.jsonl") if r["action"] == "warning"]
    assert any(r["job"] == 1 and "outside every queue" in r["reason"] for r in warnings)


def test_tenancy_refuses_non_orderings(tmp_path: Path):
    fake = FakeSlurm([fake_node("node1")])
    cfg = ServeConfig(policy="fifo", backfill=True, tenancy=TenancySpec("kai"))
    with pytest.raises(InputError, match="--backfill"):
        Server(fake, cfg, Journal(tmp_path / "j.jsonl"))
