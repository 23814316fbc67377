"""Preemption on a live cluster: a minimum run, a grace signal, and credit only for jobs that
checkpoint (fake Slurm, hand-computed cycles)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node, without_reasons
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.loop import ServeConfig, Server
from schedlab.serve.preemption import checkpoints
from schedlab.serve.slurm_state import read_jobs

T0 = 1_000_000.0


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def long_running(comment: str = "") -> dict:
    """Job 1: 8 GPUs on the only node since T0, 60 min limit (srtf's victim)."""
    job = fake_job(
        1, 8, T0, state="RUNNING", held=False, nodes="node1", gpu_idx=["gpu:8(IDX:0-7)"], start=T0
    )
    job.update(time_limit=60, comment=comment)
    return job


def setup(tmp_path: Path, clock: Clock, **rules: float) -> tuple[FakeSlurm, Server]:
    fake = FakeSlurm([fake_node("node1")], [long_running(), fake_job(2, 2, T0 + 1, time_limit=1)])
    cfg = ServeConfig(policy="srtf", **rules)  # type: ignore[arg-type]
    return fake, Server(fake, cfg, Journal(tmp_path / "j.jsonl"), clock=clock)


def actions(tmp_path: Path, job: int) -> list[str]:
    """What the journal says about ``job``, but for the start it recovers for job 1 (running
    before the journal began)."""
    return [
        r["action"]
        for r in read_journal(tmp_path / "j.jsonl")
        if r["job"] == job and not r.get("recovered")
    ]


def test_a_run_shorter_than_the_minimum_is_not_preempted(tmp_path: Path) -> None:
    """srtf wants job 1's GPUs for job 2 at once; with --min-runtime 30 it waits until job 1
    has run 30 s, and job 2's start waits with it (journaled once)."""
    clock = Clock(T0 + 10)
    fake, srv = setup(tmp_path, clock, min_runtime=30)
    srv.cycle()
    clock.t = T0 + 20
    srv.cycle()
    assert without_reasons(fake.calls) == []
    assert actions(tmp_path, 1) == ["protect"]
    clock.t = T0 + 31
    srv.cycle()
    assert without_reasons(fake.calls)[:2] == [
        ["update", "JobId=1", "AdminComment=schedlab:queued"],
        ["requeuehold", "1"],
    ]
    assert ["release", "2"] in fake.calls


def test_a_victim_gets_sigterm_and_its_grace_before_the_requeue(tmp_path: Path) -> None:
    clock = Clock(T0 + 10)
    fake, srv = setup(tmp_path, clock, grace=5)
    srv.cycle()
    assert without_reasons(fake.calls) == [["signal", "1", "TERM"]]
    clock.t = T0 + 13
    srv.cycle()  # still in its grace: nothing more, not even a second signal
    assert without_reasons(fake.calls) == [["signal", "1", "TERM"]]
    clock.t = T0 + 15.5
    srv.cycle()
    assert ["requeuehold", "1"] in fake.calls and ["release", "2"] in fake.calls
    assert actions(tmp_path, 1)[:2] == ["signal", "protect"]


def test_only_a_checkpointing_job_keeps_its_attained_service(tmp_path: Path) -> None:
    """Job 1 runs 40 s on 8 GPUs and is requeued: with --comment=checkpoint it carries 320
    GPU-seconds into its next run (journaled, and taken back by a restarted scheduler);
    without, it starts from nothing."""
    for comment, credit in (("checkpoint", 320.0), ("", None)):
        path = tmp_path / (comment or "plain")
        path.mkdir()
        fake = FakeSlurm([fake_node("node1")], [long_running(comment)])
        clock = Clock(T0 + 20)
        srv = Server(fake, ServeConfig(policy="tiresias"), Journal(path / "j.jsonl"), clock=clock)
        srv.cycle()
        fake.scontrol(["requeuehold", "1"])
        clock.t = T0 + 40
        srv.cycle()
        requeued = [r for r in read_journal(path / "j.jsonl") if r["action"] == "requeued"]
        assert requeued[0]["checkpoint"] is bool(comment)
        assert requeued[0].get("attained") == credit
        again = Server(fake, ServeConfig(policy="tiresias"), Journal(path / "j.jsonl"))
        assert again._credit == ({1: (320.0, 40.0)} if credit else {})


def test_the_checkpoint_convention() -> None:
    def job(comment: str):
        return read_jobs({"jobs": [{**fake_job(1, 1, T0), "comment": comment}]})[0]

    assert checkpoints(job("checkpoint")) and checkpoints(job("uses Checkpointing"))
    assert not checkpoints(job("")) and not checkpoints(job("nocheck"))


@pytest.mark.parametrize("flag", ["--min-runtime", "--grace"])
def test_negative_preemption_rules_are_one_line_errors(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "slurm", "--policy", "fifo", flag, "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"schedlab: error: '{flag}' must be ≥ 0 seconds (got -1.0)"]


def test_a_victim_slurm_still_shows_running_is_not_preempted_twice(tmp_path: Path) -> None:
    """``requeuehold`` returns before a busy controller has moved the job: the next cycle may
    still see the victim running (with the queued marker). It is not preempted again then,
    but it may be once REQUEUE_SETTLE seconds have passed (the first command may be lost)."""
    from schedlab.serve.loop import REQUEUE_SETTLE

    clock = Clock(T0 + 100)
    fake, srv = setup(tmp_path, clock)
    srv.cycle()
    requeues = [c for c in fake.calls if c[0] == "requeuehold"]
    assert requeues == [["requeuehold", "1"]]
    # The controller has not acted yet: job 1 runs on, marked queued by serve.
    fake.jobs[1].update(
        job_state="RUNNING", priority=4294901000, state_reason="None", nodes="node1"
    )
    clock.t = T0 + 101
    srv.cycle()
    assert [c for c in fake.calls if c[0] == "requeuehold"] == requeues
    clock.t = T0 + 101 + REQUEUE_SETTLE
    srv.cycle()
    assert [c for c in fake.calls if c[0] == "requeuehold"] == [*requeues, ["requeuehold", "1"]]
    assert actions(tmp_path, 1).count("preempt") == 2


class StartsAfterRead(FakeSlurm):
    """Slurm starting a released job between serve's read and its commands: every read shows
    job 1 released and pinned (launching), and Slurm starts it right after (``starts``) or
    keeps it pending (``not starts``)."""

    def __init__(self, starts: bool) -> None:
        launching = fake_job(1, 8, T0, held=False, required="node1", time_limit=60)
        super().__init__([fake_node("node1")], [launching, fake_job(2, 2, T0 + 1, time_limit=1)])
        self.starts = starts

    def squeue(self) -> dict:
        seen = super().squeue()
        seen = {**seen, "jobs": [dict(j) for j in seen["jobs"]]}
        if self.starts and self.jobs[1]["job_state"] == "PENDING" and self.jobs[1]["priority"]:
            self.start(1, T0 + 10)
        return seen


@pytest.mark.parametrize("starts", [True, False])
def test_a_victim_still_starting_is_stopped_whether_or_not_it_started_meanwhile(
    tmp_path: Path, starts: bool
) -> None:
    """srtf preempts job 1, which Slurm showed released but not started. Held first, so it
    cannot start after that; then requeued, which stops it if Slurm had started it in the
    meantime (Slurm's refusal to requeue a still-pending job means the hold already did it).
    Either way job 1 ends up pending, held and marked queued, and the preemption is journaled
    as done, saying whether the job had started."""
    fake = StartsAfterRead(starts)
    srv = Server(
        fake, ServeConfig(policy="srtf"), Journal(tmp_path / "j.jsonl"), clock=Clock(T0 + 10)
    )
    srv.cycle()
    assert without_reasons(fake.calls)[:2] == [
        ["update", "JobId=1", "Priority=0", "AdminComment=schedlab:queued"],
        ["requeuehold", "1"],
    ]
    job = read_jobs(fake.squeue())[0]
    assert (job.job_id, job.state, job.held, job.admin_comment) == (
        1,
        "PENDING",
        True,
        "schedlab:queued",
    )
    [preempt] = [r for r in read_journal(tmp_path / "j.jsonl") if r["action"] == "preempt"]
    assert preempt["job"] == 1 and preempt["launching"] is True
    assert preempt["requeued"] is starts
    assert not [r for r in read_journal(tmp_path / "j.jsonl") if r["action"] == "error"]
