"""Each journaled start re-derived from the journal alone (schedlab.serve.rederive): a fake
partition run through real serve cycles, a restart in between (a run ending while no scheduler
watched), arrays and two-node jobs; then the journal is checked, and a tampered one is caught."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.loop import ServeConfig, Server
from schedlab.serve.rederive import rederive

T0 = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def _run(
    tmp_path: Path,
    policy: str = "fifo",
    backfill: bool = False,
    placement: str = "bestfit",
    topology: str | None = None,
) -> Path:
    """Three 8-GPU nodes; eleven jobs of 1–8 GPUs (two of them -N2 × 8, three tasks of an
    array) arriving over time; jobs end by hand; the scheduler is replaced by a new process
    (same journal) after cycle 3, while a job ends."""
    nodes = [fake_node(f"node{k}") for k in (1, 2, 3)]
    jobs = [
        fake_job(1, 8, T0, time_limit=5),
        fake_job(2, 4, T0 + 1, time_limit=2),
        fake_job(3, 8, T0 + 2, node_count=2, time_limit=9),
        fake_job(4, 2, T0 + 3, time_limit=1),
        fake_job(5, 1, T0 + 4, time_limit=3),
    ]
    fake = FakeSlurm(nodes, jobs, start_on_release=True)
    clock = Clock()
    journal = tmp_path / "serve.jsonl"
    config = ServeConfig(
        policy=policy, backfill=backfill, seed=3, placement=placement, topology=topology
    )

    def server() -> Server:
        srv = Server(fake, config, Journal(journal), clock=clock)
        srv._write(None, "serve", **srv.serve_record(srv.describe_cluster()))
        return srv

    def finish_one() -> None:
        running = [j for j, raw in fake.jobs.items() if raw["job_state"] == "RUNNING"]
        if running:
            fake.finish(min(running))

    srv = server()
    for k in range(4):
        srv.cycle()
        clock.t += 2
        finish_one()
        if k == 0:
            fake.jobs[10] = fake_job(10, 2, T0 + 5, time_limit=4, array=(10, 1, "", 0))
            fake.jobs[11] = fake_job(11, 2, T0 + 5, time_limit=4, array=(10, 2, "", 0))
            fake.jobs[12] = fake_job(12, 2, T0 + 5, time_limit=4, array=(10, 3, "", 0))
            fake.jobs[6] = fake_job(6, 8, T0 + 6, time_limit=6)
    # A new process; a run ends while none runs.
    clock.t += 5
    finish_one()
    fake.jobs[7] = fake_job(7, 8, T0 + 20, node_count=2, time_limit=3)
    fake.jobs[8] = fake_job(8, 1, T0 + 21, time_limit=1)
    srv = server()
    for _ in range(10):
        srv.cycle()
        clock.t += 3
        finish_one()
    return journal


def test_every_start_of_a_run_with_a_restart_is_re_derived(tmp_path: Path) -> None:
    journal = _run(tmp_path)
    records = list(read_journal(journal))
    live = [r for r in records if r["action"] == "start" and not r.get("recovered")]
    assert len(live) >= 10 and sum(r["action"] == "serve" for r in records) == 2
    # The run that ended between the processes was journaled when the restart saw it gone.
    restart = next(k for k, r in enumerate(records) if r["action"] == "serve" and k > 0)
    gap = [r for r in records if r["action"] == "finish" and r.get("recovered")]
    # (the one ended after the first process's last cycle, and the one during the gap)
    assert len(gap) == 2 and all(records.index(r) > restart and r["cycle"] == 1 for r in gap)
    assert any("array_task" in r for r in records if r["action"] == "arrive")
    result = rederive(journal)
    assert result.agree, result.mismatches
    assert result.starts == len(live)


def test_backfill_decisions_are_re_derived_too(tmp_path: Path) -> None:
    result = rederive(_run(tmp_path, "sjf", backfill=True))
    assert result.agree, result.mismatches
    assert result.starts >= 10


@pytest.mark.parametrize(
    ("placement", "tree"),
    [("locality", False), ("titan", True), ("hived", True), ("fragments-first", False)],
)
def test_network_placements_are_re_derived_on_the_recorded_network(
    tmp_path: Path, placement: str, tree: bool
) -> None:
    """The serve record keeps the network (a replay spec as given, a topology.conf tree as
    TOML): the re-derivation places on it as the live cycles did."""
    if tree:
        conf = tmp_path / "topology.conf"
        conf.write_text(
            "SwitchName=leaf1 Nodes=node[1-2]\nSwitchName=leaf2 Nodes=node3\n"
            "SwitchName=spine Switches=leaf[1-2]\n"
        )
        topology = str(conf)
    else:
        topology = "leafspine:leaves=3,spines=1,hosts_per_leaf=1,g=8,m=1,nic_gbps=100"
    journal = _run(tmp_path, placement=placement, topology=topology)
    serve = next(r for r in read_journal(journal) if r["action"] == "serve")
    assert ("topology_toml" if tree else "topology_spec") in serve
    result = rederive(journal)
    assert result.agree, result.mismatches
    assert result.starts >= 10


def _move_start(journal: Path, job: int) -> tuple[int, dict, dict]:
    """Rewrite ``job``'s first start in the journal onto another node: (its line, the record as
    it was, as it is now)."""
    lines = journal.read_text().splitlines()
    k, first = next(
        (k, r)
        for k, r in enumerate(map(json.loads, lines))
        if r["action"] == "start" and r["job"] == job
    )
    moved = {**first, "nodes": ["node3" if first["nodes"] != ["node3"] else "node1"]}
    journal.write_text("\n".join([*lines[:k], json.dumps(moved), *lines[k + 1 :]]) + "\n")
    return k, first, moved


def test_a_start_on_other_nodes_or_one_left_out_is_caught(tmp_path: Path) -> None:
    journal = _run(tmp_path)
    lines = journal.read_text().splitlines()
    k, first, moved = _move_start(journal, 2)
    wrong = rederive(journal).mismatches[0]  # (later cycles then see another cluster too)
    assert (wrong.process, wrong.cycle, wrong.job) == (1, 1, 2)
    assert wrong.live == moved["nodes"] and wrong.derived == first["nodes"]
    # A start the policy made but the cycle (which ran to its end) never journaled.
    journal.write_text("\n".join([*lines[:k], *lines[k + 1 :]]) + "\n")
    missing = rederive(journal).mismatches
    assert [(m.job, m.live, m.derived) for m in missing][:1] == [(2, None, first["nodes"])]


def test_the_check_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``schedlab serve check``: exit 0 and a count when every start agrees; exit 1 listing the
    disagreements; a missing journal is one error line (exit 2)."""
    journal = _run(tmp_path)
    assert main(["serve", "check", "--journal", str(journal)]) == 0
    out = capsys.readouterr().out.splitlines()
    starts = sum(1 for r in read_journal(journal) if r["action"] == "start")
    assert len(out) == 1 and out[0].startswith(f"{starts} starts in ")
    assert out[0].endswith("cycles re-derived: all on the same nodes")
    _, record, moved = _move_start(journal, 2)
    assert main(["serve", "check", "--journal", str(journal)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"run 1 cycle 1 job 2: live {moved['nodes'][0]}; policy {','.join(record['nodes'])}"
    )
    assert out[-1].endswith(" differ")
    assert main(["serve", "check", "--journal", str(tmp_path / "none.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("schedlab: error: ") and "none.jsonl" in err[0]
