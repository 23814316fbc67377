"""The serve loop with Kubernetes as its engine: read the caches, build the snapshot, ask the
policy, bind, journal — at every cycle, driven by watch events.

The same policy objects, built and started by the same wiring as ``serve slurm`` and replay
(:func:`schedlab.policies.wiring.build` for the ``serve`` engine), the same journal and record
kinds (``serve``, ``arrive``, ``start``, ``preempt``, ``finish``, ``policy-state``, ``cycle``,
``error``, ``warning``, ``stop``), the same repeat rule (a lasting error or warning is journaled
when it starts), the same preemption protections (``--min-runtime``; ``--grace`` is the
evicted pods' termination grace period, Kubernetes' own SIGTERM-then-SIGKILL) and the same
``CycleReport`` for ``/metrics``. What is Kubernetes' own: where state comes from (watch-fed
caches of pods, nodes and PodGroups, :mod:`.cache`), how decisions are carried out (bindings and
evictions, :mod:`.binder`), and who may act (a Lease, :mod:`.lease`).

Nothing is kept between cycles that is not also in the API server or the journal: a pod bound is
never pending again, so a restarted scheduler never binds it twice; a run the journal left open
is watched again and its end journaled.
"""

from __future__ import annotations

import functools
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from schedlab.errors import InputError, PolicyError
from schedlab.model.snapshot import Preempt, Reject, Start, one_per_job
from schedlab.policies.placement.job_placement import JobPlacementPolicy
from schedlab.policies.protection import drop_blocked_starts, gpus_of, protected_until
from schedlab.policies.wiring import PolicyChoice
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.kubernetes.api import KubeError
from schedlab.serve.kubernetes.binder import Binder, unschedulable_message
from schedlab.serve.kubernetes.cache import Cache
from schedlab.serve.kubernetes.decide import decide
from schedlab.serve.kubernetes.lease import Lease
from schedlab.serve.kubernetes.objects import NodeInfo, parse_node, parse_pod
from schedlab.serve.kubernetes.topology import network_from_labels
from schedlab.serve.kubernetes.view import Job, KubeView, build_view, natural
from schedlab.serve.loop import CycleReport, ServeLoop
from schedlab.tenancy.kube_queues import queue_specs, read_objects
from schedlab.tenancy.live import KUBE_ATTRIBUTES, LiveTenancy
from schedlab.tenancy.replay import TenancySpec
from schedlab.tenancy.serve import tenancy_record
from schedlab.tenancy.tree import QueueSpec

Record = dict[str, Any]
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"


@dataclass(frozen=True)
class KubeConfig:
    """What ``schedlab serve kubernetes`` was asked to do."""

    policy: str
    placement: str = "bestfit"
    backfill: bool = False
    params: Mapping[str, str] = field(default_factory=dict)
    plugins: tuple[str, ...] = ()
    scheduler_name: str = "schedlab"
    interval: float = 1.0
    seed: int = 0
    until_idle: bool = False
    shadow: bool = False
    min_runtime: float = 0.0
    grace: float = 30.0
    lease_namespace: str = "default"
    lease_name: str = "schedlab"
    lease_seconds: float = 15.0
    identity: str = ""
    #: Node label keys naming the network's levels, lowest first (network placements).
    topology_labels: tuple[str, ...] = ("schedlab.io/leaf", "schedlab.io/spine")
    #: Queues and a share policy over schedlab's pods (off unless --tenancy or --queues).
    tenancy: TenancySpec = field(default_factory=TenancySpec)
    #: Read the queues from Kueue's and KAI's queue objects and namespace ResourceQuotas.
    queues_from_cluster: bool = False

    @property
    def choice(self) -> PolicyChoice:
        return PolicyChoice(
            self.policy, self.placement, self.backfill, self.params, plugins=self.plugins
        )

    @property
    def label(self) -> str:
        return self.choice.label


