"""serve slurm changes only the jobs it owns, offers a job only when Slurm would run it, and
places array tasks one by one (fake Slurm, hand-computed commands)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.serve.classify import (
    array_task_ids,
    classify,
    dependency_met,
    ineligible_reason,
)
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node, without_reasons
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.live import build_view
from schedlab.serve.lock import PartitionLock
from schedlab.serve.loop import ServeConfig, Server
from schedlab.serve.slurm_state import read_jobs, read_nodes

T0 = 1_000_000.0
NOW = T0 + 100


def server(fake: FakeSlurm, tmp_path: Path, policy: str = "fifo") -> Server:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return Server(
        fake, ServeConfig(policy=policy), Journal(tmp_path / "j.jsonl"), clock=lambda: NOW
    )


def journal(tmp_path: Path) -> list[dict]:
    return list(read_journal(tmp_path / "j.jsonl"))


def hold(job: int | str) -> list[str]:
    return ["update", f"JobId={job}", "Priority=0", "AdminComment=schedlab:queued"]


def start(job: int, node: str) -> list[list[str]]:
    return [
        ["update", f"JobId={job}", f"ReqNodeList={node}"],
        ["release", str(job)],
        ["update", f"JobId={job}", "AdminComment=schedlab:released"],
    ]


def nodes(second: str = "idle", flags: tuple[str, ...] = ()) -> list[dict]:
    return [fake_node("node1"), fake_node("node2", state=second, flags=flags)]


# -- ownership ---------------------------------------------------------------------------------
def test_jobs_without_the_marker_are_never_held_or_released(tmp_path: Path) -> None:
    """Job 1: submitted unheld with -w node2 (drained, so it waits there); job 2: held by an
    operator (admin hold, no marker). Neither is schedlab's: no command at all, in any cycle."""
    fake = FakeSlurm(
        nodes("idle", ("DRAIN",)),
        [
            fake_job(1, 2, T0, held=False, required="node2", mark=""),
            {**fake_job(2, 2, T0, mark=""), "state_reason": "JobHeldAdmin"},
        ],
    )
    srv = server(fake, tmp_path)
    srv.cycle()
    srv.cycle()
    assert fake.calls == []
    assert not [r for r in journal(tmp_path) if r["job"] in (1, 2)]


def test_an_operator_hold_of_a_released_job_is_left_alone_and_journaled_once(
    tmp_path: Path,
) -> None:
    fake = FakeSlurm(
        nodes(),
        [{**fake_job(3, 2, T0, required="node1", mark="schedlab:released")}],
    )
    srv = server(fake, tmp_path)
    srv.cycle()
    srv.cycle()
    assert fake.calls == []
    records = [r for r in journal(tmp_path) if r["job"] == 3]
    assert [r["action"] for r in records] == ["foreign-hold"]


def test_a_hold_job_is_claimed_unless_it_starts_at_once(tmp_path: Path) -> None:
    """Unmarked --hold jobs 4 (8 GPUs) and 5 (8 GPUs) on one free node: 4 starts (and is
    marked released), 5 waits and is claimed: an admin hold with the marker."""
    fake = FakeSlurm(
        [fake_node("node1")], [fake_job(4, 8, T0, mark=""), fake_job(5, 8, T0 + 1, mark="")]
    )
    server(fake, tmp_path).cycle()
    assert without_reasons(fake.calls) == [*start(4, "node1"), hold(5)]
    assert fake.jobs[5]["state_reason"] == "JobHeldAdmin"
    assert [r["action"] for r in journal(tmp_path) if r["job"] == 5] == ["arrive", "claim"]


def test_a_job_released_outside_schedlab_is_held_again_and_placed(tmp_path: Path) -> None:
    """Job 6 is schedlab's (marker queued) but someone released it before it was placed."""
    fake = FakeSlurm(nodes(), [fake_job(6, 2, T0, held=False, mark="schedlab:queued")])
    server(fake, tmp_path).cycle()
    assert fake.calls == [hold(6), *start(6, "node1")]


def test_a_foreign_running_job_occupies_gpus_but_is_never_preempted(tmp_path: Path) -> None:
    """srtf preempts long jobs for short ones, but only schedlab's: job 7 (8 GPUs, the one node)
    holds the GPUs either way; a short 2-GPU job makes srtf requeue it only when it carries
    schedlab's marker."""
    for mark in ("", "schedlab:released"):
        foreign = fake_job(
            7, 8, T0, state="RUNNING", held=False, nodes="node1", gpu_idx=["gpu:8(IDX:0-7)"]
        )
        foreign["admin_comment"] = mark
        foreign["time_limit"] = 600
        fake = FakeSlurm([fake_node("node1")], [foreign, fake_job(9, 2, T0 + 5, time_limit=1)])
        view = build_view(read_jobs(fake.squeue()), read_nodes(fake.sinfo()), NOW)
        assert (7 in view.running) == bool(mark)
        assert view.snapshot.free_gpus == 0
        server(fake, tmp_path / (mark or "none"), "srtf").cycle()
        preempted = ["requeuehold", "7"] in fake.calls
        assert preempted == bool(mark), fake.calls


