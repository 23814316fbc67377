"""The sharing engine: fractional-GPU pods of several QoS classes arriving and leaving over time.

It runs on the resource model of ``pack`` (:class:`~schedlab.model.cluster.ClusterState`, the
placement plugins and their feasibility code, unchanged) and adds departures, QoS classes with
overcommit and eviction, and per-class speeds. Three load modes share this one engine:

* ``trace``: pods arrive at their trace times and run for their recorded work;
* ``compressed``: the same with inter-arrival gaps divided by k (the caller rewrites arrivals);
* ``pack``: the pack protocol (name sort, seeded shuffle, inflation; all at t = 0, one attempt per
  pod, nothing leaves, κ = 1, no classes): it draws from the generator in the same order as
  ``schedlab pack``, so it gives the same placements and curves, pod for pod.

Scheduling loop (spec A.4): at each event time departures first, then arrivals, then passes over
the pending pods in order (level descending, arrival, index); each pod is tried at once (no
head-of-line blocking). A guaranteed or burstable pod that fits nowhere may evict opportunistic
pods: the node needing the fewest victims (then least victim share, then the run's tie order) is
chosen, victims ordered lowest level, latest start, smallest share first, and victims not needed
are put back. Evicted pods re-enter the queue with their remaining work (plus a restart
overhead) and keep their arrival for ordering.
"""

from __future__ import annotations

import bisect
import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from schedlab.engines.filler import FillerJob, FillerRunner
from schedlab.engines.inflation import inflate
from schedlab.engines.pack import NO_NODE
from schedlab.engines.shared_capacity import SharedCapacity
from schedlab.errors import InputError
from schedlab.metrics.fragmentation import FragmentationTracker, TargetWorkload
from schedlab.model.cluster import GPU_MILLI, Cluster
from schedlab.model.shared_pods import (
    LEVEL_BURSTABLE,
    LEVEL_GUARANTEED,
    LEVEL_OPPORTUNISTIC,
    QOS_ORDER,
    SharedWorkload,
)
from schedlab.policies.api import PACK
from schedlab.policies.placement.base import Placer, PodRequest, feasible_nodes
from schedlab.policies.registry import make_placement
from schedlab.policies.wiring import PolicyChoice, build

TRACE, COMPRESSED, PACK_MODE = "trace", "compressed", "pack"
MODES: tuple[str, ...] = (TRACE, COMPRESSED, PACK_MODE)

#: Pod states.
WAITING, PENDING, RUNNING, DONE, FAILED = 0, 1, 2, 3, 4
STATE_NAMES = ("not_arrived", "pending", "running", "completed", "failed")


@dataclass(frozen=True)
class SharingConfig:
    """One run of the sharing engine (spec A.3–A.6); ``policy`` is the placement plugin."""

    policy: str
    mode: str = TRACE
    seed: int = 42
    inflate: float = 1.3
    overcommit: float = 1.0
    interference: float = 0.0
    split_cap: int | None = 10
    restart_overhead: float = 0.0
    evict_keeps_progress: bool = True
    ls_protect: bool = True
    burstable_preemptible: bool = False
    plugins: tuple[str, ...] = ()
    #: Elastic filler jobs (spec A.5), served in order; empty: no filler.
    filler: tuple[FillerJob, ...] = ()
    filler_slot: float = 60.0
    filler_resize_overhead: float = 0.0
    #: Keep running after the last pod until the filler jobs finish (else stop with the pods).
    filler_outlives_pods: bool = True
    #: Record the time series at most once per this many seconds (0: at every event time). The
    #: peak allocation is tracked at every event either way.
    sample: float = 0.0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InputError(f"unknown sharing mode {self.mode!r} (known: {', '.join(MODES)})")
        if not self.overcommit >= 1 or not math.isfinite(self.overcommit):
            raise InputError(f"'--overcommit' must be a number ≥ 1 (got {self.overcommit})")
        if not self.interference >= 0 or not math.isfinite(self.interference):
            raise InputError(f"'--interference' must be a number ≥ 0 (got {self.interference})")
        if self.split_cap is not None and self.split_cap < 1:
            raise InputError(f"'split_cap' must be ≥ 1 (got {self.split_cap})")
        if not self.restart_overhead >= 0:
            raise InputError(f"'restart_overhead' must be ≥ 0 (got {self.restart_overhead})")
        if not self.sample >= 0:
            raise InputError(f"'--sample' must be ≥ 0 seconds (got {self.sample})")
        if not self.filler_slot > 0:
            raise InputError(f"'filler_slot' must be > 0 (got {self.filler_slot})")
        if self.mode == PACK_MODE and (
            self.overcommit != 1 or self.interference != 0 or self.filler
        ):
            raise InputError("pack mode runs at overcommit 1 without interference or filler")


