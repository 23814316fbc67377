"""Live scenarios on the dev Slurm cluster: faults on the scheduler ↔ controller link.

The scheduler (``schedlab serve slurm`` in a process of its own) reaches the controller only
through a fault-proxy link: it runs with a copy of ``slurm.conf`` whose ``SlurmctldPort`` is the
proxy's, on 127.0.0.1 (the harness refuses anything else). Jobs are submitted held with the
cluster's own configuration; each job script appends ``start`` and ``end`` markers (job id,
``SLURM_RESTART_COUNT``, node, GPU indices, time) to a file of its own. Scenarios (spec §5.3):

* S3 — the link is a blackhole for 30 s: commands time out; nothing is decided from stale state;
  the scheduler reconciles after the heal;
* S4 — the link is delayed 500 ± 200 ms throughout: every decision is applied once, no starvation;
* S5 — the scheduler is SIGKILLed at 10 points and restarted on its journal;
* S8 — ``squeue``'s answers are truncated, then reset, for 15 s each: a failed read is no action.

The oracle is :mod:`.invariants` over the markers, Slurm's completion records (``sacct -c``) and
the journal. S1, S2, S6 and S7 (killing or cutting off a slurmd, restarting the controller,
flapping a node) need per-node namespaces and a cluster the harness owns: :mod:`.live_nodes`.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from schedlab.testing.faultinject import invariants
from schedlab.testing.faultinject.cluster import conf_setting, controller_port
from schedlab.testing.faultinject.invariants import Execution
from schedlab.testing.faultinject.proxy import FaultProxy

LIVE = ("S3", "S4", "S5", "S8")
SIZES = [8, 4, 2, 1, 1, 2, 4, 8, 2, 1, 4, 2]
DEADLINE = 240.0
INTERVAL = "0.5"


@dataclass
class LiveResult:
    scenario: str
    violations: list[str]
    jobs: list[int]
    journal: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    kills: int = 0
    details: dict = field(default_factory=dict)  # per scenario: what the oracle measured


def scheduler_conf(conf: Path, port: int, out: Path) -> Path:
    """A copy of ``conf`` whose clients reach the controller on 127.0.0.1:``port``."""
    text = conf.read_text()
    if not re.search(r"^SlurmctldPort=\d+", text, re.M):
        raise ValueError(f"{conf} names no SlurmctldPort")
    for host in re.findall(r"(?:SlurmctldHost|NodeAddr)=(\S+)", text):
        name = host.split("(")[0]
        if name not in ("localhost", "127.0.0.1"):
            raise ValueError(f"refusing a cluster with {name!r} in slurm.conf: loopback only")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(re.sub(r"^SlurmctldPort=\d+", f"SlurmctldPort={port}", text, flags=re.M))
    return out


def message_timeout(conf: Path) -> float:
    """Slurm's ``MessageTimeout`` in ``conf`` (its default: 10 s): how long a client waits on
    the controller before its command fails."""
    seconds = conf_setting(conf, "MessageTimeout")
    return float(seconds) if seconds is not None and seconds.isdigit() else 10.0


def submit(
    markers: Path,
    gpus: int,
    seconds: int,
    name: str,
    env: dict[str, str] | None = None,
    beat: bool = False,
) -> int:
    """Submit a held job of ``gpus`` GPUs that sleeps ``seconds`` and writes its markers: ``start``
    and ``end``, and ``kill`` when Slurm signals it (SIGTERM: the sleep runs in the background so
    that the trap fires at once; a SIGKILL writes nothing). ``beat``: it sleeps a second at a time
    and writes a ``beat`` after each, so that a run killed without a word (SIGKILL) stopped within
    a second of its last beat."""
    fields = (
        '"$SLURM_JOB_ID" "${SLURM_RESTART_COUNT:-0}" "$SLURMD_NODENAME" "${CUDA_VISIBLE_DEVICES:-}"'
    )
    script = (
        f'M={markers}/"$SLURM_JOB_ID"; '
        f'echo start {fields} "$(date +%s.%N)" >> "$M"; '
        f'trap \'echo kill {fields} "$(date +%s.%N)" >> "$M"; exit 143\' TERM; '
        + (
            f"i=0; while [ $i -lt {seconds} ]; do sleep 1 & wait $!; i=$((i+1)); "
            f'echo beat {fields} "$(date +%s.%N)" >> "$M"; done; '
            if beat
            else f"sleep {seconds} & wait $!; "
        )
        + f'echo end {fields} "$(date +%s.%N)" >> "$M"'
    )
    out = subprocess.run(
        ["sbatch", "--hold", "--parsable", "-t", "5", "-J", name, "-o", "/dev/null",
         f"--gres=gpu:{gpus}", "--wrap", script],
        capture_output=True, text=True, check=True, timeout=60, env=env,
    )  # fmt: skip
    return int(out.stdout.strip().split(";")[0])


def read_markers(markers: Path) -> tuple[list[Execution], dict[int, int]]:
    """Executions from the marker files, and each job's highest restart count seen. A run that
    wrote neither ``end`` nor ``kill`` (SIGKILLed) stopped within a second of its last ``beat``:
    it stops then; without beats, at infinity."""
    runs: list[Execution] = []
    restarts: dict[int, int] = {}
    for path in markers.iterdir():
        open_runs: dict[tuple[int, str], list[str]] = {}
        last_beat: dict[tuple[int, str], float] = {}
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) < 5:
                continue
            kind, job, restart, node = parts[0], int(parts[1]), int(parts[2]), parts[3]
            gpus = parts[4] if len(parts) == 6 else ""
            when = float(parts[-1])
            restarts[job] = max(restarts.get(job, 0), restart)
            key = (restart, node)
            if kind == "start":
                open_runs[key] = [gpus, str(when)]
            elif kind == "beat":
                last_beat[key] = when
            elif kind in ("end", "kill") and key in open_runs:
                g, start = open_runs.pop(key)
                idx = tuple(int(x) for x in g.split(",") if x)
                runs.append(Execution(job, restart, node, idx, float(start), when, kind == "end"))
        for key, (g, start) in open_runs.items():
            idx = tuple(int(x) for x in g.split(",") if x)
            stop = last_beat[key] + 1.0 if key in last_beat else float("inf")
            runs.append(Execution(int(path.name), key[0], key[1], idx, float(start), stop, False))
    return runs, restarts


def run_live(name: str, work: Path, seed: int = 0) -> LiveResult:
    """Run live scenario ``name`` on the cluster of ``$SLURM_CONF`` (4 nodes × 8 GPUs, idle)."""
    from schedlab.serve.import_slurm import parse_sacct, run_sacct
    from schedlab.serve.journal import read_journal

    if name not in LIVE:
        raise ValueError(f"live scenarios: {', '.join(LIVE)} (got {name!r})")
    conf = Path(os.environ["SLURM_CONF"])
    rng = random.Random(seed)
    markers = work / "markers"
    markers.mkdir(parents=True, exist_ok=True)
    journal = work / "journal.jsonl"
    started = time.monotonic()
    jobs: list[int] = []
    unknown: list[tuple[float, float]] = []
    kills = 0
    with FaultProxy(seed) as proxy:
        _, port = proxy.add_link("sched-ctld", ("127.0.0.1", controller_port(conf)))  # type: ignore[misc]
        sched_conf = scheduler_conf(conf, port, work / "etc" / "slurm.conf")
        env = {**os.environ, "SLURM_CONF": str(sched_conf)}
        argv = [sys.executable, "-m", "schedlab", "serve", "slurm", "--policy", "fifo",
                "--interval", INTERVAL, "--journal", str(journal), "--quiet",
                "--state-dir", str(work / "state"), "--until-idle"]  # fmt: skip
        try:
            for k, gpus in enumerate(SIZES):
                # S5's jobs run longer, so that ten kills fall inside the run
                base = 35 if name == "S5" else 20
                jobs.append(submit(markers, gpus, base + (k * 7) % 11, f"fi-{name}-{k}"))
            proc = subprocess.Popen(
                argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            faults = threading.Thread(
                target=_faults,
                args=(name, proxy, unknown, journal, message_timeout(conf)),
                daemon=True,
            )
            faults.start()
            while True:
                if name == "S5" and kills < 10 and time.monotonic() - started > 3 + 4 * kills:
                    time.sleep(rng.uniform(0, 1.5))
                    proc.send_signal(signal.SIGKILL)
                    proc.wait(timeout=10)
                    kills += 1
                    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.PIPE)  # fmt: skip
                if proc.poll() is not None or time.monotonic() - started > DEADLINE:
                    break
                time.sleep(0.2)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
            faults.join(timeout=60)
            wait_ended(jobs, deadline=started + DEADLINE + 60)
        finally:
            if jobs:
                subprocess.run(["scancel", *map(str, jobs)], capture_output=True, check=False)
    records = [r for r in parse_sacct(run_sacct()) if r.job_id in set(jobs)]
    final: dict[int, str] = {}
    for r in sorted(records, key=lambda r: r.end):  # a requeued job's last run decides
        final[r.job_id] = r.state
    executions, restarts = read_markers(markers)
    journal_records = list(read_journal(journal)) if journal.exists() else []
    restarted_at: dict[int, list[float]] = defaultdict(list)
    for r in records:
        if r.state != "COMPLETED":
            restarted_at[r.job_id].append(r.end)
    violations = (
        invariants.nothing_lost(jobs, final)
        + invariants.nothing_doubled(executions, restarts)
        + invariants.capacity(executions, {f"node{k}": 8 for k in range(1, 5)})
        + invariants.no_action_on_unknown_state(journal_records, unknown)
        + invariants.no_double_release(journal_records, restarted_at)
    )
    return LiveResult(name, violations, jobs, journal_records, time.monotonic() - started, kills)


def _faults(
    name: str,
    proxy: FaultProxy,
    unknown: list[tuple[float, float]],
    journal: Path,
    held: float,
) -> None:
    """The scenario's fault timeline, from the scheduler's first start on (a scheduler that
    cannot reach Slurm when it starts refuses to start: that is not these scenarios); ``unknown``
    collects the Unix-time spans in which it cannot read Slurm: from a second after the fault
    (a read already under way) to ``held`` + 1 s before the heal. A journal record carries the
    time its cycle began, and a read the blackhole holds is answered at the heal if the client
    still waits (Slurm's ``MessageTimeout``, ``held``): a cycle that began that close to the heal
    acts on a state read after it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (
        journal.exists() and '"start"' in journal.read_text()
    ):
        time.sleep(0.2)
    if name == "S3":
        t0 = time.time()
        proxy.set_fault("sched-ctld", blackhole=True)
        time.sleep(30.0)
        healed = time.time()
        proxy.heal()
        unknown.append((t0 + 1.0, healed - held - 1.0))
    elif name == "S4":
        proxy.set_fault("sched-ctld", delay_ms=500, jitter_ms=200)
    elif name == "S8":
        for fault in ({"truncate": 200}, {"reset": True}):
            t0 = time.time()
            proxy.set_fault("sched-ctld", **fault)
            time.sleep(15.0)
            healed = time.time()
            proxy.heal()
            unknown.append((t0 + 1.0, healed - held - 1.0))


def wait_ended(jobs: list[int], deadline: float) -> None:
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", "-j", ",".join(map(str, jobs)), "-o", "%i"],
                             capture_output=True, text=True)  # fmt: skip
        if out.returncode == 0 and not out.stdout.strip():
            return
        time.sleep(1.0)
