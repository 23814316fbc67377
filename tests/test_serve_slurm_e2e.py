"""serve slurm end to end on a real Slurm cluster of 4 nodes × 8 GPUs (slurm-dev-cluster.sh).

Each scenario submits 30 held jobs of 1, 2, 4 and 8 GPUs that sleep 2–5 s, runs
``schedlab serve slurm --policy fifo`` (bestfit placement, no backfill) as a separate process, and
checks the run against Slurm's own completion records (``sacct -c``):

* every job completed, and ran exactly once;
* it ran on the node the policy chose (the journal's last start for it);
* no node ever ran more GPUs than it has: ``sinfo --json`` gres_used sampled during the run, and
  the per-node sum of GPUs over the completion records' [start, end) intervals;
* fifo without backfill starts jobs in submission order: no job's first start precedes that of a
  job submitted before it (journal), and Slurm's recorded start times agree within their 1 s
  resolution.

Scenarios: a plain run (plus two jobs that can never fit, which must be marked and not block);
the scheduler SIGKILLed mid-run and restarted; a node drained mid-run; and, apart from the 30-job
workload, a preemption under srtf (requeue held, place again). The plain run is then
imported (``trace import-slurm --timing observed``) and replayed in the simulator, which must make
the same placement for every job.

Skipped, with the reason, when no Slurm controller answers (``SLURM_CONF`` unset, nothing up).
"""

from __future__ import annotations

import itertools
import math
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from schedlab.cli import main
from schedlab.serve.client import SubprocessSlurm, slurm_reachable
from schedlab.serve.compare import replay_starts
from schedlab.serve.import_slurm import RunRecord, parse_sacct, run_sacct
from schedlab.serve.journal import read_journal
from schedlab.serve.rederive import rederive
from schedlab.serve.slurm_state import parse_gpu_tres, read_jobs, read_nodes

pytestmark = pytest.mark.slurm

NODES, GPUS = 4, 8
SIZES = [8, 4, 2, 1, 1, 2, 4, 8, 2, 2, 1, 4, 8, 1, 1, 2, 4, 2, 8, 1, 4, 1, 2, 2, 8, 4, 1, 2, 1, 4]
SLEEPS = [2 + (k * 7) % 4 for k in range(len(SIZES))]
SCENARIO_TIMEOUT = 60.0
INTERVAL = "0.3"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def slurm() -> SubprocessSlurm:
    ok, why = slurm_reachable()
    if not ok:
        pytest.skip(
            f"no Slurm cluster reachable ({why}); start one with "
            "'scripts/slurm-dev-cluster.sh start' and export the SLURM_CONF it prints"
        )
    client = SubprocessSlurm()
    nodes = read_nodes(client.sinfo())
    shape = [(n.name, n.gpus) for n in nodes]
    if len(nodes) != NODES or any(n.gpus != GPUS for n in nodes):
        pytest.skip(f"the Slurm cluster is not {NODES} nodes × {GPUS} GPUs: {shape}")
    return client


@pytest.fixture
def clean(slurm: SubprocessSlurm):
    """Refuse to start while other jobs are active (after giving the jobs a previous test
    cancelled 30 s to leave); afterwards cancel ours and resume drains."""

    def busy() -> list[int]:
        jobs = read_jobs(slurm.squeue())
        return [j.job_id for j in jobs if j.active or (j.pending and not j.held)]

    deadline = time.monotonic() + 30
    while busy() and time.monotonic() < deadline:
        time.sleep(0.5)
    if busy():
        pytest.fail(f"the test cluster is busy with jobs {busy()}; cancel them first")
    ours: list[int] = []
    drained: list[str] = []
    yield ours, drained
    if ours:
        subprocess.run(["scancel", *map(str, ours)], check=False, capture_output=True)
    for node in drained:
        slurm.scontrol(["update", f"NodeName={node}", "State=RESUME"])


