"""``serve check`` for a ``serve kubernetes`` journal: each cycle's starts re-derived from the
journal alone, by the same view builder and decision code the live scheduler ran.

At every cycle that journaled a start (or a bind that failed), the records before it give the
nodes (the ``serve`` record: names, GPUs, models, CPU, memory; all Ready), the runs open then
(``start`` … ``finish`` / ``preempt``: their pods on their nodes and GPU devices, begun when the
journal says), the jobs queued with their pods' requests, submit times, estimates and the nodes
they may use (``arrive``; gone on ``start`` and ``reject``), and the policy's state. From these
the pods are rebuilt as the API server would have shown them, :func:`.view.build_view` builds
the snapshot and :func:`.decide.decide` decides. Every journaled start must be one it makes there
on the same nodes; in a cycle that ran to its end, every start it makes must be journaled (as a
start, a skip or an error). What the journal cannot say is assumed: no other scheduler's pods,
every node Ready, no queued pod deleted.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.model.cluster import GPU_MILLI
from schedlab.model.snapshot import Start
from schedlab.policies.api import SERVE
from schedlab.policies.wiring import build
from schedlab.serve.journal import read_journal
from schedlab.serve.kubernetes.decide import decide
from schedlab.serve.kubernetes.objects import NodeInfo, PodInfo, Requirement
from schedlab.serve.kubernetes.server import run_start
from schedlab.serve.kubernetes.view import build_view
from schedlab.serve.rederive import Mismatch, Rederived
from schedlab.serve.serve_record import policy_choice
from schedlab.serve.topology import ServeTopology

Record = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"


def nodes_of(serve: Record) -> list[NodeInfo]:
    """The nodes a ``serve`` record describes, all Ready."""
    try:
        names = [str(n) for n in serve["nodes"]]
        gpus = [int(g) for g in serve["node_gpus"]]
        models = list(serve.get("node_models") or [""] * len(names))
        cpus = [int(c) for c in serve["node_cpu_milli"]]
        memory = [int(m) for m in serve["node_memory_mib"]]
    except (KeyError, TypeError, ValueError):
        raise InputError("the journal's 'serve' record does not describe the nodes") from None
    return [
        NodeInfo(
            name=names[k],
            gpus=gpus[k],
            model=str(models[k] or "GPU"),
            cpu_milli=cpus[k],
            memory_mib=memory[k],
            labels={HOSTNAME: names[k]},
            taints=(),
            unschedulable=False,
            ready=True,
        )
        for k in range(len(names))
    ]


def _pod(key: str, facts: Record, group: str, members: int) -> PodInfo:
    ns, name = key.split("/", 1)
    milli = int(facts.get("gpu_milli") or GPU_MILLI)
    gpus = int(facts.get("gpus_per_pod", facts.get("gpus", 0)) or 0)
    allowed = facts.get("allowed")
    affinity = (
        ((Requirement(HOSTNAME, "In", tuple(str(n) for n in allowed)),),)
        if isinstance(allowed, list)
        else ()
    )
    estimate = facts.get("estimate")
    return PodInfo(
        uid="",
        namespace=ns,
        name=name,
        scheduler="",
        node="",
        phase="Pending",
        deleting=False,
        created=float(facts.get("submit_time") or 0.0),
        started=0.0,
        cpu_milli=int(facts.get("cpu_milli") or 0),
        memory_mib=int(facts.get("memory_mib") or 0),
        gpus=gpus,
        gpu_milli=milli if gpus else 0,
        priority=int(facts.get("priority") or 0),
        group=group,
        min_member=members if group else 0,
        queue=str(facts.get("queue") or ns),
        checkpoint=bool(facts.get("checkpoint")),
        estimate=float(estimate) if isinstance(estimate, int | float) else math.inf,
        node_selector=(),
        affinity=affinity,
        tolerations=(),
        devices=(),
        scheduled_reason="",
        scheduled_message="",
    )


def _group(job: str) -> str:
    """The PodGroup of a job key (``ns/podgroup/NAME`` or its ``/rest``), "" for one pod."""
    parts = job.split("/")
    return parts[2] if len(parts) >= 3 and parts[1] == "podgroup" else ""


@dataclass
class _Walk:
    result: Rederived = field(default_factory=Rederived)
    serve: Record | None = None
    process: int = 0
    facts: dict[str, Record] = field(default_factory=dict)  # pod key → its arrive record
    members: dict[str, int] = field(default_factory=dict)  # job key → pods in its arrive
    queued: dict[str, str] = field(default_factory=dict)  # pod key → job key
    running: dict[str, tuple[Record, int]] = field(default_factory=dict)  # pod → (start, index)
    runs: dict[str, list[str]] = field(default_factory=dict)  # job key → its running pods
    state: Record = field(default_factory=dict)
    group: tuple[int, int] | None = None
    group_state: Record = field(default_factory=dict)
    derived: dict[str, list[str]] | None = None
    answered: set[str] = field(default_factory=set)
    time: float = 0.0
    network: ServeTopology | None = None  # the serve record's, read once
    credit: dict[str, tuple[float, float]] = field(default_factory=dict)

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
            self.close(complete=False)
            self.serve, self.process = r, self.process + 1
            self.network = None
            self.queued.clear()  # a new process journals its queue again
            return
        if action == "stop":
            return
        key = (self.process, int(r.get("cycle") or 0))
        if key != self.group:
            self.close(complete=False)
            self.group, self.group_state, self.derived = key, dict(self.state), None
            self.answered = set()
        self.time = float(r.get("time") or self.time)
        job = r.get("job")
        if action == "policy-state":
            if r.get("policy") == self.identity():
                self.state = dict(r.get("state") or {})
            return
        if action == "cycle":
            self.close(complete=True)
            return
        if not isinstance(job, str):
            return
        live = (action in ("start", "skip") and not r.get("recovered")) or (
            action == "error" and r.get("attempted") == "start"
        )
        if live and self.derived is None:
            self.derive()
        if live:
            self.answered.add(job)
        if action == "arrive":
            pods = [str(p) for p in r.get("pods") or [job]]
            self.members[job] = len(pods)
            for p in pods:
                self.facts[p] = r
                self.queued[p] = job
        elif action == "start":
            pods = [str(p) for p in r.get("bound") or r.get("pods") or []]
            every = [str(p) for p in r.get("pods") or []]
            for p in pods:
                self.queued.pop(p, None)
                self.running[p] = (r, every.index(p) if p in every else 0)
            self.runs[job] = pods
            if not r.get("recovered"):
                self.compare(job, [str(n) for n in r.get("nodes") or ()], r)
        elif action in ("finish", "preempt"):
            if action == "preempt" and "attained" in r:
                a, e = self.credit.get(job, (0.0, 0.0))
                self.credit[job] = (a + float(r["attained"]), e + float(r.get("executed", 0.0)))
            ended = [str(p) for p in r.get("pods") or []] if r.get("partial") else None
            pods = self.runs.pop(job, [])
            for p in pods if ended is None else ended:
                self.running.pop(p, None)
            if ended is not None:
                self.runs[job] = [p for p in pods if p not in ended]
        elif action == "reject":
            for p in [p for p, j in self.queued.items() if j == job or p == job]:
                del self.queued[p]

    def pods(self) -> list[PodInfo]:
        out = []
        for p, job in self.queued.items():
            members = self.members.get(job, 1)
            out.append(_pod(p, self.facts.get(p, {}), _group(job), members))
        for p, (start, k) in self.running.items():
            job = str(start["job"])
            facts = self.facts.get(p) or {
                "gpus_per_pod": len((start.get("gpu_idx") or [[]])[k]),
                "gpu_milli": start.get("gpu_milli"),
                "submit_time": start.get("submit_time"),
            }
            base = _pod(p, facts, _group(job), len(start.get("pods") or [p]))
            nodes, devices = start.get("nodes") or [], start.get("gpu_idx") or []
            out.append(
                dataclasses.replace(
                    base,
                    node=str(nodes[k]) if k < len(nodes) else "",
                    phase="Running",
                    started=run_start(start),
                    devices=tuple(int(g) for g in devices[k]) if k < len(devices) else (),
                )
            )
        return out

    def derive(self) -> None:
        if self.serve is None:
            raise InputError("the journal has decisions before any 'serve' record")
        nodes = nodes_of(self.serve)
        view = build_view(self.pods(), nodes, self.time, "", credit=self.credit)
        self.result.cycles += 1
        policies = build(SERVE, policy_choice(self.serve))
        if self.network is None:
            self.network = ServeTopology.from_record(self.serve)
        topology = (
            self.network.for_nodes(view.nodes, view.cluster) if self.network.available else None
        )
        decided = decide(
            policies, view, int(self.serve.get("seed") or 0), topology, self.group_state
        )
        names = [n.name for n in view.nodes]
        self.derived = {}
        for d in decided.decisions:
            if isinstance(d, Start):
                self.derived[view.jobs[d.job].key] = [names[n] for n, _ in d.allocation]
        for share in decided.shares:
            self.derived[share.pod.key] = [names[share.node]]

    def compare(self, job: str, live: list[str], record: Record) -> None:
        assert self.derived is not None and self.group is not None
        self.result.starts += 1
        derived = self.derived.get(job)
        if derived != live:
            self.result.mismatches.append(Mismatch(*self.group, job, live, derived))  # type: ignore[arg-type]

    def close(self, complete: bool) -> None:
        if complete and self.derived is not None and self.group is not None:
            for job, nodes in self.derived.items():
                if job not in self.answered:
                    self.result.mismatches.append(Mismatch(*self.group, job, None, nodes))  # type: ignore[arg-type]
        self.derived = None
        self.group = None


def is_kubernetes_journal(path: Path) -> bool:
    """Whether the journal's first ``serve`` record is one of ``serve kubernetes``; an
    extender's journal is refused (kube-scheduler made its decisions: none to re-derive)."""
    for r in read_journal(path):
        if r["action"] == "serve":
            if r.get("engine") == "kubernetes-extender":
                raise InputError(
                    "a journal of 'serve kubernetes --extender': kube-scheduler chose the nodes, "
                    "so there is no decision of schedlab's to re-derive",
                    path=str(path),
                )
            return r.get("engine") == "kubernetes"
    return False


def check(path: Path) -> Rederived:
    walk = _Walk()
    for r in read_journal(path):
        walk.feed(r)
    walk.close(complete=False)
    return walk.result
