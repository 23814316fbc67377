"""Jobs read from ``squeue -O`` text: each row becomes the record ``squeue --json`` gives (hand
cases in Slurm 22.05's words), arrays regrouped with their throttle, the per-node GPUs of
multi-node jobs fetched once, and anything unexpected falls back to ``squeue --json``."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlab.errors import SchedlabError
from schedlab.serve.client import SlurmError, SubprocessSlurm
from schedlab.serve.slurm_state import parse_job
from schedlab.serve.squeue_text import (
    FIELD_END,
    FIELDS,
    ROW_END,
    THROTTLE_TTL,
    Supplements,
    TextFormatError,
    compact,
    gres_detail,
    read_squeue_text,
    squeue_argv,
    throttle_of,
    time_limit_minutes,
)

#: ``scontrol -d -o show job`` of a --gpus=12 job on node2 (8) and node3 (4), Slurm 22.05.
SHOW_JOB_12 = (
    "JobId=1166 JobName=run12 UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901603 "
    "JobState=RUNNING Reason=None Dependency=(null) NodeList=node[2-3] BatchHost=node2 "
    "NumNodes=2 NumCPUs=2 NumTasks=1 TRES=cpu=2,node=2,billing=2 JOB_GRES=gpu:12 "
    "  Nodes=node2 CPU_IDs=0 Mem=0 GRES=gpu:8(IDX:0-7)   Nodes=node3 CPU_IDs=0 Mem=0 "
    "GRES=gpu:4(IDX:0-3) MinCPUsNode=1 Comment=Nodes=node9 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:5) "
    "TresPerJob=gres:gpu:12"
)
SHOW_ARRAY = (
    "JobId=1173 ArrayJobId=1167 ArrayTaskId=1 ArrayTaskThrottle=2 JobName=arr UserId=root(0)\n"
    "JobId=1167 ArrayJobId=1167 ArrayTaskId=2-6%2 ArrayTaskThrottle=2 JobName=arr UserId=root(0)\n"
)


#: A job that asked ``--gpus=12``, and a job running since 12:08:35 (in ``row``'s words).
PER_JOB_12 = {"tres-per-node": "N/A", "tres-per-job": "gres:gpu:12"}
RUNNING = {"State": "RUNNING", "Reason": "None", "StartTime": "2026-11-26T12:08:35"}


def row(job: int = 1172, **values: str) -> str:
    """One row as :func:`squeue_argv` makes squeue print it for job ``job``; unnamed fields
    as squeue prints a pending plain job's."""
    base = {
        "JobID": str(job),
        "ArrayJobID": str(job),
        "ArrayTaskID": "N/A",
        "Name": "ckpt",
        "UserName": "root",
        "Account": "(null)",
        "Partition": "gpu",
        "State": "PENDING",
        "Reason": "JobHeldUser",
        "PriorityLong": "0",
        "tres-per-node": "gres:gpu:2",
        "tres-per-job": "N/A",
        "tres-per-task": "N/A",
        "NTPerNode": "0",
        "NumTasks": "1",
        "NodeList": "",
        "NumNodes": "1",
        "TimeLimit": "45:00",
        "ReqNodes": "",
        "SubmitTime": "2026-11-26T12:08:35",
        "StartTime": "N/A",
        "EndTime": "N/A",
        "EligibleTime": "N/A",
        "RestartCnt": "0",
        "Dependency": "(null)",
        "Reservation": "(null)",
        "OverSubscribe": "OK",
        "admin_comment": "schedlab:queued",
        "Comment": "checkpoint",
    }
    base.update({k.replace("_", "-") if k.startswith("tres") else k: v for k, v in values.items()})
    assert set(base) == {name for name, _ in FIELDS}
    return FIELD_END.join(base[name] for name, _ in FIELDS) + ROW_END + "\n"


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """squeue prints local times; the hand cases are in UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


class NoScontrol:
    def __call__(self, job: str) -> str:
        raise AssertionError(f"no scontrol look-up expected (job {job})")


def jobs_of(text: str, show_job=None) -> dict[int, object]:
    data = read_squeue_text(text, Supplements(show_job or NoScontrol()))
    return {j.job_id: j for j in map(parse_job, data["jobs"])}


def test_a_held_job_reads_as_from_json() -> None:
    job = jobs_of(row())[1172]
    assert (job.name, job.user, job.partition, job.state, job.reason) == (
        "ckpt",
        "root",
        "gpu",
        "PENDING",
        "JobHeldUser",
    )
    assert (job.gpus_per_node, job.gpus_per_job, job.num_gpus, job.node_count) == (2, 0, 2, 1)
    assert job.held and job.marked_queued and job.comment == "checkpoint"
    assert job.submit_time == 1795694915.0  # 2026-11-26T12:08:35Z
    assert (job.start_time, job.end_time, job.eligible_time) == (0.0, 0.0, 0.0)
    assert job.time_limit == 45 * 60.0
    assert (job.array_job_id, job.array_task_id, job.array_tasks) == (0, None, "")
    assert (job.dependency, job.reservation, job.exclusive) == ("", "", False)


def test_shapes_limits_comments_and_times() -> None:
    """-N2 --exclusive, --gpus=12 with --begin and no limit, --gpus-per-task with a
    dependency, free text with separators of other tools ('|', ' -- ') and a reason 'None'."""
    text = row(
        1169,
        NumNodes="2",
        NumTasks="2",
        TimeLimit="1-02:04:00",
        OverSubscribe="NO",
        **{"tres-per-node": "gres:gpu:8"},
    )
    odd = {"Name": "odd name", "Comment": "a|b c -- d", "Reason": "None"}
    text += row(1170, TimeLimit="UNLIMITED", EligibleTime="2026-11-26T13:08:35", **odd | PER_JOB_12)
    text += row(
        1171,
        NumNodes="2",
        NumTasks="4",
        NTPerNode="2",
        ReqNodes="node[1-2]",
        Dependency="afterok:1(unfulfilled)",
        TimeLimit="5:00",
        **{"tres-per-node": "N/A", "tres-per-task": "gres:gpu:2"},
    )
    jobs = jobs_of(text)
    wide, odd, tasks = jobs[1169], jobs[1170], jobs[1171]
    assert (wide.num_gpus, wide.shaped, wide.exclusive) == (16, True, True)
    assert wide.time_limit == (1 * 1440 + 2 * 60 + 4) * 60.0
    assert (odd.gpus_per_job, odd.time_limit, odd.comment, odd.name) == (
        12,
        float("inf"),
        "a|b c -- d",
        "odd name",
    )
    assert odd.eligible_time == 1795694915.0 + 3600 and odd.reason == "None"
    assert (tasks.gpus_per_node, tasks.num_gpus, tasks.required_nodes) == (4, 8, ("node1", "node2"))
    assert tasks.dependency == "afterok:1(unfulfilled)"


def test_an_array_becomes_its_split_tasks_and_one_rest_with_the_throttle() -> None:
    """``--array=1-6%2`` with task 1 split off (job 1173): squeue --array prints tasks 2..6 as
    rows of job 1167; JSON has one record '2-6%2'. The throttle comes from scontrol, once."""
    text = row(JobID="1173", ArrayJobID="1167", ArrayTaskID="1", Reason="JobHeldAdmin")
    for k in range(2, 7):
        text += row(JobID="1167", ArrayJobID="1167", ArrayTaskID=str(k))
    text += row(JobID="1168", ArrayJobID="1168", ArrayTaskID="3", State="COMPLETED")
    asked: list[str] = []

    def show(job: str) -> str:
        asked.append(job)
        return SHOW_ARRAY

    more = Supplements(show, clock=lambda: 100.0)
    data = read_squeue_text(text, more)
    jobs = {j.job_id: j for j in map(parse_job, data["jobs"])}
    assert set(jobs) == {1173, 1167, 1168}
    rest, task = jobs[1167], jobs[1173]
    assert (rest.array_task_id, rest.array_tasks, rest.array_max_tasks) == (None, "2-6%2", 2)
    assert rest.array_rest
    assert (task.array_job_id, task.array_task_id, task.array_max_tasks) == (1167, 1, 2)
    assert task.label == "1167_1"
    assert jobs[1168].array_max_tasks == 0  # no pending task: nothing asked
    read_squeue_text(text, more)
    assert asked == ["1167"]  # kept for THROTTLE_TTL


def test_throttles_are_asked_again_after_their_time() -> None:
    now = [0.0]
    asked: list[str] = []
    more = Supplements(lambda job: asked.append(job) or SHOW_ARRAY, clock=lambda: now[0])
    assert more.throttle(1167) == 2 and more.throttle(1167) == 2
    now[0] = THROTTLE_TTL + 1
    assert more.throttle(1167) == 2
    assert asked == ["1167", "1167"]


def test_a_multi_node_per_job_gpu_run_gets_its_split_from_scontrol_once() -> None:
    foreign = {"admin_comment": "(null)", "Comment": "(null)"}
    text = row(1166, NodeList="node[2-3]", NumNodes="2", **RUNNING | PER_JOB_12 | foreign)
    text += row(1165, NodeList="node1", **RUNNING | {"tres-per-node": "gres:gpu:3"})
    asked: list[str] = []
    more = Supplements(lambda job: asked.append(job) or SHOW_JOB_12)
    jobs = {j.job_id: j for j in map(parse_job, read_squeue_text(text, more)["jobs"])}
    assert jobs[1166].nodes == ("node2", "node3")
    assert jobs[1166].gpu_idx == ((0, 1, 2, 3, 4, 5, 6, 7), (0, 1, 2, 3))
    assert jobs[1165].gpu_idx == ()  # one node: its count says it all
    read_squeue_text(text, more)
    assert asked == ["1166"]
    read_squeue_text(row(), more)  # it ended: forgotten
    assert more._detail == {}


def test_scontrol_failures() -> None:
    def fail(job: str) -> str:
        raise SlurmError(f"'scontrol show job {job}' failed (exit 1): Invalid job id")

    more = Supplements(fail)
    with pytest.raises(TextFormatError, match="throttle of array 7"):
        more.throttle(7)
    raw = {"job_id": 5, "start_time": 1.0}
    assert more.detail(raw) is None and more._detail == {}


def test_scontrol_text_pieces() -> None:
    assert gres_detail(SHOW_JOB_12) == ["gpu:8(IDX:0-7)", "gpu:4(IDX:0-3)"]
    two = "JOB_GRES=gpu:16 Nodes=node[1-2] CPU_IDs=0-1 Mem=0 GRES=gpu:8(IDX:0-7) Features=x"
    assert gres_detail(two) == ["gpu:8(IDX:0-7)", "gpu:8(IDX:0-7)"]
    assert gres_detail("JobId=1 JobState=PENDING") is None
    assert throttle_of(SHOW_ARRAY) == 2 and throttle_of("JobId=3 ArrayJobId=3") == 0


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("5:00", 5.0),
        ("0:30", 0.5),
        ("1:00:00", 60.0),
        ("2-03:04:30", 2 * 1440 + 3 * 60 + 4.5),
        ("UNLIMITED", None),
        ("N/A", None),
    ],
)
def test_time_limits(text: str, minutes: float | None) -> None:
    assert time_limit_minutes(text) == minutes


@given(st.integers(0, 400 * 1440 * 60))
def test_time_limits_in_every_form_slurm_prints(seconds: int) -> None:
    """Slurm prints M:SS under an hour, H:MM:SS under a day, D-HH:MM:SS beyond."""
    d, rest = divmod(seconds, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    text = f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
    assert time_limit_minutes(text) == pytest.approx(seconds / 60.0)


def test_compact_ranges() -> None:
    assert compact([6, 2, 3, 4]) == "2-4,6"
    assert compact([1]) == "1" and compact([]) == ""


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (row().replace(ROW_END, FIELD_END + "extra" + ROW_END), "30 fields, not 29"),
        (row(PriorityLong="high"), "priority 'high'"),
        (row(SubmitTime="yesterday"), "time 'yesterday'"),
        (row(TimeLimit="5:xx"), "time limit '5:xx'"),
        (row(ArrayTaskID="2-6%2"), "array task '2-6%2'"),
    ],
)
def test_rows_that_do_not_read_as_expected(text: str, words: str) -> None:
    with pytest.raises(TextFormatError, match=words.replace("(", r"\(")):
        jobs_of(text)


def test_the_client_falls_back_to_json_when_the_text_does_not_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = SubprocessSlurm()
    calls: list[list[str]] = []

    def run(argv, env=None, name=None) -> str:
        calls.append(list(argv))
        if argv[0] == "squeue" and "--json" in argv:
            return '{"jobs": [{"job_id": 9, "job_state": "PENDING"}], "errors": []}'
        assert env == {"SLURM_TIME_FORMAT": "standard"}
        return "garbage" + ROW_END

    monkeypatch.setattr(client, "_run", run)
    assert [j["job_id"] for j in client.squeue()["jobs"]] == [9]
    assert client.fallbacks == 1
    assert calls == [squeue_argv(), ["squeue", "--json"]]
    assert issubclass(TextFormatError, ValueError) and not issubclass(
        TextFormatError, SchedlabError
    )


def test_the_format_names_every_field_once() -> None:
    argv = squeue_argv()
    assert argv[:4] == ["squeue", "--noheader", "--array", "--states=all"]
    spec = argv[4].removeprefix("--Format=")
    names = [part.split(":", 1)[0] for part in spec.split(",")]
    assert names == [name for name, _ in FIELDS]
    assert spec.endswith(f"Comment:{ROW_END}")


def test_a_job_being_requeued_held_is_pending_as_json_says() -> None:
    """Right after ``scontrol requeuehold`` squeue's text says COMPLETING (the flag) where
    JSON says PENDING: read as PENDING, so its GPUs go to the job that replaced it. A job
    ending otherwise stays COMPLETING (active) until it is gone."""
    requeued = row(2015, State="COMPLETING", Reason="job requeued in held state", RestartCnt="1")
    ending = row(2016, State="COMPLETING", Reason="None", PriorityLong="4294901000")
    ending += row(2017, State="COMPLETING", Reason="None", PriorityLong="9", admin_comment="(null)")
    jobs = jobs_of(requeued + ending)
    assert (jobs[2015].state, jobs[2015].held, jobs[2015].restart_count) == ("PENDING", True, 1)
    assert jobs[2016].state == "PENDING"  # marked queued by serve: its requeuehold is under way
    assert jobs[2017].state == "COMPLETING" and jobs[2017].active


def test_a_pinned_node_list_reads_in_the_same_order_from_json_and_text() -> None:
    """serve pins a two-node job in its placement's order (``ReqNodeList=node3,node1``): JSON
    keeps that order, squeue's text compresses it (``node[1,3]``); both read as node1, node3."""
    from_json = parse_job({"job_id": 5, "job_state": "PENDING", "required_nodes": "node3,node1"})
    from_text = jobs_of(row(ReqNodes="node[1,3]"))[1172]
    assert from_json.required_nodes == from_text.required_nodes == ("node1", "node3")
