"""The shared scheduler behind every ordering: walk the ranking, place, backfill, preempt.

Non-preemptive orders start jobs from the head of the queue until one does not fit; with EASY
backfill, that blocked head gets a reservation (the earliest time enough GPUs free up, from oracle
run times of the running jobs) and later jobs may start now if they do not delay it. Preemptive
orders pick the highest-ranked jobs that fit in the cluster's GPU count, start the pending ones
among them, and preempt only as many lower-ranked running jobs as their placement needs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from sortedcontainers import SortedList

from schedlab.engines.decision_check import checked_keys, guarded
from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.model.snapshot import (
    PENDING,
    RUNNING,
    Allocation,
    Decision,
    JobRuntime,
    Preempt,
    Reject,
    RunWatch,
    Snapshot,
    Start,
    allocation_size,
)
from schedlab.network.plan import NetLedger, NetPlan
from schedlab.perf.models import allocation_rate
from schedlab.policies.api import never_fits
from schedlab.policies.ordering.base import Ordering
from schedlab.policies.placement.job_placement import JobRequest
from schedlab.policies.scheduler import (
    ReplayContext,
    SchedulingPolicy,
    between_rounds,
    next_round,
)


def copy_state(state: ClusterState) -> ClusterState:
    """A scratch copy a policy may allocate on while it plans."""
    return state.copy()


def take(
    state: ClusterState,
    allocation: Allocation,
    cpu: int,
    mem: int,
    job: int = -1,
    plan: NetPlan | None = None,
) -> None:
    """``job`` takes ``allocation`` (and the links and circuits of ``plan``) on a scratch state."""
    for node, gpus in allocation:
        state.allocate(node, gpus, cpu, mem, GPU_MILLI if gpus else 0, len(gpus))
    if plan is not None:
        if state.net is None:
            state.net = NetLedger()
        state.net.hold(job, plan)


def give_back(
    state: ClusterState, allocation: Allocation, cpu: int, mem: int, job: int = -1
) -> NetPlan | None:
    """``job`` gives ``allocation`` back on a scratch state, with the plan it held (returned)."""
    for node, gpus in allocation:
        state.release(node, gpus, cpu, mem, GPU_MILLI if gpus else 0, len(gpus))
    return state.net.release(job) if state.net is not None else None


class QueueScheduler(SchedulingPolicy):
    """An ordering × a placement (× optional EASY backfill) as one scheduling policy."""

    summary = "an ordering with a placement plugin"
    #: Starts carry the links and circuits a network placement reserved (``Start.net``).
    carries_plans = True

    def __init__(
        self,
        ordering: Ordering,
        placement: str,
        backfill: bool = False,
        slot: float | None = None,
    ) -> None:
        """``slot``: decide only at multiples of this many seconds (a scheduling round); jobs
        that arrive or finish in between wait for the next round. None: at every event."""
        if slot is not None and not slot > 0:
            raise ValueError(f"'slot' must be > 0 seconds (got {slot})")
        self.ordering = ordering
        self.placement = placement
        self.backfill = backfill
        self.slot = slot
        self.name = ordering.name + ("+backfill" if backfill else "")  # type: ignore[misc]
        # What it can do is what its ordering can do (the queue itself is rebuilt from any
        # snapshot that lists every pending job as new).
        self.stateful = ordering.stateful  # type: ignore[misc]
        self.preemptive = ordering.preemptive
        self.network_control = ordering.network_control
        # An ordering that never asks for a wake-up leaves nothing to do with an empty queue
        # (and, without rounds, nothing to wake for): the engine skips those calls. A subclass
        # that decides or wakes otherwise does not inherit the promise.
        plain = (
            type(ordering).next_wakeup is Ordering.next_wakeup
            and type(self).decide is QueueScheduler.decide
            and type(self).next_wakeup is QueueScheduler.next_wakeup
        )
        self.idle_without_queue = plain
        self.never_wakes = plain and slot is None
        # Without a queue the walk and the preemption plan have nothing to rank or place.
        self.quiet_without_queue = type(self).decide is QueueScheduler.decide

    def describe(self) -> str:
        return f"{self.name} / {self.placement}"

    def reset(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        self.jobs = ctx.jobs
        self.num_gpus = ctx.jobs.num_gpus
        self.submit = ctx.jobs.submit_time
        # The per-job values the queue walk reads one job at a time, as Python lists (a numpy
        # scalar read costs several times a list's).
        j = ctx.jobs
        self._gpus = j.num_gpus.tolist()
        self._submit = j.submit_time.tolist()
        self._cpu = j.cpu_milli.tolist()
        self._mem = j.memory_mib.tolist()
        self._mask = j.gpu_model_mask.tolist()
        self._per_node = j.gpus_per_node.tolist()
        self._nodes = j.num_nodes.tolist()
        self._exclusive = j.exclusive.tolist()
        self.queue: SortedList = SortedList()
        self.in_queue: dict[int, tuple[float, float, int]] = {}
        guarded(self.ordering, "reset", self.ordering.reset, ctx)
        self._never: dict[tuple[int, int, int, int, bool], str | None] = {}
        self._rejected: set[int] = set()
        self._models: list[int] | None = None  # GPU models of the cluster, for _earliest_end
        # GPUs the running jobs asked for, kept as jobs start and stop (the runtime's size log):
        # a preemptive ranking asks at every point whether there is contention at all.
        self._watch = RunWatch()
        self._counted: set[int] = set()
        self._running_need = 0

    def export_state(self) -> dict[str, Any]:
        """The ordering's state; the queue itself is rebuilt from a snapshot listing every
        pending job as new, as serve's snapshots do."""
        state = self.ordering.export_state()
        return {"ordering": state} if state else {}

    def import_state(self, state: Mapping[str, Any]) -> None:
        if "ordering" in state:
            self.ordering.import_state(state["ordering"])

    def next_wakeup(self, snap: Snapshot) -> float:
        wake = self.ordering.next_wakeup(snap)
        if self.slot is not None and snap.pending_set:
            # The next round boundary, while anything waits for one.
            wake = min(wake, next_round(snap.now, self.slot))
        return wake

    # -- helpers ---------------------------------------------------------------------------
    def _place(self, job: int, state: ClusterState) -> Allocation | None:
        return self.ctx.placer.place(
            self._gpus[job],
            self._cpu[job],
            self._mem[job],
            self._mask[job],
            state,
            per_node=self._per_node[job],
            nodes=self._nodes[job],
            exclusive=self._exclusive[job],
            job=job,
        )

    def _place_planned(
        self, job: int, state: ClusterState
    ) -> tuple[Allocation | None, NetPlan | None]:
        """:meth:`_place` and the network plan the placement made with the allocation."""
        alloc = self._place(job, state)
        return alloc, (self.ctx.placer.plan_for(job, alloc) if alloc is not None else None)

    def _earliest_end(self, snap: Snapshot, job: int) -> float:
        """When pending ``job`` would finish if started now on the fastest GPUs of the cluster:
        a bound that rules a backfill candidate out before it is placed."""
        if self._models is None:
            cluster = self.ctx.cluster
            self._models = sorted(set(cluster.model[cluster.num_gpus > 0].tolist()))
        n = self._gpus[job]
        rate = max((self.ctx.perf.rate(self.jobs, job, n, m) for m in self._models), default=0.0)
        return self._end_at(snap, job, rate)

    def _end_on(self, snap: Snapshot, job: int, allocation: Allocation) -> float:
        """When pending ``job`` would finish if started now on ``allocation``: its work at the
        rate of the GPUs actually given (a slower model stretches it), as the engine charges it."""
        models = (int(self.ctx.cluster.model[node]) for node, _ in allocation)
        rate = allocation_rate(self.ctx.perf, self.jobs, job, allocation_size(allocation), models)
        return self._end_at(snap, job, rate)

    @staticmethod
    def _end_at(snap: Snapshot, job: int, rate: float) -> float:
        # A pending job's work left is as banked: nothing progresses while it waits.
        return snap.now + float(snap.runtime.remaining[job]) / rate if rate > 0 else np.inf

    def ranking(self, snap: Snapshot) -> list[int]:
        """The pending jobs in the order this scheduler considers them (best first): what an
        operator's view of the queue shows (``schedlab serve status``)."""
        return self._ranked(snap, snap.pending()).tolist()

    def _keys(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        """The ordering's keys of ``idx``, checked (one number per job, no NaN)."""
        order = self.ordering
        return checked_keys(order, guarded(order, "keys", order.keys, snap, idx), len(idx))

    def _ranked(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        keys = self._keys(snap, idx)  # asked for one job too: an ordering may act on it
        if len(idx) < 2:
            return idx
        return idx[np.lexsort((idx, self.submit[idx], keys))]

    def _dequeue(self, job: int) -> None:
        item = self.in_queue.pop(job, None)
        if item is not None:
            self.queue.remove(item)

    # -- decisions -------------------------------------------------------------------------
    def decide(self, snap: Snapshot) -> list[Decision]:
        for job in snap.withdrawn:
            self._dequeue(job)
        rejected = self._reject_impossible(snap) if snap.new_pending else []
        if rejected:
            snap = replace(
                snap, new_pending=[j for j in snap.new_pending if j not in self._rejected]
            )
            snap.pending_set = {j: None for j in snap.pending_set if j not in self._rejected}
        if between_rounds(snap.now, self.slot):
            if self.ordering.static:
                self._sync_static(snap)  # keep the queue in step; decide at the next round
            return rejected
        if self.ordering.preemptive:
            return rejected + self._decide_preemptive(snap)
        return rejected + self._decide_queue(snap)

    def _reject_impossible(self, snap: Snapshot) -> list[Decision]:
        """Arrivals that no state of this cluster could ever run (more GPUs than it has of the
        allowed models): rejected at once with the reason, so they never block the queue."""
        out: list[Decision] = []
        for job in snap.new_pending:
            per_node, nodes = self._per_node[job], self._nodes[job]
            n, mask = self._gpus[job], self._mask[job]
            shape = (n, mask, per_node, nodes, self._exclusive[job])
            if shape not in self._never:
                self._never[shape] = never_fits(
                    self.ctx.cluster, n, mask, per_node=per_node, nodes=max(nodes, 1)
                ) or self._never_placed(job)
            why = self._never[shape]
            if why is not None:
                self._rejected.add(job)
                out.append(Reject(job, why))
        return out

    def _never_placed(self, job: int) -> str | None:
        """Why a whole-job placement could not place ``job`` even on the empty cluster."""
        placer = self.ctx.placer
        whole = placer.whole_job if placer is not None else None
        if whole is None or self.num_gpus[job] <= 0:
            return None
        j = self.jobs
        request = JobRequest(
            job,
            int(j.num_gpus[job]),
            int(j.cpu_milli[job]),
            int(j.memory_mib[job]),
            int(j.gpu_model_mask[job]),
            int(j.gpus_per_node[job]),
            int(j.num_nodes[job]),
            bool(j.exclusive[job]),
        )
        return whole.never_places(request)

    def _decide_queue(self, snap: Snapshot) -> list[Decision]:
        if self.ordering.static:
            if not self.queue and len(snap.new_pending) == 1:
                lone = self._lone_arrival(snap, snap.new_pending[0])
                if lone is not None:
                    return lone
            self._sync_static(snap)
            if not self.queue or (snap.free_gpus == 0 and self._gpus[self.queue[0][2]] > 0):
                return []
            order = (item[2] for item in self.queue)
        else:
            if not snap.pending_set:
                return []
            order = iter(self._ranked(snap, snap.pending()).tolist())
        decisions: list[Decision] = []
        free = snap.free_gpus
        started: list[tuple[float, int, Allocation]] = []  # (estimated end, job, allocation)
        plans: dict[int, NetPlan] = {}  # the network plans of ``started``
        # Plans are made on the live state until the first start, and on a copy after it: most
        # decision points start at most one job, and copying the cluster costs more than placing.
        scratch: ClusterState | None = None

        def planning_state(own_copy: bool = False) -> ClusterState:
            """The live state until a start (or ``own_copy``) needs a copy with the starts."""
            nonlocal scratch
            if scratch is None:
                if not started and not own_copy:
                    return snap.state
                scratch = copy_state(snap.state)
                for _, j, a in started:
                    take(scratch, a, self._cpu[j], self._mem[j], j, plans.get(j))
            return scratch

        for job in order:
            n = self._gpus[job]
            alloc, plan = self._place_planned(job, planning_state()) if n <= free else (None, None)
            if alloc is not None:
                if scratch is not None:
                    take(scratch, alloc, self._cpu[job], self._mem[job], job, plan)
                if plan is not None:
                    plans[job] = plan
                decisions.append(Start(job, alloc, plan))
                free -= n
                # The estimated end matters only to a backfill reservation behind a later head.
                end = self._end_on(snap, job, alloc) if self.backfill else np.inf
                started.append((end, job, alloc))
                continue
            if self.backfill:
                decisions += self._backfill(
                    snap, job, order, free, planning_state(own_copy=True), started, plans
                )
            break
        for d in decisions:
            self._dequeue(d.job)
        return decisions

    def _lone_arrival(self, snap: Snapshot, job: int) -> list[Decision] | None:
        """One arrival to an empty queue (most decision points of an uncongested trace): what
        the queue walk below decides for it, without entering it in the sorted queue when it
        starts at once. None: not that case after all (the walk decides)."""
        if job in self.in_queue or snap.runtime.status.item(job) != PENDING:
            return None
        key = self._keys(snap, np.array([job], dtype=np.int64)).item(0)
        item = (key, self._submit[job], job)
        n, free = self._gpus[job], snap.free_gpus
        alloc, plan = (None, None)
        if n <= free:
            alloc, plan = self._place_planned(job, snap.state)
        if alloc is not None:
            return [Start(job, alloc, plan)]
        self.queue.add(item)
        self.in_queue[job] = item
        if not self.backfill or (free == 0 and n > 0):
            return []
        # The blocked head with nothing behind it: the backfill pass as the walk makes it.
        out = self._backfill(snap, job, iter(()), free, copy_state(snap.state), [], {})
        for d in out:
            self._dequeue(d.job)
        return out

    def _sync_static(self, snap: Snapshot) -> None:
        """Add jobs that became pending since the last call to the sorted queue."""
        if not snap.new_pending:
            return
        status = snap.runtime.status.item
        fresh = [j for j in snap.new_pending if j not in self.in_queue and status(j) == PENDING]
        if not fresh:
            return
        idx = np.asarray(fresh, dtype=np.int64)
        submit = self._submit
        for j, k in zip(fresh, self._keys(snap, idx).tolist(), strict=True):
            item = (k, submit[j], j)
            self.queue.add(item)
            self.in_queue[j] = item

    def _reservation(
        self,
        snap: Snapshot,
        head: int,
        free: int,
        scratch: ClusterState,
        started: list[tuple[float, int, Allocation]],
    ) -> tuple[float, ClusterState | None, int, set[int]]:
        """When the blocked ``head`` could start, the cluster as it will find it then, how many
        GPUs beyond its need are free then, and the nodes it would be placed on.

        Running jobs are released in order of their estimated end on a copy of the cluster
        state, and the head is placed after each release once enough GPUs are free in number:
        the first time it fits is its reservation. Counting GPUs alone would reserve "now" for a
        head that is blocked by where the free GPUs are (fragmentation, GPU models), and then
        nothing could backfill. The state is None when the head never fits (reservation inf).
        """
        need = self._gpus[head]
        running = snap.running()
        ends = [
            (end, job, snap.runtime.allocation[job])
            for end, job in zip(snap.estimated_end(running).tolist(), running.tolist(), strict=True)
        ]
        ends += started
        ends.sort(key=lambda e: (e[0], e[1]))
        future = copy_state(scratch)
        avail = free
        for end, job, alloc in ends:
            cpu, mem = self._cpu[job], self._mem[job]
            give_back(future, alloc, cpu, mem, job)
            avail += allocation_size(alloc)
            if avail >= need and (at := self._place(head, future)) is not None:
                return end, future, avail - need, {node for node, _ in at}
        return np.inf, None, free, set()  # the head cannot run on this cluster as it stands

    def _backfill(
        self,
        snap: Snapshot,
        head: int,
        rest: Iterator[int],
        free: int,
        scratch: ClusterState,
        started: list[tuple[float, int, Allocation]],
        plans: dict[int, NetPlan],
    ) -> list[Decision]:
        """EASY backfill behind a blocked ``head``: later jobs start now if they fit and either
        finish before the head's reservation or leave the head room to start at it.

        A candidate's end is judged on the allocation it would get, at the speed of those GPUs:
        a job that is short on the reference GPU may run much longer on slower ones, and would
        then hold the head past its reservation. One still running at the reservation is kept
        only if the head can still be placed on the cluster as it will be then, with the
        candidate's GPUs taken (GPU counts alone miss where the head must go: models, nodes).
        """
        shadow, future, extra, head_nodes = self._reservation(snap, head, free, scratch, started)
        out: list[Decision] = []
        for job in rest:
            if free == 0:
                break
            n = self._gpus[job]
            if n > free or (n > extra and self._earliest_end(snap, job) > shadow):
                continue  # no room now, or certain to hold GPUs the head needs at its time
            alloc, plan = self._place_planned(job, scratch)
            if alloc is None:
                continue
            cpu, mem = self._cpu[job], self._mem[job]
            if future is not None and self._end_on(snap, job, alloc) > shadow:
                if n > extra:
                    continue
                take(future, alloc, cpu, mem, job, plan)
                # Else the head's spot is kept (a plan's links may be where the head needs them).
                if plan is not None or any(node in head_nodes for node, _ in alloc):
                    again = self._place(head, future)
                    if again is None:
                        give_back(future, alloc, cpu, mem, job)
                        continue
                    head_nodes = {node for node, _ in again}
                extra -= n
            take(scratch, alloc, cpu, mem, job, plan)
            if plan is not None:
                plans[job] = plan
            out.append(Start(job, alloc, plan))
            free -= n
        return out

    def _plan(
        self, snap: Snapshot, running: np.ndarray, pending: np.ndarray
    ) -> tuple[np.ndarray, list[int]]:
        """Pending jobs the ranking wants running now (best first), and the running jobs it
        does not want (lowest-ranked first): the highest-ranked jobs whose GPU counts fit in the
        cluster are wanted, skipping any that would overflow it."""
        budget = snap.cluster.total_gpus
        need = self.num_gpus
        if self._asked_by_running(snap) + int(need[pending].sum()) <= budget:
            return self._ranked(snap, pending), []  # no contention: everyone is wanted
        ranked = self._ranked(snap, np.concatenate([running, pending]))
        cum = np.cumsum(need[ranked])
        k = int(np.searchsorted(cum, budget, side="right"))
        wanted = np.zeros(len(ranked), dtype=bool)
        wanted[:k] = True
        left = budget - (int(cum[k - 1]) if k else 0)
        for i in range(k, len(ranked)):  # smaller jobs further down may still fit
            if left == 0:
                break
            if need[ranked[i]] <= left:
                wanted[i] = True
                left -= int(need[ranked[i]])
        is_pending = snap.runtime.status[ranked] == PENDING
        to_start = ranked[wanted & is_pending]
        victims = ranked[~wanted & ~is_pending][::-1].tolist()
        return to_start, victims

    def _asked_by_running(self, snap: Snapshot) -> int:
        """The GPUs the running jobs asked for (their sum over ``snap.running()``)."""
        changed = self._watch.changed(snap.runtime)
        counted, gpus = self._counted, self._gpus
        if changed is None:  # a runtime not seen before: count afresh
            counted.clear()
            counted.update(snap.running_set)
            self._running_need = sum([gpus[j] for j in counted])
            return self._running_need
        status = snap.runtime.status
        for job in changed:
            if status.item(job) == RUNNING:
                if job not in counted:
                    counted.add(job)
                    self._running_need += gpus[job]
            elif job in counted:
                counted.discard(job)
                self._running_need -= gpus[job]
        return self._running_need

    def _victims_making_room(
        self,
        job: int,
        need: int,
        victims: list[int],
        state: ClusterState,
        runtime: JobRuntime,
    ) -> list[int]:
        """The fewest lowest-ranked victims whose GPUs, with the free ones, make room for
        ``job`` on a single node of an allowed model (empty if no node can)."""
        cluster = state.cluster
        mask = self._mask[job]
        gain: dict[int, list[int]] = {}
        room = state.gpu_full_count
        for v in victims:  # lowest-ranked first
            alloc = runtime.allocation[v]
            if alloc is None or len(alloc) != 1:
                continue
            node = alloc[0][0]
            model = int(cluster.model[node])
            if model < 0 or not (mask >> model) & 1:
                continue
            group = gain.setdefault(node, [])
            group.append(v)
            if int(room[node]) + sum(int(runtime.alloc_n[u]) for u in group) >= need:
                return group
        return []

    def _start_in_rank(self, snap: Snapshot, to_start: list[int]) -> list[Decision]:
        """With no victims: each wanted job in rank order where it fits with the earlier ones
        placed. The first is placed on the live state; a copy is made only for a second."""
        free = snap.free_gpus
        scratch: ClusterState | None = None
        starts: list[Decision] = []
        last = len(to_start) - 1
        for i, job in enumerate(to_start):
            need = self._gpus[job]
            if free < need:
                continue
            alloc, plan = self._place_planned(job, snap.state if scratch is None else scratch)
            if alloc is None:
                continue
            if scratch is None and i < last:
                scratch = copy_state(snap.state)
            if scratch is not None:
                take(scratch, alloc, self._cpu[job], self._mem[job], job, plan)
            free -= need
            starts.append(Start(job, alloc, plan))
        return starts

    def _decide_preemptive(self, snap: Snapshot) -> list[Decision]:
        if not snap.pending_set:
            return []
        pending = snap.pending()
        budget = snap.cluster.total_gpus
        gpus = self._gpus
        lone = len(pending) == 1  # the usual case off the peaks: sums of one, in Python
        asked = gpus[pending.item(0)] if lone else int(self.num_gpus[pending].sum())
        if self._asked_by_running(snap) + asked <= budget:
            to_start, victims = self._ranked(snap, pending), []  # _plan's answer, as it gives it
        else:
            to_start, victims = self._plan(snap, snap.running(), pending)
        if len(to_start) == 0:
            return []
        if not victims:
            order = to_start.tolist()
            least = gpus[order[0]] if len(order) == 1 else int(self.num_gpus[to_start].min())
            if snap.free_gpus < least:
                return []
            return self._start_in_rank(snap, order)
        runtime = snap.runtime
        scratch = copy_state(snap.state)
        free = snap.free_gpus
        starts: list[Decision] = []
        freed: list[int] = []
        freed_plans: dict[int, NetPlan] = {}

        def release(v: int) -> None:
            nonlocal free
            victims.remove(v)
            plan = give_back(scratch, runtime.allocation[v], self._cpu[v], self._mem[v], v)
            if plan is not None:
                freed_plans[v] = plan
            free += int(runtime.alloc_n[v])
            freed.append(v)

        for job in to_start.tolist():
            need = self._gpus[job]
            alloc, plan = self._place_planned(job, scratch) if free >= need else (None, None)
            if alloc is None and victims and need <= self.ctx.placer.max_per_node:
                # Free the lowest-ranked victims on one node where that makes room.
                for v in self._victims_making_room(job, need, victims, scratch, runtime):
                    release(v)
                if free >= need:
                    alloc, plan = self._place_planned(job, scratch)
            while alloc is None and victims:  # otherwise: lowest-ranked first until it fits
                release(victims[0])
                if free >= need:
                    alloc, plan = self._place_planned(job, scratch)
            if alloc is not None:
                take(scratch, alloc, self._cpu[job], self._mem[job], job, plan)
                free -= need
                starts.append(Start(job, alloc, plan))
        # Victims whose GPUs (and reserved links) nobody took keep running.
        preempt: list[Decision] = []
        for v in reversed(freed):
            alloc = runtime.allocation[v]
            kept = freed_plans.get(v)
            ledger = scratch.net
            links_free = kept is None or ledger is None or ledger.conflict(v, kept) is None
            gpus_free = all(
                (scratch.gpu_free[node, list(gpus)] >= GPU_MILLI).all() for node, gpus in alloc
            )
            if gpus_free and links_free:
                take(scratch, alloc, self._cpu[v], self._mem[v], v, kept)
            else:
                preempt.append(Preempt(v))
        return preempt + starts
