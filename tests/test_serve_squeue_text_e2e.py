"""The ``squeue -O`` text read against ``squeue --json`` on the live dev cluster.

Jobs of every shape serve reads (a throttled array with a task split off, a plain array, -N2
--exclusive, --gpus=12 with --begin and no time limit, --gpus-per-task with a dependency and a
node list, a comment with separators) held in ``gpu``, and in ``free`` a running one-node job
and a running --gpus=12 job over two nodes: every job reads the same both ways, field by field,
except what the text form does not carry (devices of one-node runs; finished arrays'
throttle and task string; a pending job's expected end; Slurm's description where JSON gives
a reason code; the COMPLETING flag of a job ending).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import fields

import pytest

import test_serve_slurm_e2e as e2e
from schedlab.serve.client import SubprocessSlurm
from schedlab.serve.slurm_state import JobInfo, parse_job
from test_serve_slurm_e2e import job_field, sbatch, wait_until

pytestmark = pytest.mark.slurm
slurm = e2e.slurm  # the fixtures of the serve end-to-end tests
clean = e2e.clean


def differences(a: JobInfo, b: JobInfo) -> dict[str, tuple[object, object]]:
    out = {}
    for f in fields(JobInfo):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x == y:
            continue
        if f.name == "gpu_idx" and len(a.nodes) == 1 and not x:
            continue  # one node: the count is all serve needs
        if f.name.startswith("array_") and a.finished:
            continue  # a finished array's throttle and task string matter to nothing
        if f.name == "end_time" and a.pending:
            continue
        if f.name == "reason" and " " in str(x):
            continue  # Slurm's description ("job requeued in held state") for JSON's code
        if f.name == "state" and x == "COMPLETING":
            continue  # the flag, where JSON gives the base state of a job ending
        out[f.name] = (x, y)
    return out


def test_text_and_json_reads_agree_job_by_job(slurm: SubprocessSlurm, clean) -> None:
    ours, _ = clean
    one = sbatch(ours, "-p", "free", "-w", "node1", "--gres=gpu:3", "-t", "2", "--wrap", "sleep 60")
    two = sbatch(
        ours, "-p", "free", "-N2", "-w", "node2,node3", "--gpus=12", "-t", "2", "--wrap", "sleep 60"
    )
    wait_until(
        lambda: job_field(one, "%T") == "RUNNING" and job_field(two, "%T") == "RUNNING",
        time.monotonic() + 20,
    )
    arr = sbatch(ours, "--hold", "--array=1-6%2", "--gres=gpu:4", "-t", "1", "--wrap", "true")
    sbatch(ours, "--hold", "--array=1-3", "--gres=gpu:1", "-t", "2", "--wrap", "true")
    sbatch(
        ours, "--hold", "-N2", "--gres=gpu:8", "--exclusive", "-t", "1-2:03:04", "--wrap", "true"
    )
    sbatch(
        ours,
        "--hold",
        "--gpus=12",
        "-t",
        "UNLIMITED",
        "--begin=now+3600",
        "--comment=a|b c -- d",
        "-J",
        "odd name",
        "--wrap",
        "true",
    )
    sbatch(
        ours,
        "--hold",
        "-N2",
        "--ntasks-per-node=2",
        "--gpus-per-task=2",
        f"--dependency=afterok:{one}",
        "-w",
        "node1,node2",
        "-t",
        "5",
        "--wrap",
        "true",
    )
    slurm.scontrol(["update", f"JobId={arr}_1", "Priority=0", "AdminComment=schedlab:queued"])
    text, as_json = SubprocessSlurm(), SubprocessSlurm(text_squeue=False)
    a = {j.job_id: j for j in map(parse_job, text.squeue()["jobs"])}
    b = {j.job_id: j for j in map(parse_job, as_json.squeue()["jobs"])}
    assert text.fallbacks == 0
    assert set(a) == set(b)
    differ = {k: d for k in a if (d := differences(a[k], b[k]))}
    assert not differ, differ
    assert a[two].gpu_idx == ((0, 1, 2, 3, 4, 5, 6, 7), (0, 1, 2, 3))
    rest = a[arr]
    assert (rest.array_tasks, rest.array_max_tasks) == ("2-6%2", 2)
    assert sum(1 for j in a.values() if j.array_job_id == arr) == 2  # task 1 split, the rest
    subprocess.run(["scancel", str(one), str(two)], check=False)
