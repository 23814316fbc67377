"""S1–S8 against the fake Slurm: fast, deterministic, on every commit.

:class:`SimSlurm` is :class:`~schedlab.serve.fake.FakeSlurm` plus what Slurm itself does over
time: it starts released jobs on their pinned nodes when the GPUs are free, ends them after their
run time, declares a node DOWN ``SLURMD_TIMEOUT`` seconds after it stops answering and requeues
the jobs there (NODE_FAIL: pending again, restart count + 1, its old ReqNodeList kept), and kills
a cut-off instance once its node answers again. Faults are what the scheduler sees of that world:
commands that fail or time out, reads that fail, a controller that is away, a scheduler process
killed mid-cycle. Every job's executions are recorded as its markers would be; the scenario ends
with the oracle of :mod:`.invariants`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab.serve.client import SlurmError
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.hostlist import expand_hostlist
from schedlab.testing.faultinject import invariants
from schedlab.testing.faultinject.invariants import Execution

SLURMD_TIMEOUT = 10.0
NODES, GPUS = 4, 8
INTERVAL = 1.0
SCENARIOS = ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8")


class Crash(BaseException):
    """The scheduler process dies here (S5): nothing of the cycle after this point happens."""


@dataclass
class _Run:
    job: int
    restart: int
    node: str
    gpus: tuple[int, ...]
    start: float
    until: float  # when it will end on its own
    dead_at: float | None = None  # its node's slurmd was killed with it at this time


class SimSlurm(FakeSlurm):
    """See the module docstring (built with :func:`world`)."""

    def __init__(self, nodes: Sequence[dict], jobs: Sequence[dict]) -> None:
        super().__init__(nodes, jobs)
        self.now = 0.0
        self.run_for: dict[int, float] = {}
        self.runs: dict[int, list[_Run]] = {}  # open executions per job
        self.done: list[Execution] = []
        self.silent_since: dict[str, float] = {}  # node → unreachable since
        self.cut_off: dict[int, float] = {}  # job → when its cut-off instance was killed
        self.down_windows: dict[str, list[tuple[float, float]]] = {}
        self.restarted_at: dict[int, list[float]] = {}
        self.victim = ""
        # faults the scheduler sees
        self.reads_fail = False
        self.commands_fail = False
        self.crash_in = -1  # scontrol calls until the scheduler dies (−1: never)
        self.unknown: list[tuple[float, float]] = []  # spans the scheduler could not read

    # -- what the scheduler sees -------------------------------------------------------------
    def _maybe_crash(self) -> None:
        if self.crash_in == 0:
            self.crash_in = -1
            raise Crash
        if self.crash_in > 0:
            self.crash_in -= 1

    def squeue(self) -> dict[str, Any]:
        self._maybe_crash()
        if self.reads_fail:
            raise SlurmError("'squeue --json' took more than 30 s")
        return super().squeue()

    def sinfo(self) -> dict[str, Any]:
        if self.reads_fail:
            raise SlurmError("'sinfo --json' failed (exit 1): Unable to contact slurm controller")
        return super().sinfo()

    def scontrol(self, args: Sequence[str]) -> None:
        self._maybe_crash()
        if self.commands_fail:
            raise SlurmError(f"'scontrol {' '.join(args)}' failed (exit 1): Socket timed out")
        super().scontrol(args)

    # -- what Slurm does ---------------------------------------------------------------------
    def step(self, now: float) -> None:
        self.now = now
        for job_id, runs in list(self.runs.items()):
            for run in list(runs):
                if run.until <= now and run.node not in self.silent_since:
                    self._stop(run, run.until, ended=True)
                    if self.jobs[job_id]["job_state"] == "RUNNING" and not self.runs.get(job_id):
                        self.jobs[job_id].update(job_state="COMPLETED", gres_detail=[], nodes="")
        for node, since in list(self.silent_since.items()):
            if now - since >= SLURMD_TIMEOUT and self.nodes[node]["state"] != "down":
                self._node_down(node, since + SLURMD_TIMEOUT)
        self._start_released()

    def _stop(self, run: _Run, when: float, ended: bool) -> None:
        self.runs[run.job].remove(run)
        self.done.append(
            Execution(run.job, run.restart, run.node, run.gpus, run.start, when, ended)
        )

    def _node_down(self, node: str, when: float) -> None:
        """SlurmdTimeout passed: the node is DOWN; its jobs are NODE_FAIL and requeued."""
        self.nodes[node]["state"] = "down"
        self.down_windows.setdefault(node, []).append((when, float("inf")))
        for job_id, runs in self.runs.items():
            for run in list(runs):
                if run.node != node or job_id in self.cut_off:
                    continue
                job = self.jobs[job_id]
                job.update(
                    job_state="PENDING",
                    nodes="",
                    gres_detail=[],
                    restart_cnt=int(job["restart_cnt"]) + 1,
                    state_reason="BeginTime",
                )
                self.restarted_at.setdefault(job_id, []).append(when)
                if run.dead_at is not None:  # it died with its slurmd: its markers stop there
                    self._stop(run, run.dead_at, ended=False)
                else:  # it runs on, cut off: Slurm kills it when the node answers
                    self.cut_off[job_id] = float("inf")

    def silence(self, node: str, killed: bool) -> None:
        """The node stops answering (slurmd killed, or a partition); ``killed``: its job steps
        die with it, else they run on cut off until the node is back."""
        self.silent_since[node] = self.now
        if killed:
            for runs in self.runs.values():
                for run in runs:
                    if run.node == node:
                        run.dead_at, run.until = self.now, float("inf")

    def answer(self, node: str) -> None:
        """The node answers again: cut-off instances are killed (before their 'end'), and the
        node returns to service (ReturnToService=2)."""
        self.silent_since.pop(node, None)
        for job_id, runs in self.runs.items():
            for run in list(runs):
                if run.node == node and job_id in self.cut_off:
                    self._stop(run, self.now, ended=False)
                    self.cut_off[job_id] = self.now
        if self.nodes[node]["state"] == "down":
            self.nodes[node]["state"] = "idle"
            start, _ = self.down_windows[node][-1]
            self.down_windows[node][-1] = (start, self.now)

    def _used(self) -> dict[str, set[int]]:
        used: dict[str, set[int]] = {}
        for runs in self.runs.values():
            for run in runs:
                if run.job not in self.cut_off or self.cut_off[run.job] != float("inf"):
                    used.setdefault(run.node, set()).update(run.gpus)
        return used

    def _start_released(self) -> None:
        for job_id, job in sorted(self.jobs.items()):
            if job["job_state"] != "PENDING" or job["priority"] == 0 or not job["required_nodes"]:
                continue
            nodes = expand_hostlist(job["required_nodes"])
            if any(self.nodes[n]["state"] == "down" for n in nodes):
                continue
            want = int(str(job["tres_per_node"]).rsplit(":", 1)[1])
            used = self._used()
            free = {n: [g for g in range(GPUS) if g not in used.get(n, set())] for n in nodes}
            if any(len(free[n]) < want for n in nodes):
                continue
            runs = []
            for n in nodes:
                gpus = tuple(free[n][:want])
                runs.append(_Run(job_id, int(job["restart_cnt"]), n, gpus, self.now,
                                 self.now + self.run_for[job_id]))  # fmt: skip
            self.runs.setdefault(job_id, []).extend(runs)
            job.update(
                job_state="RUNNING",
                nodes=",".join(nodes),
                gres_detail=[f"gpu:{want}(IDX:{','.join(map(str, r.gpus))})" for r in runs],
                start_time=int(self.now),
                state_reason="None",
            )

    def finish_open(self, end: float) -> None:
        for runs in self.runs.values():
            for run in list(runs):
                self._stop(run, float("inf"), ended=False)


def world(seed: int, jobs: int = 16) -> SimSlurm:
    """4 nodes × 8 GPUs and ``jobs`` held jobs of 1–8 GPUs that run 20–60 s (S2: ≥ 180 s)."""
    rng = random.Random(seed)
    nodes = [fake_node(f"node{i}", GPUS) for i in range(1, NODES + 1)]
    sizes = [rng.choice([1, 2, 4, 8]) for _ in range(jobs)]
    sim = SimSlurm(nodes, [fake_job(100 + k, g, float(k)) for k, g in enumerate(sizes)])
    sim.run_for = {100 + k: float(rng.randint(20, 60)) for k in range(jobs)}
    return sim


@dataclass
class Result:
    scenario: str
    violations: list[str]
    cycles: int
    restarts: int
    completed: int
    journal: list[dict]
    crashes: int = 0  # times the scheduler process died and was restarted (S5)


def run_scenario(name: str, tmp: Path, seed: int = 0, deadline: float = 900.0) -> Result:
    """Run scenario ``name`` (S1–S8) with serve's fifo policy against the simulated Slurm."""
    from schedlab.serve.journal import Journal, read_journal
    from schedlab.serve.loop import ServeConfig, Server

    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r} (known: {', '.join(SCENARIOS)})")
    rng = random.Random(seed * 31 + int(name[1]))
    sim = world(seed)
    if name == "S2":
        for job in sim.run_for:
            sim.run_for[job] = float(rng.randint(180, 240))
    journal_path = tmp / f"{name}-{seed}.jsonl"

    def server() -> Server:
        return Server(sim, ServeConfig(policy="fifo", interval=INTERVAL), Journal(journal_path),
                      clock=lambda: sim.now, sleep=lambda s: None)  # fmt: skip

    srv = server()
    crashes = sorted(rng.sample(range(2, 60), 10)) if name == "S5" else []
    t, cycles, crashed = 0.0, 0, 0
    while t <= deadline:
        sim.step(t)
        _fault(name, sim, t, rng)
        if crashes and cycles == crashes[0]:
            crashes.pop(0)
            sim.crash_in = rng.randint(0, 6)  # a read or a command of this cycle
        try:
            srv.cycle()
        except Crash:
            crashed += 1
            srv = server()  # the process is restarted with the same journal
        cycles += 1
        if all(j["job_state"] == "COMPLETED" for j in sim.jobs.values()):
            break
        t += INTERVAL
    sim.finish_open(t)
    executions = sim.done
    final = {job: j["job_state"] for job, j in sim.jobs.items()}
    restarts = {job: int(j["restart_cnt"]) for job, j in sim.jobs.items()}
    records = list(read_journal(journal_path))
    violations = (
        invariants.nothing_lost(sim.jobs, final)
        + invariants.nothing_doubled(executions, restarts, sim.cut_off)
        + invariants.capacity(_counted(executions, sim.cut_off), {n: GPUS for n in sim.nodes})
        + invariants.no_action_on_unknown_state(records, sim.unknown)
        + invariants.no_double_release(records, sim.restarted_at)
        + invariants.never_on_a_down_node(records, sim.down_windows)
    )
    completed = sum(s == "COMPLETED" for s in final.values())
    return Result(name, violations, cycles, sum(restarts.values()), completed, records, crashed)