def test_jobs_of_another_partition_on_shared_nodes_hold_their_gpus(tmp_path: Path) -> None:
    """Partitions gpu and free share node1 and node2. A job of free (even one another
    scheduler marked as its own) runs 8 GPUs on node1: a scheduler of gpu counts them, so its
    8-GPU job goes to node2, and never preempts, holds or releases the free job (srtf would
    preempt a long job of its own for the short one)."""
    nodes = [fake_node(n) for n in ("node1", "node2")]
    for node in nodes:
        node["partitions"] = ["gpu", "free"]
    other = fake_job(
        7, 8, T0, state="RUNNING", held=False, nodes="node1", gpu_idx=["gpu:8(IDX:0-7)"]
    )
    other.update(partition="free", admin_comment="schedlab:released", time_limit=600)
    queued = [fake_job(8, 8, T0 + 1, time_limit=5), fake_job(9, 8, T0 + 2, time_limit=1)]
    fake = FakeSlurm(nodes, [other, *queued])
    srv = Server(
        fake, ServeConfig(policy="srtf", partition="gpu"), Journal(tmp_path / "j.jsonl"),
        clock=lambda: NOW,
    )  # fmt: skip
    srv.cycle()
    touched = {c[1].removeprefix("JobId=") for c in without_reasons(fake.calls)}
    assert "7" not in touched
    started = [r for r in read_journal(tmp_path / "j.jsonl") if r["action"] == "start"]
    assert [(r["job"], r["nodes"]) for r in started] == [(9, ["node2"])]


def test_a_released_job_held_again_before_it_ran_is_not_journaled_as_requeued(
    tmp_path: Path,
) -> None:
    fake = FakeSlurm(nodes(), [fake_job(10, 8, T0, held=False, required="node2")])
    srv = server(fake, tmp_path)
    srv.cycle()  # launching on node2
    fake.nodes["node2"]["state_flags"] = ["DRAIN"]
    srv.cycle()  # stranded: held and placed on node1
    actions = [r["action"] for r in journal(tmp_path) if r["job"] == 10]
    assert "requeued" not in actions and "hold" in actions


# -- eligibility -------------------------------------------------------------------------------
def test_only_jobs_slurm_would_run_now_are_offered(tmp_path: Path) -> None:
    """11 waits on a dependency, 12 on --begin in 90 s; 13's begin has passed; 14 was requeued
    (its begin time is Slurm's requeue delay, which the start undoes). fifo places 13 and 14."""
    fake = FakeSlurm(
        nodes(),
        [
            fake_job(11, 8, T0, dependency="afterok:3(unfulfilled)"),
            fake_job(12, 8, T0 + 1, eligible=NOW + 90),
            fake_job(13, 4, T0 + 2, eligible=NOW - 5),
            fake_job(14, 4, T0 + 3, eligible=NOW + 60, restarts=1),
        ],
    )
    srv = server(fake, tmp_path)
    report = srv.cycle()
    assert report.started == 2
    started = [c[1] for c in fake.calls if c[0] == "release"]
    assert started == ["13", "14"]
    srv.cycle()
    waits = [(r["job"], r["reason"].split()[0]) for r in journal(tmp_path) if r["action"] == "wait"]
    assert waits == [(11, "Dependency"), (12, "BeginTime")]  # once each, not every cycle


def test_a_dependency_slurm_has_not_refreshed_is_judged_from_the_jobs_it_names() -> None:
    states = {3: "COMPLETED", 4: "FAILED", 5: "RUNNING", 6: "PENDING"}
    assert dependency_met("afterok:3(unfulfilled)", states)
    assert not dependency_met("afterok:4(unfulfilled)", states)
    assert dependency_met("afternotok:4(unfulfilled)", states)
    assert dependency_met("afterany:3(unfulfilled),afterany:4(unfulfilled)", states)
    assert not dependency_met("afterany:3(unfulfilled),afterany:5(unfulfilled)", states)
    assert dependency_met("after:5(unfulfilled)", states)
    assert not dependency_met("after:6(unfulfilled)", states)
    assert dependency_met("afterok:6(unfulfilled)?afterok:3(unfulfilled)", states)
    assert not dependency_met("singleton(unfulfilled)", states)
    assert not dependency_met("afterok:99(unfulfilled)", states)  # unknown: trust Slurm