@dataclass
class SharingResult:
    """Per-pod record (aligned with ``workload``) and the cluster measures over time."""

    config: SharingConfig
    cluster: Cluster
    workload: SharedWorkload
    node: np.ndarray
    gpus: list[tuple[int, ...]]
    state: np.ndarray
    first_start: np.ndarray
    end: np.ndarray
    evictions: np.ndarray
    pending_seconds: np.ndarray
    held_milli_seconds: np.ndarray
    series: dict[str, np.ndarray]
    copies: int = 0
    typical_tasks: int = 0
    wall_seconds: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)
    peak_milli: int = 0
    peak_time: float = 0.0
    #: One row per elastic filler job (see :mod:`schedlab.engines.filler`).
    filler: list[dict[str, object]] = field(default_factory=list)

    @property
    def capacity_milli(self) -> int:
        return self.cluster.total_gpus * GPU_MILLI


class SharingEngine:
    """One run; build it, then call :meth:`run` once."""

    def __init__(
        self,
        cluster: Cluster,
        workload: SharedWorkload,
        config: SharingConfig,
        observer: Any = None,
    ) -> None:
        self.started_at = time.perf_counter()
        # ``observer`` (the energy meter) hears placed(now, pod, node), released(now, pod),
        # step(now, held, cpu_free, changed nodes) after each event time, tick(now) with each
        # time-series row and finish(now).
        self.obs = observer
        self.cluster = cluster
        self.config = config
        pack = config.mode == PACK_MODE
        # The same draws, in the same order, as ``run_pack``: build, shuffle and inflation,
        # tie order, then the policy.
        # Placement only: the pending order of this engine is fixed by class (spec A.4).
        policies = build(PACK, PolicyChoice(config.policy, plugins=config.plugins))
        self.rng = np.random.default_rng(config.seed)
        self.copies = 0
        if pack:
            target = TargetWorkload.from_pods(workload.pods)
            try:
                stream = inflate(workload.pods, config.inflate, cluster.total_gpus, self.rng)
            except ValueError as exc:
                raise InputError(str(exc), path=workload.pods.source) from None
            workload = SharedWorkload.at_time_zero(stream.pods)
            self.copies = stream.copies
        else:
            if len(workload) == 0:
                raise InputError("no pods to replay", path=workload.pods.source)
            target = TargetWorkload.from_pods(workload.pods)
        self.workload = workload
        self.target = target
        ctx = policies.start(cluster, self.rng, target=target)
        assert policies.placer is not None
        self.policy = policies.placement
        self.capacity = SharedCapacity(
            cluster, 1.0 if pack else config.overcommit, None if pack else config.split_cap
        )
        self.placers: dict[int, Placer] = {id(self.capacity.guaranteed): policies.placer}
        if self.capacity.opportunistic is not self.capacity.guaranteed:
            # A second instance of the policy for the opportunistic view: a policy caches by
            # node version, which is only meaningful within one state.
            other = make_placement(config.policy, PACK)
            self.placers[id(self.capacity.opportunistic)] = Placer(other, ctx, ctx.tie_rank)  # type: ignore[arg-type]
        self.tie_rank = ctx.tie_rank
        self.model_bits = policies.placer.model_bits
        self.tracker = FragmentationTracker(self.capacity.guaranteed, target)

        p = workload.pods
        n = len(p)
        self.n = n
        self.cpu = p.cpu_milli.tolist()
        self.mem = p.memory_mib.tolist()
        self.num_gpu = p.num_gpu.tolist()
        self.share = p.gpu_milli.tolist()
        self.mask = p.model_mask.tolist()
        # One request object per distinct pod shape, shared by its pods: a pod is placed,
        # started and stopped at least once each, and a million pods come from a few hundred
        # shapes.
        shapes: dict[tuple[int, int, int, int, int], int] = {}
        self.kind = [
            shapes.setdefault(key, len(shapes))
            for key in zip(self.cpu, self.mem, self.num_gpu, self.share, self.mask, strict=True)
        ]
        self.requests = [PodRequest(*key) for key in shapes]
        self.level = workload.level.tolist() if not pack else [LEVEL_GUARANTEED] * n
        qos_index = {q: k for k, q in enumerate(QOS_ORDER)}
        self.qos_index = [qos_index[q] for q in workload.qos.tolist()]
        self.arrival = workload.arrival.tolist()
        self.remaining = workload.work.astype(np.float64).tolist()
        self.variable_rate = self.capacity.limit > GPU_MILLI or config.interference > 0

        self.node = [NO_NODE] * n
        self.gpus: list[tuple[int, ...]] = [()] * n
        self.state = [WAITING] * n
        self.first_start = [math.nan] * n
        self.end = [math.nan] * n
        self.evictions = [0] * n
        self.pending_since = [0.0] * n
        self.pending_seconds = [0.0] * n
        self.held = [0.0] * n
        self.seg_start = [0.0] * n
        self.rate = [1.0] * n
        self.last = [0.0] * n
        self.token = [0] * n
        self.heap: list[tuple[float, int, int]] = []
        self.node_pods: list[set[int]] = [set() for _ in range(cluster.size)]
        self.low_count = np.zeros(cluster.size, dtype=np.int64)

        self.pending: list[tuple[int, float, int]] = []
        self.new_pending: list[tuple[int, float, int]] = []
        self.pending_by_class = [0] * len(QOS_ORDER)
        self.freed = False
        self.evictable_started = False
        self.fit_fail: set[tuple[int, ...]] = set()
        self.evict_fail: set[tuple[int, ...]] = set()
        self.dirty: set[int] = set()
        self.now = 0.0
        self.series: dict[str, list[float]] = {
            k: []
            for k in (
                "time",
                "arrived_milli",
                "allocated_milli",
                "guaranteed_milli",
                "idle_milli",
                "frag_milli",
                *(f"pending_{q}" for q in QOS_ORDER),
            )
        }
        self.arrived_milli = 0
        self.filler = FillerRunner(
            config.filler,
            self.capacity,
            ctx.tie_rank,  # type: ignore[arg-type]
            config.filler_slot,
            config.filler_resize_overhead,
            float(workload.arrival.min()) if len(workload) else 0.0,
        )
        self.series["filler_milli"] = []
        self.peak = (0, 0.0)  # (allocated milli, time)
        self.next_sample = -math.inf

    # -- public ---------------------------------------------------------------------------------
    def run(self, progress: Callable[[int, int], None] | None = None) -> SharingResult:
        if self.config.mode == PACK_MODE:
            self._run_pack(progress)
        else:
            self._run_time(progress)
        w = self.workload
        return SharingResult(
            config=self.config,
            cluster=self.cluster,
            workload=w,
            node=np.asarray(self.node, dtype=np.int64),
            gpus=self.gpus,
            state=np.asarray(self.state, dtype=np.int64),
            first_start=np.asarray(self.first_start, dtype=np.float64),
            end=np.asarray(self.end, dtype=np.float64),
            evictions=np.asarray(self.evictions, dtype=np.int64),
            pending_seconds=np.asarray(self.pending_seconds, dtype=np.float64),
            held_milli_seconds=np.asarray(self.held, dtype=np.float64),
            series={k: np.asarray(v) for k, v in self.series.items()},
            copies=self.copies,
            typical_tasks=len(self.target),
            wall_seconds=time.perf_counter() - self.started_at,
            extra={"rescored_states": float(getattr(self.policy, "rescored_states", 0))},
            filler=self.filler.summary(),
            peak_milli=self.peak[0],
            peak_time=self.peak[1],
        )

    # -- pack protocol --------------------------------------------------------------------------
    def _run_pack(self, progress: Callable[[int, int], None] | None) -> None:
        """One attempt per pod in stream order at t = 0; a pod that does not fit fails."""
        for i in range(self.n):
            self.arrived_milli += self.num_gpu[i] * self.share[i]
            self.state[i] = PENDING
            if not self._try_fit(i):
                self.state[i] = FAILED
            self._record()
            if progress is not None and (i & 1023) == 0:
                progress(i, self.n)
        if progress is not None:
            progress(self.n, self.n)

    # -- time-based modes -----------------------------------------------------------------------
    def _run_time(self, progress: Callable[[int, int], None] | None) -> None:
        order = np.lexsort((np.arange(self.n), np.asarray(self.arrival))).tolist()
        arrival = self.arrival
        ai, n, heap = 0, self.n, self.heap
        while True:
            while heap and heap[0][1] != self.token[heap[0][2]]:
                heapq.heappop(heap)
            next_arrival = arrival[order[ai]] if ai < n else math.inf
            next_end = heap[0][0] if heap else math.inf
            now = min(next_arrival, next_end)
            if now < math.inf or (self.filler.replicas and self.config.filler_outlives_pods):
                # The filler's own events (end, slot) matter while pods remain, and after the
                # last pod only if the filler is to run to its end.
                now = min(now, self.filler.next_time())
            if now == math.inf:
                break
            self.now = now
            while heap and heap[0][0] <= now:
                _, tok, i = heapq.heappop(heap)
                if tok == self.token[i]:
                    self._finish(i)
            while ai < n and arrival[order[ai]] <= now:
                i = order[ai]
                ai += 1
                self.arrived_milli += self.num_gpu[i] * self.share[i]
                self._enqueue(i)
            self._schedule()
            if self.obs is not None:
                cap = self.capacity
                self.obs.step(now, cap.t, cap.guaranteed.cpu_free, self.dirty)
            self._record()
            if progress is not None and (ai & 1023) == 0:
                progress(ai, n)
        if progress is not None:
            progress(n, n)
        if self.config.sample > 0 and self.series["time"] and self.series["time"][-1] != self.now:
            self._record(force=True)
        for i in self.pending:  # still waiting when nothing more happens
            k = i[2]
            self.pending_seconds[k] += self.now - self.pending_since[k]
        if self.obs is not None:
            self.obs.finish(self.now)

    def _enqueue(self, i: int) -> None:
        key = (-self.level[i], self.arrival[i], i)
        self.state[i] = PENDING
        self.pending_since[i] = self.now
        self.pending_by_class[self.qos_index[i]] += 1
        bisect.insort(self.pending, key)
        self.new_pending.append(key)

    def _schedule(self) -> None:
        """Filler off, passes over the pending pods, filler back on (spec A.4–A.5)."""
        if self.filler.jobs:
            # Not a release for the pending pods: the last pass saw the state without the
            # filler too, so its failures still hold.
            self.filler.take_off(self.now)
        self._passes()
        if self.filler.jobs:
            self.filler.lay_out(self.now, self.dirty)
            if self.variable_rate:
                for node in self.dirty:
                    self._rerate(node)

    def _passes(self) -> None:
        """Passes over the pending pods until a pass changes nothing that could help another."""
        new, self.new_pending = self.new_pending, []
        if self.freed:
            candidates = list(self.pending)
        else:
            new.sort()
            candidates = new
            if self.evictable_started:
                high = [k for k in self.pending if -k[0] >= LEVEL_BURSTABLE]
                candidates = sorted(set(candidates) | set(high))
        while candidates:
            if self.freed:
                self.fit_fail.clear()
                self.evict_fail.clear()
                self.freed = False
            if self.evictable_started:
                self.evict_fail.clear()
                self.evictable_started = False
            for key in candidates:
                i = key[2]
                if self.state[i] != PENDING:
                    continue
                if self._try_fit(i) or (self.level[i] >= LEVEL_BURSTABLE and self._try_evict(i)):
                    self._dequeue(key)
            candidates = []
            if self.freed:
                candidates = list(self.pending)
            elif self.evictable_started:
                candidates = [k for k in self.pending if -k[0] >= LEVEL_BURSTABLE]
            candidates += self.new_pending  # re-queued victims
            self.new_pending = []
            if candidates and not self.freed and not self.evictable_started:
                candidates = sorted(candidates)

    def _dequeue(self, key: tuple[int, float, int]) -> None:
        j = bisect.bisect_left(self.pending, key)
        del self.pending[j]
        i = key[2]
        self.pending_by_class[self.qos_index[i]] -= 1
        self.pending_seconds[i] += self.now - self.pending_since[i]

    # -- placing, starting, stopping ------------------------------------------------------------
    def _request(self, i: int) -> PodRequest:
        return self.requests[self.kind[i]]

    def _shape(self, i: int) -> tuple[int, int]:
        """What decides whether pod ``i`` fits: the view its class sees and its request."""
        return (1 if self.level[i] >= LEVEL_BURSTABLE else 0, self.kind[i])

    def _try_fit(self, i: int) -> bool:
        """Place pod ``i`` with the run's plugin if it fits now."""
        shape = self._shape(i)
        if shape in self.fit_fail:
            return False
        view = self.capacity.view(self.level[i])
        placement = self.placers[id(view)].place(self.requests[shape[1]], view)
        if placement is None:
            self.fit_fail.add(shape)
            return False
        self._start(i, placement.node, placement.gpus)
        return True

    def _start(self, i: int, node: int, gpus: tuple[int, ...]) -> None:
        lvl = self.level[i]
        self.capacity.take(node, gpus, self._request(i), lvl)
        self.dirty.add(node)
        self.node[i] = node
        self.gpus[i] = gpus
        self.state[i] = RUNNING
        if math.isnan(self.first_start[i]):
            self.first_start[i] = self.now
        self.seg_start[i] = self.now
        self.last[i] = self.now
        self.node_pods[node].add(i)
        if self.obs is not None:
            self.obs.placed(self.now, i, node)
        if lvl < LEVEL_BURSTABLE:
            self.low_count[node] += 1
            self.evictable_started = True
        if self.variable_rate:
            self.rate[i] = 0.0  # forces a first rate below
            self._rerate(node)
        else:
            self._push(i)

    def _push(self, i: int) -> None:
        """(Re)schedule the end of pod ``i`` at its current rate."""
        self.token[i] += 1
        rem = max(self.remaining[i], 0.0)
        if rem == math.inf or self.rate[i] <= 0:
            return
        end = self.now + rem / self.rate[i] if self.rate[i] != 1.0 else self.now + rem
        heapq.heappush(self.heap, (end, self.token[i], i))

    def _settle(self, i: int) -> None:
        """Book the work done since the last rate change."""
        if self.remaining[i] != math.inf:
            self.remaining[i] -= self.rate[i] * (self.now - self.last[i])
        self.last[i] = self.now

    def _stop(self, i: int) -> int:
        """Take pod ``i`` off its node; returns the node."""
        node = self.node[i]
        self._settle(i)
        self.token[i] += 1
        self.capacity.give_back(node, self.gpus[i], self._request(i), self.level[i])
        if self.obs is not None:
            self.obs.released(self.now, i)
        self.held[i] += self.num_gpu[i] * self.share[i] * (self.now - self.seg_start[i])
        self.node_pods[node].discard(i)
        if self.level[i] < LEVEL_BURSTABLE:
            self.low_count[node] -= 1
        self.dirty.add(node)
        self.freed = True
        return node

    def _finish(self, i: int) -> None:
        node = self._stop(i)
        self.remaining[i] = 0.0
        self.state[i] = DONE
        self.end[i] = self.now
        if self.variable_rate:
            self._rerate(node)

    def _evict(self, i: int) -> None:
        self._stop(i)
        self.evictions[i] += 1
        if self.config.evict_keeps_progress:
            self.remaining[i] = max(self.remaining[i], 0.0)
        else:
            self.remaining[i] = float(self.workload.work[i])
        self.remaining[i] += self.config.restart_overhead
        self._enqueue(i)

    # -- speeds ---------------------------------------------------------------------------------
    def _rerate(self, node: int) -> None:
        """New speeds for the pods of ``node`` after it changed (spec A.3)."""
        cap = self.capacity
        t, g = cap.t[node], cap.g[node]
        alpha = self.config.interference
        for i in self.node_pods[node]:
            lvl = self.level[i]
            if lvl >= LEVEL_BURSTABLE and self.config.ls_protect:
                rate = 1.0
            else:
                rate = 1.0
                for x in self.gpus[i]:
                    r = 1.0
                    tx, gx = int(t[x]), int(g[x])
                    if lvl < LEVEL_BURSTABLE and tx > GPU_MILLI:
                        r = min(1.0, (GPU_MILLI - gx) / (tx - gx))
                    if alpha > 0:
                        r /= 1.0 + alpha * (tx - self.share[i]) / GPU_MILLI
                    rate = min(rate, r)
            if rate != self.rate[i]:
                self._settle(i)
                self.rate[i] = rate
                self._push(i)

    # -- eviction -------------------------------------------------------------------------------
    def _may_evict(self, evictor: int, victim: int) -> bool:
        lv = self.level[victim]
        if lv <= LEVEL_OPPORTUNISTIC:
            return True
        return (
            self.config.burstable_preemptible
            and lv == LEVEL_BURSTABLE
            and self.level[evictor] == LEVEL_GUARANTEED
        )

    def _fits_without(self, i: int, node: int, removed: list[int]) -> bool:
        cap = self.capacity
        view = cap.view(self.level[i])
        cpu = int(view.cpu_free[node]) + sum(self.cpu[v] for v in removed)
        mem = int(view.mem_free[node]) + sum(self.mem[v] for v in removed)
        if cpu < self.cpu[i] or mem < self.mem[i]:
            return False
        if self.num_gpu[i] == 0 or self.share[i] == 0:
            return True
        t, g, cnt = cap.t[node].copy(), cap.g[node].copy(), cap.cnt[node].copy()
        for v in removed:
            for x in self.gpus[v]:
                t[x] -= self.share[v]
                cnt[x] -= 1
                if self.level[v] >= LEVEL_BURSTABLE:
                    g[x] -= self.share[v]
        free = cap.usable(t, g, cnt, cap.exists[node], self.level[i])
        return int((free >= self.share[i]).sum()) >= self.num_gpu[i]

    def _victims(self, i: int, node: int) -> list[int] | None:
        """The fewest pods to evict from ``node`` so that pod ``i`` fits, or None."""
        pool = [v for v in self.node_pods[node] if self._may_evict(i, v)]
        if not pool:
            return None
        pool.sort(
            key=lambda v: (self.level[v], -self.seg_start[v], self.num_gpu[v] * self.share[v], v)
        )
        removed: list[int] = []
        for v in pool:
            removed.append(v)
            if self._fits_without(i, node, removed):
                break
        else:
            return None
        for v in reversed(removed[:-1]):
            trial = [u for u in removed if u != v]
            if self._fits_without(i, node, trial):
                removed = trial
        return removed

    def _try_evict(self, i: int) -> bool:
        """Start level-2/3 pod ``i`` by evicting pods it may evict (spec A.4), if that helps."""
        shape = (self.level[i], *self._shape(i))
        if shape in self.evict_fail:
            return False
        cluster = self.cluster
        ok = (cluster.cpu_milli >= self.cpu[i]) & (cluster.memory_mib >= self.mem[i])
        if self.num_gpu[i] > 0:
            ok &= (self.model_bits & self.mask[i]) != 0
        if self.config.burstable_preemptible and self.level[i] == LEVEL_GUARANTEED:
            ok &= np.array([len(s) > 0 for s in self.node_pods])
        else:
            ok &= self.low_count > 0
        best: tuple[int, int, int, int, list[int]] | None = None
        for node in np.flatnonzero(ok).tolist():
            victims = self._victims(i, node)
            if victims is None:
                continue
            share = sum(self.num_gpu[v] * self.share[v] for v in victims)
            key = (len(victims), share, int(self.tie_rank[node]), node, victims)  # type: ignore[index]
            if best is None or key[:4] < best[:4]:
                best = key
        if best is None:
            self.evict_fail.add(shape)
            return False
        node, victims = best[3], best[4]
        for v in victims:
            self._evict(v)
        view = self.capacity.view(self.level[i])
        pod = self._request(i)
        placer = self.placers[id(view)]
        assert feasible_nodes(pod, view, self.model_bits)[node], "eviction left no room"
        self._start(i, node, placer.place_on(pod, view, node).gpus)
        return True

    # -- measures -------------------------------------------------------------------------------
    def _record(self, force: bool = False) -> None:
        cap = self.capacity
        if cap.held_total > self.peak[0]:
            self.peak = (cap.held_total, self.now)
        sample = self.config.sample
        if sample > 0 and not force:
            if self.now < self.next_sample:
                return
            self.next_sample = (math.floor(self.now / sample) + 1) * sample
        if self.dirty:
            self.tracker.update(cap.guaranteed, sorted(self.dirty))
            self.dirty.clear()
        s = self.series
        s["time"].append(self.now)
        s["arrived_milli"].append(self.arrived_milli)
        s["allocated_milli"].append(cap.held_total)
        s["guaranteed_milli"].append(cap.held_guaranteed)
        s["idle_milli"].append(cap.guaranteed_free_total)
        s["filler_milli"].append(self.filler.held_milli)
        s["frag_milli"].append(self.tracker.total)
        for q, count in zip(QOS_ORDER, self.pending_by_class, strict=True):
            s[f"pending_{q}"].append(count)
        if self.obs is not None:
            self.obs.tick(self.now)


def run_sharing(
    cluster: Cluster,
    workload: SharedWorkload,
    config: SharingConfig,
    *,
    progress: Callable[[int, int], None] | None = None,
    observer: Any = None,
) -> SharingResult:
    """Run the sharing engine once (see the module docstring)."""
    return SharingEngine(cluster, workload, config, observer).run(progress)