def _counted(executions: list[Execution], cut_off: dict[int, float]) -> list[Execution]:
    """Executions that hold GPUs as Slurm counts them: a cut-off instance on a partitioned node
    is not Slurm's any more (its GPUs on that node are lost with the node until the kill)."""
    return [e for e in executions if e.ended or e.job not in cut_off or e.stop > cut_off[e.job]]


def _fault(name: str, sim: SimSlurm, t: float, rng: random.Random) -> None:
    """The scenario's fault at time ``t`` (see the spec's §5.3 table)."""
    busy = sorted({run.node for runs in sim.runs.values() for run in runs})
    if name in ("S1", "S2") and t == 40.0 and busy:
        victim = "node3" if "node3" in busy else busy[0]
        sim.silence(victim, killed=name == "S1")
        sim.victim = victim
    if name == "S1" and t == 120.0:
        sim.answer(sim.victim)
    if name == "S2" and t == 100.0:  # the partition heals after 60 s
        sim.answer(sim.victim)
    if name in ("S3", "S6"):  # scheduler ↔ ctld cut (S3) or the controller restarting (S6)
        window = (30.0, 60.0) if name == "S3" else (50.0, 58.0)
        away = window[0] <= t < window[1]
        sim.reads_fail = sim.commands_fail = away
        if away and (not sim.unknown or sim.unknown[-1][1] < t - INTERVAL):
            sim.unknown.append((t, t))
        elif away:
            sim.unknown[-1] = (sim.unknown[-1][0], t)
    if name == "S4":  # a slow link: one command in three times out
        sim.commands_fail = rng.random() < 1 / 3
    if name == "S7" and 20.0 <= t < 120.0:  # node2 flaps 5 s down / 5 s up
        down = int((t - 20.0) // 5) % 2 == 0
        if down and sim.nodes["node2"]["state"] != "down":
            sim.nodes["node2"]["state"] = "down"
            sim.down_windows.setdefault("node2", []).append((t, t + 5.0))
        elif not down:
            sim.nodes["node2"]["state"] = "idle"
    if name == "S8":  # truncated or reset squeue answers: the read fails, never an empty queue
        bad = rng.random() < 0.3
        sim.reads_fail = bad
        if bad:
            sim.unknown.append((t, t))
