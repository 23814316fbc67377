"""Run a policy class in every engine it declares, on small generated workloads, and check the
contract: no GPU given twice, every pod or job accounted for, the same seed gives the same
result, decisions only about jobs the policy was shown, and honest capabilities (a policy that
claims to be stateless decides the same after a fresh reset; one that claims not to use the
placement policy gives the same result under another).
"""

from __future__ import annotations

import inspect
import itertools
import json
from dataclasses import dataclass, replace

import numpy as np

from schedlab.engines.inflation import inflate
from schedlab.engines.pack import PackConfig, PackResult, run_pack
from schedlab.engines.replay import PolicyError, ReplayConfig, ReplayEngine, ReplayRecord
from schedlab.experiments.replay_network import network_model, topology_cluster
from schedlab.metrics.fragmentation import TargetWorkload
from schedlab.model.cluster import GPU_MILLI
from schedlab.model.jobs import JobTable
from schedlab.model.pods import PodTable
from schedlab.model.snapshot import (
    DONE,
    REJECTED,
    Decision,
    Overhead,
    Overheads,
    Pace,
    Reject,
    Snapshot,
    Start,
)
from schedlab.network.generators import leafspine
from schedlab.network.replay_state import NetworkModel
from schedlab.perf.models import TraceDuration
from schedlab.policies.api import PACK, REPLAY, SERVE
from schedlab.policies.ordering.base import Ordering
from schedlab.policies.placement.base import PlacementPolicy, PodRequest
from schedlab.policies.plugins import reference_of, register
from schedlab.policies.registry import (
    make_placement,
    ordering_classes,
    placement_classes,
    sizing_classes,
)
from schedlab.policies.scheduler import ReplayContext, SchedulingPolicy
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.hostlist import gpu_indices
from schedlab.serve.journal import Journal
from schedlab.serve.loop import ServeConfig, Server
from schedlab.serve.slurm_state import REJECT_MARK
from schedlab.testing.workloads import (
    OCS_TOPOLOGY_SPEC,
    TOPOLOGY_SPEC,
    small_cluster,
    small_jobs,
    small_pods,
)

#: Round length given to round-based policies (those whose constructor takes ``slot``).
SLOT = 300.0


@dataclass(frozen=True)
class Finding:
    """One broken rule: where, which check, and what happened."""

    engine: str
    check: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.engine}] {self.check}: {self.detail}"


def _registered(cls: type) -> str:
    """The name ``cls`` is found by (registered as a plugin if it is not known yet)."""
    for known in (placement_classes(), ordering_classes(), sizing_classes()):
        if known.get(cls.name) is cls:  # type: ignore[attr-defined]
            return str(cls.name)  # type: ignore[attr-defined]
    return register(cls, reference_of(cls), "conformance").name


def _choice(cls: type, name: str, params: dict[str, str]) -> PolicyChoice:
    """A time-based run of ``cls``: a placement runs under fifo, a policy under bestfit."""
    if issubclass(cls, PlacementPolicy):
        return PolicyChoice("fifo", placement=name)
    slot = SLOT if "slot" in inspect.signature(cls.__init__).parameters else None
    return PolicyChoice(name, params=params, slot=slot)


# -- pack ------------------------------------------------------------------------------------
def _check_pack(name: str, cls: type, seeds: tuple[int, ...]) -> list[Finding]:
    out: list[Finding] = []
    cluster = small_cluster()
    for seed in seeds:
        pods = small_pods(seed)
        try:
            runs = [run_pack(cluster, pods, PackConfig(name, seed, 1.2)) for _ in range(2)]
        except (ValueError, PolicyError) as exc:  # the state or the check refuses a placement
            return [Finding(PACK, "never over-allocates", str(exc))]
        first, again = runs
        if not (np.array_equal(first.node, again.node) and first.gpus == again.gpus):
            out.append(Finding(PACK, "same seed, same result", f"seed {seed} differs"))
        s = first.pods
        if len(first.node) != len(s) or len(first.gpus) != len(s):
            out.append(Finding(PACK, "every pod accounted for", "a pod has no outcome"))
            continue
        used = np.zeros((cluster.size, int(cluster.num_gpus.max())), dtype=np.int64)
        for i, (node, gpus) in enumerate(zip(first.node.tolist(), first.gpus, strict=True)):
            if node < 0:
                continue
            if not 0 <= node < cluster.size or any(
                not 0 <= g < cluster.num_gpus[node] for g in gpus
            ):
                out.append(Finding(PACK, "decisions only for what exists", f"pod {i}: {gpus}"))
                continue
            if s.num_gpu[i] > 0 and s.gpu_milli[i] > 0 and len(gpus) != s.num_gpu[i]:
                out.append(Finding(PACK, "every pod accounted for", f"pod {i} got {gpus}"))
            for g in gpus:
                used[node, g] += int(s.gpu_milli[i])
        if (used > GPU_MILLI).any():
            out.append(Finding(PACK, "never over-allocates", "a GPU holds more than 100 %"))
        if not cls.stateful:
            out += _check_pack_stateless(name, seed, pods, first)
    return out


