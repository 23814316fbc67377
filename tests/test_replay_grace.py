"""A grace between a preemption's signal and the preemption (``replay --grace``), the rule
``serve slurm --grace`` applies (Slurm's GraceTime): hand-computed replays, the rule itself, the
command line, the sweep, and a live run's replay (``replay_starts``) taking it from the journal."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.engines.replay import ReplayConfig, ReplayEngine
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import Preempt, Start
from schedlab.perf.models import TraceDuration
from schedlab.policies.protection import hold_back_preemptions
from schedlab.policies.registry import make_scheduler
from schedlab.serve.compare import replay_starts
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.loop import ServeConfig, Server
from schedlab.traces.cluster_spec import parse_cluster_spec
from test_replay_min_runtime import _trace, srtf_cli_run, two_jobs


def replay(jobs: JobTable, grace: float, min_runtime: float = 0.0):
    policy, placement = make_scheduler("srtf", "bestfit")
    config = ReplayConfig(min_runtime=min_runtime, grace=grace)
    engine = ReplayEngine(
        parse_cluster_spec("1x8:V100"), jobs, policy, placement, TraceDuration(), config
    )
    record = engine.run()
    ids = {str(j): i for i, j in enumerate(record.jobs.job_id)}
    return record, ids


@pytest.mark.parametrize(
    ("grace", "min_runtime", "checkpoint", "b_start", "a_end", "preempted"),
    [
        # A (100 s) from 0; B (20 s) at 10; srtf wants B in A's place at once.
        # Grace 15: A is signalled at 10 and runs on to 25, when srtf still wants it gone
        # (75 s left > 20): B 25 → 45; A resumes with 75 s left: ends 120.
        (15.0, 0.0, True, 25.0, 120.0, 1),
        # Without a checkpoint A's 25 s are lost: it starts its 100 s again at 45: ends 145.
        (15.0, 0.0, False, 25.0, 145.0, 1),
        # A 30 s minimum first, then the grace: signalled at 30, preempted at 45 (55 s left);
        # B 45 → 65; A ends 65 + 55 = 120.
        (15.0, 30.0, True, 45.0, 120.0, 1),
        # Grace 95: A ends at 100 within its grace; B starts then; nothing is preempted.
        (95.0, 0.0, False, 100.0, 100.0, 0),
    ],
)
def test_a_victim_runs_on_through_its_grace(
    grace: float,
    min_runtime: float,
    checkpoint: bool,
    b_start: float,
    a_end: float,
    preempted: int,
) -> None:
    record, i = replay(two_jobs(checkpoint), grace, min_runtime)
    assert record.first_start[i["b"]] == b_start
    assert record.end_time[i["b"]] == b_start + 20.0
    assert record.end_time[i["a"]] == a_end
    assert record.preemptions[i["a"]] == preempted


def test_the_rule_forgets_a_signal_the_policy_stops_asking_for() -> None:
    """Job 0 is signalled at 10; at 12 the policy no longer wants it gone, at 14 it does
    again: its grace starts over (until 19), and only at 19 is it preempted."""
    alloc = ((0, (0, 1)),)
    signalled: dict[int, float] = {}
    wanted = [Preempt(0), Start(1, alloc)]

    def ask(decisions, now):
        return hold_back_preemptions(
            decisions, now, 0.0, lambda job: 0.0, lambda job: alloc, 5.0, signalled
        )

    assert ask(wanted, 10.0) == ([], {0: 15.0})  # the start needs its GPUs: it waits too
    assert signalled == {0: 10.0}
    assert ask([], 12.0) == ([], {}) and signalled == {}
    assert ask(wanted, 14.0) == ([], {0: 19.0})
    assert ask(wanted, 18.999)[1] == {0: 19.0}
    assert ask(wanted, 19.0) == (wanted, {}) and signalled == {}


def test_the_command_line_the_config_and_the_sweep(tmp_path: Path) -> None:
    """srtf on one GPU: short (20 s, at 10) waits for long's 15 s grace: 25 → 45; long
    resumes at 45 with 75 s left: ends 120. config.toml repeats the run; the sweep passes it."""
    out, rows = srtf_cli_run(tmp_path, "--grace", "15")
    assert (float(rows["short"]["start_time"]), float(rows["short"]["end_time"])) == (25, 45)
    assert float(rows["long"]["end_time"]) == 120
    assert tomllib.loads((out / "config.toml").read_text())["grace"] == 15.0
    again = tmp_path / "again"
    assert main(["replay", "--config", str(out / "config.toml"), "--out", str(again)]) == 0
    assert (again / "jobs.csv").read_text() == (out / "jobs.csv").read_text()
    grid = tmp_path / "g"
    sweep = ["sweep", "--cluster", "1x1:V100", "--workers", "1", "--out", str(grid)]
    sweep += ["--traces", str(_trace(tmp_path)), "--policies", "srtf", "--seeds", "0"]
    assert main([*sweep, "--grace", "15"]) == 0
    run = grid / "runs" / "t" / "srtf-bestfit-s0"
    assert (run / "jobs.csv").read_text() == (out / "jobs.csv").read_text()


def test_a_live_runs_replay_takes_the_grace_from_the_journal() -> None:
    """The serve record's grace reaches the replay: B starts at 25, not at 10."""
    serve = {
        "policy": "srtf",
        "placement": "bestfit",
        "nodes": ["node1"],
        "node_gpus": [8],
        "grace": 15,
    }
    jobs = two_jobs(checkpoint=True)
    assert replay_starts(jobs, serve) == {"a": [("node1",), ("node1",)], "b": [("node1",)]}
    assert replay_starts(jobs, {**serve, "grace": 95}) == {"a": [("node1",)], "b": [("node1",)]}


def test_serve_and_replay_mean_the_same_grace(tmp_path: Path) -> None:
    """One 8-GPU node: A (8 GPUs) runs from T0; B (8 GPUs, shorter) is queued at T0 + 10; srtf
    wants B in A's place. With --grace 15, serve (a cycle every second) signals A at T0 + 10
    and preempts it, starting B, at T0 + 25; the replay of the same jobs starts B at 25 s."""
    t0 = 1_000_000.0
    running = fake_job(
        1, 8, t0, state="RUNNING", held=False, nodes="node1", start=t0, time_limit=100
    )
    fake = FakeSlurm([fake_node("node1")], [running, fake_job(2, 8, t0 + 10, time_limit=20)])
    now = [t0 + 10]
    journal = tmp_path / "j.jsonl"
    config = ServeConfig(policy="srtf", grace=15)
    server = Server(fake, config, Journal(journal), clock=lambda: now[0])
    while now[0] <= t0 + 40 and not any(c[0] == "requeuehold" for c in fake.calls):
        server.cycle()
        now[0] += 1.0
    records = list(read_journal(journal))
    signal = next(r for r in records if r["action"] == "signal")
    preempt = next(r for r in records if r["action"] == "preempt")
    start = next(r for r in records if r["action"] == "start" and not r.get("recovered"))
    assert (signal["time"] - t0, preempt["time"] - t0) == (10.0, 25.0)
    assert start["job"] == 2 and start["time"] == preempt["time"]
    jobs = JobTable.from_columns(
        job_id=["1", "2"],
        submit_time=[0.0, 10.0],
        num_gpus=[8, 8],
        duration=[6000.0, 1200.0],
        checkpoint=[False, False],
    )
    record, i = replay(jobs, 15.0)
    assert record.first_start[i["2"]] == preempt["time"] - t0
    assert record.preemptions[i["1"]] == 1
