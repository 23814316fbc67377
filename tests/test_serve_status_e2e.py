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