def _check_pack_stateless(
    name: str, seed: int, pods: PodTable, result: PackResult
) -> list[Finding]:
    """A stateless placement policy, reset afresh before every pod, places as the run did."""
    cluster = result.cluster
    state = cluster.new_state()
    target = TargetWorkload.from_pods(pods)
    p = result.pods
    for i, node in enumerate(result.node.tolist()):
        rng = np.random.default_rng(seed)
        inflate(pods, 1.2, cluster.total_gpus, rng)  # the draws the run made before its policy
        fresh = build(PACK, PolicyChoice(name))
        fresh.start(cluster, rng, target=target)
        assert fresh.placer is not None
        pod = PodRequest(
            int(p.cpu_milli[i]),
            int(p.memory_mib[i]),
            int(p.num_gpu[i]),
            int(p.gpu_milli[i]),
            int(p.model_mask[i]),
        )
        placed = fresh.placer.place(pod, state)
        got = -1 if placed is None else placed.node
        if got != node or (placed is not None and placed.gpus != result.gpus[i]):
            return [Finding(PACK, "stateless is honest", f"pod {i}: {got} after a fresh reset")]
        if placed is not None:
            state.allocate(
                node, placed.gpus, pod.cpu_milli, pod.memory_mib, pod.gpu_milli, pod.num_gpu
            )
    return []


