"""The reason written into each held job of schedlab's that did not start (its ``Comment``)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.loop import ServeConfig, Server
from schedlab.serve.preemption import checkpoints
from schedlab.serve.reasons import reason_command, reason_comment, user_comment
from schedlab.serve.slurm_state import read_jobs

T0 = 1_000_000.0
NOW = T0 + 100
WAIT8 = "schedlab: queued: waiting for policy fifo to place it (8 GPUs)"


def server(fake: FakeSlurm, tmp_path: Path) -> Server:
    return Server(
        fake, ServeConfig(policy="fifo"), Journal(tmp_path / "j.jsonl"), clock=lambda: NOW
    )


def comments(fake: FakeSlurm) -> list[list[str]]:
    return [c for c in fake.calls if any(a.startswith("Comment=") for a in c)]


def test_the_owner_text_is_kept_after_the_reason_and_given_back() -> None:
    assert reason_comment("queued: x", "") == "schedlab: queued: x"
    assert reason_comment("queued: x", "checkpoint") == "schedlab: queued: x -- checkpoint"
    assert reason_comment("not eligible: y", "schedlab: queued: x -- checkpoint") == (
        "schedlab: not eligible: y -- checkpoint"
    )
    assert reason_comment('a "b" -- c', "") == "schedlab: a 'b' - c"
    assert user_comment(reason_comment("ends --", "-- own")) == "-- own"
    assert user_comment("schedlab: queued: x -- my run") == "my run"
    assert user_comment("schedlab: queued: x") == ""
    assert user_comment("plain") == "plain"


def test_a_rejected_job_and_an_unchanged_reason_need_no_command() -> None:
    rejected, shown = read_jobs(
        {
            "jobs": [
                fake_job(1, 8, T0, comment="schedlab: rejected: too big"),
                fake_job(2, 8, T0, comment="schedlab: queued: x -- checkpoint"),
            ]
        }
    )
    assert reason_command(rejected, "queued: x") is None
    assert reason_command(shown, "queued: x") is None
    assert reason_command(shown, "queued: z") == [
        "update",
        "JobId=2",
        "Comment=schedlab: queued: z -- checkpoint",
    ]


@given(
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40),
)
def test_rewriting_a_reason_never_loses_or_doubles_the_owner_text(
    first: str, second: str, own: str
) -> None:
    own = " ".join(own.replace(" -- ", " ").split())
    if own.startswith("schedlab:"):
        own = "x" + own
    once = reason_comment(first, own)
    twice = reason_comment(second, once)
    assert user_comment(once) == own and user_comment(twice) == own
    assert reason_comment(second, twice) == twice  # a reason that did not change: same text


def test_waiting_jobs_show_why_once_and_a_start_gives_the_comment_back(tmp_path: Path) -> None:
    """One 8-GPU node. Job 1 (8 GPUs) starts; job 2 (8 GPUs, --comment=checkpoint) waits for
    the policy; job 3 waits on a dependency. Cycle 1 writes both reasons, cycle 2 writes
    nothing; when job 1 ends, job 2 starts and gets back its own comment."""
    fake = FakeSlurm(
        [fake_node("node1")],
        [
            fake_job(1, 8, T0),
            fake_job(2, 8, T0 + 1, comment="checkpoint"),
            fake_job(3, 1, T0 + 2, dependency="afterok:9(unfulfilled)"),
        ],
        start_on_release=True,
    )
    srv = server(fake, tmp_path)
    srv.cycle()
    assert comments(fake) == [
        ["update", "JobId=2", f"Comment={WAIT8} -- checkpoint"],
        [
            "update",
            "JobId=3",
            "Comment=schedlab: not eligible: Dependency (afterok:9(unfulfilled))",
        ],
    ]
    job2 = read_jobs(fake.squeue())[1]
    assert checkpoints(job2)  # the owner's declaration still counts
    fake.calls.clear()
    srv.cycle()
    assert comments(fake) == []  # nothing changed: no scontrol at all
    fake.finish(1)
    srv.cycle()
    assert ["release", "2"] in fake.calls
    assert fake.jobs[2]["comment"] == "checkpoint"


def test_jobs_with_the_same_reason_share_one_command_and_a_failure_is_traced_to_its_job(
    tmp_path: Path,
) -> None:
    """One 8-GPU node, job 1 starts; jobs 2, 3 and 4 (8 GPUs each) wait for the same reason:
    one ``scontrol update JobId=2,3,4``. With job 3 failing, the list command fails, each job
    is tried alone, and only job 3's failure is journaled."""
    jobs = [fake_job(k, 8, T0 + k) for k in range(1, 5)]
    fake = FakeSlurm([fake_node("node1")], jobs)
    server(fake, tmp_path).cycle()
    assert comments(fake) == [["update", "JobId=2,3,4", f"Comment={WAIT8}"]]

    fake = FakeSlurm([fake_node("node1")], [fake_job(k, 8, T0 + k) for k in range(1, 5)])
    fake.fail_jobs[3] = "Access/permission denied"
    server(fake, tmp_path / "failing").cycle()
    assert comments(fake) == [
        ["update", "JobId=2,3,4", f"Comment={WAIT8}"],
        ["update", "JobId=2", f"Comment={WAIT8}"],
        ["update", "JobId=3", f"Comment={WAIT8}"],
        ["update", "JobId=4", f"Comment={WAIT8}"],
    ]
    assert fake.jobs[2]["comment"] == WAIT8 and fake.jobs[4]["comment"] == WAIT8
    errors = [r for r in read_journal(tmp_path / "failing" / "j.jsonl") if r["action"] == "error"]
    assert [(r["job"], r["attempted"]) for r in errors] == [(3, "reason")]
