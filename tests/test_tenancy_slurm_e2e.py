"""Tenancy on a real Slurm cluster of 4 nodes × 8 GPUs (slurm-dev-cluster.sh): two accounts as
queues with 16 GPUs deserved each under kai. Account ``a`` fills the cluster; when account ``b``'s
jobs arrive, ``a`` is over its share, so two of its jobs are requeued (held) to make room, ``b``'s
jobs run on their nodes, the victims are placed again once there is room, and every job
completes exactly once (Slurm's completion records agree with the journal). Skipped, with the
reason, when no Slurm controller answers."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from schedlab.serve.journal import read_journal
from schedlab.serve.queue_view import queue_path, read_queue
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

QUEUES = """[tenancy]
policy = "kai"
tenant_key = ["account"]
unknown_tenant = "error"

[[queue]]
name = "a"
deserved = { gpu = 16 }

[[queue]]
name = "b"
deserved = { gpu = 16 }
"""


def submit(ours: list[int], account: str, gpus: int, seconds: int, name: str) -> int:
    out = subprocess.run(
        ["sbatch", "--hold", "--parsable", "-t", "3", "-J", name, "-o", "/dev/null",
         "--account", account, f"--gres=gpu:{gpus}", "--wrap", f"sleep {seconds}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    job = int(out.stdout.strip().split(";")[0])
    ours.append(job)
    return job


def test_a_queue_over_its_share_loses_jobs_to_the_other_queue_and_nothing_is_lost(
    slurm,  # noqa: F811  (the imported fixture)
    clean,  # noqa: F811  (the imported fixture)
    tmp_path: Path,
) -> None:
    ours, _ = clean
    queues = tmp_path / "queues.toml"
    queues.write_text(QUEUES)
    journal = tmp_path / "serve.jsonl"
    state = tmp_path / "state"
    longs = [submit(ours, "a", 8, 20, f"a{k}") for k in range(4)]
    t0 = time.monotonic()
    with Sampler(slurm) as sampler:
        argv = serve_argv(journal, "--policy", "fifo", "--queues", str(queues),
                          "--state-dir", str(state))  # fmt: skip
        proc = subprocess.Popen(
            argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        wait_until(
            lambda: journal.exists() and all(journal_starts(journal).get(j) for j in longs),
            t0 + 30.0,
        )
        shorts = [submit(ours, "b", 8, 3, f"b{k}") for k in range(2)]
        wait_until(lambda: all(journal_starts(journal).get(j) for j in shorts), t0 + 60.0)
        status = read_queue(queue_path(state, None))
        finish(proc, t0 + 150.0)
    records = list(read_journal(journal))
    preempted = [r for r in records if r["action"] == "preempt"]
    assert len(preempted) == 2, preempted
    victims = {int(r["job"]) for r in preempted}
    assert victims <= set(longs)
    starts = journal_starts(journal)
    freed = {n for r in preempted for n in r["nodes"]}
    assert {n for j in shorts for n in starts[j][0]["nodes"]} == freed  # b took a's nodes
    for victim in victims:
        assert len(starts[victim]) == 2  # placed, reclaimed, placed again
    runs = records_for([*longs, *shorts])
    for job in [*longs, *shorts]:  # nothing lost: every job completed exactly once
        done = [r for r in runs[job] if r.state == "COMPLETED"]
        assert len(done) == 1, (job, runs[job])
        assert done[0].nodes == tuple(starts[job][-1]["nodes"])
    assert max(sampler.peak.values()) <= 8, dict(sampler.peak)
    # serve status's source: each queue's deserved and fair share while b waited or ran.
    assert status is not None
    rows = {r["queue"]: r for r in status["tenancy"]}
    assert rows["a"]["deserved"]["gpu"] == 16 and rows["b"]["deserved"]["gpu"] == 16
    assert rows["b"]["fair_share"]["gpu"] == 16