# -- replay ----------------------------------------------------------------------------------
class _Probe(SchedulingPolicy):
    """Delegates to the policy under test and checks each decision point: decisions only about
    jobs it was shown in the right state, and (when ``fresh`` is given) the same decisions from
    a freshly built and reset copy that took back the state the policy exported (none, if it is
    stateless) and is shown every pending job as new — what serve does every cycle."""

    summary = "checks another policy"

    def __init__(self, inner: SchedulingPolicy, fresh: PolicyChoice | None, seed: int) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.elastic = inner.elastic  # type: ignore[misc]  # the engine checks what it declares
        self.fresh = fresh
        self.seed = seed
        self.findings: list[Finding] = []

    def reset(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        self.inner.reset(ctx)

    def decide(self, snap: Snapshot) -> list[Decision]:
        expected = None
        if self.fresh is not None and not self.findings:
            expected = self._fresh_decisions(
                snap, json.loads(json.dumps(self.inner.export_state()))
            )
        decisions = self.inner.decide(snap)
        started = {d.job for d in decisions if isinstance(d, Start)}
        for d in decisions:
            if isinstance(d, Start | Reject):
                known = d.job in snap.pending_set
            elif isinstance(d, Overhead | Pace):  # applied after the starts of the same decision
                known = d.job in snap.running_set or d.job in started
            elif isinstance(d, Overheads):
                known = all(j in snap.running_set or j in started for j in d.jobs)
            else:
                known = d.job in snap.running_set
            if not known:
                self.findings.append(
                    Finding(REPLAY, "decisions only for known jobs", f"{d} at t={snap.now}")
                )
        if expected is not None and sorted(map(repr, expected)) != sorted(map(repr, decisions)):
            self.findings.append(
                Finding(
                    REPLAY,
                    "state rebuild is honest" if self.inner.stateful else "stateless is honest",
                    f"at t={snap.now} a fresh reset decides {expected}, the run {decisions}",
                )
            )
        return decisions

    def _fresh_decisions(self, snap: Snapshot, state: dict[str, object]) -> list[Decision]:
        assert self.fresh is not None
        policies = build(REPLAY, self.fresh)
        policies.start(
            snap.cluster,
            np.random.default_rng(self.seed),
            jobs=snap.jobs,
            perf=self.ctx.perf,
            topology=self.ctx.topology,
            network=self.ctx.network,
        )
        assert policies.scheduler is not None
        policies.scheduler.import_state(state)
        return policies.scheduler.decide(replace(snap, new_pending=list(snap.pending_set)))

    def next_wakeup(self, snap: Snapshot) -> float:
        return self.inner.next_wakeup(snap)

    def describe(self) -> str:
        return self.inner.describe()


def small_network(jobs: JobTable, seed: int) -> NetworkModel:
    """A network under :func:`small_cluster` for placements that need one (``requires_topology``):
    two leaves of a leaf-spine fabric (the 8-GPU nodes on one, the 4-GPU nodes on the other),
    100 Gbps NICs, ECMP, random-phase sharing."""
    cluster = small_cluster()
    base = leafspine(leaves=2, spines=2, hosts_per_leaf=3, g=8, m=1, nic_gbps=100.0)
    leaf = np.where(cluster.num_gpus == cluster.num_gpus.max(), 0, 1)
    topo = replace(
        base,
        host_gpus=cluster.num_gpus.astype(np.int64),
        host_nics=np.ones(cluster.size, dtype=np.int64),
        host_nic_gbps=np.full(cluster.size, 100.0),
        host_leaf=base.leaves[leaf],
        host_names=tuple(str(n) for n in cluster.names),
    )
    return network_model(
        topo,
        jobs.sorted_by_submit(),
        TraceDuration(),
        rule="random-phase",
        routing="ecmp",
        seed=seed,
        trace=None,
        fmt=None,
        builtin=False,
    )


def _replay(
    choice: PolicyChoice, seed: int, probe_fresh: bool, placement: str | None = None
) -> tuple[ReplayRecord | None, list[Finding]]:
    policies = build(REPLAY, choice)
    assert policies.scheduler is not None
    # Stateless policies, and stateful ones that run in serve (where they are rebuilt from
    # their exported state every cycle), must decide the same after a fresh reset.
    rebuilt = not policies.scheduler.stateful or SERVE in policies.scheduler.engines
    rebuilt = rebuilt and not policies.placement.stateful
    probe = _Probe(policies.scheduler, choice if probe_fresh and rebuilt else None, seed)
    place = policies.placement if placement is None else make_placement(placement)
    cluster, jobs, network = small_cluster(), small_jobs(seed), None
    if getattr(place, "requires_topology", False):
        # A network placement runs on a small leaf-spine fabric (its hosts are the cluster).
        spec = OCS_TOPOLOGY_SPEC if getattr(place, "needs_ocs", False) else TOPOLOGY_SPEC
        topo, cluster = topology_cluster(spec, None)
        options = {"rule": "random-phase", "routing": "ecmp", "trace": None, "fmt": None}
        network = network_model(
            topo, jobs.sorted_by_submit(), TraceDuration(), seed=seed, builtin=False, **options
        )
    engine = ReplayEngine(
        cluster, jobs, probe, place, TraceDuration(), ReplayConfig(seed), network=network
    )
    try:
        return engine.run(), probe.findings
    except PolicyError as exc:  # a start on busy GPUs, a decision about a job not in that state
        return None, [*probe.findings, Finding(REPLAY, "valid decisions", str(exc))]


def _same(a: ReplayRecord, b: ReplayRecord) -> bool:
    return (
        np.array_equal(a.status, b.status)
        and np.array_equal(a.first_start, b.first_start, equal_nan=True)
        and np.array_equal(a.end_time, b.end_time, equal_nan=True)
    )


def _check_replay(cls: type, choice: PolicyChoice, seeds: tuple[int, ...]) -> list[Finding]:
    out: list[Finding] = []
    for seed in seeds:
        record, findings = _replay(choice, seed, probe_fresh=True)
        out += findings
        if record is None:
            continue
        left = ~np.isin(record.status, (DONE, REJECTED))
        if left.any():
            jobs = ", ".join(record.jobs.job_id[left].tolist()[:5])
            out.append(Finding(REPLAY, "every job accounted for", f"never finished: {jobs}"))
        again, _ = _replay(choice, seed, probe_fresh=False)
        if again is None or not _same(record, again):
            out.append(Finding(REPLAY, "same seed, same result", f"seed {seed} differs"))
        if not getattr(cls, "uses_placement", True):
            other, _ = _replay(choice, seed, probe_fresh=False, placement="random")
            if other is None or not _same(record, other):
                out.append(
                    Finding(REPLAY, "uses_placement is honest", "another placement changes it")
                )
    return out


# -- serve -----------------------------------------------------------------------------------
#: The fake partition's switch tree (``scontrol show topology``): two leaves of two nodes.
SERVE_TREE = (
    "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=n[1-2]\n"
    "SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=n[3-4]\n"
    "SwitchName=spine Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=leaf[1-2]\n"
)


def _serve(choice: PolicyChoice, seed: int) -> tuple[FakeSlurm, list[Finding]]:
    """Serve a fake four-node partition until every job is done (or 30 cycles have passed);
    running jobs finish two cycles after they start."""
    rng = np.random.default_rng(seed)
    nodes = [fake_node(f"n{i}", gpus=4) for i in range(1, 5)]
    gpus = [*rng.choice([1, 1, 2, 4], size=10).tolist(), 32]
    jobs = [fake_job(100 + k, g, 1000.0 + k) for k, g in enumerate(gpus)]
    fake = FakeSlurm(nodes, jobs, start_on_release=True)
    fake.topology_text = SERVE_TREE  # for network placements (no other policy reads it)
    config = ServeConfig(
        choice.policy, choice.placement, choice.backfill, dict(choice.params), seed=seed
    )
    ticks = itertools.count()
    server = Server(fake, config, Journal(None), clock=lambda: 2000.0 + 60 * next(ticks))
    findings: list[Finding] = []
    started: dict[int, int] = {}
    for cycle in range(30):
        try:
            report = server.cycle()
        except Exception as exc:  # a policy bug must be a finding, not a crash of the suite
            return fake, [Finding(SERVE, "valid decisions", f"{type(exc).__name__}: {exc}")]
        for job_id, job in fake.jobs.items():
            if job["job_state"] != "RUNNING":
                continue
            held = sum(len(gpu_indices(d)) for d in job["gres_detail"])
            want = int(str(job["tres_per_node"] or job["tres_per_job"]).rsplit(":", 1)[1])
            if held != want:
                findings.append(
                    Finding(SERVE, "never over-allocates", f"job {job_id} got {held} of {want}")
                )
            started.setdefault(job_id, cycle)
            if cycle - started[job_id] >= 2:
                fake.finish(job_id)
        if report.idle:
            break
    left = [
        j
        for j, job in fake.jobs.items()
        if job["job_state"] != "COMPLETED" and REJECT_MARK not in str(job["comment"])
    ]
    if left:
        findings.append(Finding(SERVE, "every job accounted for", f"left: {left}"))
    return fake, findings


def _check_serve(choice: PolicyChoice, seeds: tuple[int, ...]) -> list[Finding]:
    out: list[Finding] = []
    for seed in seeds:
        fake, findings = _serve(choice, seed)
        out += findings
        again, _ = _serve(choice, seed)
        if fake.calls != again.calls:
            out.append(Finding(SERVE, "same seed, same result", f"seed {seed} differs"))
    return out


# -- the suite -------------------------------------------------------------------------------
def check_policy(
    cls: type,
    *,
    params: dict[str, str] | None = None,
    engines: tuple[str, ...] | None = None,
    seeds: tuple[int, ...] = (0, 1),
) -> list[Finding]:
    """Every broken rule of the contract, running ``cls`` in each engine it declares (or in
    ``engines``); an empty list means it conforms. ``params`` are its ``--param`` values."""
    if not issubclass(cls, PlacementPolicy | Ordering | SchedulingPolicy):
        return [Finding("-", "is a policy", f"{cls!r} does not subclass a policy base")]
    name = _registered(cls)
    declared = tuple(e for e in (PACK, REPLAY, SERVE) if e in cls.engines)
    out: list[Finding] = []
    for engine in engines if engines is not None else declared:
        if engine not in cls.engines:
            out.append(Finding(engine, "declared engines", f"{name} does not declare {engine}"))
        elif engine == PACK:
            if issubclass(cls, PlacementPolicy):
                out += _check_pack(name, cls, seeds)
        elif engine == REPLAY:
            out += _check_replay(cls, _choice(cls, name, params or {}), seeds)
        elif engine == SERVE:
            serve_choice = replace(_choice(cls, name, params or {}), slot=None)
            out += _check_serve(serve_choice, seeds)
    return out


def assert_conforms(cls: type, **kwargs: object) -> None:
    """:func:`check_policy` for pytest: an AssertionError listing every finding."""
    findings = check_policy(cls, **kwargs)  # type: ignore[arg-type]
    if findings:
        raise AssertionError(
            f"{getattr(cls, 'name', cls)} breaks the policy contract:\n"
            + "\n".join(f"  {f}" for f in findings)
        )