def submit(ours: list[int], gpus: str, seconds: int, name: str) -> int:
    out = subprocess.run(
        [
            "sbatch",
            "--hold",
            "--parsable",
            "-t",
            "2",
            "-J",
            name,
            "-o",
            "/dev/null",
            f"--gres=gpu:{gpus}",
            "--wrap",
            f"sleep {seconds}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    job = int(out.stdout.strip().split(";")[0])
    ours.append(job)
    return job


def submit_workload(
    ours: list[int], tag: str, bad_after: int | None = None
) -> tuple[list[int], list[int]]:
    jobs, bad = [], []
    for k, (g, s) in enumerate(zip(SIZES, SLEEPS, strict=True)):
        jobs.append(submit(ours, str(g), s, f"{tag}{k}"))
        if k == bad_after:
            bad.append(submit(ours, "16", 1, f"{tag}-too-big"))
            bad.append(submit(ours, "a100:2", 1, f"{tag}-no-such-model"))
    return jobs, bad


def serve_argv(journal: Path, *extra: str, until_idle: bool = True) -> list[str]:
    """``schedlab serve slurm`` with the tests' interval and journal, plus ``extra``; its lock
    in a folder of the test's own (unless ``extra`` names one), never the machine's, which a
    scheduler or test run of another checkout may hold."""
    state = [] if "--state-dir" in extra else ["--state-dir", str(journal.parent / "state")]
    argv = [
        sys.executable,
        "-m",
        "schedlab",
        "serve",
        "slurm",
        "--interval",
        INTERVAL,
        "--journal",
        str(journal),
        "--quiet",
        *state,
        *extra,
    ]
    return [*argv, "--until-idle"] if until_idle else argv


def serve(journal: Path, until_idle: bool = True) -> subprocess.Popen:
    argv = serve_argv(journal, "--policy", "fifo", until_idle=until_idle)
    return subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(proc: subprocess.Popen, deadline: float) -> None:
    try:
        _, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("serve slurm did not become idle within the scenario's time limit")
    assert proc.returncode == 0, err


class Sampler:
    """Samples every node's GPUs in use (``sinfo --json`` gres_used) while a scenario runs."""

    def __init__(self, client: SubprocessSlurm) -> None:
        self.client = client
        self.peak: dict[str, int] = defaultdict(int)
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for raw in self.client.sinfo().get("nodes", []):
                used, _ = parse_gpu_tres(str(raw.get("gres_used") or ""))
                self.peak[raw["name"]] = max(self.peak[raw["name"]], used)
            self.samples += 1
            self._stop.wait(0.2)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def records_for(jobs: list[int]) -> dict[int, list[RunRecord]]:
    wanted = set(jobs)
    out: dict[int, list[RunRecord]] = defaultdict(list)
    for r in parse_sacct(run_sacct()):
        if r.job_id in wanted:
            out[r.job_id].append(r)
    return out


def wait_until(ready, deadline: float) -> None:
    """Poll ``ready`` until it holds; fail the test if ``deadline`` (monotonic) passes first."""
    while not ready():
        if time.monotonic() > deadline:
            pytest.fail("the scenario's precondition did not hold in time")
        time.sleep(0.1)


def journal_starts(journal: Path) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = defaultdict(list)
    for rec in read_journal(journal):
        if rec["action"] == "start":
            out[int(rec["job"])].append(rec)
    return out


def check_run(jobs: list[int], journal: Path, sampler: Sampler) -> dict[int, RunRecord]:
    """The checks every scenario shares (see the module docstring); returns each job's record."""
    records = records_for(jobs)
    starts = journal_starts(journal)
    ran: dict[int, RunRecord] = {}
    for job in jobs:
        runs = [r for r in records.get(job, []) if r.nodes]
        assert len(runs) == 1, f"job {job} ran {len(runs)} times: {runs}"
        assert runs[0].state == "COMPLETED", f"job {job} ended {runs[0].state}"
        assert starts[job], f"job {job} ran but the journal has no start for it"
        chosen = tuple(starts[job][-1]["nodes"])
        assert runs[0].nodes == chosen, f"job {job} ran on {runs[0].nodes}, policy chose {chosen}"
        ran[job] = runs[0]
    # Capacity, sampled live ...
    assert sampler.samples > 10
    assert max(sampler.peak.values()) <= GPUS, dict(sampler.peak)
    # ... and rebuilt from the completion records (ends before starts at equal seconds).
    size = dict(zip(jobs, SIZES, strict=True))
    events: dict[str, list[tuple[float, int, int]]] = defaultdict(list)
    for job, r in ran.items():
        events[r.nodes[0]] += [(r.start, 1, size[job]), (r.end, 0, -size[job])]
    for node, evs in events.items():
        used = peak = 0
        for _, _, delta in sorted(evs):
            used += delta
            peak = max(peak, used)
        assert peak <= GPUS, f"{node} ran {peak} GPUs at once"
    # fifo, no backfill: first starts in submission order (journal), Slurm agrees within 1 s
    # (but for a job held again and re-placed, e.g. pinned to a node drained before Slurm
    # started it there: it ran from its later start).
    first = [starts[j][0]["time"] for j in jobs]
    assert first == sorted(first), "a job started before one submitted earlier"
    held_again = {r["job"] for r in read_journal(journal) if r["action"] == "hold"}
    slurm_start = [ran[j].start for j in jobs if j not in held_again]
    for a, b in itertools.pairwise(slurm_start):
        assert b >= a - 1.0
    return ran


def test_thirty_jobs_run_where_fifo_put_them_and_replay_agrees(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    ours, _ = clean
    journal = tmp_path / "serve.jsonl"
    jobs, bad = submit_workload(ours, "plain", bad_after=9)
    t0 = time.monotonic()
    with Sampler(slurm) as sampler:
        finish(serve(journal), t0 + SCENARIO_TIMEOUT)
    wall = time.monotonic() - t0
    check_run(jobs, journal, sampler)
    # The two impossible jobs: marked where squeue shows it, journaled, still held.
    for job in bad:
        out = subprocess.run(
            ["squeue", "-h", "-j", str(job), "-o", "%T|%k"], capture_output=True, text=True
        ).stdout.strip()
        assert out.startswith("PENDING|schedlab: rejected:"), out
    rejects = {r["job"] for r in read_journal(journal) if r["action"] == "reject"}
    assert rejects == set(bad)
    # Replay the recorded run: the simulator makes the same placement for every job.
    workload = tmp_path / "workload.csv"
    argv = [
        "trace",
        "import-slurm",
        "--journal",
        str(journal),
        "--timing",
        "observed",
        "--out",
        str(workload),
    ]
    assert main(argv) == 0
    serve_record = next(r for r in read_journal(journal) if r["action"] == "serve")
    simulated = replay_starts(workload, serve_record)
    live = journal_starts(journal)
    differ = {
        j: (live[j][-1]["nodes"], simulated.get(str(j)))
        for j in jobs
        if [tuple(live[j][-1]["nodes"])] != simulated.get(str(j))
    }
    assert not differ, f"replay placed these jobs elsewhere: {differ}"
    cycles = max(r["cycle"] for r in read_journal(journal))
    print(f"\nplain: {len(jobs)} jobs in {wall:.1f} s, {cycles} cycles")


def test_sigkill_and_restart_lose_nothing_and_place_nothing_twice(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    ours, _ = clean
    journal = tmp_path / "serve.jsonl"
    jobs, _ = submit_workload(ours, "kill")
    t0 = time.monotonic()
    with Sampler(slurm) as sampler:
        first = serve(journal, until_idle=False)
        # Mid-run: once it has started jobs (a loaded machine may take seconds to start it).
        wait_until(lambda: journal.exists() and '"action":"start"' in journal.read_text(), t0 + 30)
        time.sleep(1.0)
        first.send_signal(signal.SIGKILL)
        first.communicate()
        assert first.returncode == -signal.SIGKILL
        time.sleep(2.0)  # jobs finish while no scheduler runs
        finish(serve(journal), t0 + SCENARIO_TIMEOUT)
    wall = time.monotonic() - t0
    check_run(jobs, journal, sampler)
    actions = [r["action"] for r in read_journal(journal)]
    assert actions.count("serve") == 2 and actions.count("stop") == 1
    print(f"\nkill+restart: {len(jobs)} jobs in {wall:.1f} s")


def test_a_node_drained_mid_run_gets_no_new_jobs(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    ours, drained = clean
    journal = tmp_path / "serve.jsonl"
    jobs, _ = submit_workload(ours, "drain")
    t0 = time.monotonic()
    with Sampler(slurm) as sampler:
        proc = serve(journal)
        time.sleep(3.0)
        slurm.scontrol(["update", "NodeName=node3", "State=DRAIN", "Reason=schedlab-e2e"])
        drained.append("node3")
        t_drain = time.time()
        finish(proc, t0 + SCENARIO_TIMEOUT)
    wall = time.monotonic() - t0
    ran = check_run(jobs, journal, sampler)
    late = [j for j, r in ran.items() if r.start > t_drain and "node3" in r.nodes]
    assert not late, f"jobs {late} started on drained node3"
    placed = [
        r["job"]
        for r in read_journal(journal)
        if r["action"] == "start" and r["time"] > t_drain and "node3" in r["nodes"]
    ]
    assert not placed, f"the policy placed {placed} on drained node3"
    before = sum(1 for r in ran.values() if "node3" in r.nodes)
    print(f"\ndrain: {len(jobs)} jobs in {wall:.1f} s, {before} ran on node3 before the drain")


def test_a_preemptive_policy_requeues_and_restarts_its_victim(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    """srtf: four 8-GPU jobs (10 min limit) fill the cluster; a 2-GPU job with a 1 min limit
    arrives, so the job with the most time left is requeued held, the short job takes its node,
    and the victim is placed again (StartTime=now) once there is room, and completes."""
    ours, _ = clean
    journal = tmp_path / "serve.jsonl"
    longs = [submit(ours, "8", 8, f"long{k}") for k in range(4)]
    for job in longs:
        slurm.scontrol(["update", f"JobId={job}", "TimeLimit=10"])
    t0 = time.monotonic()
    with Sampler(slurm) as sampler:
        argv = serve_argv(journal, "--policy", "srtf")
        proc = subprocess.Popen(
            argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        # The short job must arrive after all four long ones hold the cluster (a slow start of
        # the scheduler under load would otherwise let it be placed first, with no preemption).
        wait_until(
            lambda: journal.exists() and all(journal_starts(journal).get(j) for j in longs),
            t0 + 30.0,
        )
        # ... and run there: a victim still launching is held, not requeued, and may start
        # all the same (a faster cycle than Slurm's start), to be preempted again later.
        wait_until(lambda: all(job_field(j, "%T") == "RUNNING" for j in longs), t0 + 30.0)
        short = submit(ours, "2", 2, "short")
        slurm.scontrol(["update", f"JobId={short}", "TimeLimit=1"])
        finish(proc, t0 + SCENARIO_TIMEOUT)
    records = journal_starts(journal)
    preempted = [r for r in read_journal(journal) if r["action"] == "preempt"]
    assert len(preempted) == 1, preempted
    victim = preempted[0]["job"]
    assert victim in longs
    assert records[short][-1]["nodes"] == preempted[0]["nodes"]
    assert len(records[victim]) == 2  # placed, preempted, placed again
    runs = records_for([*longs, short])
    for job in [*longs, short]:
        final = [r for r in runs[job] if r.state == "COMPLETED"]
        assert len(final) == 1, (job, runs[job])
        assert final[0].nodes == tuple(records[job][-1]["nodes"])
    assert max(sampler.peak.values()) <= GPUS
    print(f"\npreemption: victim {victim} requeued and completed, {time.monotonic() - t0:.1f} s")


def test_skips_cleanly_without_slurm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reachability probe names why when there is no configuration (no Slurm needed)."""
    monkeypatch.setenv("PATH", "/nonexistent")
    ok, why = slurm_reachable()
    assert not ok and "scontrol" in why


# -- everyday Slurm use: ownership, eligibility, arrays ------------------------------------------
def sbatch(ours: list[int], *args: str, user: str | None = None) -> int:
    """Submit ``sleep`` work with these sbatch options (as ``user`` when given); returns the id."""
    argv = ["sbatch", "--parsable", "-o", "/dev/null", "--chdir", "/tmp", *args]
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    job = int(out.stdout.strip().split(";")[0])
    ours.append(job)
    return job


def run_serve(journal: Path, deadline: float, *extra: str) -> None:
    argv = serve_argv(journal, *(extra or ("--policy", "fifo")))
    proc = subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    finish(proc, deadline)


def job_field(job: int, fmt: str) -> str:
    return subprocess.run(
        ["squeue", "-h", "-j", str(job), "-o", fmt], capture_output=True, text=True
    ).stdout.strip()


def ran_once_where_chosen(jobs: list[int], journal: Path) -> dict[int, RunRecord]:
    """Every job completed exactly once, on the nodes of its last start in the journal."""
    records = records_for(jobs)
    starts = journal_starts(journal)
    out = {}
    for job in jobs:
        runs = [r for r in records.get(job, []) if r.nodes]
        assert len(runs) == 1, f"job {job} ran {len(runs)} times: {runs}"
        assert runs[0].state == "COMPLETED", f"job {job} ended {runs[0].state}"
        assert starts.get(job), f"job {job} ran but the policy never started it"
        assert sorted(runs[0].nodes) == sorted(starts[job][-1]["nodes"])
        out[job] = runs[0]
    return out


def test_jobs_schedlab_does_not_own_are_never_touched_and_users_cannot_release(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    """In partition 'free' (not schedlab's): an unheld ``-w node2`` job and an operator-held
    job. In 'gpu': jobs the job_submit plugin held, one of them a user's, whose own
    ``scontrol release`` Slurm refuses. serve runs over all partitions: it never holds,
    releases or journals the foreign jobs, and places the user's job like any other."""
    ours, _ = clean
    journal = tmp_path / "serve.jsonl"
    pinned = sbatch(
        ours, "-p", "free", "-w", "node2", "--gres=gpu:1", "-t", "1", "--wrap", "sleep 3"
    )
    operator = sbatch(ours, "-p", "free", "--hold", "--gres=gpu:1", "-t", "1", "--wrap", "sleep 1")
    slurm.scontrol(["hold", str(operator)])
    users = sbatch(ours, "--gres=gpu:2", "-t", "1", "--wrap", "sleep 2", user="nobody")
    refused = subprocess.run(
        ["runuser", "-u", "nobody", "--", "scontrol", "release", str(users)],
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0, "a user released a job schedlab holds"
    managed = [sbatch(ours, f"--gres=gpu:{g}", "-t", "1", "--wrap", "sleep 2") for g in (8, 4, 2)]
    assert job_field(managed[0], "%r") == "JobHeldUser"  # held by the plugin on submission
    t0 = time.monotonic()
    run_serve(journal, t0 + SCENARIO_TIMEOUT)
    ran_once_where_chosen([users, *managed], journal)
    touched = {r["job"] for r in read_journal(journal)}
    assert pinned not in touched and operator not in touched
    # The pinned job may have waited for node2 behind a managed job: let it finish, and
    # give accounting a moment to record it, before reading where it ran.
    wait_until(lambda: not job_field(pinned, "%T"), t0 + SCENARIO_TIMEOUT)
    wait_until(lambda: any(r.nodes for r in records_for([pinned])[pinned]), t0 + SCENARIO_TIMEOUT)
    assert [r.nodes for r in records_for([pinned])[pinned] if r.nodes] == [("node2",)]
    assert job_field(operator, "%T|%r") == "PENDING|JobHeldAdmin"


def test_only_jobs_slurm_would_run_are_released(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    """A (8 GPUs, 5 s); B depends on A (afterok); C may begin only 12 s from now; D, E and F
    are ready 8-GPU jobs submitted unheld after them (the plugin holds them). On 4 nodes fifo
    must start A, D, E and F at once (B and C are not eligible, so they are not released and
    hold no node), B only after A ended, C not before its begin time; nothing starts that the
    policy did not choose."""
    ours, _ = clean
    journal = tmp_path / "serve.jsonl"
    a = sbatch(ours, "--gres=gpu:8", "-t", "1", "--wrap", "sleep 5")
    b = sbatch(ours, f"--dependency=afterok:{a}", "--gres=gpu:8", "-t", "1", "--wrap", "sleep 1")
    begin = time.time() + 12
    c = sbatch(ours, "--begin=now+12", "--gres=gpu:8", "-t", "1", "--wrap", "sleep 1")
    d = sbatch(ours, "--gres=gpu:8", "-t", "1", "--wrap", "sleep 3")
    e = sbatch(ours, "--gres=gpu:8", "-t", "1", "--wrap", "sleep 3")
    f = sbatch(ours, "--gres=gpu:8", "-t", "1", "--wrap", "sleep 3")
    t0 = time.monotonic()
    run_serve(journal, t0 + SCENARIO_TIMEOUT)
    ran = ran_once_where_chosen([a, b, c, d, e, f], journal)
    assert all(ran[j].start < ran[a].end for j in (d, e, f)), "ready jobs waited"
    assert ran[b].start >= ran[a].end
    assert ran[c].start >= math.floor(begin)
    waits = {r["job"] for r in read_journal(journal) if r["action"] == "wait"}
    assert {b, c} <= waits


def test_array_tasks_are_placed_one_by_one_under_the_throttle(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    """``--array=1-6 --gres=gpu:4`` and ``--array=1-3%1 --gres=gpu:2``: every task runs once,
    where the policy put it, and no two tasks of the throttled array overlap."""
    ours, _ = clean
    journal = tmp_path / "serve.jsonl"
    wide = sbatch(ours, "--array=1-6", "--gres=gpu:4", "-t", "1", "--wrap", "sleep 2")
    narrow = sbatch(ours, "--array=1-3%1", "--gres=gpu:2", "-t", "1", "--wrap", "sleep 2")
    t0 = time.monotonic()
    run_serve(journal, t0 + SCENARIO_TIMEOUT)
    tasks: dict[int, list[int]] = defaultdict(list)
    for raw in slurm.squeue()["jobs"]:
        if raw.get("array_job_id") in (wide, narrow):
            tasks[int(raw["array_job_id"])].append(int(raw["job_id"]))
    ours.extend(tasks[wide] + tasks[narrow])
    assert len(tasks[wide]) == 6 and len(tasks[narrow]) == 3
    ran = ran_once_where_chosen(tasks[wide] + tasks[narrow], journal)
    spans = sorted((ran[j].start, ran[j].end) for j in tasks[narrow])
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end, f"throttled array tasks overlapped: {spans}"


def test_a_second_instance_on_the_same_partition_is_refused(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    """While one scheduler manages 'gpu', a second one for 'gpu' (or for every partition)
    exits at once with status 2 and one error line, having changed nothing; one for 'free'
    may run beside it."""
    state = ["--state-dir", str(tmp_path / "state")]
    first = subprocess.Popen(
        serve_argv(
            tmp_path / "a.jsonl", "--policy", "fifo", "--partition", "gpu", *state, until_idle=False
        ),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: (tmp_path / "a.jsonl").exists(), time.monotonic() + 30)
        for extra in (["--partition", "gpu"], []):
            second = subprocess.run(
                serve_argv(tmp_path / "b.jsonl", "--policy", "fifo", *extra, *state),
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert second.returncode == 2
            assert "another 'schedlab serve slurm' already manages" in second.stderr
            assert not (tmp_path / "b.jsonl").exists()
        other = subprocess.run(
            serve_argv(tmp_path / "c.jsonl", "--policy", "fifo", "--partition", "free", *state),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert other.returncode == 0, other.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=30)
    assert first.returncode == 0


def test_two_node_jobs_get_two_whole_nodes_and_are_never_skipped(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    """Three 5-GPU jobs leave [3, 3, 3, 8] GPUs free (17 in all, but one whole node); then
    ``-N2 --gres=gpu:8`` jobs and more small ones. Every proposal has the asked geometry (no
    ``skip`` in the journal: the two-node jobs wait for two whole nodes instead of being
    offered 8 + 3 + 3 + 2), each two-node job ran on two nodes, and every job ran once where
    the policy put it."""
    ours, _ = clean
    journal = tmp_path / "serve.jsonl"
    jobs = [sbatch(ours, "--gres=gpu:5", "-t", "1", "--wrap", "sleep 4") for _ in range(3)]
    wide = [sbatch(ours, "-N2", "--gres=gpu:8", "-t", "1", "--wrap", "sleep 2") for _ in range(2)]
    jobs += [sbatch(ours, "--gres=gpu:4", "-t", "1", "--wrap", "sleep 2") for _ in range(3)]
    t0 = time.monotonic()
    run_serve(journal, t0 + SCENARIO_TIMEOUT)
    ran = ran_once_where_chosen(jobs + wide, journal)
    assert all(len(ran[j].nodes) == 2 for j in wide)
    skips = [r for r in read_journal(journal) if r["action"] == "skip"]
    assert not skips, skips


@pytest.mark.slow
def test_tiresias_with_a_minimum_run_converges_live(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    """40 jobs (1–8 GPUs, 10–25 s, none checkpoints) under tiresias with a 60 GPU-second
    threshold: with ``--min-runtime 30`` every job completes (its last run), nothing runs over
    capacity, and the number of preemptions is printed beside the simulator's on the imported
    workload."""
    ours, _ = clean
    journal = tmp_path / "serve.jsonl"
    sizes = [8, 4, 2, 1, 1, 2, 4, 8, 2, 1] * 4
    jobs = [
        sbatch(ours, f"--gres=gpu:{g}", "-t", "2", "--wrap", f"sleep {10 + (k * 7) % 16}")
        for k, g in enumerate(sizes)
    ]
    t0 = time.monotonic()
    extra = ("--policy", "tiresias", "--param", "thresholds=60", "--min-runtime", "30")
    with Sampler(slurm) as sampler:
        run_serve(journal, t0 + 400, *extra)
    wall = time.monotonic() - t0
    records = records_for(jobs)
    starts = journal_starts(journal)
    for job in jobs:
        runs = sorted((r for r in records[job] if r.nodes), key=lambda r: r.end)
        assert runs and runs[-1].state == "COMPLETED", (job, runs)
        assert sorted(runs[-1].nodes) == sorted(starts[job][-1]["nodes"])
    assert max(sampler.peak.values()) <= GPUS
    live = sum(1 for r in read_journal(journal) if r["action"] == "preempt")
    workload = tmp_path / "workload.csv"
    assert main(["trace", "import-slurm", "--journal", str(journal), "--out", str(workload)]) == 0
    serve_record = next(r for r in read_journal(journal) if r["action"] == "serve")
    # Lost work (checkpoint=0, as imported) converges in the simulator too: the replay applies
    # the run's journaled minimum run time, as serve did.
    assert (pd.read_csv(workload)["checkpoint"] == 0).all()
    assert serve_record["min_runtime"] == 30
    simulated = replay_starts(workload, serve_record)
    replayed = sum(len(v) - 1 for v in simulated.values())
    print(
        f"\ntiresias live: {len(jobs)} jobs in {wall:.0f} s, {live} preemptions; replay {replayed}"
    )


@pytest.mark.slow
def test_two_hundred_mixed_jobs_and_a_sigkill_lose_nothing(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    """200 jobs: 110 plain ones of 1–8 GPUs (half ``--hold``, half unheld, which the plugin
    holds), two arrays of 20 (one throttled to 4 at a time), 10 ``-N2 --gres=gpu:8`` jobs and
    40 jobs that depend on plain ones; serve (fifo) is SIGKILLed mid-run and restarted. Every
    job completes exactly once, on the nodes of its last start (so nothing started that the
    policy did not choose), no node ever runs more GPUs than it has, no dependent job starts
    before the job it waited for ended, and the journal replays to the same placements: every
    journaled start is the one fifo makes on the cluster the journal describes at its cycle."""
    ours, _ = clean
    journal = tmp_path / "serve.jsonl"
    plain, parents = [], {}
    for k in range(110):
        hold = ["--hold"] if k % 2 else []
        g = [1, 2, 4, 8][k % 4]
        plain.append(sbatch(ours, *hold, f"--gres=gpu:{g}", "-t", "1", "--wrap", "sleep 1"))
    arrays = [
        sbatch(ours, "--array=1-20", "--gres=gpu:2", "-t", "1", "--wrap", "sleep 1"),
        sbatch(ours, "--array=1-20%4", "--gres=gpu:1", "-t", "1", "--wrap", "sleep 1"),
    ]
    wide = [sbatch(ours, "-N2", "--gres=gpu:8", "-t", "1", "--wrap", "sleep 1") for _ in range(10)]
    for k in range(40):
        parent = plain[(k * 7) % len(plain)]
        dep = f"--dependency=afterok:{parent}"
        job = sbatch(ours, dep, f"--gres=gpu:{1 + k % 2}", "-t", "1", "--wrap", "sleep 1")
        parents[job] = parent
    t0 = time.monotonic()
    with Sampler(slurm) as sampler:
        first = serve(journal, until_idle=False)
        try:
            wait_until(lambda: journal.exists() and len(journal_starts(journal)) >= 40, t0 + 120)
        finally:
            first.send_signal(signal.SIGKILL)
            first.communicate()
        finish(serve(journal), t0 + 420)
    wall = time.monotonic() - t0
    tasks = [
        int(raw["job_id"]) for raw in slurm.squeue()["jobs"] if raw.get("array_job_id") in arrays
    ]
    ours.extend(tasks)
    everything = plain + wide + list(parents) + tasks
    assert len(everything) == 200
    ran = ran_once_where_chosen(everything, journal)
    assert max(sampler.peak.values()) <= GPUS, dict(sampler.peak)
    for job, parent in parents.items():
        assert ran[job].start >= ran[parent].end, (job, parent)
    kills = [r["action"] for r in read_journal(journal)].count("serve")
    assert kills == 2
    # The journal replays to the same placements: each journaled start re-derived from the
    # cluster the journal describes at its cycle, by the same policy (schedlab.serve.rederive).
    live = [r for r in read_journal(journal) if r["action"] == "start" and not r.get("recovered")]
    checked = rederive(journal)
    assert checked.agree, checked.mismatches[:5]
    assert checked.starts == len(live) >= 190
    print(
        f"\n200 mixed jobs with a SIGKILL: {wall:.0f} s; {checked.starts} starts re-derived "
        f"in {checked.cycles} cycles, all on the same nodes"
    )


def test_held_jobs_show_why_they_wait_in_squeue(
    slurm: SubprocessSlurm, clean, tmp_path: Path
) -> None:
    """Four 8-GPU jobs fill the cluster; a fifth (``--comment=checkpoint``) waits for fifo, a
    sixth for its ``--begin``. ``squeue -O JobID,State,Reason,Comment`` shows each one's reason
    (the owner's comment kept after it); once the fifth starts, its comment is its owner's
    again."""
    ours, _ = clean
    journal = tmp_path / "serve.jsonl"
    for _ in range(NODES):
        sbatch(ours, "--gres=gpu:8", "-t", "1", "--wrap", "sleep 4")
    fifth = sbatch(ours, "--gres=gpu:8", "-t", "1", "--comment=checkpoint", "--wrap", "sleep 5")
    later = sbatch(ours, "--begin=now+60", "--gres=gpu:1", "-t", "1", "--wrap", "sleep 1")
    proc = subprocess.Popen(
        serve_argv(journal, "--policy", "fifo", until_idle=False),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def shown(job: int) -> list[str]:
        out = subprocess.run(
            ["squeue", "-h", "-j", str(job), "-O", "JobID,State,Reason,Comment:200"],
            capture_output=True,
            text=True,
        ).stdout
        return out.split(None, 3)

    try:
        deadline = time.monotonic() + SCENARIO_TIMEOUT
        wait_until(lambda: len(shown(fifth)) == 4 and shown(fifth)[3].startswith("sched"), deadline)
        _, state, reason, comment = shown(fifth)
        assert state == "PENDING" and reason in ("JobHeldUser", "JobHeldAdmin")
        assert comment.strip() == (
            "schedlab: queued: waiting for policy fifo to place it (8 GPUs) -- checkpoint"
        )
        wait_until(lambda: len(shown(later)) == 4, deadline)
        assert shown(later)[3].startswith("schedlab: not eligible: BeginTime")
        wait_until(lambda: job_field(fifth, "%T") == "RUNNING", deadline)
        assert job_field(fifth, "%k") == "checkpoint"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
