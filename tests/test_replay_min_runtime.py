"""A minimum run time between preemptions in the simulator (``replay --min-runtime``), the same
rule as ``serve slurm --min-runtime``: hand-computed replays, the command line and the sweep,
and one scenario run through both serve's cycle (fake Slurm) and the replay engine."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.engines.replay import ReplayConfig, ReplayEngine
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import Preempt, Start
from schedlab.perf.models import TraceDuration
from schedlab.policies.protection import hold_back_preemptions, protected_until
from schedlab.policies.registry import make_scheduler
from schedlab.serve.compare import replay_starts
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.loop import ServeConfig, Server
from schedlab.traces.cluster_spec import parse_cluster_spec


def replay(jobs: JobTable, order: str, min_runtime: float, cluster: str = "1x8:V100"):
    policy, placement = make_scheduler(order, "bestfit")
    engine = ReplayEngine(
        parse_cluster_spec(cluster),
        jobs,
        policy,
        placement,
        TraceDuration(),
        ReplayConfig(min_runtime=min_runtime),
    )
    record = engine.run()
    ids = {str(j): i for i, j in enumerate(record.jobs.job_id)}
    return record, ids


def two_jobs(checkpoint: bool) -> JobTable:
    """A (8 GPUs, 100 s) from 0; B (8 GPUs, 20 s) at 10: srtf wants B in A's place at once."""
    return JobTable.from_columns(
        job_id=["a", "b"],
        submit_time=[0.0, 10.0],
        num_gpus=[8, 8],
        duration=[100.0, 20.0],
        checkpoint=[checkpoint, True],
    )


@pytest.mark.parametrize(
    ("min_runtime", "checkpoint", "b_start", "a_end", "preempted"),
    [
        # No minimum: B preempts A at 10 and runs to 30; A resumes with 90 s left: ends 120.
        (0.0, True, 10.0, 120.0, 1),
        # 30 s: A is protected until 30, when srtf preempts it (70 s left > 20); B 30 → 50,
        # A resumes at 50 with 70 s left: ends 120. B's start waited with the preemption.
        (30.0, True, 30.0, 120.0, 1),
        # The same without a checkpoint: A starts its 100 s again at 50: ends 150.
        (30.0, False, 30.0, 150.0, 1),
        # 200 s: A is never preempted (it ends at 100 first); B 100 → 120.
        (200.0, True, 100.0, 100.0, 0),
    ],
)
def test_a_run_is_protected_for_its_first_seconds(
    min_runtime: float, checkpoint: bool, b_start: float, a_end: float, preempted: int
) -> None:
    record, i = replay(two_jobs(checkpoint), "srtf", min_runtime)
    assert record.first_start[i["b"]] == b_start
    assert record.end_time[i["b"]] == b_start + 20.0
    assert record.end_time[i["a"]] == a_end
    assert record.preemptions[i["a"]] == preempted


def test_each_run_is_protected_from_its_own_start() -> None:
    """srtf on one GPU, 30 s minimum: A (100 s) from 0, B (50 s) at 10, C (10 s) at 45. B waits
    for A's minimum and starts at 30 (A has 70 s left); C wants B's GPU at 45, but B's run began
    at 30, so C starts at 60 (B has 20 s left); B resumes 70 → 90, A 90 → 160. Without the
    minimum: B 10 →, C 45 → 55, B ends 70, A 160."""
    jobs = JobTable.from_columns(
        job_id=["a", "b", "c"],
        submit_time=[0.0, 10.0, 45.0],
        num_gpus=[1, 1, 1],
        duration=[100.0, 50.0, 10.0],
        checkpoint=[True, True, True],
    )
    record, i = replay(jobs, "srtf", 30.0, cluster="1x1:V100")
    assert [record.first_start[i[j]] for j in "abc"] == [0.0, 30.0, 60.0]
    assert [record.end_time[i[j]] for j in "abc"] == [160.0, 90.0, 70.0]
    assert [record.preemptions[i[j]] for j in "abc"] == [1, 1, 0]
    record, i = replay(jobs, "srtf", 0.0, cluster="1x1:V100")
    assert [record.first_start[i[j]] for j in "abc"] == [0.0, 10.0, 45.0]
    assert [record.end_time[i[j]] for j in "abc"] == [160.0, 70.0, 55.0]


def test_the_rule_itself_at_its_boundary() -> None:
    """Protected strictly before began + S, free at it; starts on the victim's GPUs wait."""
    assert protected_until(100.0, 129.9, 30.0) == 130.0
    assert protected_until(100.0, 130.0, 30.0) is None
    decisions = [Preempt(0), Start(1, ((0, (0, 1)),)), Start(2, ((1, (0,)),)), Preempt(3)]
    alloc = {0: ((0, (0, 1, 2)),), 3: ((2, (5,)),)}
    kept, held = hold_back_preemptions(
        decisions, 110.0, 30.0, lambda j: {0: 100.0, 3: 50.0}[j], alloc.get
    )
    assert kept == [Start(2, ((1, (0,)),)), Preempt(3)]
    assert held == {0: 130.0}
    assert hold_back_preemptions(decisions, 110.0, 0.0, lambda j: 100.0, alloc.get) == (
        decisions,
        {},
    )


def _trace(tmp_path: Path) -> Path:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\nlong,0,1,100\nshort,10,1,20\n")
    return trace


def srtf_cli_run(tmp_path: Path, *extra: str) -> tuple[Path, dict[str, dict[str, str]]]:
    """``schedlab replay`` of :func:`_trace` on one GPU under srtf with ``extra`` options:
    its output folder and its jobs.csv rows by job id."""
    out = tmp_path / "o"
    argv = ["replay", "--cluster", "1x1:V100", "--trace", str(_trace(tmp_path))]
    assert main([*argv, "--policy", "srtf", *extra, "--out", str(out)]) == 0
    jobs = (out / "jobs.csv").read_text().splitlines()
    header = jobs[0].split(",")
    return out, {r.split(",")[0]: dict(zip(header, r.split(","), strict=True)) for r in jobs[1:]}