def run_start(record: Record) -> float:
    """When a ``start`` record's run began: the cycle that bound it, or for a run found bound
    (``recovered``) the pods' start time the API server showed."""
    return float(record.get("started") or record["time"])


def journaled_pods(path: Path | None) -> tuple[dict[str, float], float | None]:
    """Every pod a journal records a start of, with when its run began, and the time of the
    journal's last line (None: a new journal)."""
    pods: dict[str, float] = {}
    last: float | None = None
    if path is None or not path.exists():
        return pods, last
    for r in read_journal(path):
        last = float(r.get("time") or last or 0.0)
        if r["action"] == "start":
            pods.update(dict.fromkeys(r.get("bound") or r.get("pods") or [], run_start(r)))
    return pods, last


def journaled_credit(path: Path | None) -> dict[str, tuple[float, float]]:
    """GPU-seconds attained and seconds run that checkpointing jobs carried through their
    preemptions, summed from the journal's ``preempt`` records."""
    credit: dict[str, tuple[float, float]] = {}
    if path is None or not path.exists():
        return credit
    for r in read_journal(path):
        if r["action"] == "preempt" and "attained" in r and isinstance(r.get("job"), str):
            a, e = credit.get(r["job"], (0.0, 0.0))
            credit[r["job"]] = (a + float(r["attained"]), e + float(r.get("executed", 0.0)))
    return credit


def open_runs(path: Path | None) -> dict[str, list[str]]:
    """The runs a journal leaves open (a ``start`` and no ``finish`` or ``preempt`` after it),
    with their pods, which a restarted scheduler watches to journal their end."""
    runs: dict[str, list[str]] = {}
    if path is None or not path.exists():
        return runs
    for r in read_journal(path):
        job = r.get("job")
        if not isinstance(job, str):
            continue
        if r["action"] == "start":
            runs[job] = list(r.get("bound") or r.get("pods") or [])
        elif r["action"] in ("finish", "preempt"):
            if r.get("partial") and job in runs:
                runs[job] = [p for p in runs[job] if p not in (r.get("pods") or [])]
            else:
                runs.pop(job, None)
    return runs


def job_attributes(jobs: list[Job]) -> dict[str, list[str]]:
    """What jobs offer as tenant keys (:data:`KUBE_ATTRIBUTES`)."""
    return {
        "queue": [j.queue for j in jobs],
        "namespace": [j.head.namespace for j in jobs],
        "queue_kind": [j.head.queue_kind for j in jobs],
    }


def cluster_queues(api: Any) -> Callable[[], list[QueueSpec]]:
    """The queues the cluster's own objects define (``--queues-from-cluster``)."""
    return lambda: queue_specs(read_objects(api))


def refresh_queues(tenancy: LiveTenancy, view: KubeView) -> None:
    """Each job's queue this cycle (:func:`job_attributes`)."""
    tenancy.refresh_jobs([j.key for j in view.jobs], job_attributes(view.jobs))


def refused_jobs(tenancy: LiveTenancy, jobs: list[Job]) -> dict[str, str]:
    """Why no queue takes a job, by job key (see :meth:`LiveTenancy.refusals`)."""
    bad = tenancy.refusals(job_attributes(jobs))
    return {jobs[i].key: why for i, why in bad.items()}


