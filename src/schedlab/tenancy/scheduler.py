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
from schedlab.tenancy.running import RunningIndex
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
        self.one_node = one_node_jobs(ctx, jobs)
        self.capacity = capacity(ctx.cluster, tree.resources)
        self.share.reset(tree, self.capacity)
        self.ceiling = self.share.ceiling()
        self.queues = LeafQueues(len(tree), len(tree.resources))
        self.index = RunningIndex(self.leaf_of, self.demand, len(tree))
        self.static = self.ordering.static
        self.watch: list[int] = []  # started or reclaimed last time: check they really were
        self.limit_rejected: set[int] = set()
        self._after: tuple[float, TenantState, np.ndarray] | None = None
        # Reclaims that found no victims, by what decided it: not tried again until the
        # running jobs, the shares or the queues' allocation change (the version counts
        # changes to the running jobs).
        self._version = 0
        self._serial = 0
        self._running_after = 0
        self._failed: dict[tuple, tuple] = {}
        # The state of the last decision that tried every queue and started nothing, and the
        # leaves whose waiting jobs changed since (only these can start anything while the
        # state stays: see _idle_key).
        self._idle: tuple | None = None
        self._touched: set[int] = set()
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

    def queue_status(self, snap: Snapshot) -> list[dict[str, Any]]:
        """Every queue's deserved quota, fair share, allocation, pending demand and usage
        (and the policy's own figures) now, for ``serve status``: one row per queue (after
        this time's decision, if one was made)."""
        last = self._after
        if last is not None and last[0] == snap.now:
            st, fair = last[1], last[2]
        else:  # no decision at this time (a status read): queue the pending jobs first
            self._sync(snap, set())
            st = self._state(snap)
            fair = self.share.shares(st)
        extra = self.share.status(st, fair)
        tree = self.tree
        res = tree.resources
        rows = []
        for node in tree.preorder()[1:]:
            row: dict[str, Any] = {
                "queue": tree.label(node),
                "leaf": bool(tree.is_leaf[node]),
                "deserved": _plain(res, tree.deserved[node]),
                "fair_share": _plain(res, fair[node]),
                "alloc": _plain(res, st.alloc[node]),
                "pending": _plain(res, st.pending[node]),
            }
            if st.usage is not None:
                row["usage"] = _plain(res, st.usage[node])
            for key, values in extra.items():
                row[key] = float(values[node])
            rows.append(row)
        return rows

    # -- the queues ------------------------------------------------------------------------
    def _enqueue(self, snap: Snapshot, jobs: list[int]) -> None:
        fresh = [j for j in jobs if j not in self.queues and snap.runtime.status[j] == PENDING]
        if not fresh:
            return
        idx = np.asarray(fresh, dtype=np.int64)
        keys = self.ordering.keys(snap, idx).tolist()
        submit = self.ctx.jobs.submit_time  # type: ignore[union-attr]
        self._touched.update(self.leaf_of[idx].tolist())
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
        index = self.index
        index.sync(snap, self.watch)
        st = TenantState(
            tree=tree,
            now=snap.now,
            capacity=self.capacity,
            alloc=roll_up(tree, index.holdings()),
            pending=roll_up(tree, self.queues.pending),
            alloc_np=np.zeros((len(tree), len(tree.resources))),
            demand=self.demand,
            leaf_of=self.leaf_of,
            running_of=index.array,
            run_began=snap.runtime.run_started,
            submit=snap.jobs.submit_time,
            queued=self.queues.jobs,
            serial=self._serial,
            index=index,
        )
        self._serial += 1
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
        if len(snap.running_set) != self._running_after:  # a job ended (or a preemption waits)
            self._version += 1
        idle = self._idle_key(snap, st, fair)
        if idle is not None and idle == self._idle and not self._fill(snap, st, fair, probe=True):
            decisions: list[Decision] = []  # the changed leaves start nothing: nor would the rest
        else:
            decisions = self._fill(snap, st, fair) if self._may_act(snap, st, fair) else []
        self._idle = idle if not decisions else None
        self._touched = set()
        if decisions:
            self._version += 1
        self._running_after = len(snap.running_set) + sum(
            1 if isinstance(d, Start) else -1 for d in decisions
        )
        self.watch = [d.job for d in decisions]
        self._after = (snap.now, st, fair)
        if self.recorder is not None:
            self.recorder.record(snap.now, st, fair)
        if self.share.time_based:
            self.share.observe(snap.now, st.alloc)
        return out + decisions

    def _idle_key(self, snap: Snapshot, st: TenantState, fair: np.ndarray) -> tuple | None:
        """What a decision's outcome depends on besides the waiting jobs, for a share policy
        whose answers depend on nothing else (None: not such a policy or ordering).

        When the last decision tried every leaf and started nothing, and this key has not
        moved since, every leaf whose waiting jobs did not change would fail again exactly as
        it did: its tries see the same allocation, shares, free GPUs and running jobs. Only the
        changed leaves are then tried, without acting (:meth:`_fill` with ``probe``); should
        one of them start something, the whole decision is made as usual (a start changes
        the state the others are tried on). Sums must be exact so that a victim taken back
        leaves the allocation as it was to the bit.
        """
        ordering = self.ordering
        if (
            not self.share.repeatable
            or not ordering.static
            or ordering.preemptive
            or self.strict
            or self.watch
            or not self.index.exact
        ):
            return None
        return (
            self.index.changes,
            snap.free_gpus,
            snap.state.gpu_full_count.tobytes(),
            st.alloc.tobytes(),
            st.pending.shape,
            fair.tobytes(),
        )

    def _may_act(self, snap: Snapshot, st: TenantState, fair: np.ndarray) -> bool:
        """Could anything start now? Not when no waiting job fits in the free GPUs and no
        queue may reclaim for its smallest (the usual state of a busy cluster between
        completions): the decision then ends without looking at each queue."""
        if not len(self.queues):
            return False
        if self.ordering.preemptive:
            return True
        smallest = self.queues.smallest()
        if snap.free_gpus >= int(smallest.min(initial=1 << 30)):
            return True
        return self.share.may_reclaim_any(st, fair, smallest)

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

    def _fill(
        self, snap: Snapshot, st: TenantState, fair: np.ndarray, probe: bool = False
    ) -> list[Decision]:
        """The decision's starts and reclaims. ``probe``: try only the leaves whose waiting
        jobs changed since the last decision, and stop at the first job that would start
        (returning a non-empty list, nothing applied) — ``[]`` when none would."""
        tree, queues = self.tree, self.queues
        cap = {leaf: INF for leaf in tree.leaves.tolist() if queues.count[leaf] > 0}
        if probe:
            cap = {leaf: c for leaf, c in cap.items() if leaf in self._touched}
        starts: list[Decision] = []
        victims: list[int] = []
        state = _Planning(snap.state)
        free = snap.free_gpus
        gone: set[int] = set()  # reclaimed in this decision
        heads: dict[int, int] = {}  # leaf → its best job under its cap
        keys: dict[int, list] = {}  # leaf → the policy's key path for that job (when asked)
        stale = set(cap)  # leaves whose head or key must be looked at again
        local = self.share.local_keys
        preemptive = self.ordering.preemptive
        parked: dict[int, float] = {}  # leaf → its cap before heads too big for `free` were passed
        while cap:
            for leaf in stale:
                first = cap.get(leaf)
                while True:
                    c = cap.get(leaf)
                    item = queues.head(leaf, int(c) if c != INF else 1 << 30) if c else None
                    if item is None:
                        cap.pop(leaf, None)
                        heads.pop(leaf, None)
                        keys.pop(leaf, None)
                        break
                    j = item[-1]
                    n = int(self.gpus[j])
                    if n > free and not preemptive and not self.share.reclaimer(st, fair, leaf, j):
                        # Neither room now nor a right to reclaim: it would fail wherever it
                        # came in the order, so it fails here (the same as tried and failed);
                        # should a reclaim leave more GPUs free, the leaf is looked at again.
                        parked.setdefault(leaf, first)  # type: ignore[arg-type]
                        cap[leaf] = 0 if self.strict else min(cap[leaf], n)
                        continue
                    heads[leaf] = j
                    keys.pop(leaf, None)
                    break
            if not heads:
                break
            if len(heads) == 1:  # nothing to order
                leaf = next(iter(heads))
            else:
                if not local:
                    keys.clear()
                for q, j in heads.items():
                    if q not in keys:
                        keys[q] = self.share.queue_key(st, fair, q, j)
                leaf = first_queue(keys)
            job = heads[leaf]
            n = int(self.gpus[job])
            why = self.share.admit(st, fair, leaf, job) or limit_reason(st, leaf, job)
            alloc: Allocation | None = None
            plan: NetPlan | None = None
            taken: list[int] = []
            roomless = self.one_node[job] and state.room().max() < n  # nowhere to place it
            if why is None and n <= free and not roomless:
                alloc, plan = self.inner._place_planned(job, state.view())
            before = free
            if alloc is not None and probe:
                return [Start(job, alloc, plan)]
            if alloc is None:  # the policy's reclaim rule keeps its own gate with the victims
                alloc, plan, taken = self._reclaim(
                    snap, st, fair, state, leaf, job, gone, free, probe
                )
                if probe and taken:
                    return [Start(job, alloc, plan)]  # type: ignore[arg-type]
            if alloc is None:
                cap[leaf] = 0 if self.strict else min(cap[leaf], n)
                stale = {leaf}
                continue
            changed = set(tree.ancestors[leaf])
            for v in taken:
                changed.update(tree.ancestors[int(self.leaf_of[v])])
                victims.append(v)
                gone.add(v)
                if st.running is not None:  # else built later from the array below
                    st.running[int(self.leaf_of[v])].remove(v)
                running = st.running_array()
                if running is not None:
                    st.running_jobs = running[running != v]
                free += int(snap.runtime.alloc_n[v])
            state.take(job, alloc, plan, self.ctx.jobs)
            st.take(job)
            queues.remove(job, self.demand[job])
            grew = taken and free - n > before
            free -= n
            starts.append(Start(job, alloc, plan))
            stale = {q for q in heads if changed.intersection(tree.ancestors[q])}
            if grew:  # the victims freed more than the job took: passed heads may fit now
                for q, c in parked.items():
                    cap[q] = c
                stale |= set(parked)
                parked.clear()
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
        probe: bool = False,
    ) -> tuple[Allocation | None, NetPlan | None, list[int]]:
        """Victims for ``job``: lower-ranked jobs of its own leaf when the ordering preempts,
        else what the share policy selects from other queues; the placement must fit with the
        victims gone, and those whose GPUs the job does not use are put back."""
        jobs, rt = self.ctx.jobs, snap.runtime
        assert jobs is not None
        if not self.ordering.preemptive and not self.share.reclaimer(st, fair, leaf, job):
            return None, None, []
        cache = not self.ordering.preemptive  # a preemptive ordering's ranks move with time
        key = (leaf, self.demand[job].tobytes(), float(jobs.submit_time[job]))
        seen = (self._version, free, fair.tobytes(), st.alloc.tobytes())
        if cache and self._failed.get(key) == seen:
            return None, None, []
        need = int(self.gpus[job])
        fits = _Fits(self.inner, job, need, free, state, rt, jobs, gone, self.one_node[job])
        found = fits.found

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
            chosen = self.share.select_victims(st, fair, leaf, job, fits)
            st.reclaim_base = None
        if not chosen or "alloc" not in found:
            if cache:
                self._failed[key] = seen
            return None, None, []
        alloc, plan = found["alloc"], found["plan"]
        for v in chosen:
            st.give_back(v)
        stop = limit_reason(st, leaf, job) is not None  # limits hold whatever the policy says
        if stop or probe:  # a probe only learns that the job would start
            for v in chosen:
                st.take(v)
            return (None, None, []) if stop else (alloc, plan, chosen)
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


