"""The serve loop: read Slurm, build the snapshot, ask the policy, apply, journal — every cycle.

:class:`ServeLoop` is the part every engine shares (policy objects, journal and its repeat rule,
policy state, cycle clock, stop signals); :class:`Server` is the loop with Slurm as its engine,
and ``schedlab.serve.kubernetes.server.KubeServer`` the loop with Kubernetes as its engine.

Nothing is carried from one cycle to the next except what is also written to the journal: which
jobs this process has already reported as arrived or running, and the state of the policy
objects. These are built (and checked) once and started each cycle on the jobs Slurm reports,
through the same wiring point the replay engine uses before a run; a stateful policy then takes
back the state it exported after its last decision (keyed by Slurm job id, journaled as a
``policy-state`` record whenever it changes). So every decision is a function of what Slurm
reports and what the journal holds, which is what makes a restart after SIGKILL safe: a released
or running job is never queued again, a job pinned but not yet released is still held, so it is
simply placed again, and a restarted scheduler given the same journal decides as the one that
never stopped.

SIGTERM and SIGINT end the loop after the cycle in progress, with exit status 0.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

from schedlab.engines.decision_check import DecisionCheck
from schedlab.errors import InputError, PolicyError
from schedlab.model.gpu_models import GPU_MODELS
from schedlab.model.snapshot import Decision, Preempt
from schedlab.perf.models import TraceDuration
from schedlab.policies.api import SERVE
from schedlab.policies.placement.base import PlacementPolicy
from schedlab.policies.placement.job_placement import JobPlacementPolicy
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.serve.apply import Applier, Outcome
from schedlab.serve.client import ShadowSlurm, SlurmClient, SlurmError
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.live import LiveView, build_view, node_model
from schedlab.serve.preemption import Guard, PreemptionRules, checkpoints
from schedlab.serve.queue_view import build_queue, write_queue
from schedlab.serve.reasons import waiting_reason
from schedlab.serve.slurm_state import JobInfo, NodeInfo, partition_jobs, read_nodes
from schedlab.serve.topology import ServeTopology
from schedlab.tenancy.live import JOB_ATTRIBUTES, LiveTenancy
from schedlab.tenancy.replay import TenancySpec
from schedlab.tenancy.serve import read_associations, tenancy_record, wrap_live

Record = dict[str, Any]


@dataclass(frozen=True)
class ServeConfig:
    """What ``schedlab serve slurm`` was asked to do."""

    policy: str
    placement: str = "bestfit"
    backfill: bool = False
    params: Mapping[str, str] = field(default_factory=dict)
    partition: str | None = None
    interval: float = 1.0
    seed: int = 0
    until_idle: bool = False
    plugins: tuple[str, ...] = ()
    shadow: bool = False  # decide and journal, change nothing in Slurm
    min_runtime: float = 0.0  # seconds a run lasts before it may be preempted
    grace: float = 0.0  # seconds between the SIGTERM to a victim and its requeue
    topology: str | None = None  # --topology: a topology.conf or a replay spec (None: Slurm's)
    #: Queues and a share policy over schedlab's jobs (off unless --tenancy or --queues).
    tenancy: TenancySpec = field(default_factory=TenancySpec)
    #: Read the queue tree from Slurm's associations (``sacctmgr``).
    associations: bool = False

    @property
    def choice(self) -> PolicyChoice:
        return PolicyChoice(
            self.policy, self.placement, self.backfill, self.params, plugins=self.plugins
        )

    @property
    def label(self) -> str:
        return self.choice.label


@dataclass(frozen=True)
class CycleReport:
    """One cycle in numbers (for the operator's status line, tests and the benchmark)."""

    cycle: int
    ok: bool
    queued: int = 0
    running: int = 0
    decisions: int = 0
    started: int = 0
    errors: int = 0
    idle: bool = False
    seconds: float = 0.0
    time: float = 0.0  # when the cycle began (Unix seconds)


#: The journal action that carries a stateful policy's state from one cycle (or process) on.
POLICY_STATE = "policy-state"
#: Seconds a job this process requeued may still show as running before it is preempted again.
REQUEUE_SETTLE = 3.0
#: Record kinds written once while the same condition lasts from cycle to cycle.
REPEATING = frozenset({"error", "skip", "warning"})


def saved_policy_state(path: Path | None, identity: Record) -> Record:
    """The last policy state a server with the same policy, placement, parameters and seed
    journaled in ``path`` (empty if none: a first start)."""
    if path is None or not path.exists():
        return {}
    state: Record = {}
    for record in read_journal(path):
        if record["action"] == POLICY_STATE and record.get("policy") == identity:
            state = dict(record.get("state") or {})
    return state


def journaled_starts(path: Path | None) -> tuple[set[int], float | None]:
    """The jobs a journal already records a start for, and the time of its last line (None
    for a new journal)."""
    if path is None or not path.exists():
        return set(), None
    started: set[int] = set()
    last: float | None = None
    for r in read_journal(path):
        last = float(r.get("time", last or 0.0))
        if r["action"] == "start" and r.get("job"):
            started.add(int(r["job"]))
    return started, last


def open_runs(path: Path | None) -> dict[int, tuple[str, ...]]:
    """The runs a journal leaves open: jobs with a ``start`` and nothing after it that ends the
    run (``finish``, ``requeued``, ``preempt``, ``hold``), with their nodes. A restarted
    scheduler watches them as if it had started them, so one that ended while no scheduler ran
    gets its ``finish`` when the restart observes it gone."""
    runs: dict[int, tuple[str, ...]] = {}
    if path is None or not path.exists():
        return runs
    for r in read_journal(path):
        job = r.get("job")
        if not job:
            continue
        if r["action"] == "start":
            runs[int(job)] = tuple(r.get("nodes") or ())
        elif r["action"] in ("finish", "requeued", "preempt", "hold"):
            runs.pop(int(job), None)
    return runs


def saved_credit(path: Path | None) -> dict[int, tuple[float, float]]:
    """Attained GPU-seconds and seconds run that checkpointing jobs carried through their
    requeues, summed from the journal's ``requeued`` records."""
    credit: dict[int, tuple[float, float]] = {}
    if path is None or not path.exists():
        return credit
    for record in read_journal(path):
        if record["action"] == "requeued" and "attained" in record and record.get("job"):
            a, e = credit.get(int(record["job"]), (0.0, 0.0))
            credit[int(record["job"])] = (
                a + float(record["attained"]),
                e + float(record.get("executed", 0.0)),
            )
    return credit


def cluster_spec(nodes: list[NodeInfo]) -> str:
    """The nodes as a ``--cluster`` spec for ``schedlab replay`` (runs of equal nodes, in order)."""
    runs: list[list[object]] = []
    for n in nodes:
        model = node_model(n)
        key = (n.gpus, GPU_MODELS[model] if model >= 0 else "GPU")
        if runs and runs[-1][1] == key:
            runs[-1][0] = int(runs[-1][0]) + 1  # type: ignore[call-overload]
        else:
            runs.append([1, key])
    return "+".join(f"{count}x{key[0]}:{key[1]}" for count, key in runs)  # type: ignore[index]


def load_network(
    config: ServeConfig, client: SlurmClient, placement: PlacementPolicy
) -> ServeTopology:
    """The network under the partition: from ``--topology``, else Slurm's tree when the
    placement places whole jobs on the network (others never see it). A placement that needs
    a topology is refused when there is none."""
    if config.topology is not None:
        network = ServeTopology.from_spec(config.topology)
    elif isinstance(placement, JobPlacementPolicy):
        try:
            network = ServeTopology.from_slurm(client)
        except SlurmError as exc:
            raise SlurmError(f"cannot read the switch tree: {exc}") from None
    else:
        network = ServeTopology()
    if getattr(placement, "requires_topology", False) and not network.available:
        raise InputError(
            f"placement '{placement.name}' needs the network under the cluster and Slurm "
            "reports no switch tree: set TopologyPlugin=topology/tree with a topology.conf, "
            "or give --topology FILE"
        )
    return network


class ServeLoop:
    """What every engine's serve loop shares: the policy objects (built once by the wiring
    point replay uses), the journal and its repeat rule, the policy state carried from cycle to
    cycle and across restarts, the cycle clock and the stop signals. An engine (Slurm's
    :class:`Server`, Kubernetes' ``KubeServer``) adds how it reads the cluster into a snapshot
    and how it carries decisions out, in its ``cycle``."""

    def __init__(
        self, config: Any, journal: Journal, clock: Callable[[], float] = time.time
    ) -> None:
        """``config``: the engine's settings, with at least ``choice``, ``label``,
        ``placement``, ``params``, ``seed``, ``interval`` and ``shadow``."""
        if not config.interval > 0:
            raise InputError(f"'--interval' must be > 0 seconds (got {config.interval})")
        self.config = config
        self.policies = build(SERVE, config.choice)
        self.journal = journal
        self.clock = clock
        self.now = clock()
        self.cycle_no = 0
        self.stop_reason: str | None = None
        self._policy_state = saved_policy_state(journal.path, self._identity())
        #: The queues and each job's queue, when a share policy wraps the ordering.
        self.tenancy: LiveTenancy | None = None
        self._repeats: tuple[set[str], set[str]] = (set(), set())  # (last cycle's, this one's)

    def wrap_tenancy(
        self,
        associations: Callable[[], str] | None = None,
        attributes: tuple[str, ...] = JOB_ATTRIBUTES,
        default_key: tuple[str, ...] = ("account",),
    ) -> LiveTenancy | None:
        """Put the share policy of ``config.tenancy`` around the served ordering (None: no
        tenancy). Each engine says what its jobs offer as tenant keys; Slurm may also read its
        associations for the tree."""
        spec = getattr(self.config, "tenancy", None)
        if spec is None:
            return None
        return wrap_live(spec, self.policies, associations, attributes, default_key)

    def _identity(self) -> Record:
        """What makes journaled policy state this server's to take back."""
        cfg = self.config
        tenancy = getattr(cfg, "tenancy", None)
        return {
            "policy": cfg.label,
            "placement": cfg.placement,
            "params": dict(cfg.params),
            "seed": cfg.seed,
            **({"tenancy": tenancy.policy} if tenancy is not None and tenancy.enabled else {}),
        }

    def _stamp(self) -> Record:
        return {"time": round(self.now, 3), "cycle": self.cycle_no}

    def _write(self, job: Any, action: str, **fields: Any) -> None:
        self._sink({**self._stamp(), "job": job, "action": action, **fields})

    def _sink(self, record: Record) -> None:
        """Write a record, except an error or skip identical (but for its time and cycle) to
        one of the previous cycle: a condition that lasts is journaled when it starts, not at
        every cycle."""
        # In shadow mode nothing changes, so every decision would repeat at every cycle.
        if record["action"] in REPEATING or (self.config.shadow and record["job"] is not None):
            key = json.dumps(
                {k: v for k, v in record.items() if k not in ("time", "cycle")}, sort_keys=True
            )
            self._repeats[1].add(key)
            if key in self._repeats[0]:
                return
        self.journal.write(record)

    def begin_cycle(self) -> None:
        """A new cycle: its number, its time, and the repeat rule's window moved on."""
        self.cycle_no += 1
        self.now = self.clock()
        self._repeats = (self._repeats[1], set())

    def keep_policy_state(self, state: Mapping[str, Any]) -> None:
        """Journal the policies' state when it changed (a restart takes it back)."""
        plain = json.loads(json.dumps(state))
        if plain != self._policy_state:
            self._write(None, POLICY_STATE, policy=self._identity(), state=plain)
            self._policy_state = plain

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.stop_reason = signal.Signals(signum).name


class Server(ServeLoop):
    """Drives Slurm with one schedlab policy; see the module docstring."""

    def __init__(
        self,
        client: SlurmClient,
        config: ServeConfig,
        journal: Journal,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        network: ServeTopology | None = None,
        queue_file: Path | None = None,
    ) -> None:
        """``queue_file``: where each cycle writes the queue in the policy's order, with
        reasons and estimated starts (:mod:`schedlab.serve.queue_view`); None: nowhere."""
        super().__init__(config, journal, clock)
        if config.shadow:
            client = ShadowSlurm(client)
        self.tenancy = self.wrap_tenancy(
            (lambda: read_associations(client)) if config.associations else None
        )
        self.client = client
        self.sleep = sleep
        self.applier = Applier(client, self._stamp, self._sink)
        self._arrived: set[int] = set()
        self._active: dict[int, tuple[str, ...]] = {}
        self._ran: set[int] = set()  # jobs seen running: only these can be "requeued"
        self._why: dict[int, str] = {}  # the last reason journaled for a job left unplaced
        self._run_of: dict[int, tuple[float, int]] = {}  # running job → (its start, its GPUs)
        self._credit = saved_credit(journal.path)  # checkpointing jobs' earlier runs
        self._journaled_starts, self._resumed_at = journaled_starts(journal.path)
        self._active.update(open_runs(journal.path))  # runs a restart takes over
        self._gap = set(self._active)
        self._protected: dict[int, str] = {}
        self._network = network  # loaded on first use unless given
        self.queue_file = queue_file
        self._preempting: dict[int, float] = {}  # requeued by this process → when
        self.guard = Guard(
            PreemptionRules(config.min_runtime, config.grace), self._signal, self._protect
        )

    # -- journal ---------------------------------------------------------------------------
    def _observe(self, view: LiveView, jobs: list[JobInfo]) -> None:
        """Journal jobs that arrived in the queue or left the cluster since the last cycle."""
        for job_id in view.queued:
            if job_id not in self._arrived:
                self._arrived.add(job_id)
                info = view.infos[view.index_of(job_id)]
                self._write(
                    job_id,
                    "arrive",
                    gpus=info.num_gpus,
                    gpu_type=info.gpu_type,
                    submit_time=info.submit_time,
                    time_limit=info.time_limit if info.time_limit != float("inf") else None,
                    user=info.user,
                    name=info.name,
                    gpus_per_node=info.gpus_per_node if info.shaped else 0,
                    num_nodes=max(info.node_count, 1) if info.shaped else 0,
                    exclusive=info.exclusive,
                    checkpoint=checkpoints(info),
                    # An array task queues by its array and task id (the journal's reader
                    # rebuilds the queue's order from these).
                    **(
                        {"array_job": info.array_job_id, "array_task": info.array_task_id}
                        if info.array_job_id and info.array_task_id is not None
                        else {}
                    ),
                )
        now_active = set(view.running) | set(view.launching)
        self._ran.update(view.running)
        by_id = {j.job_id: j for j in jobs}
        if self._resumed_at is not None:
            self._recover_finished(jobs)
        for job_id in view.running + view.launching:
            if job_id not in self._journaled_starts:
                # Released by a scheduler killed before it journaled the start: say so now, with
                # the nodes Slurm gives, so the journal accounts for every run.
                info = by_id[job_id]
                self._write(
                    job_id,
                    "start",
                    nodes=list(info.nodes or info.required_nodes),
                    gpus=info.num_gpus,
                    submit_time=info.submit_time,
                    recovered=True,
                )
                self._journaled_starts.add(job_id)
        for job_id in view.running:
            info = by_id[job_id]
            if info.start_time > 0:
                self._run_of[job_id] = (info.start_time, info.num_gpus)
        for job_id, nodes in list(self._active.items()):
            if job_id in now_active:
                continue
            info = by_id.get(job_id)
            if info is not None and info.pending:
                # A released job held again before it ever ran was not requeued: its hold
                # record says what happened.
                if job_id in self._ran:
                    self._requeued(info, nodes)
            else:
                state = info.state if info is not None else "GONE"
                # A run taken over from the journal ended while no scheduler watched.
                gap = {"recovered": True} if job_id in self._gap else {}
                self._write(job_id, "finish", nodes=list(nodes), state=state, **gap)
            del self._active[job_id]
            self._ran.discard(job_id)
            self._run_of.pop(job_id, None)
        self._gap.clear()  # from now on this process saw every run it watches
        self._journal_reasons(view)

    def _recover_finished(self, jobs: list[JobInfo]) -> None:
        """First cycle after a restart: jobs of schedlab's that started after the journal's
        last line and already ended (a kill came between their release and its journal line,
        and they were short) get their start and finish journaled from Slurm's record."""
        since, self._resumed_at = self._resumed_at, None
        assert since is not None
        for info in jobs:
            if not (info.finished and info.admin_comment.startswith("schedlab:")):
                continue
            if info.job_id in self._journaled_starts or not info.nodes:
                continue
            if not info.start_time >= since - 1.0:
                continue
            fields = {"nodes": list(info.nodes), "gpus": info.num_gpus, "recovered": True}
            self._write(info.job_id, "start", submit_time=info.submit_time, **fields)
            self._write(info.job_id, "finish", nodes=list(info.nodes), state=info.state)
            self._journaled_starts.add(info.job_id)

    def _requeued(self, info: JobInfo, nodes: tuple[str, ...]) -> None:
        """A job seen running is pending again; a checkpointing one keeps what it attained."""
        extra: dict[str, Any] = {"checkpoint": checkpoints(info)}
        start, gpus = self._run_of.get(info.job_id, (0.0, info.num_gpus))
        if checkpoints(info) and start > 0:
            ran = max(0.0, self.now - start)
            extra.update(attained=round(gpus * ran, 3), executed=round(ran, 3))
            attained, executed = self._credit.get(info.job_id, (0.0, 0.0))
            self._credit[info.job_id] = (attained + gpus * ran, executed + ran)
        self._write(info.job_id, "requeued", nodes=list(nodes), reason=info.reason, **extra)

    def _signal(self, info: JobInfo) -> None:
        try:
            self.client.signal(info.label, "TERM")
        except SlurmError as exc:
            self._write(info.job_id, "error", attempted="signal", reason=str(exc))
            return
        self._write(info.job_id, "signal", signal="TERM", grace=self.config.grace)

    def _protect(self, job_id: int, action: str, reason: str) -> None:
        if self._protected.get(job_id) != reason:
            self._protected[job_id] = reason
            self._write(job_id, action, reason=reason)

    def _journal_reasons(self, view: LiveView) -> None:
        """Why each of schedlab's jobs is not offered or not counted, once per change."""
        now: dict[int, tuple[str, str]] = {}
        for job_id, why in view.waiting.items():
            now[job_id] = ("wait", why)
        for job_id, why in view.limited.items():
            now[job_id] = ("limited", why)
        for job_id in view.foreign_held:
            now[job_id] = ("foreign-hold", "held outside schedlab after its release; left alone")
        for job_id, (action, why) in now.items():
            if self._why.get(job_id) != why:
                self._write(job_id, action, reason=why)
        self._why = {job_id: why for job_id, (_, why) in now.items()}

    # -- one cycle -------------------------------------------------------------------------
    def read(self) -> tuple[list[JobInfo], list[NodeInfo]]:
        """The partition's jobs (with other partitions' jobs running on its nodes, which hold
        GPUs too) and its nodes."""
        part = self.config.partition
        nodes = read_nodes(self.client.sinfo(), part)
        return partition_jobs(self.client.squeue(), part, nodes), nodes

    def cycle(self) -> CycleReport:
        """Read, decide, apply and journal once."""
        self.begin_cycle()
        t0 = time.perf_counter()
        try:
            jobs, nodes = self.read()
        except SlurmError as exc:
            self._write(None, "error", reason=str(exc))
            self.journal.sync()
            return CycleReport(self.cycle_no, ok=False, time=self.now)
        try:
            topology = self.network().for_nodes(nodes)
        except InputError as exc:  # the partition's nodes changed under a fixed topology
            self._write(None, "error", reason=f"topology: {exc}")
            self.journal.sync()
            return CycleReport(self.cycle_no, ok=False, time=self.now)
        # With tenancy, a job no queue takes is turned away alone (the others are served).
        refuse = self.tenancy.refused_slurm if self.tenancy is not None else None
        view = build_view(jobs, nodes, self.now, credit=self._credit, refuse=refuse)
        self._observe(view, jobs)
        for job_id, what in view.problems:
            self._write(job_id, "warning", reason=what)
        records = (
            self.applier.hold_stranded(view)
            + self.applier.reject_impossible(view)
            + self.applier.split_arrays(view)
        )
        policy = self.policies.scheduler
        assert policy is not None
        decisions = []
        if self.tenancy is not None:
            self.tenancy.refresh(view.infos)
        # With tenancy the policy decides every cycle: usage accrues and reclaim may be due.
        if view.snapshot.pending_set or self.tenancy is not None:
            try:
                self.policies.start(
                    view.cluster,
                    np.random.default_rng(self.config.seed),
                    jobs=view.snapshot.jobs,
                    perf=TraceDuration(),
                    topology=topology,
                )
                self.policies.import_state(self._policy_state)
                # Every answer checked as in replay: a wrong one stops serve, journaled.
                check = DecisionCheck(policy, view.cluster, view.snapshot.jobs)
                decisions = check.decide(view.snapshot)
                state = self.policies.export_json()
            except PolicyError as exc:
                self._write(None, "error", reason=str(exc))
                self.journal.sync()
                raise
            self.keep_policy_state(state)
        decisions = self._not_again(view, self.guard.filter(view, decisions, self.now))
        outcome = self.applier.apply(view, decisions)
        self._preempting.update(
            {r["job"]: self.now for r in outcome.records if r["action"] == "preempt"}
        )
        records += self.applier.claim(view, outcome.started)
        reasons = self._reasons(view, jobs, outcome)
        records += self.applier.show_reasons(reasons)
        if self.queue_file is not None:
            self._write_queue(view, jobs, reasons, outcome)
        for job_id in view.running + view.launching + outcome.started:
            if job_id not in self._active:
                info = view.infos[view.index_of(job_id)]
                self._active[job_id] = info.nodes or info.required_nodes
        for rec in outcome.records:
            if rec["action"] == "start":
                self._active[rec["job"]] = tuple(rec["nodes"])
                self._journaled_starts.add(rec["job"])
        errors = outcome.errors + sum(r["action"] == "error" for r in records)
        report = CycleReport(
            cycle=self.cycle_no,
            ok=True,
            queued=len(view.queued),
            running=len(view.running) + len(view.launching),
            decisions=len(decisions),
            started=len(outcome.started),
            errors=errors,
            idle=view.idle and not outcome.started,
            seconds=time.perf_counter() - t0,
            time=self.now,
        )
        if (decisions or records or outcome.records) and not (
            self.config.shadow and not self._repeats[1] - self._repeats[0]
        ):
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

    def _write_queue(
        self,
        view: LiveView,
        jobs: list[JobInfo],
        reasons: list[tuple[JobInfo, str]],
        outcome: Outcome,
    ) -> None:
        """The queue in the policy's order, with reasons and estimated starts, for ``serve
        status`` (a failure to write it is journaled and the cycle goes on)."""
        assert self.queue_file is not None
        policy = self.policies.scheduler
        ranking = getattr(policy, "ranking", None)
        # The policy was started on this cycle's snapshot only when something was pending.
        order = (
            ranking(view.snapshot) if ranking is not None and view.snapshot.pending_set else None
        )
        cfg = self.config
        header = {
            "partition": cfg.partition,
            "policy": cfg.label,
            "placement": cfg.placement,
            "cycle": self.cycle_no,
            "shadow": cfg.shadow,
        }
        data = build_queue(
            view,
            jobs,
            order,
            {info.job_id: why for info, why in reasons},
            outcome.records,
            in_order=not (cfg.backfill or getattr(policy, "preemptive", False)),
            header=header,
        )
        tenancy = getattr(policy, "queue_status", None)
        if tenancy is not None:
            data["tenancy"] = tenancy(view.snapshot)
        try:
            write_queue(self.queue_file, data)
        except OSError as exc:
            self._write(None, "error", attempted="queue", reason=f"{self.queue_file}: {exc}")

    def _not_again(self, view: LiveView, decisions: list[Decision]) -> list[Decision]:
        """Drop a preemption of a job this process already requeued that Slurm still shows
        running: ``requeuehold`` returns before the job has left (more so on a busy
        controller), and a fast next cycle would otherwise preempt it a second time. After
        :data:`REQUEUE_SETTLE` seconds it may be preempted again (the command may have been
        lost)."""
        active = set(view.running) | set(view.launching)
        self._preempting = {
            j: t
            for j, t in self._preempting.items()
            if j in active and self.now - t < REQUEUE_SETTLE
        }
        return [
            d
            for d in decisions
            if not (
                isinstance(d, Preempt)
                and 0 <= d.job < len(view.infos)
                and view.infos[d.job].job_id in self._preempting
            )
        ]

    def _reasons(
        self, view: LiveView, jobs: list[JobInfo], outcome: Outcome
    ) -> list[tuple[JobInfo, str]]:
        """Each held job of schedlab's that did not start this cycle, with why."""
        started = set(outcome.started)
        skipped = {r["job"]: r["reason"] for r in outcome.records if r["action"] == "skip"}
        out = []
        for job_id in view.queued:
            if job_id in started:
                continue
            info = view.infos[view.index_of(job_id)]
            why = skipped.get(job_id)
            reason = f"skipped: {why}" if why else waiting_reason(self.config.label, info.num_gpus)
            out.append((info, reason))
        by_id = {j.job_id: j for j in jobs}
        for job_id, why in view.waiting.items():
            out.append((by_id[job_id], f"not eligible: {why}"))
        return out

    # -- the loop --------------------------------------------------------------------------
    def network(self) -> ServeTopology:
        """The network under the partition, loaded once (see :func:`load_network`)."""
        if self._network is None:
            self._network = load_network(self.config, self.client, self.policies.placement)
        return self._network

    def describe_cluster(self) -> list[NodeInfo]:
        """The partition's nodes and the network under them, checked once before the first
        cycle: a placement that needs a topology is refused when there is none."""
        try:
            nodes = read_nodes(self.client.sinfo(), self.config.partition)
        except SlurmError as exc:
            raise SlurmError(f"cannot read the cluster: {exc}") from None
        if not nodes:
            where = f"partition '{self.config.partition}'" if self.config.partition else "Slurm"
            raise InputError(f"{where} has no nodes (check '--partition' and 'sinfo')")
        self.network().for_nodes(nodes)  # a node under no switch: an error before any cycle
        return nodes

    def serve_record(self, nodes: list[NodeInfo]) -> Record:
        """The ``serve`` record a run begins with: the settings and the nodes, all a reader of
        the journal needs to rebuild what the policy saw."""
        cfg = self.config
        return dict(
            policy=cfg.label,
            placement=cfg.placement,
            params=dict(cfg.params),
            plugins=list(cfg.plugins),
            partition=cfg.partition,
            interval=cfg.interval,
            seed=cfg.seed,
            nodes=[n.name for n in nodes],
            node_gpus=[n.gpus for n in nodes],
            node_models=[GPU_MODELS[m] if m >= 0 else "" for m in map(node_model, nodes)],
            node_cpus=[n.cpus for n in nodes],
            node_memory_mib=[n.memory_mib for n in nodes],
            cluster=cluster_spec(nodes),
            shadow=cfg.shadow,
            topology=self.network().source if self.network().available else None,
            **self.network().for_replay(nodes),
            min_runtime=cfg.min_runtime,
            grace=cfg.grace,
            **({"tenancy": tenancy_record(cfg.tenancy)} if cfg.tenancy.enabled else {}),
        )

    def run(self, report: Callable[[CycleReport], None] | None = None) -> int:
        """Cycle until SIGTERM/SIGINT (or, with ``until_idle``, until nothing is left)."""
        self._write(None, "serve", **self.serve_record(self.describe_cluster()))
        cfg = self.config
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            while self.stop_reason is None:
                started = self.clock()
                result = self.cycle()
                if report is not None:
                    report(result)
                if cfg.until_idle and result.ok and result.idle:
                    self.stop_reason = "idle"
                    break
                while self.stop_reason is None:
                    left = started + cfg.interval - self.clock()
                    if left <= 0:
                        break
                    self.sleep(min(left, 0.1))
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._write(None, "stop", reason=self.stop_reason or "error")
            self.journal.close()
        return 0