class KubeServer(ServeLoop):
    """Drives a Kubernetes cluster with one schedlab policy: the serve loop
    (:class:`schedlab.serve.loop.ServeLoop`) with Kubernetes as its engine; see the module
    docstring."""

    def __init__(
        self,
        api: Any,
        config: KubeConfig,
        journal: Journal,
        clock: Callable[[], float] = time.time,
        watch: bool = True,
    ) -> None:
        super().__init__(config, journal, clock)
        self.config: KubeConfig = config
        self.api = api
        self.changed = threading.Event()
        self.pods = Cache(api, "/api/v1/pods", "pods", changed=self.changed)
        self.nodes = Cache(api, "/api/v1/nodes", "nodes", changed=self.changed)
        self.groups: Cache | None = Cache(api, PODGROUPS, "podgroups", changed=self.changed)
        self.watch = watch
        self.lease = Lease(
            api,
            config.lease_namespace,
            config.lease_name,
            config.identity,
            config.lease_seconds,
        )
        self.binder = Binder(api, self._stamp, self._sink, shadow=config.shadow)
        self._arrived: set[str] = set()
        self._active: dict[str, list[str]] = open_runs(journal.path)
        self._recovered = set(self._active)
        self._tracked, self._resumed_at = journaled_pods(journal.path)
        self._credit = journaled_credit(journal.path)
        self._why: dict[str, str] = {}  # the last protection journaled per job
        self._shown: dict[str, str] = {}  # the reason last written on each waiting pod
        self._pod_memo: dict[Any, Any] = {}
        self._network: Any = None
        self._network_key: Any = None
        self._node_memo: dict[Any, Any] = {}
        self._leading: bool | None = None  # None: not known yet (journaled at the first cycle)
        self._outside: dict[str, str] = {}  # running jobs no queue takes, as last journaled
        self.tenancy = self.wrap_tenancy(
            cluster_queues(api) if config.queues_from_cluster else None,
            attributes=KUBE_ATTRIBUTES,
            default_key=("queue",),
            flag="--queues-from-cluster",
        )

    # -- reading -------------------------------------------------------------------------------
    def start_watches(self) -> None:
        """List everything once (errors here are the user's: unreachable, unauthorised), then
        follow the collections in the background."""
        self.pods.relist()
        self.nodes.relist()
        assert self.groups is not None
        try:
            self.groups.relist()
        except KubeError as exc:
            if exc.status != 404:
                raise
            self._write(
                None,
                "warning",
                reason="the PodGroup CRD (scheduling.x-k8s.io) is not installed: gangs are "
                "read from the schedlab.io/min-member annotation only",
            )
            self.groups = None
        if self.watch:
            for cache in (self.pods, self.nodes, self.groups):
                if cache is not None:
                    cache.start()

    @property
    def needs_network(self) -> bool:
        """Whether the placement places on the network (then it gets the labels' tree)."""
        placement = self.policies.placement
        return isinstance(placement, JobPlacementPolicy) or bool(
            getattr(placement, "requires_topology", False)
        )

    def topology(self, nodes: list[NodeInfo]) -> Any:
        """The network under ``nodes`` from their labels (None when the placement does not
        place on the network); rebuilt when a node or a level label changes."""
        if not self.needs_network:
            return None
        levels = self.config.topology_labels
        key = tuple((n.name, n.gpus, tuple(n.labels.get(k) for k in levels)) for n in nodes)
        if key != self._network_key:
            self._network = network_from_labels(nodes, levels)
            self._network_key = key
        return self._network.for_nodes(nodes)

    def min_members(self) -> dict[str, int]:
        if self.groups is None:
            return {}
        out = {}
        for obj in self.groups.items():
            meta = obj.get("metadata") or {}
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            try:
                out[key] = int((obj.get("spec") or {}).get("minMember") or 0)
            except (TypeError, ValueError):
                self._write(None, "warning", reason=f"PodGroup {key}: minMember is not a number")
        return out

    def _parsed(
        self, objects: list[dict[str, Any]], parse: Callable[[Any], Any], memo: dict
    ) -> list:
        """Objects parsed once per resourceVersion (a steady queue is not parsed again)."""
        out, fresh = [], {}
        for obj in objects:
            meta = obj.get("metadata") or {}
            key = (meta.get("namespace"), meta.get("name"))
            version = meta.get("resourceVersion")
            hit = memo.get(key)
            info = hit[1] if hit is not None and version and hit[0] == version else parse(obj)
            fresh[key] = (version, info)
            out.append(info)
        memo.clear()
        memo.update(fresh)
        return out

    def read_nodes(self) -> list[NodeInfo]:
        return self._parsed(self.nodes.items(), parse_node, self._node_memo)

    def view(self) -> KubeView:
        # A run began when it was bound (as the journal says, which is what serve check
        # sees), not when the kubelet reported it started.
        pods = self._parsed(self.pods.items(), parse_pod, self._pod_memo)
        return build_view(
            pods,
            self.read_nodes(),
            self.now,
            self.config.scheduler_name,
            self.min_members(),
            credit=self._credit,
            began=self._tracked,
            refuse=(
                functools.partial(refused_jobs, self.tenancy) if self.tenancy is not None else None
            ),
        )

    # -- a cycle -------------------------------------------------------------------------------
    def _observe(self, view: KubeView) -> None:
        """Journal jobs first seen queued and runs that ended."""
        for i in view.snapshot.pending_set:
            job = view.jobs[i]
            if job.key in self._arrived:
                continue
            self._arrived.add(job.key)
            head = job.head
            allowed = view.eligible[i]
            self._write(
                job.key,
                "arrive",
                pods=[p.key for p in job.pods],
                gpus=job.num_gpus,
                gpus_per_pod=head.gpus,
                cpu_milli=head.cpu_milli,
                memory_mib=head.memory_mib,
                submit_time=job.submit,
                estimate=head.estimate if head.estimate != float("inf") else None,
                queue=job.queue,
                priority=head.priority,
                checkpoint=head.checkpoint,
                **(
                    {}
                    if allowed.all()
                    else {
                        "allowed": [n.name for n, ok in zip(view.nodes, allowed, strict=True) if ok]
                    }
                ),
            )
        for pod in view.fractional:
            if pod.key not in self._arrived:
                self._arrived.add(pod.key)
                self._write(
                    pod.key,
                    "arrive",
                    pods=[pod.key],
                    gpus=pod.gpus,
                    gpu_milli=pod.gpu_milli,
                    cpu_milli=pod.cpu_milli,
                    memory_mib=pod.memory_mib,
                    submit_time=pod.created,
                    queue=pod.queue,
                )
        self._recover_starts(view)
        for job, pods in list(self._active.items()):
            states = {k: view.pods[k].phase if k in view.pods else "GONE" for k in pods}
            ended = [k for k in pods if states[k] in ("Succeeded", "Failed", "GONE")]
            if not ended:
                continue
            kinds = {states[k] for k in ended}
            state = (
                "Succeeded"
                if kinds == {"Succeeded"}
                else ("Failed" if "Failed" in kinds else "GONE")
            )
            extra: dict[str, Any] = {"recovered": True} if job in self._recovered else {}
            if len(ended) < len(pods):
                # Pods of a gang end one by one: each frees its room when it ends.
                extra["partial"] = True
                self._active[job] = [k for k in pods if k not in ended]
            else:
                del self._active[job]
            self._write(job, "finish", pods=ended, state=state, **extra)
        self._recovered.clear()

    def _recover_starts(self, view: KubeView) -> None:
        """Pods of this scheduler bound by a run this journal does not record (an instance
        killed between the bind and its journal line, or another instance before a takeover):
        their start is journaled from the API objects (``recovered``), so the journal accounts
        for every run and their end is journaled too. At the first cycle after a restart, runs
        that also ended while no scheduler watched get their start and finish."""
        since, self._resumed_at = self._resumed_at, None
        names = {n.name: i for i, n in enumerate(view.nodes)}
        found: dict[str, list[Any]] = {}
        for pod in view.pods.values():
            if pod.scheduler != self.config.scheduler_name or not pod.bound:
                continue
            if pod.key in self._tracked or pod.node not in names:
                continue
            # A run that also ended was ours only if it began just before our journal's last
            # line (the kill came between the bind and the journal): later, the Lease was
            # another instance's, which journaled it.
            if pod.terminal and (
                since is None or not since - 1.0 <= pod.started < since + self.lease.duration
            ):
                continue
            key = f"{pod.namespace}/podgroup/{pod.group}" if pod.group else pod.key
            found.setdefault(key, []).append(pod)
        for key, pods in sorted(found.items()):
            pods.sort(key=lambda p: p.name)
            fields = {
                "pods": [p.key for p in pods],
                "nodes": [p.node for p in pods],
                "gpu_idx": [list(p.devices) for p in pods],
                "gpus": sum(p.gpus for p in pods),
                "submit_time": min(p.created for p in pods),
            }
            if pods[0].fractional:
                fields["gpu_milli"] = pods[0].gpu_milli
            began = round(min(p.started or self.now for p in pods), 3)
            self._write(key, "start", recovered=True, started=round(began, 3), **fields)
            self._tracked.update(dict.fromkeys(fields["pods"], began))
            self._active[key] = list(fields["pods"])
            self._recovered.add(key)

    def _guard(self, view: KubeView, decisions: list[Any]) -> list[Any]:
        """Preemptions --min-runtime allows now, and the starts that need no GPU of a victim
        that stays."""
        kept, blocked = [], set()
        for d in decisions:
            if not isinstance(d, Preempt):
                continue
            job = view.jobs[d.job]
            began = view.snapshot.runtime.run_started[d.job]
            if protected_until(float(began), self.now, self.config.min_runtime) is not None:
                blocked |= gpus_of(view.snapshot.runtime.allocation[d.job])
                why = f"its run has not lasted the {self.config.min_runtime:g} s minimum yet"
                if self._why.get(job.key) != why:
                    self._why[job.key] = why
                    self._write(job.key, "protect", reason=why)
                continue
            kept.append(d)
        others = [d for d in decisions if not isinstance(d, Preempt)]
        return kept + drop_blocked_starts(others, blocked)

    def cycle(self) -> CycleReport:
        self.begin_cycle()
        t0 = time.perf_counter()
        for cache in (self.pods, self.nodes, self.groups):
            for note in cache.take_notes() if cache is not None else ():
                self._write(None, "warning", reason=note)
        leading = self.lease.hold(self.now)
        if leading != self._leading:
            self._leading = leading
            seen = self.lease.last_seen
            self._write(
                None,
                "lead" if leading else "standby",
                lease=f"{self.config.lease_namespace}/{self.config.lease_name}",
                identity=self.config.identity,
                **({} if leading or seen is None else {"holder": seen.holder}),
            )
        if self.lease.error:
            self._write(None, "error", attempted="lease", reason=self.lease.error)
        if not leading:
            self.journal.sync()
            return CycleReport(
                self.cycle_no, ok=True, time=self.now, seconds=time.perf_counter() - t0
            )
        view = self.view()
        self._observe(view)
        for key, what in view.problems:
            self._write(key, "warning", reason=what)
        for key, why in view.outside.items():
            if self._outside.get(key) != why:
                self._write(key, "warning", reason=f"runs outside every queue: {why}")
        self._outside = dict(view.outside)
        self.binder.bound = []
        try:
            topology = self.topology(view.nodes)
        except InputError as exc:  # nodes changed under a network placement
            self._write(None, "error", reason=f"topology: {exc}")
            self.journal.sync()
            return CycleReport(self.cycle_no, ok=False, time=self.now)
        if self.tenancy is not None:
            refresh_queues(self.tenancy, view)
        try:
            decided = decide(
                self.policies,
                view,
                self.config.seed,
                topology,
                self._policy_state,
                # With tenancy the policy decides every cycle: usage accrues, reclaim may be due.
                always=self.tenancy is not None,
            )
        except PolicyError as exc:  # a wrong answer stops serve, journaled, as serve slurm does
            self._write(None, "error", reason=str(exc))
            self.journal.sync()
            raise
        self.keep_policy_state(decided.state)
        for job, why in decided.dropped:
            self._write(view.jobs[job].key, "skip", reason=f"start does not fit: {why}")
        decisions = one_per_job(self._guard(view, decided.decisions))
        # What the API objects show taken (unavailable nodes lend nothing): every bind is
        # checked against it.
        ledger = view.snapshot.state.copy()
        names = [n.name for n in view.nodes]
        started: list[str] = []
        errors = 0
        for d in [d for d in decisions if not isinstance(d, Start)]:
            job = view.jobs[d.job]
            if isinstance(d, Preempt):
                nodes = sorted({names[n] for n, _ in view.snapshot.runtime.allocation[d.job] or ()})
                fields: dict[str, Any] = {"pods": [p.key for p in job.pods], "nodes": nodes}
                if job.head.checkpoint:
                    # A checkpointing job keeps what this run attained (its next pod, made
                    # by its controller under the same name, continues from there).
                    ran = max(0.0, self.now - float(view.snapshot.runtime.run_started[d.job]))
                    fields.update(attained=round(job.num_gpus * ran, 3), executed=round(ran, 3))
                rec = self.binder.evict(job.key, job.pods, self.config.grace, fields)
                if rec["action"] == "preempt":
                    self._active.pop(job.key, None)
                    if "attained" in rec:
                        a, e = self._credit.get(job.key, (0.0, 0.0))
                        self._credit[job.key] = (a + rec["attained"], e + rec["executed"])
                errors += rec["action"] == "error"
            elif isinstance(d, Reject):
                self._write(job.key, "reject", reason=d.reason)
            else:
                self._write(
                    job.key,
                    "skip",
                    reason=f"{type(d).__name__} decisions have no Kubernetes counterpart",
                )
        plans: list[tuple[str, list[Any], Any, dict[str, Any]]] = []
        for d in [d for d in decisions if isinstance(d, Start)]:
            job = view.jobs[d.job]
            extra = {
                "pods": [p.key for p in job.pods],
                "nodes": [names[n] for n, _ in d.allocation],
                "gpu_idx": [list(g) for _, g in d.allocation],
                "gpus": job.num_gpus,
                "submit_time": job.submit,
            }
            plans.append((job.key, job.pods, d.allocation, extra))
        for share in decided.shares:
            pod = share.pod
            extra = {
                "pods": [pod.key],
                "nodes": [names[share.node]],
                "gpu_idx": [list(share.gpus)],
                "gpus": pod.gpus,
                "gpu_milli": pod.gpu_milli,
                "submit_time": pod.created,
            }
            plans.append((pod.key, [pod], ((share.node, share.gpus),), extra))
        for rec in self.binder.bind_jobs(plans, names, ledger):
            if rec["action"] == "start":
                started.append(str(rec["job"]))
                self._active[rec["job"]] = list(rec.get("bound") or rec["pods"])
                self._tracked.update(dict.fromkeys(self._active[rec["job"]], round(self.now, 3)))
            errors += rec["action"] == "error"
        self._reasons(view, ledger)
        self.binder.flush()
        report = CycleReport(
            cycle=self.cycle_no,
            ok=True,
            queued=len(view.snapshot.pending_set) + len(view.fractional) - len(started),
            running=len(view.snapshot.running_set) + len(started),
            decisions=len(decisions) + len(decided.shares),
            started=len(started),
            errors=errors,
            idle=view.idle and not started,
            seconds=time.perf_counter() - t0,
            time=self.now,
        )
        if decisions or decided.shares or errors:
            self._write(
                None,
                "cycle",
                seconds=round(report.seconds, 4),
                decisions=report.decisions,
                started=report.started,
                queued=report.queued,
                running=report.running,
                errors=report.errors,
            )
        self.journal.sync()
        return report

    def _reasons(self, view: KubeView, ledger: Any) -> None:
        """Say on each waiting pod why, once per change of reason."""
        bound = set(self.binder.bound)
        label = self.config.label
        waiting: list[tuple[Any, str]] = []
        for i in view.snapshot.pending_set:
            for pod in view.jobs[i].pods:
                if pod.key not in bound:
                    waiting.append((pod, ""))
        waiting += [(p, "") for p in view.fractional if p.key not in bound]
        for key, why in {**view.waiting, **view.impossible}.items():
            waiting.append((view.pods[key], why))
        for key, why in view.problems:
            if key in view.pods and view.pods[key].scheduler == self.config.scheduler_name:
                waiting.append((view.pods[key], why))
        memo: dict[tuple[object, ...], str] = {}
        shown: dict[str, str] = {}
        assert view.masks is not None
        for pod, why in waiting:
            message = why
            if not message:
                shape = (pod.gpus, pod.gpu_milli, pod.cpu_milli, pod.memory_mib, pod.constraints)
                if shape not in memo:
                    memo[shape] = unschedulable_message(
                        pod, view.nodes, ledger, view.masks.of(pod)
                    ) or (
                        f"waiting for policy {label} to place it: jobs ahead of it in the "
                        "policy's order come first"
                    )
                message = memo[shape]
            shown[pod.key] = message
            if self._shown.get(pod.key) == message:
                continue  # written already (the cache may not show it yet)
            if why and pod.key in view.impossible:
                self._write(pod.key, "reject", reason=why)
            self.binder.show_reason(pod, "Unschedulable", message, self.now)
        self._shown = shown

    # -- the loop ------------------------------------------------------------------------------
    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        super()._on_signal(signum, _frame)
        self.changed.set()  # stop waiting for news

    def serve_record(self) -> Record:
        c = self.config
        nodes = sorted(self.read_nodes(), key=lambda n: natural(n.name))
        network: Record = {}
        if self.needs_network:
            self.topology(nodes)  # a placement that needs a network without one: refused here
            network = {"topology": self._network.source, **self._network.for_replay(nodes)}
        return dict(
            engine="kubernetes",
            policy=c.label,
            placement=c.placement,
            params=dict(c.params),
            plugins=list(c.plugins),
            scheduler_name=c.scheduler_name,
            interval=c.interval,
            seed=c.seed,
            shadow=c.shadow,
            min_runtime=c.min_runtime,
            grace=c.grace,
            identity=c.identity,
            nodes=[n.name for n in nodes],
            node_gpus=[n.gpus for n in nodes],
            node_models=[n.model if n.gpus else "" for n in nodes],
            node_cpu_milli=[n.cpu_milli for n in nodes],
            node_memory_mib=[n.memory_mib for n in nodes],
            **network,
            **(
                {
                    "tenancy": tenancy_record(
                        c.tenancy,
                        **({"queues_from_cluster": True} if c.queues_from_cluster else {}),
                    )
                }
                if c.tenancy.enabled
                else {}
            ),
        )

    def run(self, report: Callable[[CycleReport], None] | None = None) -> int:
        """Cycle on every change (at most every ``interval`` seconds, at least every ten
        intervals) until SIGTERM/SIGINT, or with ``until_idle`` until nothing is left."""
        self.start_watches()
        self._write(None, "serve", **self.serve_record())
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            while self.stop_reason is None:
                began = time.monotonic()
                self.changed.clear()
                result = self.cycle()
                if report is not None:
                    report(result)
                if self.config.until_idle and result.ok and result.idle and self._leading is True:
                    self.stop_reason = "idle"
                    break
                rest = self.config.interval - (time.monotonic() - began)
                if rest > 0:
                    time.sleep(rest)
                if not result.started:  # nothing changed by us: wait for news
                    # ... but renew the Lease well within its duration.
                    self.changed.wait(min(self.config.interval * 9, self.lease.duration / 3))
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            for cache in (self.pods, self.nodes, self.groups):
                if cache is not None:
                    cache.stop()
            self.lease.release()
            self.binder.flush_events()
            self._write(None, "stop", reason=self.stop_reason or "error")
            self.journal.close()
        return 0