def test_the_command_line_and_its_config(tmp_path: Path) -> None:
    """srtf on one GPU: short (20 s, at 10) waits for long's 30 s minimum: 30 → 50; long
    resumes at 50 with 70 s left: ends 120. config.toml repeats the run."""
    out, rows = srtf_cli_run(tmp_path, "--min-runtime", "30")
    assert (float(rows["short"]["start_time"]), float(rows["short"]["end_time"])) == (30, 50)
    assert float(rows["long"]["end_time"]) == 120
    config = tomllib.loads((out / "config.toml").read_text())
    assert config["min_runtime"] == 30.0
    again = tmp_path / "again"
    assert main(["replay", "--config", str(out / "config.toml"), "--out", str(again)]) == 0
    assert (again / "jobs.csv").read_text() == (out / "jobs.csv").read_text()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--policy", "srtf", "--min-runtime", "-5"], "'--min-runtime' must be"),
        (["--policy", "gandiva", "--min-runtime", "30"], "'--min-runtime' applies to the"),
        (["--policy", "srtf", "--grace", "-1"], "'--grace' must be"),
        (["--policy", "gandiva", "--grace", "10"], "'--grace' applies to the"),
    ],
)
def test_bad_minimums_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    out = tmp_path / "o"
    argv = ["replay", "--cluster", "1x1:V100", "--trace", str(_trace(tmp_path)), *extra]
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("schedlab: error: ") and message in err[0]
    assert not out.exists()


def test_the_sweep_passes_it_to_every_run(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    out = tmp_path / "g"
    argv = ["sweep", "--cluster", "1x1:V100", "--workers", "1", "--out", str(out)]
    argv += ["--traces", str(trace), "--policies", "srtf", "--seeds", "0", "--min-runtime", "30"]
    assert main(argv) == 0
    assert tomllib.loads((out / "config.toml").read_text())["min_runtime"] == 30.0
    run = out / "runs" / "t" / "srtf-bestfit-s0"
    assert tomllib.loads((run / "config.toml").read_text())["min_runtime"] == 30.0
    lines = (run / "jobs.csv").read_text().splitlines()
    header = lines[0].split(",")
    short = dict(zip(header, lines[2].split(","), strict=True))
    assert short["job_id"] == "short" and float(short["start_time"]) == 30.0
    bad = ["sweep", "--cluster", "1x1:V100", "--workers", "1", "--out", str(tmp_path / "b")]
    bad += ["--traces", str(trace), "--policies", "srtf", "gandiva", "--min-runtime", "30"]
    assert main(bad) == 2


def test_serve_and_replay_mean_the_same_minimum(tmp_path: Path) -> None:
    """One 8-GPU node: A (8 GPUs) runs from T0; B (8 GPUs, shorter) is queued at T0 + 10; srtf
    wants B in A's place. With --min-runtime 30, serve (a cycle every second) preempts A and
    starts B in the first cycle at or after T0 + 30, and the replay of the same jobs starts B
    at 30 s: both hold the preemption back for exactly the first 30 s of A's run."""
    t0 = 1_000_000.0
    fake = FakeSlurm(
        [fake_node("node1")],
        [
            fake_job(
                1, 8, t0, state="RUNNING", held=False, nodes="node1", start=t0, time_limit=100
            ),
            fake_job(2, 8, t0 + 10, time_limit=20),
        ],
    )
    now = [t0 + 10]
    server = Server(
        fake, ServeConfig(policy="srtf", min_runtime=30), Journal(tmp_path / "j.jsonl"),
        clock=lambda: now[0],
    )  # fmt: skip
    while now[0] <= t0 + 40 and not any(c[0] == "requeuehold" for c in fake.calls):
        server.cycle()
        now[0] += 1.0
    records = list(read_journal(tmp_path / "j.jsonl"))
    preempt = next(r for r in records if r["action"] == "preempt")
    start = next(r for r in records if r["action"] == "start" and not r.get("recovered"))
    assert preempt["time"] - t0 == 30.0 and start["job"] == 2 and start["time"] == preempt["time"]
    assert [r["action"] for r in records if r["job"] == 1 and r["action"] == "protect"] == [
        "protect"
    ]
    # The replay of the same jobs (time limits as durations, minutes as in Slurm).
    jobs = JobTable.from_columns(
        job_id=["1", "2"],
        submit_time=[0.0, 10.0],
        num_gpus=[8, 8],
        duration=[6000.0, 1200.0],
        checkpoint=[False, False],
    )
    record, i = replay(jobs, "srtf", 30.0)
    assert record.first_start[i["2"]] == preempt["time"] - t0
    assert record.preemptions[i["1"]] == 1


def test_a_live_runs_replay_counts_the_starts_carried_out(tmp_path: Path) -> None:
    """replay_starts on a journal's serve record with min_runtime 30: B's start, which srtf
    asks for at 10 and the minimum holds back until 30, is one start; A runs twice."""
    serve = {
        "policy": "srtf",
        "placement": "bestfit",
        "nodes": ["node1"],
        "node_gpus": [8],
        "min_runtime": 30,
    }
    starts = replay_starts(two_jobs(checkpoint=True), serve)
    assert starts == {"a": [("node1",), ("node1",)], "b": [("node1",)]}
    assert replay_starts(two_jobs(checkpoint=True), {**serve, "min_runtime": 0}) == starts
