"""``schedlab serve status`` beside a running scheduler of the 4-node dev cluster.

Four 8-GPU jobs fill the cluster and a fifth waits; while ``serve slurm`` runs (journal,
``/metrics``), ``serve status`` names its pid and lock, its last cycle, the jobs by state and the
reason on the waiting job, in text and JSON (exit 0); once the scheduler stopped, it says so and
why (exit 3). Looking changes nothing: no lock taken, no command sent.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import test_serve_slurm_e2e as e2e
from schedlab.serve.client import SubprocessSlurm
from test_serve_slurm_e2e import REPO, sbatch, serve_argv, wait_until

pytestmark = pytest.mark.slurm
slurm = e2e.slurm  # the fixtures of the serve end-to-end tests
clean = e2e.clean


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def status(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "schedlab", "serve", "status", *args]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)


def test_status_of_a_running_scheduler_and_of_a_stopped_one(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    ours, _ = clean
    journal, state, port = tmp_path / "serve.jsonl", tmp_path / "state", free_port()
    for _ in range(4):
        sbatch(ours, "--gres=gpu:8", "-t", "1", "--wrap", "sleep 20")
    waiting = sbatch(ours, "--gres=gpu:8", "-t", "1", "--wrap", "sleep 1")
    extra = ("--policy", "fifo", "--partition", "gpu", "--metrics-port", str(port))
    proc = subprocess.Popen(
        serve_argv(journal, *extra, until_idle=False),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    where = ("--partition", "gpu", "--state-dir", str(state), "--journal", str(journal))
    try:
        wait_until(
            lambda: journal.exists() and journal.read_text().count('"action":"start"') == 4,
            time.monotonic() + 30,
        )
        time.sleep(1.0)  # a cycle that writes the waiting job's reason into its comment
        text = status(*where, "--metrics-port", str(port))
        assert text.returncode == 0, text.stderr
        lines = text.stdout.splitlines()
        assert lines[0].startswith(f"partition gpu: served by pid {proc.pid} on ")
        assert lines[1].startswith("server: fifo / bestfit, every 0.3 s")
        assert lines[2].startswith("last cycle: ") and "(" in lines[2]
        assert "jobs: 1 held by schedlab, 4 running" in text.stdout
        assert f"queued: waiting for policy fifo to place it (8 GPUs)  [{waiting}]" in text.stdout
        assert lines[-1].startswith(f"journal: {journal}, ")
        as_json = status(*where, "--metrics-port", str(port), "--json")
        data = json.loads(as_json.stdout)
        assert as_json.returncode == 0 and data["holder"]["pid"] == proc.pid
        assert data["last_cycle"]["source"] == "metrics" and data["last_cycle"]["cycles"] >= 2
        assert data["jobs"]["held"] == 1 and data["jobs"]["running"] == 4
        assert data["reasons"] == [
            {
                "reason": "queued: waiting for policy fifo to place it (8 GPUs)",
                "jobs": [str(waiting)],
            }
        ]
        assert data["journal"]["bytes"] == journal.stat().st_size
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
    after = status(*where)
    assert after.returncode == 3
    assert after.stdout.startswith("partition gpu: no scheduler running")
    assert "(SIGTERM)" in after.stdout


def test_status_lists_the_queue_in_each_policy_order_with_estimated_starts(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    """Four 8-GPU jobs of a 2-minute limit fill the cluster (placed by a fifo scheduler); three
    held jobs of 5, 1 and 3 minutes wait behind them. The fifo scheduler and, beside it, an sjf
    one in shadow mode (own state folders, so both may run) each write their queue: status
    lists it in submit order for fifo and shortest first for sjf, every job with its reason and
    an estimated start no earlier than the first running job's end (start + time limit); each
    policy's plan keeps strict order (no backfill), and ``--json`` carries what the text shows."""
    ours, _ = clean
    fill = [sbatch(ours, "--gres=gpu:8", "-t", "2", "--wrap", "sleep 90") for _ in range(4)]
    long_job = sbatch(ours, "--gres=gpu:8", "-t", "5", "--wrap", "sleep 1")
    short_job = sbatch(ours, "--gres=gpu:1", "-t", "1", "--wrap", "sleep 1")
    mid_job = sbatch(ours, "--gres=gpu:4", "-t", "3", "--wrap", "sleep 1")
    submitted = [str(long_job), str(short_job), str(mid_job)]
    runs = {"fifo": (tmp_path / "fifo", ()), "sjf": (tmp_path / "sjf", ("--shadow",))}
    procs: list[subprocess.Popen] = []
    shown: dict[str, tuple[str, dict]] = {}
    try:
        for policy, (folder, extra) in runs.items():
            if policy == "sjf":  # once fifo has started the four that fill the cluster
                wait_until(
                    lambda: all(e2e.job_field(j, "%T") == "RUNNING" for j in fill),
                    time.monotonic() + 30,
                )
            folder.mkdir()
            extra = ("--policy", policy, "--partition", "gpu", *extra)
            argv = serve_argv(folder / "serve.jsonl", *extra, until_idle=False)
            procs.append(
                subprocess.Popen(
                    argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
                )
            )
        for policy, (folder, _) in runs.items():
            where = ("--partition", "gpu", "--state-dir", str(folder / "state"))

            def listed(where=where, policy=policy) -> bool:
                out = status(*where, "--json")
                queue = (json.loads(out.stdout).get("queue") or {}).get("queue") or []
                if sorted(e["job"] for e in queue) != sorted(submitted):
                    return False
                shown[policy] = (status(*where).stdout, json.loads(out.stdout))
                return True

            wait_until(listed, time.monotonic() + 30)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        errors = [proc.communicate(timeout=30)[1] for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), errors
    ends = [
        time.mktime(time.strptime(e2e.job_field(j, "%S"), "%Y-%m-%dT%H:%M:%S")) + 120 for j in fill
    ]
    order = {"fifo": submitted, "sjf": [str(short_job), str(mid_job), str(long_job)]}
    for policy, (text, data) in shown.items():
        queue = data["queue"]
        assert queue["policy"] == policy and queue["order"] == "policy" and queue["in_order"]
        assert [e["job"] for e in queue["queue"]] == order[policy]
        starts = [e["estimated_start"] for e in queue["queue"]]
        assert all(s is not None and s >= min(ends) - 1.0 for s in starts), (starts, ends)
        assert starts == sorted(starts)
        for entry in queue["queue"]:
            gpus = entry["gpus"]
            assert (
                entry["reason"] == f"queued: waiting for policy {policy} to place it ({gpus} GPUs)"
            )
            assert entry["waits_for"] in ("resources", "priority")
        # The text shows the same jobs in the same order, each line with its reason.
        lines = text.splitlines()
        k = next(i for i, line in enumerate(lines) if line.startswith("queue in the policy's"))
        rows = lines[k + 2 : k + 5]
        assert [r.split()[1] for r in rows] == order[policy]
        assert all(r.endswith(e["reason"]) for r, e in zip(rows, queue["queue"], strict=True))
    # fifo plans the 8-GPU head first; sjf plans the 1-GPU job at the first end.
    fifo = {e["job"]: e["estimated_start"] for e in shown["fifo"][1]["queue"]["queue"]}
    sjf = {e["job"]: e["estimated_start"] for e in shown["sjf"][1]["queue"]["queue"]}
    assert sjf[str(short_job)] <= fifo[str(short_job)]