def test_dependency_and_begin_reasons() -> None:
    job = read_jobs({"jobs": [fake_job(1, 1, T0, dependency="afterok:9(failed)")]})[0]
    assert ineligible_reason(job, NOW).startswith("DependencyNeverSatisfied")
    job = read_jobs({"jobs": [fake_job(1, 1, T0, dependency="afterany:9(satisfied)")]})[0]
    assert ineligible_reason(job, NOW) is None


# -- arrays ------------------------------------------------------------------------------------
def test_array_task_strings() -> None:
    assert array_task_ids("2-6%2") == [2, 3, 4, 5, 6]
    assert array_task_ids("1-9:4,12") == [1, 5, 9, 12]
    assert array_task_ids("7") == [7]


def test_an_array_is_split_into_tasks_placed_one_by_one_under_its_throttle(
    tmp_path: Path,
) -> None:
    """Array 20 (--array=1-4%2, 4 GPUs each) on two 8-GPU nodes: cycle 1 splits the four
    tasks off (new job ids 21-23, and 20 for the last); cycle 2 offers only two of them (the
    throttle) and fifo starts both; the other two wait with JobArrayTaskLimit."""
    fake = FakeSlurm(nodes(), [fake_job(20, 4, T0, array=(20, None, "1-4%2", 2))])
    srv = server(fake, tmp_path)
    srv.cycle()
    assert fake.calls == [hold(f"20_{t}") for t in (1, 2, 3, 4)]
    assert sorted(fake.jobs) == [20, 21, 22, 23]  # the last task keeps the array's id
    assert [fake.jobs[j]["array_task_id"] for j in (21, 22, 23, 20)] == [1, 2, 3, 4]
    fake.calls.clear()
    srv.cycle()
    # Tasks are named ARRAY_TASK in every command; the throttle lets tasks 1 and 2 go first.
    assert [c[1] for c in fake.calls if c[0] == "release"] == ["20_1", "20_2"]
    waits = [r for r in journal(tmp_path) if r["action"] == "wait"]
    assert len(waits) == 2 and all("JobArrayTaskLimit" in r["reason"] for r in waits)
    # Both finish: tasks 3 and 4 follow; task 4 is the array's own record (job id 20), which
    # scontrol would read as the whole array if it were named "20".
    fake.finish(21)
    fake.finish(22)
    fake.calls.clear()
    srv.cycle()
    assert [c[1] for c in fake.calls if c[0] == "release"] == ["20_3", "20_4"]
    assert ["update", "JobId=20_4", "ReqNodeList=node1"] in fake.calls


def test_classify_sorts_every_kind_once() -> None:
    raw = [
        fake_job(1, 1, T0),
        fake_job(2, 1, T0, mark=""),  # --hold, unmarked: claim
        fake_job(3, 1, T0, held=False, mark=""),  # Slurm's
        fake_job(4, 1, T0, held=False, required="node1"),  # launching
        {
            **fake_job(5, 1, T0, held=False, required="node1"),
            "state_reason": "QOSMaxJobsPerUserLimit",
        },
    ]
    c = classify(read_jobs({"jobs": raw}), NOW)
    assert [j.job_id for j in c.queued] == [1, 2] and c.claim == [2]
    assert [j.job_id for j in c.launching] == [4]
    assert list(c.limited) == [5]


# -- one instance ------------------------------------------------------------------------------
def test_a_second_scheduler_of_the_same_partitions_is_refused(tmp_path: Path) -> None:
    """Locks per partition: 'gpu' twice, or 'gpu' beside an all-partition scheduler, is
    refused with the holder named; 'gpu' beside 'free' is fine; a released lock is free."""
    with PartitionLock(tmp_path, "gpu"):
        with pytest.raises(InputError, match=r"already manages partition 'gpu' \(pid \d+"):
            PartitionLock(tmp_path, "gpu").acquire()
        with pytest.raises(InputError, match="already manages"):
            PartitionLock(tmp_path, None).acquire()
        with PartitionLock(tmp_path, "free"):
            pass
    with PartitionLock(tmp_path, None), pytest.raises(InputError, match="every partition"):
        PartitionLock(tmp_path, "gpu").acquire()
    with PartitionLock(tmp_path, "gpu"):
        pass


def test_the_command_refuses_a_second_instance_before_touching_slurm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal_path = tmp_path / "j.jsonl"
    with PartitionLock(tmp_path, "gpu"):
        argv = ["serve", "slurm", "--policy", "fifo", "--partition", "gpu"]
        code = main([*argv, "--state-dir", str(tmp_path), "--journal", str(journal_path)])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("schedlab: error: another 'schedlab serve slurm'")
    assert not journal_path.exists()
