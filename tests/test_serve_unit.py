"""serve slurm without a cluster: Slurm's JSON read right, snapshots built right, decisions turned
into the exact scontrol commands, failures contained, restarts re-derived (all hand-computed)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from schedlab.cli import main
from schedlab.model.snapshot import (
    PENDING,
    RUNNING,
    Overhead,
    Overheads,
    Preempt,
    Resize,
    Start,
)
from schedlab.serve.apply import Applier, start_commands
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node, without_reasons
from schedlab.serve.hostlist import expand_hostlist, expand_ranges, gpu_indices
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.live import build_view, impossible_reason
from schedlab.serve.loop import ServeConfig, Server, cluster_spec
from schedlab.serve.slurm_state import parse_gpu_tres, read_jobs, read_nodes

FIXTURES = Path(__file__).parent / "fixtures" / "slurm"
T0 = 1_000_000.0


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def server(fake: FakeSlurm, tmp_path: Path, policy: str = "fifo", **kw: object) -> Server:
    cfg = ServeConfig(policy=policy, **kw)  # type: ignore[arg-type]
    return Server(fake, cfg, Journal(tmp_path / "journal.jsonl"), clock=lambda: T0 + 100)


def released(job: int) -> list[str]:
    """The last command of a start: the ownership marker says schedlab released the job."""
    return ["update", f"JobId={job}", "AdminComment=schedlab:released"]


def hold(job: int) -> list[str]:
    """schedlab's hold: an admin hold plus the marker that it owns the job."""
    return ["update", f"JobId={job}", "Priority=0", "AdminComment=schedlab:queued"]


def journal(tmp_path: Path) -> list[dict]:
    return list(read_journal(tmp_path / "journal.jsonl"))


# -- parsing -----------------------------------------------------------------------------------
def test_hostlists_and_gpu_indices() -> None:
    assert expand_hostlist("node[1-3,7],gpu07") == ["node1", "node2", "node3", "node7", "gpu07"]
    assert expand_hostlist("n[01-02]") == ["n01", "n02"]
    assert expand_hostlist("") == []
    assert expand_ranges("0-2,5") == [0, 1, 2, 5]
    assert gpu_indices("gpu:3(IDX:0-1,4)") == [0, 1, 4]
    assert gpu_indices("gpu:a100:2(IDX:6-7)") == [6, 7]
    assert gpu_indices("gpu:0") == []


def test_gpu_tres_strings() -> None:
    assert parse_gpu_tres("gres:gpu:2") == (2, "")
    assert parse_gpu_tres("gres/gpu:a100:4") == (4, "a100")
    assert parse_gpu_tres("gpu:8(S:0-1)") == (8, "")
    assert parse_gpu_tres("gres:gpu") == (1, "")
    assert parse_gpu_tres("") == (0, "")
    assert parse_gpu_tres("gres:tmpdisk:100") == (0, "")


def test_recorded_payloads_are_read_as_slurm_meant_them() -> None:
    """squeue/sinfo --json recorded on Slurm 22.05: a 4-GPU job on node1 (IDX 0-3), a 12-GPU
    --gpus job on node2 (8) + node3 (4), job 16 released and pinned to drained node4, job 17
    requeued held, jobs 11 and 12 finished."""
    nodes = read_nodes(load("sinfo.json"))
    assert [n.name for n in nodes] == ["node1", "node2", "node3", "node4"]
    assert [n.gpus for n in nodes] == [8, 8, 8, 8]
    assert [n.available for n in nodes] == [True, True, True, False]
    jobs = {j.job_id: j for j in read_jobs(load("squeue.json"))}
    assert jobs[11].finished and jobs[12].finished
    assert jobs[12].rejected
    assert jobs[14].nodes == ("node1",) and jobs[14].gpu_idx == ((0, 1, 2, 3),)
    assert jobs[14].time_limit == 300.0 and jobs[14].num_gpus == 4
    assert jobs[15].nodes == ("node2", "node3") and jobs[15].num_gpus == 12
    assert jobs[15].gpu_idx == (tuple(range(8)), (0, 1, 2, 3))
    assert jobs[16].pending and not jobs[16].held and jobs[16].required_nodes == ("node4",)
    assert jobs[16].time_limit == float("inf")
    assert jobs[17].held and jobs[17].restart_count == 1


