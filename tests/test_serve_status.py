"""``schedlab serve status``: the lock holder from the kernel's lock table, the last cycle from
/metrics or the journal, the partition's jobs and the reasons on held jobs from Slurm, the
journal's size; text and JSON, exit status 0 (a scheduler runs) or 3 (none does)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal
from schedlab.serve.lock import PartitionLock, _flock_writers, lock_holder, lock_path
from schedlab.serve.loop import CycleReport, ServeConfig, Server
from schedlab.serve.metrics import Metrics, serve_metrics
from schedlab.serve.status import gather, journal_summary, render, slurm_jobs

T0 = 1_700_000_000.0


def test_the_kernel_lock_table_names_exclusive_holders_only(tmp_path: Path) -> None:
    """Hand-written /proc/locks lines: a WRITE flock on the file's inode counts; a READ one (a
    partition scheduler's share of the all-partitions lock), a waiter (``->``), a POSIX lock
    and another inode do not."""
    path = tmp_path / "serve-gpu.lock"
    path.write_text("pid 77 on head1 since 2026-11-26T10:45:12Z\n")
    st = path.stat()
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    table = "\n".join(
        [
            f"1: FLOCK  ADVISORY  READ  10 {key} 0 EOF",
            f"1: -> FLOCK  ADVISORY  WRITE 11 {key} 0 EOF",
            f"2: POSIX  ADVISORY  WRITE 12 {key} 0 EOF",
            f"3: FLOCK  ADVISORY  WRITE 13 {key[:-1]}9{key[-1]}0 0 EOF",
            f"4: FLOCK  ADVISORY  WRITE 77 {key} 0 EOF",
        ]
    )
    assert _flock_writers(path, table) == [77]
    holder = lock_holder(tmp_path, "gpu", table)
    assert holder is not None
    assert (holder.pid, holder.host, holder.since) == (77, "head1", "2026-11-26T10:45:12Z")
    assert lock_holder(tmp_path, "gpu", table.replace("WRITE 77", "READ 77")) is None
    assert lock_holder(tmp_path, "free", table) is None


def test_a_lock_held_here_is_seen_and_its_release_too(tmp_path: Path) -> None:
    """The real lock of this process, through the real /proc/locks; a partition is also
    served by a scheduler of every partition. Looking takes no lock."""
    with PartitionLock(tmp_path, "gpu"):
        holder = lock_holder(tmp_path, "gpu")
        assert holder is not None and holder.pid == os.getpid()
        assert holder.since.endswith("Z") and holder.path == lock_path(tmp_path, "gpu")
        assert lock_holder(tmp_path, "free") is None
        PartitionLock(tmp_path, "free").acquire()  # status took nothing that blocks this
    assert lock_holder(tmp_path, "gpu") is None
    with PartitionLock(tmp_path, None):
        holder = lock_holder(tmp_path, "gpu")
        assert holder is not None and holder.partition == "ALL"
        lines = render(gather(tmp_path, "gpu", None), T0)
        assert "(managing every partition)" in lines[0]


def _journal(tmp_path: Path) -> Path:
    """Two runs in one journal, the newest rotated once: status reads only the last run."""
    path = tmp_path / "serve.jsonl"
    old = [
        {"time": T0, "cycle": 0, "job": None, "action": "serve", "policy": "sjf"},
        {"time": T0 + 5, "cycle": 3, "job": None, "action": "cycle", "seconds": 0.5},
        {"time": T0 + 100, "cycle": 0, "job": None, "action": "serve", "policy": "fifo"},
        {"time": T0 + 101, "cycle": 1, "job": None, "action": "cycle", "seconds": 0.02}
        | {"decisions": 4, "started": 3, "queued": 9, "running": 3, "errors": 0},
    ]
    new = [
        {"time": T0 + 102, "cycle": 2, "job": 5, "action": "start", "nodes": ["node1"]},
        {"time": T0 + 103, "cycle": 3, "job": None, "action": "cycle", "seconds": 0.03}
        | {"decisions": 2, "started": 1, "queued": 8, "running": 4, "errors": 0},
        {"time": T0 + 104, "cycle": 4, "job": 6, "action": "arrive", "gpus": 1},
    ]
    (tmp_path / "serve.jsonl.1").write_text("".join(json.dumps(r) + "\n" for r in old))
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in new))
    return path


def test_the_journal_gives_the_last_server_its_last_cycle_and_sizes(tmp_path: Path) -> None:
    path = _journal(tmp_path)
    with path.open("a") as fh:
        fh.write('{"time": 1, "action": "cyc')  # a torn last line
    summary, serve, cycle, stop = journal_summary(path)
    assert serve is not None and serve["policy"] == "fifo"
    assert cycle is not None and (cycle["time"], cycle["decisions"]) == (T0 + 103, 2)
    assert stop is None
    assert summary["rotated_files"] == 1
    assert summary["bytes"] == path.stat().st_size
    assert (
        summary["total_bytes"] == path.stat().st_size + (tmp_path / "serve.jsonl.1").stat().st_size
    )
    with path.open("a") as fh:
        fh.write(
            '\n{"time":%f,"cycle":5,"job":null,"action":"stop","reason":"SIGTERM"}\n' % (T0 + 110)
        )
    status = gather(tmp_path, "gpu", None, path)
    assert status.stopped is not None and status.stopped["reason"] == "SIGTERM"
    lines = render(status, T0 + 120)
    assert (
        lines[0] == f"partition gpu: no scheduler running (lock {tmp_path}/serve-gpu.lock is free)"
    )
    assert any(
        line.startswith("stopped: 2023-11-14 22:15:10 UTC (10.0 s ago) (SIGTERM)") for line in lines
    )
    assert (
        "last cycle that changed something: 2023-11-14 22:15:03 UTC (17.0 s ago), 0.030 s, "
        "2 decisions, 1 started" in lines
    )


def test_metrics_give_the_last_cycle_even_when_it_changed_nothing(tmp_path: Path) -> None:
    metrics = Metrics()
    metrics.update(CycleReport(41, ok=True, decisions=5, started=2, seconds=0.02, time=T0))
    metrics.update(CycleReport(42, ok=True, queued=3, running=1, seconds=0.0125, time=T0 + 2))
    endpoint = serve_metrics(metrics, 0)
    try:
        port = endpoint.server_address[1]
        with PartitionLock(tmp_path, "gpu"):
            status = gather(tmp_path, "gpu", None, metrics_port=port)
    finally:
        endpoint.shutdown()
    assert status.last_cycle == {
        "time": T0 + 2,
        "seconds": 0.0125,
        "decisions": 0,
        "started": 0,
        "queued": 3,
        "running": 1,
        "cycles": 2,
        "source": "metrics",
    }
    text = render(status, T0 + 3)
    assert (
        "last cycle: 2023-11-14 22:13:22 UTC (1.0 s ago), 0.013 s, 0 decisions, 0 started "
        "(2 cycles so far)" in text
    )


def _partition() -> FakeSlurm:
    """node1..node2 (8 GPUs); jobs of every class serve distinguishes."""
    comment = "schedlab: queued: waiting for policy fifo to place it (8 GPUs) -- checkpoint"
    jobs = [
        fake_job(1, 4, T0, state="RUNNING", held=False, nodes="node1"),
        fake_job(2, 2, T0, state="RUNNING", held=False, nodes="node2", mark=""),
        fake_job(3, 8, T0, held=False, required="node2"),  # released, pinned
        fake_job(4, 8, T0 + 1, comment=comment),
        fake_job(5, 8, T0 + 2, comment=comment.split(" -- ")[0]),
        fake_job(6, 1, T0 + 3, comment="schedlab: not eligible: BeginTime (soon)", eligible=4e9),
        fake_job(7, 16, T0 + 4, comment="schedlab: rejected: too big"),
        fake_job(8, 1, T0 + 5),  # held, no reason written yet
        fake_job(9, 1, T0, partition="free", held=False),  # another partition
    ]
    return FakeSlurm([fake_node("node1"), fake_node("node2")], jobs)


def test_jobs_are_sorted_as_a_cycle_sorts_them_with_their_reasons() -> None:
    counts, reasons = slurm_jobs(_partition(), "gpu", T0 + 10)
    assert {k: v for k, v in counts.items() if v} == {
        "held": 3,
        "not_eligible": 1,
        "released": 1,
        "running": 1,
        "rejected": 1,
        "other_owners_running": 1,
    }
    assert reasons == [
        ("queued: waiting for policy fifo to place it (8 GPUs)", ["4", "5"]),
        ("not eligible: BeginTime (soon)", ["6"]),
        ("rejected: too big", ["7"]),
    ]


def test_the_command_in_text_and_json_with_exit_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = _partition()
    monkeypatch.setattr("schedlab.commands.serve.SubprocessSlurm", lambda: fake)
    path = _journal(tmp_path)
    config = tmp_path / "serve.toml"
    config.write_text(
        f'policy = "fifo"\npartition = "gpu"\njournal = "{path}"\nstate-dir = "{tmp_path}"\n'
    )
    assert main(["serve", "status", "--config", str(config)]) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("partition gpu: no scheduler running")
    assert out[1].startswith("server: fifo / None, every None s, started 2023-11-14 22:15:00 UTC")
    assert (
        "jobs: 3 held by schedlab, 1 held, not eligible yet, 1 released (pinned, starting)"
        in out[3]
    )
    assert out[4] == "reasons on held jobs:"
    assert out[5] == "      2  queued: waiting for policy fifo to place it (8 GPUs)  [4, 5]"
    assert out[-1].startswith(f"journal: {path}, ") and "(+1 rotated, " in out[-1]
    with PartitionLock(tmp_path, "gpu"):
        assert main(["serve", "status", "--config", str(config), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["running"] is True and data["holder"]["pid"] == os.getpid()
    assert data["jobs"]["held"] == 3 and data["reasons"][2] == {
        "reason": "rejected: too big",
        "jobs": ["7"],
    }
    assert data["journal"]["rotated_files"] == 1 and data["last_cycle"]["source"] == "journal"
    assert fake.calls == []  # looking changes nothing


def test_slurm_down_is_said_and_the_rest_still_shown(tmp_path: Path) -> None:
    fake = _partition()
    fake.fail_reads = 1
    status = gather(tmp_path, "gpu", fake, _journal(tmp_path))
    lines = render(status, T0 + 200)
    assert any(line.startswith("jobs: cannot read Slurm ('squeue --json' failed") for line in lines)
    assert lines[-1].startswith("journal: ")


def test_a_running_server_is_reported_from_its_own_records(tmp_path: Path) -> None:
    """A real Server cycle writes the journal and metrics that status reads back."""
    fake = FakeSlurm([fake_node("node1")], [fake_job(1, 2, T0)])
    journal = tmp_path / "j.jsonl"
    server = Server(fake, ServeConfig(policy="fifo"), Journal(journal), clock=lambda: T0 + 1)
    metrics = Metrics()
    with PartitionLock(tmp_path, None):
        server.describe_cluster()
        server._write(None, "serve", policy="fifo", placement="bestfit", interval=1.0)
        metrics.update(server.cycle())
        endpoint = serve_metrics(metrics, 0)
        try:
            status = gather(tmp_path, None, fake, journal, endpoint.server_address[1], T0 + 2)
        finally:
            endpoint.shutdown()
    assert status.running and status.last_cycle is not None
    assert (status.last_cycle["time"], status.last_cycle["started"]) == (T0 + 1, 1)
    assert status.jobs is not None and status.jobs["released"] == 1
    assert render(status, T0 + 2)[1].startswith("server: fifo / bestfit, every 1.0 s")
