"""The best-effort elastic filler (spec A.5): a workload that grows into free GPU fragments.

A filler job has replicas r ∈ [r_min, r_max], each holding a share m ∈ [m_min, m_max] of one GPU
plus some CPU and memory, and W GPU-seconds of work. Jobs are served in list order, one at a time,
from their arrival (seconds after the first pod's arrival). The engine takes every replica off
before each pass over the pending pods (so real pods never wait for the filler: it shrinks
first) and lays the filler out again after:
over GPUs whose usable share f ≥ m_min on nodes that fit one replica's CPU and memory, smallest f
first (then the node tie order, then GPU index) so that large holes stay for real pods, one
replica per GPU with m = min(f, m_max), up to r_max; fewer than r_min places run none.
Progress is Σ rate·m/1000 GPU-seconds per second. A replica that disappears is a filler
eviction; one that changes GPU or share a resize (costing ``resize_overhead`` seconds of its work
rate). The layout is also refreshed every ``slot`` seconds while a filler runs.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedlab.engines.shared_capacity import SharedCapacity
from schedlab.errors import InputError
from schedlab.input_files import read_text
from schedlab.model.cluster import GPU_MILLI
from schedlab.model.shared_pods import LEVEL_FILLER
from schedlab.policies.placement.base import PodRequest

#: Replica layout: (node, GPU, share).
Replica = tuple[int, int, int]


@dataclass(frozen=True)
class FillerJob:
    name: str
    work: float  # GPU-seconds
    r_min: int
    r_max: int
    m_min: int
    m_max: int
    cpu_milli: int = 0
    memory_mib: int = 0
    arrival: float = 0.0

    def __post_init__(self) -> None:
        if not (1 <= self.r_min <= self.r_max):
            raise InputError(f"filler {self.name!r}: need 1 ≤ r_min ≤ r_max")
        if not (1 <= self.m_min <= self.m_max <= GPU_MILLI):
            raise InputError(f"filler {self.name!r}: need 1 ≤ m_min ≤ m_max ≤ {GPU_MILLI}")
        if not (self.work > 0 and math.isfinite(self.work)):
            raise InputError(f"filler {self.name!r}: 'work' must be a positive number")
        if self.cpu_milli < 0 or self.memory_mib < 0 or not self.arrival >= 0:
            raise InputError(f"filler {self.name!r}: negative CPU, memory or arrival")


FIELDS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "work": (int, float),
    "r_min": int,
    "r_max": int,
    "m_min": int,
    "m_max": int,
    "cpu_milli": int,
    "memory_mib": int,
    "arrival": (int, float),
}


def read_fillers(path: str | Path) -> tuple[FillerJob, ...]:
    """A TOML file of ``[[filler]]`` tables with the fields of :class:`FillerJob`."""
    try:
        data = tomllib.loads(read_text(Path(path)))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=str(path)) from None
    tables = data.get("filler")
    if not isinstance(tables, list) or not tables:
        raise InputError("expected one or more [[filler]] tables", path=str(path))
    jobs = []
    for k, table in enumerate(tables):
        for key, value in table.items():
            want = FIELDS.get(key)
            if want is None or isinstance(value, bool) or not isinstance(value, want):
                raise InputError(
                    f"filler {k + 1}: unknown key or wrong type {key} = {value!r}",
                    path=str(path),
                    column=key,
                )
        missing = [
            f for f in ("name", "work", "r_min", "r_max", "m_min", "m_max") if f not in table
        ]
        if missing:
            raise InputError(f"filler {k + 1}: missing {', '.join(missing)}", path=str(path))
        try:
            jobs.append(FillerJob(**table))
        except InputError as exc:
            raise InputError(exc.message, path=str(path)) from None
    return tuple(jobs)


class FillerRunner:
    """The filler jobs of one run and their replicas on a :class:`SharedCapacity`."""

    def __init__(
        self,
        jobs: tuple[FillerJob, ...],
        capacity: SharedCapacity,
        tie_rank: np.ndarray,
        slot: float = 60.0,
        resize_overhead: float = 0.0,
        offset: float = 0.0,
    ) -> None:
        self.jobs = jobs
        #: Filler arrivals count from here (the first pod's arrival).
        self.offset = offset
        self.capacity = capacity
        self.tie_rank = tie_rank
        self.slot = slot
        self.resize_overhead = resize_overhead
        self.active = 0
        self.remaining = [j.work for j in jobs]
        self.start = [math.nan] * len(jobs)
        self.end = [math.nan] * len(jobs)
        self.lost = [0] * len(jobs)
        self.resizes = [0] * len(jobs)
        self.replica_seconds = [0.0] * len(jobs)
        self.replicas: list[Replica] = []
        self.progress = 0.0
        self.last = 0.0
        self.next_tick = math.inf

    @property
    def held_milli(self) -> int:
        return sum(m for _, _, m in self.replicas)

    def _job(self, now: float) -> FillerJob | None:
        while self.active < len(self.jobs) and self.remaining[self.active] <= 1e-9:
            self.active += 1
        if self.active < len(self.jobs) and self.jobs[self.active].arrival + self.offset <= now:
            return self.jobs[self.active]
        return None

    def next_time(self) -> float:
        """When the filler next needs the engine: its end, its next slot, or its arrival."""
        if self.active >= len(self.jobs):
            return math.inf
        if self.replicas and self.progress > 0:
            end = self.last + self.remaining[self.active] / self.progress
            return min(end, self.next_tick)
        if self.next_tick < math.inf:
            return self.next_tick
        return max(self.jobs[self.active].arrival + self.offset, self.last)

    def take_off(self, now: float) -> None:
        """Book progress and remove every replica (before a pass over the pending pods)."""
        if self.active < len(self.jobs) and self.replicas:
            j = self.active
            self.remaining[j] -= self.progress * (now - self.last)
            self.replica_seconds[j] += len(self.replicas) * (now - self.last)
            job = self.jobs[j]
            for node, x, m in self.replicas:
                pod = PodRequest(job.cpu_milli, job.memory_mib, 1, m)
                self.capacity.give_back(node, (x,), pod, LEVEL_FILLER)
            if self.remaining[j] <= 1e-6:
                self.remaining[j] = 0.0
                self.end[j] = now
        self.last = now

    def lay_out(self, now: float, dirty: set[int]) -> None:
        """Place the active job's replicas in the smallest usable fragments (see module doc)."""
        before = self.replicas
        self.replicas = []
        self.progress = 0.0
        job = self._job(now)
        if job is None:
            self.next_tick = math.inf
            return
        j = self.active
        if self.start[j] != self.start[j]:
            self.start[j] = now
        view = self.capacity.opportunistic
        cpu = view.cpu_free.copy()
        mem = view.mem_free.copy()
        ok_node = (cpu >= job.cpu_milli) & (mem >= job.memory_mib)
        free = view.gpu_free
        nodes, gpus = np.nonzero(ok_node[:, None] & view.gpu_exists & (free >= job.m_min))
        shares = free[nodes, gpus]
        order = np.lexsort((gpus, self.tie_rank[nodes], shares))
        chosen: list[Replica] = []
        for k in order.tolist():
            node, x = int(nodes[k]), int(gpus[k])
            if cpu[node] < job.cpu_milli or mem[node] < job.memory_mib:
                continue
            cpu[node] -= job.cpu_milli
            mem[node] -= job.memory_mib
            chosen.append((node, x, min(int(shares[k]), job.m_max)))
            if len(chosen) == job.r_max:
                break
        if len(chosen) < job.r_min:
            chosen = []
        for node, x, m in chosen:
            self.capacity.take(node, (x,), PodRequest(job.cpu_milli, job.memory_mib, 1, m), 0)
            dirty.add(node)
        dirty.update(node for node, _, _ in before)
        self.lost[j] += max(0, len(before) - len(chosen))
        # Replicas moved or resized (not merely added or dropped).
        kept = len(set(chosen) & set(before))
        moved = len(chosen) - kept - max(0, len(chosen) - len(before))
        self.resizes[j] += moved
        self.replicas = chosen
        rate = sum(m * self._speed(node, x) for node, x, m in chosen) / GPU_MILLI
        if moved and self.resize_overhead > 0:
            # A resized replica works for nothing during the overhead: charge it as lost work.
            self.remaining[j] += self.resize_overhead * moved * (rate / max(len(chosen), 1))
        self.progress = rate
        self.next_tick = now + self.slot

    def _speed(self, node: int, x: int) -> float:
        """Time-sliced speed on an overcommitted GPU (spec A.3), 1 otherwise."""
        t, g = int(self.capacity.t[node, x]), int(self.capacity.g[node, x])
        return min(1.0, (GPU_MILLI - g) / (t - g)) if t > GPU_MILLI else 1.0

    def summary(self) -> list[dict[str, object]]:
        return [
            {
                "name": job.name,
                "work_gpu_s": job.work,
                "done_gpu_s": round(job.work - max(self.remaining[k], 0.0), 3),
                "start": None if self.start[k] != self.start[k] else self.start[k],
                "end": None if self.end[k] != self.end[k] else self.end[k],
                "replicas_lost": self.lost[k],
                "resizes": self.resizes[k],
                "replica_seconds": round(self.replica_seconds[k], 3),
            }
            for k, job in enumerate(self.jobs)
        ]