def load_marked() -> dict:
    """The recorded squeue with schedlab's ownership marker on the jobs it released (14-16);
    job 17 is held by its owner (``--hold``), which hands it to schedlab unmarked."""
    data = load("squeue.json")
    for raw in data["jobs"]:
        if raw["job_id"] in (14, 15, 16):
            raw["admin_comment"] = "schedlab:released"
    return data


def test_recorded_payloads_make_the_snapshot_a_policy_sees() -> None:
    jobs = read_jobs(load_marked())
    view = build_view(jobs, read_nodes(load("sinfo.json")), now=T0)
    snap = view.snapshot
    assert view.running == [14, 15]
    assert view.launching == []
    assert list(view.stranded) == [16] and "node4" in view.stranded[16]
    assert view.queued == [16, 17]
    # node1: 4 of 8 used; node2: full; node3: 4 used; node4 drained: nothing free.
    assert (snap.state.gpu_free_sum // 1000).tolist() == [4, 0, 4, 0]
    assert snap.free_gpus == 8
    pend = [view.infos[i].job_id for i in snap.pending()]
    assert pend == [16, 17]
    assert all(snap.runtime.status[i] == PENDING for i in snap.pending())
    i15 = view.index_of(15)
    assert snap.runtime.status[i15] == RUNNING
    assert snap.runtime.allocation[i15] == ((1, tuple(range(8))), (2, (0, 1, 2, 3)))
    assert snap.runtime.alloc_n[i15] == 12


def test_cluster_spec_for_replay() -> None:
    nodes = read_nodes(
        {"nodes": [fake_node("a1"), fake_node("a2"), fake_node("b1", 4, gpu_type="t4")]}
    )
    assert cluster_spec(nodes) == "2x8:GPU+1x4:T4"


# -- one cycle against the fake ----------------------------------------------------------------
def two_nodes(**kw: object) -> list[dict]:
    return [fake_node("node1"), fake_node("node2", **kw)]  # type: ignore[arg-type]


def test_fifo_bestfit_cycle_sends_the_exact_commands(tmp_path: Path) -> None:
    """node1 has 4 of 8 GPUs used, node2 2 of 8 (a launching job). fifo takes job 3 (4 GPUs):
    best fit is node1 (4 free, leaves 0); then job 4 (1 GPU): only node2 has room."""
    fake = FakeSlurm(
        two_nodes(),
        [
            fake_job(
                1,
                4,
                T0,
                state="RUNNING",
                held=False,
                nodes="node1",
                gpu_idx=["gpu:4(IDX:0-3)"],
                start=T0,
            ),
            fake_job(2, 2, T0 + 1, held=False, required="node2"),
            fake_job(3, 4, T0 + 2),
            fake_job(4, 1, T0 + 3),
        ],
    )
    report = server(fake, tmp_path).cycle()
    assert fake.calls == [
        ["update", "JobId=3", "ReqNodeList=node1"],
        ["release", "3"],
        released(3),
        ["update", "JobId=4", "ReqNodeList=node2"],
        ["release", "4"],
        released(4),
    ]
    assert (report.queued, report.running, report.started, report.errors) == (2, 2, 2, 0)
    # Jobs 1 and 2 were released before this journal began: their starts are recovered.
    recovered = [r["job"] for r in journal(tmp_path) if r.get("recovered")]
    assert recovered == [1, 2]
    starts = [r for r in journal(tmp_path) if r["action"] == "start" and not r.get("recovered")]
    assert [(r["job"], r["nodes"], r["gpus"], r["cycle"]) for r in starts] == [
        (3, ["node1"], 4, 1),
        (4, ["node2"], 1, 1),
    ]
    assert all({"time", "cycle", "job", "action"} <= set(r) for r in journal(tmp_path))


def test_fifo_stops_at_a_head_that_does_not_fit(tmp_path: Path) -> None:
    """Job 2 wants 8 GPUs but the most free on one node is 6: fifo starts nothing behind it."""
    fake = FakeSlurm(
        two_nodes(),
        [
            fake_job(
                1, 2, T0, state="RUNNING", held=False, nodes="node1", gpu_idx=["gpu:2(IDX:0-1)"]
            ),
            fake_job(
                5, 2, T0, state="RUNNING", held=False, nodes="node2", gpu_idx=["gpu:2(IDX:0-1)"]
            ),
            fake_job(2, 8, T0 + 1),
            fake_job(3, 1, T0 + 2),
        ],
    )
    server(fake, tmp_path).cycle()
    assert without_reasons(fake.calls) == []
    fake.calls.clear()
    server(fake, tmp_path, backfill=True).cycle()  # backfill may start job 3 around the head
    # Job 3's waiting reason (written by the first cycle) is taken off as it starts.
    assert without_reasons(fake.calls)[-2:] == [["release", "3"], [*released(3), "Comment="]]


def test_impossible_jobs_are_rejected_visibly_and_do_not_block(tmp_path: Path) -> None:
    fake = FakeSlurm(
        two_nodes(),
        [
            fake_job(1, 16, T0),  # more GPUs per node than any node has
            fake_job(2, 2, T0, gpu_type="a100"),  # no node has this model
            fake_job(3, 20, T0, per_job=True),  # more than the partition (16)
            fake_job(4, 2, T0 + 1),
        ],
    )
    srv = server(fake, tmp_path)
    srv.cycle()
    assert fake.calls[:3] == [
        [
            "update",
            "JobId=1",
            "Comment=schedlab: rejected: asks for 16 GPUs per node; the largest node has 8",
        ],
        [
            "update",
            "JobId=2",
            "Comment=schedlab: rejected: unknown GPU model 'a100' (nodes have: untyped)",
        ],
        ["update", "JobId=3", "Comment=schedlab: rejected: needs 20 GPUs; the partition has 16"],
    ]
    # Both nodes empty: the seeded tie order (2 nodes: node1 first) decides.
    assert fake.calls[3:] == [
        ["update", "JobId=4", "ReqNodeList=node1"],
        ["release", "4"],
        released(4),
    ]
    rejects = [r for r in journal(tmp_path) if r["action"] == "reject"]
    assert [r["job"] for r in rejects] == [1, 2, 3]
    assert rejects[0]["reason"] == "asks for 16 GPUs per node; the largest node has 8"
    # Marked jobs are passed over from then on: the next cycle sends nothing about them.
    fake.calls.clear()
    srv.cycle()
    assert fake.calls == []


def test_a_job_of_a_gpu_model_that_exists_is_not_rejected() -> None:
    nodes = read_nodes({"nodes": [fake_node("n1", gpu_type="a100"), fake_node("n2")]})
    job = read_jobs({"jobs": [fake_job(1, 4, T0, gpu_type="A100")]})[0]
    assert impossible_reason(job, nodes) is None
    big = read_jobs({"jobs": [fake_job(2, 4, T0, gpu_type="a100", node_count=2)]})[0]
    assert impossible_reason(big, nodes) == "asks for 2 nodes with 4 'a100' GPUs each"


def test_one_failing_update_is_journaled_and_the_cycle_goes_on(tmp_path: Path) -> None:
    fake = FakeSlurm(two_nodes(), [fake_job(1, 8, T0), fake_job(2, 8, T0 + 1)])
    fake.fail_jobs[1] = "Invalid node name specified"
    report = server(fake, tmp_path).cycle()
    # Job 1's pin to node1 (tie order) fails; job 2 still gets node2.
    assert without_reasons(fake.calls) == [
        ["update", "JobId=1", "ReqNodeList=node1"],
        ["update", "JobId=2", "ReqNodeList=node2"],
        ["release", "2"],
        released(2),
    ]
    # Job 1's waiting reason fails to be written too: a second error, the cycle goes on.
    assert report.errors == 2 and report.started == 1
    err = next(r for r in journal(tmp_path) if r["action"] == "error")
    assert err["job"] == 1 and err["attempted"] == "start" and err["nodes"] == ["node1"]
    assert "Invalid node name specified" in err["reason"]
    assert err["command"] == "update JobId=1 ReqNodeList=node1"


def test_a_failed_read_skips_the_cycle_and_the_next_one_works(tmp_path: Path) -> None:
    fake = FakeSlurm(two_nodes(), [fake_job(1, 1, T0)])
    fake.fail_reads = 1
    srv = server(fake, tmp_path)
    assert not srv.cycle().ok
    assert srv.cycle().started == 1
    assert journal(tmp_path)[0]["action"] == "error"


# -- drains, requeues, restarts ------------------------------------------------------------------
def test_drained_nodes_are_never_chosen(tmp_path: Path) -> None:
    fake = FakeSlurm(
        two_nodes(state="idle", flags=["DRAIN"]), [fake_job(1, 1, T0), fake_job(2, 8, T0)]
    )
    srv = server(fake, tmp_path)
    srv.cycle()
    assert without_reasons(fake.calls) == [
        ["update", "JobId=1", "ReqNodeList=node1"],
        ["release", "1"],
        released(1),
    ]


def test_a_job_pinned_to_a_drained_node_is_held_and_placed_again(tmp_path: Path) -> None:
    """Released onto node2 before node2 was drained: hold it, then pin it to node1."""
    fake = FakeSlurm(
        two_nodes(state="idle", flags=["DRAIN"]), [fake_job(7, 2, T0, held=False, required="node2")]
    )
    srv = server(fake, tmp_path)
    srv.cycle()
    assert fake.calls == [
        hold(7),
        ["update", "JobId=7", "ReqNodeList=node1"],
        ["release", "7"],
        released(7),
    ]
    record = next(r for r in journal(tmp_path) if r["action"] == "hold")
    assert record["job"] == 7 and "node2" in record["reason"]


def test_a_requeued_job_is_repinned_with_an_immediate_start_time(tmp_path: Path) -> None:
    fake = FakeSlurm(two_nodes(), [fake_job(9, 2, T0, required="node2", restarts=1)])
    server(fake, tmp_path).cycle()
    assert fake.calls == [
        ["update", "JobId=9", "ReqNodeList=node1", "StartTime=now"],
        ["release", "9"],
        released(9),
    ]


def test_restart_never_places_a_released_job_twice(tmp_path: Path) -> None:
    """Cycle 1 pins and releases jobs 1 and 2 (node1) and 3 (node2); Slurm has not started them.
    A fresh process (a restart after SIGKILL) sees 1 and 2 launching on their pins and sends
    nothing about them; job 3, as if the kill came between its update and its release, is still
    held, so it is placed again (on node2, the only node with room) and released once."""
    fake = FakeSlurm(
        two_nodes(), [fake_job(1, 4, T0), fake_job(2, 4, T0 + 1), fake_job(3, 8, T0 + 2)]
    )
    first = server(fake, tmp_path)
    first.cycle()
    assert [c for c in fake.calls if c[0] == "release"] == [
        ["release", "1"],
        ["release", "2"],
        ["release", "3"],
    ]
    pins = {j: fake.jobs[j]["required_nodes"] for j in (1, 2, 3)}
    assert pins[1] == pins[2] != pins[3]
    # Now restart with job 3 still held (as if the kill came between its update and release,
    # so before its marker said released).
    fake.jobs[3].update(priority=0, state_reason="JobHeldUser", admin_comment="schedlab:queued")
    fake.calls.clear()
    second = server(fake, tmp_path)
    second.cycle()
    assert fake.calls == [
        ["update", "JobId=3", f"ReqNodeList={pins[3]}"],
        ["release", "3"],
        released(3),
    ]
    fake.calls.clear()
    server(fake, tmp_path).cycle()  # and a third process: nothing left to do
    assert fake.calls == []


def test_restart_counts_running_jobs_where_slurm_says(tmp_path: Path) -> None:
    fake = FakeSlurm(
        two_nodes(), [fake_job(1, 6, T0), fake_job(2, 6, T0 + 1)], start_on_release=True
    )
    server(fake, tmp_path).cycle()
    assert fake.jobs[1]["job_state"] == "RUNNING" and fake.jobs[2]["job_state"] == "RUNNING"
    fake.jobs[3] = fake_job(3, 4, T0 + 5)
    fake.calls.clear()
    server(fake, tmp_path).cycle()
    assert without_reasons(fake.calls) == []  # 2 GPUs free on each node: a 4-GPU job waits


def test_finishes_and_arrivals_are_journaled_once(tmp_path: Path) -> None:
    fake = FakeSlurm(
        two_nodes(),
        [fake_job(1, 8, T0), fake_job(2, 8, T0), fake_job(3, 8, T0)],
        start_on_release=True,
    )
    srv = server(fake, tmp_path)
    srv.cycle()
    fake.finish(1)
    srv.cycle()
    srv.cycle()
    actions = [(r["action"], r["job"]) for r in journal(tmp_path)]
    assert actions.count(("arrive", 3)) == 1
    assert actions.count(("finish", 1)) == 1
    assert ("start", 3) in actions


# -- decisions the queue scheduler does not make here, applied directly ---------------------
def test_preempt_resize_and_start_commands(tmp_path: Path) -> None:
    fake = FakeSlurm(
        two_nodes(),
        [
            fake_job(
                1, 2, T0, state="RUNNING", held=False, nodes="node1", gpu_idx=["gpu:2(IDX:0-1)"]
            ),
            fake_job(2, 2, T0, held=False, required="node2"),
            fake_job(3, 12, T0, per_job=True),
            fake_job(4, 4, T0),
        ],
    )
    jobs = read_jobs(fake.squeue())
    view = build_view(jobs, read_nodes(fake.sinfo()), now=T0)
    applier = Applier(fake, lambda: {"time": T0, "cycle": 1})
    i = view.index_of
    out = applier.apply(
        view,
        [
            Start(i(3), ((0, tuple(range(6))), (1, tuple(range(2, 8))))),
            Preempt(i(1)),
            Preempt(i(2)),
            Resize(i(1), ((0, (0,)),)),
            Overhead(i(1), 5.0),  # simulation only
            Overheads((i(1), i(2)), (5.0, 3.0)),  # the same, one record per job
            Start(i(4), ((1, (0, 1)),)),  # 2 GPUs for a 4-GPU job: refused before Slurm
        ],
    )
    assert fake.calls == [
        ["update", "JobId=1", "AdminComment=schedlab:queued"],
        ["requeuehold", "1"],
        hold(2),  # launching: held, then requeued in case Slurm started it meanwhile
        ["requeuehold", "2"],
        ["update", "JobId=3", "ReqNodeList=node1,node2", "NumNodes=2"],
        ["release", "3"],
        released(3),
    ]
    actions = [r["action"] for r in out.records]
    assert actions == ["preempt", "preempt", "skip", "skip", "skip", "skip", "start", "skip"]
    for r in out.records[3:6]:
        assert r["reason"] == "Overhead decisions have no Slurm counterpart"
    assert "asked for 4" in out.records[-1]["reason"]


def test_start_commands_for_a_released_job_hold_it_first() -> None:
    job = read_jobs({"jobs": [fake_job(5, 1, T0, held=False, required="node9")]})[0]
    assert start_commands(job, ["node1"], held=False) == [
        hold(5),
        ["update", "JobId=5", "ReqNodeList=node1"],
        ["release", "5"],
        released(5),
    ]


# -- journal -----------------------------------------------------------------------------------
def test_journal_appends_and_survives_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j = Journal(path)
    j.write({"time": 1.0, "cycle": 1, "job": 1, "action": "start"})
    j.close()
    j = Journal(path)  # a second process appends, never truncates
    j.write({"time": 2.0, "cycle": 1, "job": 2, "action": "start"})
    j.close()
    with path.open("a") as f:
        f.write('{"time": 3.0, "cyc')  # killed mid-line
    assert [r["job"] for r in read_journal(path)] == [1, 2]
    path.write_text('{"action": "a"}\nnot json\n{"action": "b"}\n')
    with pytest.raises(Exception, match=r"j.jsonl:2"):
        list(read_journal(path))


# -- the loop and the command ------------------------------------------------------------------
def test_until_idle_exits_zero_when_nothing_is_left(tmp_path: Path) -> None:
    fake = FakeSlurm(two_nodes(), [])
    srv = server(fake, tmp_path, until_idle=True)
    assert srv.run() == 0
    assert srv.stop_reason == "idle"
    assert [r["action"] for r in journal(tmp_path)] == ["serve", "stop"]


def test_sigterm_finishes_the_cycle_and_exits_cleanly(tmp_path: Path) -> None:
    frozen = time.time()
    fake = FakeSlurm(two_nodes(), [fake_job(1, 8, T0), fake_job(2, 8, T0), fake_job(3, 8, T0)])
    cfg = ServeConfig(policy="fifo", interval=0.01)
    srv = Server(
        fake,
        cfg,
        Journal(tmp_path / "journal.jsonl"),
        # A clock that stands still: the first cycle never outlasts the interval, however slow
        # the machine, so the signal always arrives in the first wait.
        clock=lambda: frozen,
        sleep=lambda s: os.kill(os.getpid(), signal.SIGTERM),
    )
    assert srv.run() == 0
    assert srv.stop_reason == "SIGTERM" and srv.cycle_no == 1
    assert journal(tmp_path)[-1]["reason"] == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_bad_policy_is_one_line_before_touching_slurm(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "slurm", "--policy", "fifoo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("schedlab: error: unknown ordering policy 'fifoo'; did you mean 'fifo'")
    assert main(["serve", "slurm", "--policy", "fifo", "--interval", "0"]) == 2
    assert "'--interval' must be > 0" in capsys.readouterr().err


def test_tie_order_matches_the_replay_engine() -> None:
    """The same seed gives the same node tie-break order as replay (bestfit ties → node2 first)."""
    assert np.random.default_rng(0).permutation(4).tolist() == [2, 0, 1, 3]


def test_a_lasting_failure_is_journaled_once_and_each_busy_cycle_says_what_it_did(
    tmp_path: Path,
) -> None:
    """Job 1's pin fails in every cycle, and so does the update that writes why it waits: one
    error record of each for three cycles; every cycle that decided something has a ``cycle``
    record with its time and counts."""
    fake = FakeSlurm(two_nodes(), [fake_job(1, 8, T0)])
    fake.fail_jobs[1] = "Job resizing not supported for job arrays"
    srv = server(fake, tmp_path)
    for _ in range(3):
        srv.cycle()
    errors = [r for r in journal(tmp_path) if r["action"] == "error"]
    assert [(r["cycle"], r["attempted"]) for r in errors] == [(1, "start"), (1, "reason")]
    cycles = [r for r in journal(tmp_path) if r["action"] == "cycle"]
    assert [r["cycle"] for r in cycles] == [1, 2, 3]
    assert all(r["decisions"] == 1 and r["errors"] == 2 and r["seconds"] >= 0 for r in cycles)
    del fake.fail_jobs[1]
    fake.jobs[1].update(priority=0, state_reason="JobHeldUser")
    srv.cycle()  # works now: the pin and release go through
    assert ["release", "1"] in fake.calls


def test_shadow_mode_journals_the_decisions_and_changes_nothing(tmp_path: Path) -> None:
    """Jobs 1 (8 GPUs) and 2 (4): the starts fifo would make are journaled once, with a cycle
    record, and no scontrol command reaches Slurm, in any cycle."""
    fake = FakeSlurm(two_nodes(), [fake_job(1, 8, T0), fake_job(2, 4, T0 + 1)])
    srv = server(fake, tmp_path, shadow=True)
    for _ in range(3):
        srv.cycle()
    assert fake.calls == []
    assert fake.jobs[1]["priority"] == 0 and fake.jobs[1]["required_nodes"] == ""
    starts = [(r["job"], r["cycle"]) for r in journal(tmp_path) if r["action"] == "start"]
    assert starts == [(1, 1), (2, 1)]
    assert [r["cycle"] for r in journal(tmp_path) if r["action"] == "cycle"] == [1]


def test_a_start_the_journal_missed_is_recovered_once(tmp_path: Path) -> None:
    """Killed after releasing job 5 but before journaling it: the next scheduler finds it
    running, journals its start from Slurm's record (marked recovered), and a third one, reading
    that journal, does not do it again."""
    fake = FakeSlurm(
        two_nodes(),
        [
            fake_job(
                5, 4, T0, state="RUNNING", held=False, nodes="node2", gpu_idx=["gpu:4(IDX:0-3)"]
            )
        ],
    )
    server(fake, tmp_path).cycle()
    server(fake, tmp_path).cycle()
    starts = [r for r in journal(tmp_path) if r["action"] == "start"]
    assert [(r["job"], r["nodes"], r["gpus"], r["recovered"]) for r in starts] == [
        (5, ["node2"], 4, True)
    ]


def test_a_short_job_that_ended_while_no_scheduler_ran_is_recovered(tmp_path: Path) -> None:
    """Job 6 was released just before a kill (its start not journaled) and finished before the
    restart: the restarted scheduler journals its start and finish from Slurm's record; job 7,
    which ended before the journal's last line, is not its to account for."""
    path = tmp_path / "journal.jsonl"
    path.write_text(
        json.dumps({"time": T0 + 50, "cycle": 1, "job": None, "action": "serve"}) + "\n"
    )
    done = {"state": "COMPLETED", "held": False, "nodes": "node1", "time_limit": 10}
    fake = FakeSlurm(
        two_nodes(),
        [fake_job(6, 2, T0, start=T0 + 52, **done), fake_job(7, 2, T0, start=T0 + 10, **done)],  # type: ignore[arg-type]
    )
    server(fake, tmp_path).cycle()
    recovered = [
        (r["job"], r["action"])
        for r in journal(tmp_path)
        if r.get("recovered") or r["action"] == "finish"
    ]
    assert recovered == [(6, "start"), (6, "finish")]
