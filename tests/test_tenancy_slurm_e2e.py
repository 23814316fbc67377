"""Tenancy on a real Slurm cluster of 4 nodes × 8 GPUs (slurm-dev-cluster.sh): two accounts as
queues under kai, ``a`` with 8 GPUs deserved and a limit of 24, ``b`` with 16 deserved. Account
``a``'s four 8-GPU jobs: three run (``a`` borrows beyond its quota up to its limit), the fourth
waits although a node is free. When ``b``'s two jobs arrive, one takes the free node and ``a``,
over its fair share of 16, loses one job to a requeue (held) for the other; the victim is placed
again once there is room, ``a`` never holds more than 24 GPUs, and every job completes exactly
once (Slurm's completion records agree with the journal). Skipped, with the reason, when no
Slurm controller answers."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from schedlab.serve.journal import read_journal
from schedlab.serve.queue_view import queue_path, read_queue
from tenancy_cases import LIVE_QUEUES
from test_serve_slurm_e2e import (  # the fixtures and helpers of the serve end-to-end tests
    REPO,
    Sampler,
    clean,  # noqa: F401  (a fixture)
    finish,
    journal_starts,
    records_for,
    serve_argv,
    slurm,  # noqa: F401  (a fixture)
    wait_until,
)

pytestmark = pytest.mark.slurm


def peak_gpus(runs: list) -> int:
    """Most GPUs (8 a job) held at once by ``runs`` (completion records with nodes)."""
    edges = sorted(
        [(r.start, 8) for r in runs] + [(r.end, -8) for r in runs], key=lambda e: (e[0], e[1])
    )
    held = peak = 0
    for _, step in edges:
        held += step
        peak = max(peak, held)
    return peak


def submit(ours: list[int], account: str, gpus: int, seconds: int, name: str) -> int:
    out = subprocess.run(
        ["sbatch", "--hold", "--parsable", "-t", "3", "-J", name, "-o", "/dev/null",
         "--account", account, f"--gres=gpu:{gpus}", "--wrap", f"sleep {seconds}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    job = int(out.stdout.strip().split(";")[0])
    ours.append(job)
    return job


@pytest.mark.slow  # a minute of a live cluster's time: run with the fidelity suite
def test_a_queue_over_its_share_loses_jobs_to_the_other_queue_and_nothing_is_lost(
    slurm,  # noqa: F811  (the imported fixture)
    clean,  # noqa: F811  (the imported fixture)
    tmp_path: Path,
) -> None:
    ours, _ = clean
    queues = tmp_path / "queues.toml"
    queues.write_text(LIVE_QUEUES)
    journal = tmp_path / "serve.jsonl"
    state = tmp_path / "state"
    longs = [submit(ours, "a", 8, 30, f"a{k}") for k in range(4)]
    t0 = time.monotonic()
    with Sampler(slurm) as sampler:
        argv = serve_argv(journal, "--policy", "fifo", "--queues", str(queues),
                          "--state-dir", str(state))  # fmt: skip
        proc = subprocess.Popen(
            argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        wait_until(
            lambda: journal.exists() and all(journal_starts(journal).get(j) for j in longs[:3]),
            t0 + 30.0,
        )
        time.sleep(3.0)  # a few cycles: a's fourth job stays back at the limit
        assert not journal_starts(journal).get(longs[3])
        held = read_queue(queue_path(state, None))
        # Long enough that both still run when the status is read: the second starts only after
        # a's victim is requeued, which can take seconds on a loaded machine.
        shorts = [submit(ours, "b", 8, 15, f"b{k}") for k in range(2)]
        wait_until(lambda: all(journal_starts(journal).get(j) for j in shorts), t0 + 60.0)

        def b_counted() -> bool:
            # The status is written once per cycle: wait for the one that counts b's jobs.
            rows = {r["queue"]: r for r in read_queue(queue_path(state, None))["tenancy"]}
            return rows.get("b", {}).get("alloc", {}).get("gpu", 0) == 16

        wait_until(b_counted, t0 + 75.0)
        status = read_queue(queue_path(state, None))
        finish(proc, t0 + 180.0)
    records = list(read_journal(journal))
    preempted = [r for r in records if r["action"] == "preempt"]
    assert len(preempted) == 1, preempted
    victims = {int(r["job"]) for r in preempted}
    assert victims <= set(longs[:3])
    starts = journal_starts(journal)
    freed = {n for r in preempted for n in r["nodes"]}
    assert freed < {n for j in shorts for n in starts[j][0]["nodes"]}  # b took a's node
    for victim in victims:
        assert len(starts[victim]) == 2  # placed, reclaimed, placed again
    runs = records_for([*longs, *shorts])
    for job in [*longs, *shorts]:  # nothing lost: every job completed exactly once
        done = [r for r in runs[job] if r.state == "COMPLETED"]
        assert len(done) == 1, (job, runs[job])
        assert done[0].nodes == tuple(starts[job][-1]["nodes"])
    assert max(sampler.peak.values()) <= 8, dict(sampler.peak)
    # a held to its limit: never more than 24 GPUs at once, by Slurm's own records.
    assert peak_gpus([r for j in longs for r in runs[j] if r.nodes]) == 24
    # serve status's source: each queue's deserved and fair share, at the limit and after b came.
    assert held is not None and status is not None
    rows = {r["queue"]: r for r in held["tenancy"]}
    assert rows["a"]["alloc"]["gpu"] == 24 and rows["a"]["pending"]["gpu"] == 8
    assert rows["a"]["deserved"]["gpu"] == 8
    rows = {r["queue"]: r for r in status["tenancy"]}
    assert rows["a"]["fair_share"]["gpu"] == 16 and rows["b"]["fair_share"]["gpu"] == 16


def test_a_job_of_an_unknown_account_is_held_with_the_reason_and_the_rest_run(
    slurm,  # noqa: F811  (the imported fixture)
    clean,  # noqa: F811  (the imported fixture)
    tmp_path: Path,
) -> None:
    """LIVE_QUEUES says ``unknown_tenant = "error"``: a job of account ``c`` is held with the
    reason in its comment (what ``squeue`` and ``scontrol show job`` show the operator), the
    server goes on, and the jobs of ``a`` and ``b`` complete."""
    ours, _ = clean
    queues = tmp_path / "queues.toml"
    queues.write_text(LIVE_QUEUES)
    journal = tmp_path / "serve.jsonl"
    stray = submit(ours, "c", 1, 2, "c0")
    good = [submit(ours, "a", 2, 2, "a0"), submit(ours, "b", 4, 2, "b0")]
    late = []
    t0 = time.monotonic()
    argv = serve_argv(journal, "--policy", "fifo", "--queues", str(queues))
    proc = subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_until(
            lambda: journal.exists() and all(journal_starts(journal).get(j) for j in good),
            t0 + 30.0,
        )
        late.append(submit(ours, "a", 8, 1, "a1"))  # served after the refusal, too
        wait_until(lambda: journal_starts(journal).get(late[0]), t0 + 45.0)
    finally:
        finish(proc, t0 + 60.0)
    shown = subprocess.run(
        ["squeue", "-h", "-j", str(stray), "-o", "%T|%r|%k"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    state, reason, comment = shown.split("|", 2)
    assert state == "PENDING" and reason.startswith("JobHeld")
    assert comment.startswith("schedlab: rejected: belongs to tenant 'c'"), comment
    detail = subprocess.run(
        ["scontrol", "show", "job", str(stray)], capture_output=True, text=True, check=True
    ).stdout
    assert "Comment=schedlab: rejected: belongs to tenant 'c'" in detail
    rejects = [r for r in read_journal(journal) if r["action"] == "reject"]
    assert [int(r["job"]) for r in rejects] == [stray]
    runs = records_for([*good, *late])
    for job in [*good, *late]:
        assert [r.state for r in runs[job]] == ["COMPLETED"], (job, runs[job])
    assert not journal_starts(journal).get(stray)
