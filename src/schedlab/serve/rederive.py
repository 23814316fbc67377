"""Each start of a live run re-derived from its journal: the same policy, given the cluster as
the journal says the scheduler saw it at that cycle, must choose the same nodes.

A replay of a whole live run (``trace import-slurm --timing observed`` + ``schedlab replay``)
meets the same decision points only while the scheduler ran without a break: a SIGKILL in the
middle of a cycle leaves part of that cycle's starts undone (the restart does them later, on a
cluster that has moved on), and runs that ended while no scheduler watched are seen ended only
at the restart. So what is compared is each decision, not the run: for every cycle that
journaled a start, the journal's records before that cycle's first decision give

* the nodes (the ``serve`` record: names, GPUs, models, CPUs, memory; all up),
* the jobs running or launching, each on the nodes (and GPU indices) of its start — a
  ``start`` opens a run, ``finish``, ``requeued``, ``preempt`` and ``hold`` close it, and a
  restarted scheduler journals the runs that ended while none ran (``finish`` with
  ``"recovered": true``) and those it found started (``start`` with ``"recovered": true``),
* the jobs queued, with their shapes, submit times, time limits and array task ids (``arrive``;
  gone from the queue on ``start``, ``reject`` and ``wait``, back on ``preempt``, ``hold`` and
  ``requeued``),
* the policy's state (the last ``policy-state`` record of the same policy before the cycle),

from which :func:`schedlab.serve.live.build_view` builds the snapshot serve builds, and the
policy (built for serve from the ``serve`` record, started with the same seed) decides. Every
start the live cycle journaled must be one the policy makes there, on the same nodes; and in a
cycle that ran to its end (its ``cycle`` record), every start the policy makes must have been
journaled (as a start, or a ``skip`` / ``error`` saying why Slurm did not get it). Deterministic:
it reads only the journal. A network placement gets the network the ``serve`` record keeps
(``topology_spec`` or ``topology_toml``), without link loads, as serve gives it. It assumes what
the journal cannot say: no other owner's jobs on the nodes and every node up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import InputError
from schedlab.model.snapshot import Start
from schedlab.perf.models import TraceDuration
from schedlab.policies.api import SERVE
from schedlab.policies.wiring import build
from schedlab.serve.journal import read_journal
from schedlab.serve.live import build_view
from schedlab.serve.serve_record import policy_choice, refuse_tenancy
from schedlab.serve.slurm_state import MARK_QUEUED, MARK_RELEASED, JobInfo, NodeInfo
from schedlab.serve.topology import ServeTopology

Record = dict[str, Any]
#: Records that end a run (the job is queued again unless it finished).
ENDS_RUN = ("finish", "requeued", "preempt", "hold")
#: Records of a cycle's decisions (the policy's output as applied).
DECIDED = ("start", "preempt", "skip")


@dataclass(frozen=True)
class Mismatch:
    """A decision the policy and the live cycle disagree on (``nodes``: None = not started)."""

    process: int  # which ``serve`` record (counted from 1)
    cycle: int
    job: int
    live: list[str] | None
    derived: list[str] | None


@dataclass
class Rederived:
    """What :func:`rederive` compared."""

    cycles: int = 0  # cycles re-derived
    starts: int = 0  # journaled starts compared
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        return not self.mismatches


@dataclass
class _Job:
    facts: Record  # the last ``arrive`` record
    run: Record | None = None  # the ``start`` record of the open run


def nodes_from_record(serve: Record) -> list[NodeInfo]:
    """The nodes a journal's ``serve`` record describes (all up, as the journal cannot say
    otherwise)."""
    try:
        names = [str(n) for n in serve["nodes"]]
        gpus = [int(g) for g in serve["node_gpus"]]
    except (KeyError, TypeError, ValueError):
        raise InputError("the journal's 'serve' record does not describe the nodes") from None
    n = len(names)
    models = list(serve.get("node_models") or [""] * n)
    cpus = list(serve.get("node_cpus") or [0] * n)
    memory = list(serve.get("node_memory_mib") or [0] * n)
    return [
        NodeInfo(
            name=names[k],
            gpus=gpus[k],
            gpu_type=str(models[k] or "") if models[k] != "GPU" else "",
            state="IDLE",
            flags=(),
            cpus=int(cpus[k]),
            memory_mib=int(memory[k]),
            partitions=(str(serve.get("partition") or ""),),
        )
        for k in range(n)
    ]


def _info(job_id: int, facts: Record, run: Record | None) -> JobInfo:
    """A job as ``squeue`` would have shown it: queued (held, marked) or running on its start."""
    per_node = int(facts.get("gpus_per_node") or 0)
    gpus = int(facts.get("gpus", 0) if run is None else run.get("gpus", facts.get("gpus", 0)))
    limit = facts.get("time_limit")
    nodes: tuple[str, ...] = ()
    idx: tuple[tuple[int, ...], ...] = ()
    if run is not None:
        nodes = tuple(str(n) for n in run.get("nodes") or ())
        raw = run.get("gpu_idx")
        if isinstance(raw, list) and len(raw) == len(nodes):
            idx = tuple(tuple(int(g) for g in gs) for gs in raw)
    return JobInfo(
        job_id=job_id,
        name=str(facts.get("name") or ""),
        user=str(facts.get("user") or ""),
        partition="",
        state="RUNNING" if run is not None else "PENDING",
        reason="None" if run is not None else "JobHeldAdmin",
        priority=1.0 if run is not None else 0.0,
        gpus_per_node=per_node,
        gpus_per_job=0 if per_node else gpus,
        gpu_type=str(facts.get("gpu_type") or ""),
        node_count=int(facts.get("num_nodes") or 1) if per_node else max(len(nodes), 1),
        nodes=nodes,
        gpu_idx=idx,
        required_nodes=nodes,
        submit_time=float(facts.get("submit_time") or 0.0),
        start_time=float(run["time"]) if run is not None else 0.0,
        end_time=0.0,
        time_limit=float(limit) if isinstance(limit, int | float) else math.inf,
        restart_count=0,
        comment="checkpoint" if facts.get("checkpoint") else "",
        admin_comment=MARK_RELEASED if run is not None else MARK_QUEUED,
        array_job_id=int(facts.get("array_job") or 0),
        array_task_id=int(facts["array_task"]) if facts.get("array_task") is not None else None,
        exclusive=bool(facts.get("exclusive")),
    )


class _Replayer:
    """Walks a journal, keeping the state a cycle sees, and re-derives each cycle's starts."""

    def __init__(self) -> None:
        self.result = Rederived()
        self.jobs: dict[int, _Job] = {}
        self.queued: dict[int, None] = {}
        self.serve: Record | None = None
        self.network: ServeTopology | None = None  # the serve record's, read on first use
        self.process = 0
        self.state: Record = {}  # the policy's, as journaled
        self.group: tuple[int, int] | None = None
        self.group_state: Record = {}
        self.derived: dict[int, list[str]] | None = None
        self.answered: set[int] = set()  # jobs the live cycle started, skipped or failed
        self.time = 0.0

    def identity(self) -> Record:
        s = self.serve or {}
        return {
            "policy": s.get("policy"),
            "placement": s.get("placement"),
            "params": dict(s.get("params") or {}),
            "seed": s.get("seed", 0),
        }

    def feed(self, r: Record) -> None:
        action = r["action"]
        if action == "serve":
            self.close_group(complete=False)
            self.serve, self.process = r, self.process + 1
            self.network = None
            # A new process journals every queued job again (``arrive``) in its first cycle.
            self.queued.clear()
            return
        if action == "stop":
            return
        key = (self.process, int(r.get("cycle") or 0))
        if key != self.group:
            self.close_group(complete=False)
            self.group, self.group_state, self.derived = key, dict(self.state), None
            self.answered = set()
        self.time = float(r.get("time") or self.time)
        job = r.get("job")
        if action == "policy-state":
            if r.get("policy") == self.identity():
                self.state = dict(r.get("state") or {})
            return
        if action == "cycle":
            self.close_group(complete=True)
            return
        if job is None:
            return
        job = int(job)
        live_decision = action in DECIDED and not r.get("recovered")
        if action == "error" and r.get("attempted") in ("start", "preempt"):
            live_decision = True
        if live_decision and self.derived is None:
            self.derive()
        if live_decision:
            self.answered.add(job)
        entry = self.jobs.setdefault(job, _Job({}))
        if action == "arrive":
            entry.facts = r
            entry.run = None
            self.queued[job] = None
        elif action == "start":
            entry.run = r
            self.queued.pop(job, None)
            if not r.get("recovered"):
                self.compare(job, [str(n) for n in r.get("nodes") or ()])
        elif action in ENDS_RUN:
            entry.run = None
            if action != "finish":
                self.queued[job] = None
        elif action in ("reject", "wait"):
            self.queued.pop(job, None)

    def derive(self) -> None:
        """The policy's starts at this cycle, from the state the records so far describe."""
        if self.serve is None:
            raise InputError("the journal has decisions before any 'serve' record")
        s = self.serve
        refuse_tenancy(s)
        infos = [_info(j, e.facts, e.run) for j, e in self.jobs.items() if e.run is not None]
        infos += [_info(j, self.jobs[j].facts, None) for j in self.queued]
        nodes = nodes_from_record(s)
        view = build_view(sorted(infos, key=lambda i: i.job_id), nodes, self.time)
        self.derived = {}
        self.result.cycles += 1
        if not view.snapshot.pending_set:
            return
        policies = build(SERVE, policy_choice(s))
        if self.network is None:  # one topology per serve record, not one per cycle
            self.network = ServeTopology.from_record(s)
        policies.start(
            view.cluster,
            np.random.default_rng(int(s.get("seed") or 0)),
            jobs=view.snapshot.jobs,
            perf=TraceDuration(),
            topology=self.network.for_nodes(nodes),
        )
        policies.import_state(self.group_state)
        assert policies.scheduler is not None
        names = view.cluster.names
        for d in policies.scheduler.decide(view.snapshot):
            if isinstance(d, Start):
                job_id = view.infos[d.job].job_id
                self.derived[job_id] = [str(names[n]) for n, _ in d.allocation]

    def compare(self, job: int, live: list[str]) -> None:
        assert self.derived is not None and self.group is not None
        self.result.starts += 1
        derived = self.derived.get(job)
        if derived != live:
            self.result.mismatches.append(Mismatch(*self.group, job, live, derived))

    def close_group(self, complete: bool) -> None:
        """End of a cycle's records: in a cycle that ran to its end, every start the policy
        made must have been journaled."""
        if complete and self.derived is not None and self.group is not None:
            for job, nodes in self.derived.items():
                if job not in self.answered:
                    self.result.mismatches.append(Mismatch(*self.group, job, None, nodes))
        self.derived = None
        self.group = None


def rederive(path: Path) -> Rederived:
    """Re-derive every journaled start of the journal at ``path`` (see the module docstring)."""
    replayer = _Replayer()
    for r in read_journal(path):
        replayer.feed(r)
    replayer.close_group(complete=False)
    return replayer.result