def one_node_jobs(ctx: ReplayContext, jobs: Any) -> list[bool]:
    """Which jobs the gang placement puts on one node (asking GPUs, no node shape, no more
    than the largest node of their models holds): such a job finds no place while no node has
    that many GPUs free, which the scheduler checks before asking the placement."""
    placer = ctx.placer
    if placer is None or getattr(placer, "whole_job", True) is not None:
        return [False] * len(jobs)
    largest = {m: placer._largest_node(m) for m in np.unique(jobs.gpu_model_mask).tolist()}
    cap = np.asarray([largest[m] for m in jobs.gpu_model_mask.tolist()], dtype=np.int64)
    n = jobs.num_gpus
    one = (n > 0) & (n <= cap) & (jobs.gpus_per_node == 0) & ~jobs.exclusive.astype(bool)
    return one.tolist()


def _plain(resources: tuple[str, ...], values: np.ndarray) -> dict[str, float | None]:
    """A per-resource row as ``{resource: value}``, JSON-ready (no limit: None)."""
    return {
        k: (round(float(v), 6) if np.isfinite(v) else None)
        for k, v in zip(resources, values, strict=True)
    }


class _Fits:
    """``fits(victims)``: does the job's placement find room with ``victims`` gone?

    Victims already taken in this decision, or not running, never fit. Sets of victims are
    mostly tried growing one at a time, so the released state is kept and only the new
    victims are released on it (a different set starts over from a copy).
    """

    def __init__(
        self,
        inner: QueueScheduler,
        job: int,
        need: int,
        free: int,
        state: _Planning,
        rt: Any,
        jobs: Any,
        gone: set[int],
        one_node: bool,
    ) -> None:
        self.inner, self.job, self.need, self.free = inner, job, need, free
        self.state, self.rt, self.jobs, self.gone = state, rt, jobs, gone
        self.one_node = one_node
        self.found: dict[str, Any] = {}
        self.scratch: ClusterState | None = None
        self.released: list[int] = []
        self.freed = free  # GPUs free with the released victims

    def possible(self, candidates: list[int]) -> bool:
        """Could all of ``candidates`` together make room (a quick necessary test)? Enough
        GPUs in all; and a job that fits in one node (and asks no node shape) goes on one
        node, so some node must have that many free with the candidates on it gone."""
        rt, need = self.rt, self.need
        if candidates and self.free + int(rt.alloc_n[candidates].sum()) < need:
            return False
        if not candidates and self.free < need:
            return False
        if not self.one_node:
            return True
        room = self.state.room()
        if int(room.max(initial=0)) >= need:
            return True
        free = room.tolist()
        gain: dict[int, int] = {}
        allocation = rt.allocation
        for v in candidates:
            for node, gpus in allocation[v] or ():
                g = gain.get(node, free[node]) + len(gpus)
                if g >= need:
                    return True
                gain[node] = g
        return False

    def __call__(self, victims: list[int]) -> bool:
        rt = self.rt
        k = len(self.released)
        if victims[:k] != self.released:  # not the set grown: start over
            self.scratch, self.released, self.freed, k = None, [], self.free, 0
        for v in victims[k:]:
            if v in self.gone or rt.status[v] != RUNNING:
                return False
        extra = sum(int(rt.alloc_n[v]) for v in victims[k:])
        if self.freed + extra < self.need:
            return False  # not enough GPUs yet: nothing to release or place
        if self.scratch is None:
            self.scratch = copy_state(self.state.view())
        for v in victims[k:]:
            cpu, mem = int(self.jobs.cpu_milli[v]), int(self.jobs.memory_mib[v])
            give_back(self.scratch, rt.allocation[v] or (), cpu, mem, v)
            self.released.append(v)
        self.freed += extra
        if self.one_node and self.scratch.gpu_full_count.max() < self.need:
            return False  # no node has room: the placement would find none
        alloc, plan = self.inner._place_planned(self.job, self.scratch)
        if alloc is not None:
            self.found.update(alloc=alloc, plan=plan)
        return alloc is not None


