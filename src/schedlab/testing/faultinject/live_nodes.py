"""Live scenarios on a Slurm cluster the harness owns: faults on the nodes and the controller.

The cluster is :class:`~schedlab.testing.faultinject.cluster.OwnedCluster` (each slurmd in a
network namespace of its own, behind a fault-proxy link each way). The scheduler (``schedlab serve
slurm``, a process of its own) reaches the controller through one more proxy link, as in
:mod:`.live`. Jobs are submitted held; each writes ``start`` / ``end`` markers, and ``kill`` when
Slurm signals it. A watcher polls ``sinfo`` and ``squeue`` twice a second, so that when a node
was DOWN and when a job was pending or running again is known. Scenarios (spec §5.3):

* S1 — node3's slurmd, its job steps and their jobs are SIGKILLed at once (its cgroup) while two
  or more jobs run there; the slurmd is started again a minute later;
* S2 — node3's links to and from the controller are a blackhole for 60 s, then healed; its jobs
  sleep 180 s, so the cut-off instances are still running when Slurm kills them after the heal;
* S6 — slurmctld is stopped (SIGTERM) and started again on the same state folder 5 s later;
* S7 — node2's links flap: refused for 5 s, healthy for 5 s, ten times.

The oracle is :mod:`.invariants` (nothing lost, nothing doubled, capacity, no destructive action
on unknown state, no double release, never on a DOWN node) plus the requeue bounds checked here.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from schedlab.testing.faultinject import invariants
from schedlab.testing.faultinject.cluster import SLURMD_TIMEOUT, OwnedCluster, controller_port
from schedlab.testing.faultinject.invariants import Execution
from schedlab.testing.faultinject.live import (
    INTERVAL,
    LiveResult,
    read_markers,
    scheduler_conf,
    submit,
    wait_ended,
)
from schedlab.testing.faultinject.proxy import FaultProxy

OWNED = ("S1", "S2", "S6", "S7")
#: (GPUs, seconds) per job. S1 and S2 use 16 of the 32 GPUs, so that the jobs of the lost node
#: fit on the healthy ones at once and the requeue bound measures the scheduler, not the queue;
#: S2's sleep 180 s, so the cut-off instances are still running at the heal. S6 and S7 ask for
#: 39 GPUs: a queue is waiting throughout.
SMALL = [2, 1, 2, 1, 1, 2, 1, 2, 1, 1, 1, 1]
MIXED = [8, 4, 2, 1, 1, 2, 4, 8, 2, 1, 4, 2]
WORKLOADS = {
    "S1": [(g, 40 + (k * 7) % 11) for k, g in enumerate(SMALL)],
    "S2": [(g, 180) for g in SMALL],
    "S6": [(g, 20 + (k * 7) % 11) for k, g in enumerate(MIXED)],
    "S7": [(g, 20 + (k * 7) % 11) for k, g in enumerate(MIXED)],
}
#: Seconds per scenario. S7 needs more: a job whose launch fails on the flapping node is
#: requeued by Slurm only once its node acknowledges the kill, then waits out Slurm's 120 s
#: requeue delay (``BeginTime``).
DEADLINES = {"S1": 240.0, "S2": 360.0, "S6": 240.0, "S7": 480.0}
#: How long a start may follow a read of the node as healthy (the cycle's read to its release):
#: a start this soon after the node turned DOWN was decided while it was up.
DECISION_LAG = 1.0
#: Requeue bounds (spec §5.4): pending again within SlurmdTimeout + 30 s of the fault, running
#: on a healthy node within 2 scheduler cycles + 5 s of being eligible again.
PENDING_WITHIN = SLURMD_TIMEOUT + 30.0
RUNNING_WITHIN = 2 * float(INTERVAL) + 5.0
#: S2: how soon after the heal the cut-off node must be back in service. Slurm 22.05 asks a DOWN
#: node to register only now and then (measured: 43 s after a heal with SlurmdTimeout = 10), and
#: kills what still runs there as it registers; the spec's "2 × SlurmdTimeout after the heal"
#: is therefore measured from the node's return.
REREGISTER_WITHIN = 120.0


@dataclass
class Watch:
    """``sinfo`` / ``squeue`` polled in a thread: node states and job states over time."""

    jobs: set[int]
    env: dict[str, str]
    node_states: list[tuple[float, dict[str, str]]] = field(default_factory=list)
    job_states: dict[int, list[tuple[float, str, str, str]]] = field(
        default_factory=lambda: defaultdict(list)
    )  # job → (time, state, nodes, reason)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.is_set():
            t = time.time()
            nodes = _lines(["sinfo", "-h", "-N", "-o", "%N %t"], self.env)
            if nodes is not None:
                self.node_states.append((t, dict(p for p in nodes if len(p) == 2)))
            jobs = _lines(["squeue", "-h", "-o", "%i|%T|%N|%r"], self.env, sep="|")
            for parts in jobs or []:
                if len(parts) == 4 and parts[0].isdigit() and int(parts[0]) in self.jobs:
                    self.job_states[int(parts[0])].append((t, parts[1], parts[2], parts[3]))
            self.stop.wait(0.5)

    def down_windows(self) -> dict[str, list[tuple[float, float]]]:
        """Per node, the spans in which ``sinfo`` showed it DOWN, DRAINED or failing."""
        windows: dict[str, list[tuple[float, float]]] = defaultdict(list)
        since: dict[str, float] = {}
        for t, states in self.node_states:
            for node, state in states.items():
                bad = re.match(r"(down|drain|drng|fail)", state) is not None
                if bad and node not in since:
                    since[node] = t
                elif not bad and node in since:
                    windows[node].append((since.pop(node), t))
        for node, t in since.items():
            windows[node].append((t, float("inf")))
        return dict(windows)

    def first(self, job: int, after: float, state: str, not_on: str = "") -> float | None:
        for t, s, nodes, _ in self.job_states.get(job, []):
            if t >= after and s == state and (not not_on or not_on not in nodes.split(",")):
                return t
        return None


def _lines(argv: list[str], env: dict[str, str], sep: str | None = None) -> list[list[str]] | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=10)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return None
    return [line.split(sep) for line in done.stdout.splitlines()]


@dataclass
class Timeline:
    """What the fault thread did, for the oracle (Unix times)."""

    victim: str = ""
    fault: float = 0.0
    heal: float = 0.0
    back: float = math.nan  # S2: when the victim was back in service (re-registered)
    unknown: list[tuple[float, float]] = field(default_factory=list)
    note: list[str] = field(default_factory=list)


def run_owned(name: str, cluster: OwnedCluster, work: Path, seed: int = 0) -> LiveResult:
    """Run scenario ``name`` (S1, S2, S6, S7) on ``cluster`` (started, 4 × 8 GPUs, idle)."""
    from schedlab.serve.import_slurm import parse_sacct, run_sacct
    from schedlab.serve.journal import read_journal

    if name not in OWNED:
        raise ValueError(f"owned-cluster scenarios: {', '.join(OWNED)} (got {name!r})")
    saved = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        markers = work / "markers"
        markers.mkdir(parents=True, exist_ok=True)
        journal = work / "journal.jsonl"
        started = time.monotonic()
        deadline = DEADLINES[name]
        jobs: list[int] = []
        line = Timeline()
        with FaultProxy(seed) as proxy:
            listen = proxy.add_link("sched-ctld", ("127.0.0.1", controller_port(cluster.conf)))
            sched_conf = scheduler_conf(cluster.conf, int(listen[1]), work / "etc" / "slurm.conf")
            env = {**os.environ, "SLURM_CONF": str(sched_conf)}
            argv = [sys.executable, "-m", "schedlab", "serve", "slurm", "--policy", "fifo",
                    "--interval", INTERVAL, "--journal", str(journal), "--quiet",
                    "--state-dir", str(work / "state"), "--until-idle"]  # fmt: skip
            for k, (gpus, seconds) in enumerate(WORKLOADS[name]):
                jobs.append(submit(markers, gpus, seconds, f"fi-{name}-{k}", beat=True))
            watch = Watch(set(jobs), dict(os.environ))
            watcher = threading.Thread(target=watch.run, daemon=True)
            watcher.start()
            proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)  # fmt: skip
            faults = threading.Thread(
                target=_faults, args=(name, cluster, watch, journal, line), daemon=True
            )
            try:
                faults.start()
                while proc.poll() is None and time.monotonic() - started < deadline:
                    time.sleep(0.3)
                if proc.poll() is None:
                    line.note.append("the scheduler was still running at the deadline")
                    proc.terminate()
                    proc.wait(timeout=30)
                faults.join(timeout=120)
                wait_ended(jobs, started + deadline + 60)
            finally:
                watch.stop.set()
                watcher.join(timeout=15)
                subprocess.run(["scancel", *map(str, jobs)], capture_output=True, check=False)
        records = [r for r in parse_sacct(run_sacct()) if r.job_id in set(jobs)]
    finally:
        if saved is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = saved
    final: dict[int, str] = {}
    restarted_at: dict[int, list[float]] = defaultdict(list)
    for r in sorted(records, key=lambda r: r.end):  # a requeued job's last run decides
        final[r.job_id] = r.state
        if r.state != "COMPLETED":
            restarted_at[r.job_id].append(r.end)
    executions, restarts = read_markers(markers)
    executions = _crashed_stop(executions, cluster.crashed)
    journal_records = list(read_journal(journal)) if journal.exists() else []
    runs = [(r.job_id, r.state, r.start, r.end) for r in records]
    unlaunched = invariants.unlaunched_runs(runs, executions)
    allowed: dict[int, float] = {}
    violations: list[str] = list(line.note)
    victims = _victims(executions, line)
    if name == "S2":
        back = _back_in_service(watch, line)
        if back is None or back - line.heal > REREGISTER_WITHIN:
            violations.append(
                f"{line.victim} was not back in service within {REREGISTER_WITHIN:g} s of the heal"
            )
        else:
            line.back = back
            allowed = {job: back + 2 * SLURMD_TIMEOUT for job in victims}
            violations += _cut_off_killed(executions, line, victims)
    counted = [e for e in executions if not (e.job in allowed and e.node == line.victim
                                             and e.restart == 0)]  # fmt: skip
    lagged = {
        node: [(a + DECISION_LAG, b) for a, b in spans]
        for node, spans in watch.down_windows().items()
    }
    violations += (
        invariants.nothing_lost(jobs, final)
        + invariants.nothing_doubled(executions, restarts, allowed, unlaunched)
        + invariants.capacity(counted, {f"node{k}": cluster.gpus for k in range(1, 5)})
        + invariants.no_action_on_unknown_state(journal_records, line.unknown)
        + invariants.no_double_release(journal_records, restarted_at)
        + invariants.never_on_a_down_node(journal_records, lagged)
    )
    if name in ("S1", "S2"):
        if not victims:
            violations.append(f"no job was running on {line.victim} when the fault came")
        violations += _requeued_in_time(victims, watch, line)
    result = LiveResult(name, violations, jobs, journal_records, time.monotonic() - started)
    result.details = {
        "victim": line.victim,
        "victims": sorted(victims),
        "down": watch.down_windows(),
        "fault": line.fault,
        "heal": line.heal,
        "back": line.back,
        "requeue": _requeue_delays(victims, watch, line),
        "unlaunched": unlaunched,
    }
    return result


def _faults(name: str, cluster: OwnedCluster, watch: Watch, journal: Path, line: Timeline) -> None:
    """The scenario's fault timeline, from the scheduler's first release on."""
    limit = time.monotonic() + 60
    while time.monotonic() < limit and not (journal.exists() and '"start"' in journal.read_text()):
        time.sleep(0.2)
    if name in ("S1", "S2"):
        line.victim = _pick_victim(watch, want=2 if name == "S1" else 1)
        line.fault = time.time()
        if name == "S1":
            cluster.crash(line.victim)
            time.sleep(60.0)
            cluster.start_node(line.victim)
        else:
            cluster.cut(line.victim, blackhole=True)
            time.sleep(60.0)
            cluster.heal(line.victim)
        line.heal = time.time()
    elif name == "S6":
        time.sleep(5.0)
        stopped, back = cluster.restart_controller(pause=5.0)
        line.fault, line.heal = stopped, back
        line.unknown.append((stopped + 1.0, back - 1.0))
    elif name == "S7":
        line.victim, line.fault = "node2", time.time()
        for _ in range(10):
            cluster.cut("node2", down=True)
            time.sleep(5.0)
            cluster.heal("node2")
            time.sleep(5.0)
        line.heal = time.time()


def _pick_victim(watch: Watch, want: int) -> str:
    """node3 once it runs ``want`` jobs (else the node running most, after 5 s)."""
    limit = time.monotonic() + 5
    while True:
        per_node: dict[str, int] = defaultdict(int)
        now = time.time()
        for states in watch.job_states.values():
            t, state, nodes, _ = states[-1]
            if state == "RUNNING" and now - t < 2.0:
                for node in nodes.split(","):
                    per_node[node] += 1
        if per_node.get("node3", 0) >= want:
            return "node3"
        if time.monotonic() > limit and per_node:
            return max(sorted(per_node), key=lambda n: per_node[n])
        time.sleep(0.3)


def _crashed_stop(executions: list[Execution], crashed: dict[str, float]) -> list[Execution]:
    """A run on a crashed node that wrote no ``end`` and outlived the crash by its markers (its
    last beat is up to a second stale) stopped at the crash."""
    out = []
    for e in executions:
        when = crashed.get(e.node)
        if when is not None and not e.ended and e.start < when < e.stop:
            e = Execution(e.job, e.restart, e.node, e.gpus, e.start, when, False)
        out.append(e)
    return out


def _victims(executions: list[Execution], line: Timeline) -> set[int]:
    """Jobs running on the victim node when the fault came."""
    return {
        e.job
        for e in executions
        if line.victim and e.node == line.victim and e.start < line.fault < e.stop
    }


def _back_in_service(watch: Watch, line: Timeline) -> float | None:
    """When ``sinfo`` last showed the victim DOWN after the heal (its re-registration)."""
    for _start, end in watch.down_windows().get(line.victim, []):
        if end >= line.heal and math.isfinite(end):
            return end
    return None


def _cut_off_killed(executions: list[Execution], line: Timeline, victims: set[int]) -> list[str]:
    """S2: each cut-off instance ran on through the partition and was killed by Slurm within
    2 × SlurmdTimeout of its node's return to service (the node's re-registration, when Slurm
    learns what still runs there), before writing ``end``."""
    bad = []
    for e in executions:
        if e.job not in victims or e.node != line.victim or e.start >= line.fault:
            continue
        if e.ended:
            bad.append(f"job {e.job}: the cut-off instance on {e.node} wrote 'end'")
        elif e.stop < line.heal:
            bad.append(f"job {e.job}: the cut-off instance stopped before the heal")
        elif e.stop > line.back + 2 * SLURMD_TIMEOUT:
            bad.append(
                f"job {e.job}: the cut-off instance on {e.node} was not killed within "
                f"{2 * SLURMD_TIMEOUT:g} s of its node's return (stopped "
                f"{e.stop - line.back:.1f} s after)"
            )
    return bad


def _requeue_delays(
    victims: set[int], watch: Watch, line: Timeline
) -> dict[int, tuple[float | None, float | None]]:
    """Per victim: seconds from the fault to pending again, and from eligible to running on
    another node (None: never seen)."""
    out: dict[int, tuple[float | None, float | None]] = {}
    for job in sorted(victims):
        pending = watch.first(job, line.fault, "PENDING")
        eligible = _eligible(watch, job, pending) if pending is not None else None
        running = (
            watch.first(job, eligible, "RUNNING", not_on=line.victim)
            if eligible is not None
            else None
        )
        out[job] = (
            None if pending is None else pending - line.fault,
            None if running is None or eligible is None else running - eligible,
        )
    return out


def _eligible(watch: Watch, job: int, pending: float) -> float | None:
    """When the requeued job could run again: pending without Slurm's requeue delay
    (reason ``BeginTime``)."""
    for t, state, _, reason in watch.job_states.get(job, []):
        if t >= pending and state == "PENDING" and reason != "BeginTime":
            return t
        if t >= pending and state == "RUNNING":
            return t
    return None


def _requeued_in_time(victims: set[int], watch: Watch, line: Timeline) -> list[str]:
    bad = []
    for job, (pending, running) in _requeue_delays(victims, watch, line).items():
        if pending is None or pending > PENDING_WITHIN:
            bad.append(
                f"job {job}: pending again {pending} s after the fault (≤ {PENDING_WITHIN:g})"
            )
        elif running is None or running > RUNNING_WITHIN:
            bad.append(
                f"job {job}: running on a healthy node {running} s after it was eligible "
                f"(≤ {RUNNING_WITHIN:g})"
            )
    return bad
