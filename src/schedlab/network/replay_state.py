"""The network as the replay engine sees it: a rate model it calls at start, stop and settle.

The engine tells a :class:`NetworkState` when a job takes an allocation (:meth:`~NetworkState.
start`: start, restart, resize) and when it gives one up (:meth:`~NetworkState.stop`: completion,
preemption, resize), then once per decision point asks :meth:`~NetworkState.settle` which jobs'
speeds changed. Only then is the sharing solver run, on the jobs whose links changed; nothing here
runs per flow or per round. A job's rate is its performance model's rate times ``base / T``:
``T`` is its iteration time under sharing and ``base`` the iteration time the performance model
already assumes (for trace durations the job's iteration time alone on a compact placement, see
:mod:`schedlab.network.reference`; the builtin model's own iteration time for ``--throughputs
builtin``; for an LLM job the planner's step time on the allocation).

An LLM job's traffic is not one collective over its GPUs but what its plan sends across nodes
(:func:`schedlab.perf.llm.netcomm.step_transfers`): the model's ``planned`` hook gives, per
allocation, those rank-level transfers with ``C``, ``o`` and the base step time, and the
footprint routes them (:func:`~schedlab.network.footprint.transfers_footprint`).

The state also keeps what the network metrics need, incrementally: per-link utilisation and its
time integral, compute utilisation, machines used and fragmentation, and per job the time
integrals of its communication share, slowdown and iterations.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import Allocation, allocation_size
from schedlab.network.collectives import CommSpec, Transfers
from schedlab.network.crux_control import DEFAULT_LEVELS, CruxController, CruxJob, Path
from schedlab.network.footprint import (
    Footprint,
    cross_leaf_aggregates,
    footprint,
    transfers_footprint,
)
from schedlab.network.jobcomm import JobComm
from schedlab.network.metrics import machine_fragmentation_at
from schedlab.network.plan import NetPlan
from schedlab.network.reference import ReferenceTimes
from schedlab.network.reservation import Reservations
from schedlab.network.routing import FlowKey, Routing
from schedlab.network.sharing import DEFAULT_ALPHA, SharingSolver, iteration_time
from schedlab.network.topology import TIER_INTRA, TIERS, Topology

#: ``base_time(job, gpus)``: the iteration time the performance model assumes on ``gpus`` GPUs.
BaseTime = Callable[[int, int], float]


@dataclass(frozen=True)
class NetworkModel:
    """Everything fixed about a run's network; :meth:`new_state` gives one run's mutable state."""

    topology: Topology
    rule: str
    routing: Routing
    comm: JobComm
    #: None: trace run times, whose base is the reference iteration time (compact placement).
    base_time: BaseTime | None
    alpha: float = DEFAULT_ALPHA
    #: ``crux``: a Crux controller sets paths and priority levels (``routing`` is then
    #: ``policy`` and ``rule`` ``priority``); empty: the routing alone decides paths.
    control: str = ""
    levels: int = DEFAULT_LEVELS
    #: ``(jobs, job, allocation)`` → the job's :class:`PlannedComm` there, or None for a job
    #: that communicates as :attr:`comm` says (LLM jobs: their plan's traffic).
    planned: Callable[[JobTable, int, Allocation], PlannedComm | None] | None = None

    def new_state(self, jobs: JobTable) -> NetworkState:
        return NetworkState(self, jobs)


@dataclass(frozen=True)
class PlannedComm:
    """One LLM job's traffic and times on one allocation (see the module docstring): rank-level
    ``transfers`` (data-parallel rings, then the pipeline's pairs), ``compute`` C (the step less
    the analytic data-parallel and pipeline terms the network replaces), ``overlap`` o
    (``ω_dp·t_b/C``), ``base`` (the planner's step time, which its rate assumes) and the
    gradient bytes each GPU reduces (for the record)."""

    transfers: Transfers
    compute: float
    overlap: float
    base: float
    gradient_bytes: float


@dataclass
class _Active:
    fp: Footprint
    spec: CommSpec
    base: float
    gpus: int
    hosts: tuple[tuple[int, int], ...]  # (host, GPUs the job holds there)
    links: np.ndarray
    load: np.ndarray  # link-seconds per iteration on each of ``links``
    shared: bool  # in the solver (uses a link another job could use)
    t_iso: float
    t: float = math.inf
    last: float = 0.0
    allocation: Allocation = ()
    paths: dict[FlowKey, Path] | None = None  # set by the Crux controller
    flows: tuple[tuple[FlowKey, ...], tuple[float, ...]] | None = None  # cross-leaf aggregates
    plan: NetPlan | None = None
    planned: PlannedComm | None = None  # an LLM job's plan traffic


@dataclass
class NetworkRecord:
    """What a replay with a network leaves behind for jobs.csv, timeseries.csv and summary.json."""

    topology: Topology
    rule: str
    routing: str
    hosts: np.ndarray
    leaves: np.ndarray
    collective: np.ndarray
    comm_share: np.ndarray
    cross_host_bytes: np.ndarray
    cross_leaf_bytes: np.ndarray
    #: Sender-side cross-host bytes of one iteration on the job's last allocation (0: one host).
    cross_host_per_iteration: np.ndarray
    net_slowdown: np.ndarray
    ts_machines_used: np.ndarray
    ts_machine_frag_rate: np.ndarray
    ts_machine_frag_share: np.ndarray
    ts_compute_util: np.ndarray
    ts_link_util: dict[str, np.ndarray]  # tier → mean utilisation over the tier's links
    link_util_avg: np.ndarray  # per link, time-averaged over the run
    solver_rounds: int
    solves: int
    footprints: int
    extra: dict[str, float] = field(default_factory=dict)


class NetworkState:
    """One run's network: active jobs, the sharing solver and the metric accumulators."""

    def __init__(self, model: NetworkModel, jobs: JobTable) -> None:
        self.m = model
        self.jobs = jobs
        topo = model.topology
        self.topo = topo
        n = len(jobs)
        self.solver = SharingSolver(model.rule, model.alpha, private=topo.link_tier == TIER_INTRA)
        self.active: dict[int, _Active] = {}
        # Trace run times: a job alone on a compact placement of the starting fabric keeps them.
        self.reference = ReferenceTimes(topo, model.alpha) if model.base_time is None else None
        self.changed: dict[int, None] = {}  # started jobs not in the solver, to report at settle
        # Source routing: each job's paths are reserved at its start and released at its stop.
        self.reservations = Reservations() if model.routing.mode == "source" else None
        # Crux: re-planned at the first settle after the set of running jobs changed. Its
        # compression draws from its own stream of the run's seed.
        self.crux = (
            CruxController(
                topo, np.random.default_rng([model.routing.seed, 0x63727578]), model.levels
            )
            if model.control == "crux"
            else None
        )
        self.replan = False
        self.reroutes = 0
        self.circuit_moves = 0  # running jobs re-wired onto other circuits (OCS repacking)
        self._circuit_cache: dict[tuple[tuple[int, int], ...], Topology] = {}
        # Per job, over all its runs.
        self.hosts = np.zeros(n, dtype=np.int64)
        self.leaves = np.zeros(n, dtype=np.int64)
        self.collective = np.array([""] * n, dtype=object)
        self.run_time = np.zeros(n)
        self.comm_int = np.zeros(n)  # ∫ (T − C)/T dt
        self.slow_int = np.zeros(n)  # ∫ T/T^iso dt
        self.xhost = np.zeros(n)  # ∫ cross-host bytes per iteration / T dt
        self.xleaf = np.zeros(n)
        self.xhost_iter = np.zeros(n)  # cross-host bytes per iteration, last allocation
        # Links.
        self.tier = topo.link_tier
        self.util = np.zeros(topo.num_links)
        self.util_int = np.zeros(topo.num_links)
        self.util_last = np.zeros(topo.num_links)
        self.tier_sum = np.zeros(len(TIERS))
        self.tier_count = np.bincount(self.tier, minlength=len(TIERS)).astype(np.float64)
        # Hosts and GPUs.
        self.host_busy = np.zeros(topo.num_hosts, dtype=np.int64)
        self.cap_active = 0
        self.hosts_active = 0
        self.busy_total = 0
        self.compute_sum = 0.0  # Σ N_j·C_j/T_j
        self.total_gpus = int(topo.host_gpus.sum())
        self.footprints = 0
        self.solves = 0
        self.t0: float | None = None
        self.ts: dict[str, list[float]] = {
            k: [] for k in ("machines", "frag_rate", "frag_share", "compute")
        }
        self.ts_tier: dict[str, list[float]] = {
            TIERS[i]: [] for i in range(len(TIERS)) if self.tier_count[i] > 0
        }

    # -- the engine's calls ----------------------------------------------------------------------
    def start(
        self, job: int, allocation: Allocation, now: float, plan: NetPlan | None = None
    ) -> None:
        """``job`` takes ``allocation`` at ``now`` (start, restart or the new size of a resize),
        with the links or circuits a network placement reserved for it (``plan``)."""
        m, j = self.m, self.jobs
        gpus = allocation_size(allocation)
        planned = m.planned(j, job, allocation) if m.planned is not None else None
        if planned is not None:
            spec = CommSpec(  # its footprint comes from the plan (the collective is unused)
                gradient_bytes=planned.gradient_bytes,
                compute=planned.compute,
                overlap=planned.overlap,
                priority=int(m.comm.priority[job]),
            )
        else:
            spec = CommSpec(
                collective=str(m.comm.collective[job]),
                gradient_bytes=float(m.comm.gradient_bytes[job]),
                compute=m.comm.compute(job, int(j.num_gpus[job]), gpus),
                overlap=float(m.comm.overlap[job]),
                priority=int(m.comm.priority[job]),
            )
        if plan is None or plan.empty:
            routing = self._routing(job, allocation)
            fp = _footprint(spec, planned, allocation, self.topo, routing, job)
        else:
            fp = self._planned_footprint(spec, allocation, job, plan, planned)
        self.footprints += 1
        links, _, load = fp.link_totals()
        if plan is not None and plan.circuits:
            # The job's circuits are its own fabric (see _planned_footprint): only its host
            # links are links of the run's fabric, and only they count in per-link utilisation.
            mine = links < self.topo.fabric_base
            links, load = links[mine], load[mine]
        # Intra-host links belong to one GPU each: a job using only those shares nothing; nor
        # does a job whose plan makes its links private.
        shared = bool((self.tier[links] != TIER_INTRA).any())
        if plan is not None and plan.private:
            shared = False
        t_iso = iteration_time(spec, fp.comm_time(m.alpha))
        hosts = tuple((node, len(slots)) for node, slots in allocation)
        if planned is not None:
            base = planned.base
        elif m.base_time is not None:
            base = m.base_time(job, gpus)
        else:
            assert self.reference is not None
            base = self.reference.iteration_time(spec, gpus)
        act = _Active(
            fp,
            spec,
            base,
            gpus,
            hosts,
            links,
            load,
            shared,
            t_iso,
            last=now,
            allocation=allocation,
            plan=plan,
            planned=planned,
        )
        self.active[job] = act
        if shared:
            self.solver.add(job, fp, spec)
        else:
            self.changed[job] = None
        self.hosts[job], self.leaves[job] = fp.hosts, fp.leaves
        self.xhost_iter[job] = fp.cross_host_bytes
        self.collective[job] = PLAN_COLLECTIVE if planned is not None else spec.collective
        for node, count in hosts:
            if count == 0:
                continue
            if self.host_busy[node] == 0:
                self.hosts_active += 1
                self.cap_active += int(self.topo.host_gpus[node])
            self.host_busy[node] += count
        self.busy_total += gpus
        self.replan = True

    def stop(self, job: int, now: float) -> None:
        """``job`` gives up its allocation at ``now``."""
        act = self.active.pop(job)
        if self.reservations is not None:
            self.reservations.release(job)
        self._advance(job, act, now)
        self._set_t(act, math.inf, now)
        if act.shared:
            self.solver.remove(job)
        self.changed.pop(job, None)
        for node, count in act.hosts:
            if count == 0:
                continue
            self.host_busy[node] -= count
            if self.host_busy[node] == 0:
                self.hosts_active -= 1
                self.cap_active -= int(self.topo.host_gpus[node])
        self.busy_total -= act.gpus
        self.replan = True

    def move(self, job: int, plan: NetPlan, now: float) -> None:
        """Running ``job`` keeps its allocation but runs over ``plan``'s circuits from ``now``."""
        allocation = self.active[job].allocation
        self.stop(job, now)
        self.start(job, allocation, now, plan)
        self.circuit_moves += 1

    def reconfigure(self, circuits: list[tuple[int, int]], now: float) -> list[int]:
        """Re-wire the OCS to exactly ``circuits`` at ``now``; the jobs that must pause.

        Link ids after the fabric shift when the number of circuits changes, so every running
        job's footprint is recomputed on the new fabric and handed to the solver (its rate is
        then recomputed at :meth:`settle`, like any other change). The jobs returned are those
        whose paths, before or after, cross a circuit that was torn down or set up: their ports
        are re-wired, so they make no progress for the reconfiguration delay.
        """
        old_topo = self.topo
        new_topo = old_topo.with_circuits(circuits)
        old_pairs = _circuit_counts(old_topo)
        new_pairs = _circuit_counts(new_topo)
        moved = {p for p in old_pairs | new_pairs if old_pairs.get(p) != new_pairs.get(p)}
        before = {job: _fabric_pairs(old_topo, act.links) for job, act in self.active.items()}
        allocations = {job: act.allocation for job, act in self.active.items()}
        plans = {job: act.plan for job, act in self.active.items()}
        for job in allocations:
            self.stop(job, now)
        self._swap_topology(new_topo, now)
        paused = []
        for job, allocation in allocations.items():
            self.start(job, allocation, now, plans[job])
            after = _fabric_pairs(new_topo, self.active[job].links)
            if (before[job] | after) & moved:
                paused.append(job)
        return paused

    def settle(self, now: float) -> list[tuple[int, float]]:
        """Re-solve the jobs whose links changed; (job, rate factor base/T) of each of them."""
        out: list[tuple[int, float]] = []
        if self.crux is not None and self.replan:
            self._crux_plan(now)
        self.replan = False
        for job in self.changed:
            act = self.active[job]
            self._advance(job, act, now)
            self._set_t(act, act.t_iso, now)
            out.append((job, act.base / act.t_iso))
        self.changed.clear()
        if self.solver.pending:
            self.solves += 1
            for job, t in self.solver.solve().items():
                act = self.active[job]  # type: ignore[index]
                self._advance(job, act, now)  # type: ignore[arg-type]
                self._set_t(act, t, now)
                out.append((job, act.base / t))  # type: ignore[arg-type]
        return out

    def record(self, now: float) -> None:
        """One timeseries row at ``now`` (after the decision point's changes)."""
        if self.t0 is None:
            self.t0 = now
        ts = self.ts
        ts["machines"].append(self.hosts_active)
        rate, share = machine_fragmentation_at(
            self.cap_active - self.busy_total, self.cap_active, self.total_gpus
        )
        ts["frag_rate"].append(rate)
        ts["frag_share"].append(share)
        ts["compute"].append(max(0.0, self.compute_sum) / self.total_gpus)
        for name, values in self.ts_tier.items():
            i = TIERS.index(name)
            count = self.tier_count[i]  # 0 once an OCS reconfiguration empties the tier
            values.append(max(0.0, self.tier_sum[i]) / count if count else 0.0)

    def finish(self, end: float) -> NetworkRecord:
        """Close every integral at ``end`` and hand the results over."""
        for job, act in self.active.items():
            self._advance(job, act, end)
        self.util_int += self.util * np.maximum(0.0, end - self.util_last)
        self.util_last[:] = end
        span = end - (self.t0 if self.t0 is not None else end)
        link_avg = np.maximum(0.0, self.util_int / span) if span > 0 else np.maximum(0.0, self.util)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(self.run_time > 0, self.comm_int / self.run_time, np.nan)
            slow = np.where(self.run_time > 0, self.slow_int / self.run_time, np.nan)
        ran = self.collective != ""
        return NetworkRecord(
            topology=self.topo,
            rule=self.m.rule,
            routing=self.m.routing.mode,
            hosts=self.hosts,
            leaves=self.leaves,
            collective=self.collective,
            comm_share=share,
            cross_host_bytes=np.where(ran, self.xhost, np.nan),
            cross_leaf_bytes=np.where(ran, self.xleaf, np.nan),
            cross_host_per_iteration=self.xhost_iter,
            net_slowdown=slow,
            ts_machines_used=np.asarray(self.ts["machines"], dtype=np.int64),
            ts_machine_frag_rate=np.asarray(self.ts["frag_rate"]),
            ts_machine_frag_share=np.asarray(self.ts["frag_share"]),
            ts_compute_util=np.asarray(self.ts["compute"]),
            ts_link_util={k: np.asarray(v) for k, v in self.ts_tier.items()},
            link_util_avg=link_avg,
            solver_rounds=self.solver.total_rounds,
            solves=self.solves,
            footprints=self.footprints,
            extra={
                **({"shared_hops": self.reservations.shared_hops} if self.reservations else {}),
                **({"circuit_moves": self.circuit_moves} if self.topo.ocs is not None else {}),
                **(
                    {"crux_plans": self.crux.plans, "crux_reroutes": self.reroutes}
                    if self.crux is not None
                    else {}
                ),
            },
        )

    # -- Crux -------------------------------------------------------------------------------------
    def _crux_plan(self, now: float) -> None:
        """Ask the Crux controller for paths and levels of every job with shared links; re-route
        the jobs whose paths changed and re-level the others (the solver re-solves them)."""
        assert self.crux is not None
        jobs = []
        for job, act in self.active.items():
            if not act.shared:
                continue
            if act.flows is None:
                src, dst, nic, nbytes = cross_leaf_aggregates(act.spec, act.allocation, self.topo)
                keys = tuple(zip(src.tolist(), dst.tolist(), nic.tolist(), strict=True))
                act.flows = (keys, tuple(nbytes.tolist()))
            # Intra-host links are private to a GPU: neither shared nor counted as network bytes.
            contended = self.tier[act.links] != TIER_INTRA
            on_network = self.tier[act.fp.links] != TIER_INTRA
            jobs.append(
                CruxJob(
                    key=job,
                    gpus=act.gpus,
                    compute=act.spec.compute,
                    overlap=act.spec.overlap,
                    t=act.t if math.isfinite(act.t) else act.t_iso,
                    link_time=float(act.load.max()) if len(act.load) else 0.0,
                    link_bytes=float(act.fp.nbytes[on_network].sum()),
                    links=act.links[contended],
                    flows=act.flows[0],
                    flow_bytes=act.flows[1],
                )
            )
        self.crux.topo = self.topo
        plan = self.crux.plan(jobs)
        for job, level in plan.levels.items():
            act = self.active[job]
            paths = plan.paths[job]
            if act.paths is not None and paths == act.paths:
                if act.spec.priority != level:
                    act.spec = replace(act.spec, priority=level)
                    self.solver.set_priority(job, level)
                continue
            act.spec = replace(act.spec, priority=level)
            self._reroute(job, act, paths, now)

    def _reroute(self, job: int, act: _Active, paths: dict[FlowKey, Path], now: float) -> None:
        """Move ``job``'s cross-leaf flows onto ``paths``: a new footprint for the solver."""
        self._advance(job, act, now)
        self._set_t(act, math.inf, now)
        explicit = {key: tuple((link, 1.0) for link in path) for key, path in paths.items()}
        fp = _footprint(
            act.spec,
            act.planned,
            act.allocation,
            self.topo,
            replace(self.m.routing, paths=explicit),
            job,
        )
        self.footprints += 1
        self.reroutes += 1
        act.fp, act.paths = fp, paths
        act.links, _, act.load = fp.link_totals()
        act.t_iso = iteration_time(act.spec, fp.comm_time(self.m.alpha))
        self.solver.add(job, fp, act.spec)

    # -- bookkeeping -----------------------------------------------------------------------------
    def _routing(self, job: int, allocation: Allocation) -> Routing:
        """The run's routing, with the job's freshly reserved paths under source routing."""
        if self.reservations is None:
            return self.m.routing
        leaves = sorted({int(self.topo.host_leaf[node]) for node, slots in allocation if slots})
        paths = self.reservations.reserve(self.topo, job, leaves, self.util)
        for leaf in leaves:
            paths[(leaf, leaf)] = ()  # never routed; marks the paths as replay's reservations
        held = frozenset(link for path in paths.values() for link in path)
        return replace(self.m.routing, reserved=held, leaf_paths=paths)

    def _planned_footprint(
        self,
        spec: CommSpec,
        allocation: Allocation,
        job: int,
        plan: NetPlan,
        planned: PlannedComm | None = None,
    ) -> Footprint:
        """The job's footprint over what its plan reserved.

        Reserved links: source routing over them only. Circuits: the job's circuits are private,
        so its paths are those of a fabric made of its circuits alone (the run's fabric without
        the job's circuits has none of its paths, and no other job's paths cross them): the
        footprint is computed on that fabric, spread evenly over its shortest paths.
        """
        if plan.circuits:
            own = self._circuit_fabric(plan.circuits)
            spray = Routing("spray", seed=self.m.routing.seed)
            return _footprint(spec, planned, allocation, own, spray, job)
        routing = Routing("source", seed=self.m.routing.seed, reserved=plan.links)
        return _footprint(spec, planned, allocation, self.topo, routing, job)

    def _circuit_fabric(self, circuits: tuple[tuple[int, int], ...]) -> Topology:
        """The run's hosts and switches with exactly ``circuits`` as fabric (cached: the OCS
        placements often set the same circuits again)."""
        cache = self._circuit_cache
        topo = cache.get(circuits)
        if topo is None:
            if len(cache) > 256:
                cache.clear()
            topo = cache[circuits] = self.topo.with_circuits(list(circuits))
        return topo

    def _swap_topology(self, topo: Topology, now: float) -> None:
        """Move the per-link state onto ``topo`` (no job active). Links before the fabric keep
        their ids; a circuit that survives keeps its utilisation integral, one that is torn down
        hands it to a new circuit from the same switch port if there is one (the port is the
        same), else its integral leaves the per-link averages."""
        old = self.topo
        self.util_int += self.util * np.maximum(0.0, now - self.util_last)
        n = topo.num_links
        util_int = np.zeros(n)
        base = old.fabric_base
        util_int[:base] = self.util_int[:base]
        old_fab = self.util_int[base : base + len(old.fabric_src)]
        spare: dict[tuple[int, int], list[float]] = {}
        for i, pair in enumerate(_pairs(old)):
            spare.setdefault(pair, []).append(float(old_fab[i]))
        fresh = []
        for i, pair in enumerate(_pairs(topo)):
            if spare.get(pair):
                util_int[base + i] = spare[pair].pop(0)
            else:
                fresh.append((i, pair[0]))
        by_port: dict[int, list[float]] = {}
        for (src, _), values in spare.items():
            by_port.setdefault(src, []).extend(values)
        for i, src in fresh:
            if by_port.get(src):
                util_int[base + i] = by_port[src].pop(0)
        old_agg = old.agg_link_of
        for switch, link in topo.agg_link_of.items():
            if switch in old_agg:
                util_int[link] = self.util_int[old_agg[switch]]
        self.topo = topo
        self.util_int = util_int
        self.util = np.zeros(n)
        self.util_last = np.full(n, now)
        self.tier = topo.link_tier
        self.tier_sum = np.zeros(len(TIERS))
        self.tier_count = np.bincount(self.tier, minlength=len(TIERS)).astype(np.float64)
        rounds = self.solver.total_rounds
        self.solver = SharingSolver(self.m.rule, self.m.alpha, private=self.tier == TIER_INTRA)
        self.solver.total_rounds = rounds
        for i in range(len(TIERS)):
            if self.tier_count[i] > 0 and TIERS[i] not in self.ts_tier:
                # A tier that appears now (e.g. the first leaf-to-leaf circuit) was empty before.
                self.ts_tier[TIERS[i]] = [0.0] * len(self.ts["machines"])

    def _advance(self, job: int, act: _Active, now: float) -> None:
        """Add the job's integrals from its last change to ``now`` at its current T."""
        dt = now - act.last
        if dt > 0 and math.isfinite(act.t):
            t = act.t
            self.run_time[job] += dt
            self.comm_int[job] += (t - act.spec.compute) / t * dt
            self.slow_int[job] += t / act.t_iso * dt
            self.xhost[job] += act.fp.cross_host_bytes * dt / t
            self.xleaf[job] += act.fp.cross_leaf_bytes * dt / t
        act.last = now

    def _set_t(self, act: _Active, t: float, now: float) -> None:
        """Change a job's iteration time: its links' utilisation and the compute sum follow."""
        old = act.t
        delta = (1.0 / t if math.isfinite(t) else 0.0) - (1.0 / old if math.isfinite(old) else 0.0)
        act.t = t
        if delta == 0.0:
            return
        self.compute_sum += act.gpus * act.spec.compute * delta
        links = act.links
        if len(links):
            self.util_int[links] += self.util[links] * (now - self.util_last[links])
            self.util_last[links] = now
            change = act.load * delta
            self.util[links] += change
            self.tier_sum += np.bincount(self.tier[links], change, len(TIERS))


#: The collective jobs.csv names for an LLM job's plan traffic.
PLAN_COLLECTIVE = "plan"


def _footprint(
    spec: CommSpec,
    planned: PlannedComm | None,
    allocation: Allocation,
    topo: Topology,
    routing: Routing,
    job: int,
) -> Footprint:
    """The job's footprint: its plan's transfers (an LLM job), else its collective's."""
    if planned is None:
        return footprint(spec, allocation, topo, routing, job)
    return transfers_footprint(planned.transfers, allocation, topo, routing, job, PLAN_COLLECTIVE)


def _pairs(topo: Topology) -> list[tuple[int, int]]:
    """(source switch, destination switch) of each fabric link, in link order."""
    return list(zip(topo.fabric_src.tolist(), topo.fabric_dst.tolist(), strict=True))


def _circuit_counts(topo: Topology) -> dict[tuple[int, int], int]:
    """How many fabric links join each ordered switch pair (parallel circuits count apiece)."""
    out: dict[tuple[int, int], int] = {}
    for pair in _pairs(topo):
        out[pair] = out.get(pair, 0) + 1
    return out


def _fabric_pairs(topo: Topology, links: np.ndarray) -> set[tuple[int, int]]:
    """The switch pairs of the fabric links among ``links``."""
    base, count = topo.fabric_base, len(topo.fabric_src)
    fab = links[(links >= base) & (links < base + count)] - base
    return set(zip(topo.fabric_src[fab].tolist(), topo.fabric_dst[fab].tolist(), strict=True))
