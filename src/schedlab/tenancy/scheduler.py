"""The tenant scheduler: a share policy over an ordering and a placement, as one scheduling
policy that replay, sweeps and serve run like any other.

At each decision:

1. the share policy computes every queue's fair share (:meth:`SharePolicy.shares`);
2. among the leaves with a pending job, the policy's queue order picks one;
3. the existing ordering's best job of that leaf (its head) is the candidate;
4. the policy's admission gate and the existing placement decide whether it starts;
5. if it does not fit, the policy's reclaim rule may pick running victims (taken one by one
   until the placement fits, those not needed put back), preempted through the engine's
   preemption model like any other preemption (checkpoint credit, restart overhead);
   a preemptive ordering also preempts lower-ranked jobs of the same leaf first;
6. otherwise the leaf is not tried again in this decision with a job as big (queues are
   best-effort FIFO: a blocked head does not block smaller jobs behind it, unless
   ``strict_fifo``).

The loop ends when no leaf has a candidate. Shares are computed once per decision (a start or
a reclaim moves demand between allocated and pending but does not change a queue's request).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from schedlab.model.cluster import ClusterState
from schedlab.model.snapshot import (
    PENDING,
    RUNNING,
    Allocation,
    Decision,
    Preempt,
    Reject,
    Snapshot,
    Start,
)
from schedlab.network.plan import NetPlan
from schedlab.policies.ordering.queue_scheduler import QueueScheduler, copy_state, give_back, take
from schedlab.policies.scheduler import ReplayContext, SchedulingPolicy, between_rounds
from schedlab.tenancy.leaf_queues import LeafQueues
from schedlab.tenancy.policy import PRIORITY, SharePolicy, first_queue, limit_reason
from schedlab.tenancy.recorder import TenancyRecorder
from schedlab.tenancy.resources import capacity, job_demand
from schedlab.tenancy.state import TenantState, roll_up
from schedlab.tenancy.tenants import Tenancy

INF = math.inf


class TenantScheduler(SchedulingPolicy):
    """See the module docstring; ``inner`` supplies the ordering and the placement."""

    summary = "a share policy over an ordering and a placement"
    stateful = True
    preemptive = True
    carries_plans = True

    def __init__(
        self,
        inner: QueueScheduler,
        share: SharePolicy,
        tenancy: Tenancy,
        recorder: TenancyRecorder | None = None,
    ) -> None:
        self.inner = inner
        self.share = share
        self.tenancy = tenancy
        self.recorder = recorder
        self.name = inner.name  # type: ignore[misc]
        self.ordering = inner.ordering
        self.slot = inner.slot
        self.network_control = inner.network_control
        self.strict = tenancy.config.strict_fifo

    def describe(self) -> str:
        return f"{self.inner.describe()} / tenancy {self.share.name}"

    # -- life cycle ------------------------------------------------------------------------
    def reset(self, ctx: ReplayContext) -> None:
        self.inner.reset(ctx)
        self.ctx = ctx
        jobs = ctx.jobs
        assert jobs is not None
        tree = self.tenancy.tree
        self.tree = tree
        self.leaf_of = self.tenancy.leaves_for(jobs.job_id)
        self.demand = job_demand(jobs, tree.resources)
        self.gpus = jobs.num_gpus
        self.capacity = capacity(ctx.cluster, tree.resources)
        self.share.reset(tree, self.capacity)
        self.ceiling = self.share.ceiling()
        self.queues = LeafQueues(len(tree), len(tree.resources))
        self.static = self.ordering.static
        self.watch: list[int] = []  # started or reclaimed last time: check they really were
        self.limit_rejected: set[int] = set()
        if self.recorder is not None:
            self.recorder.start(tree, self.capacity, jobs, self.leaf_of)

    def export_state(self) -> dict[str, Any]:
        state = self.inner.export_state()
        share = self.share.export_state()
        return {**state, **({"share": share} if share else {})}

    def import_state(self, state: Mapping[str, Any]) -> None:
        self.inner.import_state(state)
        if "share" in state:
            self.share.import_state(state["share"])

    def next_wakeup(self, snap: Snapshot) -> float:
        wake = self.inner.next_wakeup(snap)
        if self.share.time_based and snap.pending_set:
            wake = min(wake, self.share.next_tick(snap.now))
        return wake

    def ranking(self, snap: Snapshot) -> list[int]:
        """Pending jobs queue by queue in the order the share policy would try them now."""
        st = self._state(snap)
        fair = self.share.shares(st)
        heads = {}
        order = []
        for leaf in self.tree.leaves.tolist():
            mine = [j for j in snap.pending().tolist() if self.leaf_of[j] == leaf]
            if mine:
                ranked = self.inner._ranked(snap, np.asarray(mine, dtype=np.int64)).tolist()
                heads[leaf] = ranked
        keys = {q: self.share.queue_key(st, fair, q, jobs[0]) for q, jobs in heads.items()}
        while keys:
            leaf = first_queue(keys)
            order += heads[leaf]
            del keys[leaf]
        return order

    # -- the queues ------------------------------------------------------------------------
    def _enqueue(self, snap: Snapshot, jobs: list[int]) -> None:
        fresh = [j for j in jobs if j not in self.queues and snap.runtime.status[j] == PENDING]
        if not fresh:
            return
        idx = np.asarray(fresh, dtype=np.int64)
        keys = self.ordering.keys(snap, idx).tolist()
        submit = self.ctx.jobs.submit_time  # type: ignore[union-attr]
        for j, k in zip(fresh, keys, strict=True):
            self.queues.add(
                j, int(self.leaf_of[j]), int(self.gpus[j]), (k, float(submit[j]), j), self.demand[j]
            )

    def _sync(self, snap: Snapshot, rejected: set[int]) -> None:
        """Bring the leaf queues in step with the snapshot: arrivals, jobs reclaimed or
        started last time that are (still) pending, and, for orderings whose keys change, a
        fresh ranking."""
        if not self.static:
            self.queues = LeafQueues(len(self.tree), len(self.tree.resources))
            pending = snap.pending()
            if len(pending):
                pending = pending[~np.isin(pending, list(rejected | self.limit_rejected))]
                ranked = self.inner._ranked(snap, pending).tolist()
                for rank, j in enumerate(ranked):
                    self.queues.add(
                        j, int(self.leaf_of[j]), int(self.gpus[j]), (rank, j), self.demand[j]
                    )
            return
        for j in rejected:
            if j in self.queues:
                self.queues.remove(j, self.demand[j])
        back = [j for j in self.watch if snap.runtime.status[j] == PENDING]
        self._enqueue(snap, [j for j in snap.new_pending if j not in rejected] + back)

    # -- the state -------------------------------------------------------------------------
    def _state(self, snap: Snapshot) -> TenantState:
        tree = self.tree
        n, r = len(tree), len(tree.resources)
        running = snap.running()
        leaves = self.leaf_of[running]
        held = np.zeros((n, r))
        if len(running):
            np.add.at(held, leaves, self.demand[running])
        by_leaf: dict[int, list[int]] = {}
        for j, leaf in zip(running.tolist(), leaves.tolist(), strict=True):
            by_leaf.setdefault(leaf, []).append(j)
        st = TenantState(
            tree=tree,
            now=snap.now,
            capacity=self.capacity,
            alloc=roll_up(tree, held),
            pending=roll_up(tree, self.queues.pending),
            alloc_np=np.zeros((n, r)),
            demand=self.demand,
            leaf_of=self.leaf_of,
            running=by_leaf,
            run_began=snap.runtime.run_started,
            submit=snap.jobs.submit_time,
            queued=self.queues.jobs,
        )
        if self.share.time_based:
            self.share.observe(snap.now, st.alloc)
            st.usage = self.share.usage(snap.now)
        return st

    # -- deciding --------------------------------------------------------------------------
    def decide(self, snap: Snapshot) -> list[Decision]:
        out: list[Decision] = self.inner._reject_impossible(snap) if snap.new_pending else []
        rejected = {d.job for d in out if isinstance(d, Reject)}
        self._sync(snap, rejected)
        out += self._reject_over_limit(snap)
        if between_rounds(snap.now, self.slot):
            return out
        st = self._state(snap)
        fair = self.share.shares(st)
        decisions = self._fill(snap, st, fair) if len(self.queues) else []
        self.watch = [d.job for d in decisions]
        if self.recorder is not None:
            self.recorder.record(snap.now, st, fair, self.share)
        if self.share.time_based:
            self.share.observe(snap.now, st.alloc)
        return out + decisions

    def _reject_over_limit(self, snap: Snapshot) -> list[Decision]:
        """Jobs bigger than their queue could ever hold (its limits, the policy's ceiling)
        can never start: turned away at arrival with the reason."""
        out: list[Decision] = []
        tree = self.tree
        for j in snap.new_pending:
            if j not in self.queues:
                continue
            leaf = int(self.leaf_of[j])
            over = self.demand[j] > self.ceiling[leaf] + 1e-9
            if over.any():
                r = int(np.flatnonzero(over)[0])
                self.queues.remove(j, self.demand[j])
                self.limit_rejected.add(j)
                out.append(
                    Reject(
                        j,
                        f"asks more {tree.resources[r]} than queue {tree.label(leaf)!r} may "
                        f"hold ({self.ceiling[leaf, r]:g} under {self.share.name})",
                    )
                )
        return out

    def _fill(self, snap: Snapshot, st: TenantState, fair: np.ndarray) -> list[Decision]:
        tree, queues = self.tree, self.queues
        cap = {leaf: INF for leaf in tree.leaves.tolist() if queues.count[leaf] > 0}
        starts: list[Decision] = []
        victims: list[int] = []
        state = _Planning(snap.state)
        free = snap.free_gpus
        gone: set[int] = set()  # reclaimed in this decision
        while cap:
            heads = {}
            for leaf, c in list(cap.items()):
                item = queues.head(leaf, int(c) if c != INF else 1 << 30)
                if item is None:
                    del cap[leaf]
                else:
                    heads[leaf] = item[-1]
            if not heads:
                break
            leaf = first_queue({q: self.share.queue_key(st, fair, q, j) for q, j in heads.items()})
            job = heads[leaf]
            n = int(self.gpus[job])
            why = self.share.admit(st, fair, leaf, job) or limit_reason(st, leaf, job)
            alloc: Allocation | None = None
            plan: NetPlan | None = None
            taken: list[int] = []
            if why is None and n <= free:
                alloc, plan = self.inner._place_planned(job, state.view())
            if alloc is None:  # the policy's reclaim rule keeps its own gate with the victims
                alloc, plan, taken = self._reclaim(snap, st, fair, state, leaf, job, gone, free)
            if alloc is None:
                cap[leaf] = 0 if self.strict else min(cap[leaf], n)
                continue
            for v in taken:
                victims.append(v)
                gone.add(v)
                st.running[int(self.leaf_of[v])].remove(v)
                free += int(snap.runtime.alloc_n[v])
            state.take(job, alloc, plan, self.ctx.jobs)
            st.take(job)
            queues.remove(job, self.demand[job])
            free -= n
            starts.append(Start(job, alloc, plan))
        return [Preempt(v) for v in victims] + starts

    def _reclaim(
        self,
        snap: Snapshot,
        st: TenantState,
        fair: np.ndarray,
        state: _Planning,
        leaf: int,
        job: int,
        gone: set[int],
        free: int,
    ) -> tuple[Allocation | None, NetPlan | None, list[int]]:
        """Victims for ``job``: lower-ranked jobs of its own leaf when the ordering preempts,
        else what the share policy selects from other queues; the placement must fit with the
        victims gone, and those whose GPUs the job does not use are put back."""
        jobs, rt = self.ctx.jobs, snap.runtime
        assert jobs is not None
        need = int(self.gpus[job])
        found: dict[str, Any] = {}

        def fits(victims: list[int]) -> bool:
            if free + sum(int(rt.alloc_n[v]) for v in victims) < need:
                return False
            scratch = copy_state(state.view())
            for v in victims:
                cpu, mem = int(jobs.cpu_milli[v]), int(jobs.memory_mib[v])
                give_back(scratch, rt.allocation[v] or (), cpu, mem, v)
            alloc, plan = self.inner._place_planned(job, scratch)
            if alloc is not None:
                found.update(alloc=alloc, plan=plan)
            return alloc is not None

        chosen: list[int] | None = None
        same = False
        if self.ordering.preemptive:
            own = self._lower_ranked(snap, leaf, job, gone)
            for k in range(1, len(own) + 1):
                if fits(own[:k]):
                    chosen, same = own[:k], True
                    break
        if chosen is None:
            st.reclaim_base = st.alloc.copy()
            chosen = self.share.select_victims(st, fair, leaf, job, _Exclude(fits, gone, rt))
            st.reclaim_base = None
        if not chosen or "alloc" not in found:
            return None, None, []
        alloc, plan = found["alloc"], found["plan"]
        for v in chosen:
            st.give_back(v)
        if limit_reason(st, leaf, job) is not None:  # limits hold whatever the policy says
            for v in chosen:
                st.take(v)
            return None, None, []
        used = {(node, g) for node, gpus in alloc for g in gpus}
        taken = []
        for v in reversed(chosen):  # put back what the job does not use, if the quota allows
            mine = {(node, g) for node, gpus in rt.allocation[v] or () for g in gpus}
            if not mine & used:
                st.take(v)
                if same or self.share.quota_fits(st, fair, leaf, job):
                    continue
                st.give_back(v)
            taken.append(v)
        taken.reverse()
        if self.recorder is not None:
            for v in taken:
                why = PRIORITY if same else self.share.reason(st, fair, leaf, job, v)
                self.recorder.reclaim(snap, leaf, job, v, why)
        for v in taken:
            state.release(v, rt.allocation[v], jobs)
        return alloc, plan, taken

    def _lower_ranked(self, snap: Snapshot, leaf: int, job: int, gone: set[int]) -> list[int]:
        """Running jobs of ``leaf`` the ordering ranks below ``job`` (lowest first)."""
        running = [v for v in snap.running().tolist() if self.leaf_of[v] == leaf and v not in gone]
        if not running:
            return []
        idx = np.asarray([*running, job], dtype=np.int64)
        ranked = self.inner._ranked(snap, idx).tolist()
        below = ranked[ranked.index(job) + 1 :]
        return below[::-1]


class _Exclude:
    """``fits`` for a share policy: victims already gone, or not running, never fit."""

    def __init__(self, fits: Any, gone: set[int], rt: Any) -> None:
        self.fits, self.gone, self.rt = fits, gone, rt

    def __call__(self, victims: list[int]) -> bool:
        if any(v in self.gone or self.rt.status[v] != RUNNING for v in victims):
            return False
        return bool(self.fits(victims))


class _Planning:
    """The cluster state decisions are planned on: the live state until the first change,
    then a copy (most decisions start at most one job; copying costs more than placing)."""

    def __init__(self, live: ClusterState) -> None:
        self.live = live
        self.copy: ClusterState | None = None

    def view(self) -> ClusterState:
        return self.copy if self.copy is not None else self.live

    def _own(self) -> ClusterState:
        if self.copy is None:
            self.copy = copy_state(self.live)
        return self.copy

    def take(self, job: int, alloc: Allocation, plan: NetPlan | None, jobs: Any) -> None:
        take(self._own(), alloc, int(jobs.cpu_milli[job]), int(jobs.memory_mib[job]), job, plan)

    def release(self, job: int, alloc: Allocation | None, jobs: Any) -> None:
        give_back(
            self._own(), alloc or (), int(jobs.cpu_milli[job]), int(jobs.memory_mib[job]), job
        )