class _Planning:
    """The cluster state decisions are planned on: the live state until the first change,
    then a copy. The copy is made only when a placement needs the whole state: until then the
    starts and releases are kept as a list, and the whole free GPUs per node (all a quick
    test needs) are derived from it — most decisions start at most one job and then only test
    whether anything else could fit, and copying costs more than placing."""

    def __init__(self, live: ClusterState) -> None:
        self.live = live
        self.copy: ClusterState | None = None
        self.moves: list[tuple[bool, int, Allocation, NetPlan | None, int, int]] = []
        self._room: np.ndarray | None = None

    def view(self) -> ClusterState:
        if self.copy is None and self.moves:
            self.copy = copy_state(self.live)
            for taking, job, alloc, plan, cpu, mem in self.moves:
                if taking:
                    take(self.copy, alloc, cpu, mem, job, plan)
                else:
                    give_back(self.copy, alloc, cpu, mem, job)
            self.moves.clear()
        return self.copy if self.copy is not None else self.live

    def room(self) -> np.ndarray:
        """Whole free GPUs per node in the planned state (jobs hold whole GPUs: a start takes
        as many whole GPUs as it is given, a release gives them back)."""
        if self.copy is not None:
            return self.copy.gpu_full_count
        if not self.moves:
            return self.live.gpu_full_count
        if self._room is None:
            room = self.live.gpu_full_count.copy()
            for taking, _, alloc, _, _, _ in self.moves:
                for node, gpus in alloc:
                    room[node] += -len(gpus) if taking else len(gpus)
            self._room = room
        return self._room

    def take(self, job: int, alloc: Allocation, plan: NetPlan | None, jobs: Any) -> None:
        cpu, mem = int(jobs.cpu_milli[job]), int(jobs.memory_mib[job])
        if self.copy is not None:
            take(self.copy, alloc, cpu, mem, job, plan)
            return
        self.moves.append((True, job, alloc, plan, cpu, mem))
        self._room = None

    def release(self, job: int, alloc: Allocation | None, jobs: Any) -> None:
        cpu, mem = int(jobs.cpu_milli[job]), int(jobs.memory_mib[job])
        if self.copy is not None:
            give_back(self.copy, alloc or (), cpu, mem, job)
            return
        self.moves.append((False, job, alloc or (), None, cpu, mem))
        self._room = None
