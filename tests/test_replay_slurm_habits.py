"""Slurm's habits in replay, as ``serve`` meets them live: time limits (``--time`` kills, the
``time_limit`` column and ``replay --time-limit``), job arrays with throttles, and dependencies
with Slurm's after/afterany/afterok/afternotok semantics — hand-computed cases through the CLI,
refusals of bad columns, and properties over random dependency graphs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.experiments.replay_run import ReplaySpec, jobs_frame, run_replay
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

HEADER = "job_id,submit_time,num_gpus,duration,time_limit,dependency,array\n"


def _replay(tmp_path: Path, rows: str, *extra: str, cluster: str = "1x2:V100") -> dict[str, dict]:
    trace = tmp_path / "jobs.csv"
    trace.write_text(HEADER + rows)
    out = tmp_path / "run"
    argv = ["replay", "--cluster", cluster, "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, "--out", str(out), *extra]) == 0
    with open(out / "jobs.csv", newline="") as fh:
        return {r["job_id"]: r for r in csv.DictReader(fh)}


def _times(row: dict[str, str]) -> tuple[float | None, float | None]:
    return tuple(float(row[k]) if row[k] else None for k in ("start_time", "end_time"))  # type: ignore[return-value]


def test_time_limit_array_throttle_and_dependencies_by_hand(tmp_path: Path) -> None:
    # One node of 2 GPUs, FIFO. prep runs 0–100. train (afterok:prep, 2 GPUs) runs from 100 and
    # is killed at its 300 s limit at 400. report (afternotok:train) may then run: 400–410.
    # The array (afterany:prep, at most 2 tasks queued or running) has tasks 0 and 1 queued at
    # 100, waiting behind train; they run 400–450 and 410–460, letting tasks 2 and 3 in at 450
    # and 460. eval (afterok on the whole array) runs when the last task ends, 510–540.
    jobs = _replay(
        tmp_path,
        "prep,0,1,100,,,\n"
        "train,0,2,500,300,afterok:prep,\n"
        "sweep,10,1,50,,afterany:prep,0-3%2\n"
        "eval,20,1,30,,afterok:sweep,\n"
        "report,0,1,10,,afternotok:train,\n",
    )
    expected = {
        "prep": (0, 100, "completed", 0),
        "train": (100, 400, "timeout", 100),
        "report": (400, 410, "completed", 400),
        "sweep_0": (400, 450, "completed", 100),
        "sweep_1": (410, 460, "completed", 100),
        "sweep_2": (450, 500, "completed", 450),
        "sweep_3": (460, 510, "completed", 460),
        "eval": (510, 540, "completed", 510),
    }
    for job, (start, end, status, eligible) in expected.items():
        assert _times(jobs[job]) == (start, end), job
        assert jobs[job]["status"] == status, job
        assert float(jobs[job]["eligible_time"]) == eligible, job
    assert jobs["train"]["jct"] == ""  # a job killed at its limit did not complete
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["timeouts"] == 1 and summary["completed"] == 7


def test_a_dependency_that_can_never_hold_cancels_the_job_and_any_of_waits_for_one(
    tmp_path: Path,
) -> None:
    # train times out at 300: ft (afterok) can never run and is cancelled; chain (afterany on
    # ft) may go once ft is decided; either (afterok:ft ? afternotok:train) goes on its second
    # clause; watch (after:train) was eligible as soon as train started, but waits for a GPU.
    jobs = _replay(
        tmp_path,
        "train,0,2,500,300,,\n"
        "ft,0,1,50,,afterok:train,\n"
        "chain,0,1,50,,afterany:ft,\n"
        "watch,5,1,20,,after:train,\n"
        "either,0,1,10,,afterok:ft?afternotok:train,\n",
    )
    assert jobs["ft"]["status"] == "rejected" and jobs["ft"]["start_time"] == ""
    assert (
        jobs["ft"]["reason"] == "dependency never satisfied (afterok: job train did not complete)"
    )
    assert _times(jobs["chain"]) == (300, 350) and _times(jobs["either"]) == (300, 310)
    assert float(jobs["watch"]["eligible_time"]) == 5 and _times(jobs["watch"]) == (310, 330)


def test_default_time_limit_applies_to_jobs_without_their_own_and_repeats_from_config(
    tmp_path: Path,
) -> None:
    jobs = _replay(tmp_path, "a,0,1,1000,,,\nb,0,1,1000,2000,,\n", "--time-limit", "600")
    assert jobs["a"]["status"] == "timeout" and float(jobs["a"]["end_time"]) == 600
    assert jobs["b"]["status"] == "completed" and float(jobs["b"]["end_time"]) == 1000
    config = tmp_path / "run" / "config.toml"
    assert "time_limit = 600.0" in config.read_text()
    again = tmp_path / "again"
    assert main(["replay", "--config", str(config), "--out", str(again)]) == 0
    assert (again / "jobs.csv").read_bytes() == (tmp_path / "run" / "jobs.csv").read_bytes()


def test_a_preempted_job_gets_its_whole_limit_again_on_each_run(tmp_path: Path) -> None:
    # srtf on one GPU: long (400 s, limit 300) runs 0–100, is preempted by short (50 s) until
    # 150, then runs again; its second run may last 300 s and it finishes its 300 s left at 450.
    trace = tmp_path / "jobs.csv"
    trace.write_text(HEADER + "long,0,1,400,300,,\nshort,100,1,50,,,\n")
    out = tmp_path / "run"
    argv = ["replay", "--cluster", "1x1:V100", "--trace", str(trace), "--policy", "srtf"]
    assert main([*argv, "--out", str(out)]) == 0
    with open(out / "jobs.csv", newline="") as fh:
        jobs = {r["job_id"]: r for r in csv.DictReader(fh)}
    assert jobs["long"]["status"] == "completed" and float(jobs["long"]["end_time"]) == 450
    assert jobs["long"]["preemptions"] == "1"


@pytest.mark.parametrize(
    ("rows", "message", "line", "column"),
    [
        (
            "a,0,1,10,,afterok:zz,\n",
            "depends on job 'zz', which is not in the trace",
            2,
            "dependency",
        ),
        ("a,0,1,10,,afterok:b,\nb,0,1,10,,afterany:a,\n", "dependency cycle", 2, "dependency"),
        ('a,0,1,10,,"afterok:b,afterany:b?after:b",\nb,0,1,10,,,\n', "not both", 2, "dependency"),
        ("a,0,1,10,,before:b,\nb,0,1,10,,,\n", "unknown dependency type 'before'", 2, "dependency"),
        ("a,0,1,10,0,,\n", "'time_limit' must be > 0 seconds", 2, "time_limit"),
        ("a,0,1,10,,,3-1\n", "empty range", 2, "array"),
        ("a,0,1,10,,,0-3%0\n", "throttle", 2, "array"),
    ],
)
def test_bad_slurm_columns_are_refused_with_line_and_column(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    rows: str,
    message: str,
    line: int,
    column: str,
) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(HEADER + rows)
    argv = ["replay", "--cluster", "1x2:V100", "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert message in err and f"jobs.csv:{line}" in err and f"column '{column}'" in err, err
    assert not (tmp_path / "run").exists()


def test_a_sweep_takes_the_time_limit_for_every_run(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(HEADER + "a,0,1,1000,,,\nb,5,1,100,,,\n")
    out = tmp_path / "grid"
    argv = ["sweep", "--cluster", "1x2:V100", "--traces", str(trace), "--policies", "fifo", "sjf"]
    assert main([*argv, "--time-limit", "500", "--workers", "1", "--out", str(out)]) == 0
    for policy in ("fifo", "sjf"):
        summary = json.loads(
            (out / "runs" / "jobs" / f"{policy}-bestfit-s0" / "summary.json").read_text()
        )
        assert summary["timeouts"] == 1 and summary["completed"] == 1


# -- properties over random dependency graphs ------------------------------------------------
KINDS = ("after", "afterany", "afterok", "afternotok")


@st.composite
def workloads(draw: st.DrawFn) -> str:
    n = draw(st.integers(2, 12))
    rows = []
    for i in range(n):
        deps = []
        if i and draw(st.booleans()):
            for other in draw(st.lists(st.integers(0, i - 1), min_size=1, max_size=3, unique=True)):
                deps.append(f"{draw(st.sampled_from(KINDS))}:j{other}")
        joiner = draw(st.sampled_from([",", "?"]))
        limit = draw(st.one_of(st.just(""), st.integers(5, 80).map(str)))
        array = draw(st.one_of(st.just(""), st.just("0-2%1"), st.just("0-3%2")))
        rows.append(
            f"j{i},{draw(st.integers(0, 50))},{draw(st.integers(1, 4))},{draw(st.integers(1, 60))},"
            f'{limit},"{joiner.join(deps)}",{array}'
        )
    return HEADER + "\n".join(rows) + "\n"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=workloads(), policy=st.sampled_from(["fifo", "sjf", "srtf"]))
def test_every_job_is_accounted_for_and_no_rule_is_broken(
    tmp_path: Path, text: str, policy: str
) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(text)
    table = read_jobs(trace).jobs
    record = run_replay(
        ReplaySpec("2x2:V100", str(trace), policy), parse_cluster_spec("2x2:V100"), table
    )
    frame = jobs_frame(record).set_index("job_id")
    assert frame["status"].isin(["completed", "timeout", "rejected", "unfinished"]).all()
    jobs = record.jobs
    ids = jobs.job_id.tolist()
    for k, job in enumerate(ids):
        row = frame.loc[job]
        limit = jobs.time_limit[k]
        if row["status"] == "timeout":
            assert row["end_time"] - row["start_time"] >= limit - 1e-9 or row["preemptions"] > 0
        if row["status"] == "completed" and row["preemptions"] == 0 and limit == limit:
            assert row["end_time"] - row["start_time"] <= limit + 1e-9
        if not jobs.dependency[k] or row["start_time"] != row["start_time"]:
            continue
        any_of = "?" in jobs.dependency[k]
        verdicts = []
        for clause in jobs.dependency[k].split("?" if any_of else ","):
            kind, *others = clause.split(":")
            ok = True
            for other in others:
                o = frame.loc[other]
                ended = o["end_time"] if o["end_time"] == o["end_time"] else float("inf")
                if kind == "after":  # began, or was cancelled (which has no time)
                    began = o["start_time"] if o["start_time"] == o["start_time"] else ended
                    ok &= began <= row["start_time"] or o["status"] == "rejected"
                elif kind == "afterany":
                    ok &= ended <= row["start_time"] or o["status"] == "rejected"
                elif kind == "afterok":
                    ok &= o["status"] == "completed" and ended <= row["start_time"]
                else:
                    ok &= o["status"] != "completed" and (
                        ended <= row["start_time"] or o["status"] == "rejected"
                    )
            verdicts.append(ok)
        assert any(verdicts) if any_of else all(verdicts), (job, jobs.dependency[k])
    # An array's throttle: never more of its tasks running at once than it allows.
    for group in set(jobs.array_job.tolist()) - {""}:
        tasks = [ids[k] for k in range(len(ids)) if jobs.array_job[k] == group]
        throttle = int(jobs.array_throttle[ids.index(tasks[0])])
        spans = [
            (frame.loc[t, "start_time"], frame.loc[t, "end_time"])
            for t in tasks
            if frame.loc[t, "start_time"] == frame.loc[t, "start_time"]
            and frame.loc[t, "preemptions"] == 0
        ]
        for start, _ in spans:
            running = sum(1 for s, e in spans if s <= start < (e if e == e else float("inf")))
            assert running <= throttle
