"""When each queued job could start, as a conservative backfill plan sees it.

``schedlab serve status`` shows the queue in the policy's order with an estimated start for each
job. Slurm knows no more than each running job's time limit, so the estimate is a plan built from
time limits alone, the way a backfill scheduler makes reservations:

* every running (or launching) job holds its GPUs until its start plus its time limit (a job
  past its limit, still ending, until now);
* the queued jobs are taken in the policy's order; each gets the earliest time, not before now,
  at which GPUs of the shape it asked for are free on the nodes that can run jobs for its whole
  time limit, given what the running jobs and every job ahead of it hold, and then holds them
  itself from then on (a reservation);
* ``in_order`` (orderings without backfill start jobs strictly in turn): no job is planned to
  start before the job ahead of it.

So an estimate is "no later than this, if every job runs to its time limit and the policy keeps
this order": jobs that end early bring starts forward, a preemptive policy may start a job
sooner by stopping another, and a job submitted later that the policy ranks higher pushes it
back. A job that no number of endings lets fit (it needs nodes that are down) gets None.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Hold:
    """``gpus`` GPUs of node ``node`` taken from ``start`` until ``end`` (Unix seconds)."""

    node: int
    gpus: int
    start: float
    end: float


@dataclass(frozen=True)
class Ask:
    """A queued job's shape: ``gpus`` in all; ``per_node`` GPUs on each of ``nodes`` nodes when
    it asked per node (``--gres=gpu:N``), else 0 (any split); ``seconds`` its time limit."""

    gpus: int
    seconds: float
    per_node: int = 0
    nodes: int = 0
    exclusive: bool = False


@dataclass(frozen=True)
class Estimate:
    """A planned start (None: never, on the nodes that are up) and what the job waits for:
    ``"now"`` (it fits now), ``"resources"`` (running jobs hold the GPUs it needs) or
    ``"priority"`` (GPUs it needs are free or freed sooner, but jobs ahead of it take them)."""

    start: float | None
    waits_for: str
    where: tuple[tuple[int, int], ...] = ()  # (node, GPUs) of the reservation

    @property
    def nodes(self) -> tuple[int, ...]:
        return tuple(n for n, _ in self.where)


class Plan:
    """GPUs in use per node over time: the running jobs' holds plus the reservations made.

    Kept as a step function on the times where use changes (``times``; column ``k`` of
    ``used`` is the use from ``times[k]`` to the next), so a job's fit at every candidate time
    is found with a few array operations rather than a scan per time (a queue of hundreds of
    jobs is planned in a cycle)."""

    def __init__(self, capacity: Sequence[int], holds: Sequence[Hold], now: float) -> None:
        self.capacity = np.maximum(np.asarray(capacity, dtype=np.int64), 0)
        self.now = now
        kept = [h for h in holds if 0 <= h.node < len(self.capacity) and h.gpus > 0]
        kept = [h for h in kept if h.end > max(h.start, now)]
        self.times = np.unique(
            np.asarray([now] + [max(h.start, now) for h in kept] + [h.end for h in kept])
        )
        self.used = np.zeros((len(self.capacity), len(self.times)), dtype=np.int64)
        for h in kept:
            self._add(h.node, h.gpus, max(h.start, now), h.end)
        self._tables: tuple[np.ndarray, ...] | None = None

    def _column(self, t: float) -> int:
        """The column that begins at ``t`` (made by splitting the one holding it if needed)."""
        k = int(np.searchsorted(self.times, t))
        if k < len(self.times) and self.times[k] == t:
            return k
        before = self.used[:, k - 1] if k > 0 else np.zeros(len(self.capacity), dtype=np.int64)
        self.times = np.insert(self.times, k, t)
        self.used = np.insert(self.used, k, before, axis=1)
        return k

    def _add(self, node: int, gpus: int, start: float, end: float) -> None:
        a = self._column(start)
        b = self._column(end) if np.isfinite(end) else len(self.times)
        self.used[node, a:b] += gpus
        self._tables = None

    def _window_max(self, seconds: float) -> np.ndarray:
        """For each column ``k``: the most GPUs each node has in use during
        ``[times[k], times[k] + seconds)`` (shape: columns × nodes), by a sparse table."""
        if self._tables is None:
            tables = [self.used]
            width = 1
            while 2 * width <= self.used.shape[1]:
                prev = tables[-1]
                tables.append(np.maximum(prev[:, :-width], prev[:, width:]))
                width *= 2
            self._tables = tuple(tables)
        n = len(self.times)
        lo = np.arange(n)
        hi = np.searchsorted(self.times, self.times + seconds, side="left")
        hi = np.maximum(hi, lo + 1)  # at least the column the window starts in
        level = np.floor(np.log2(hi - lo)).astype(np.int64)
        out = np.empty((n, len(self.capacity)), dtype=np.int64)
        for lv in np.unique(level):
            sel = np.flatnonzero(level == lv)
            table = self._tables[int(lv)]
            left = table[:, lo[sel]]
            right = table[:, hi[sel] - (1 << int(lv))]
            out[sel] = np.maximum(left, right).T
        return out

    def earliest(self, ask: Ask, floor: float) -> tuple[float, list[tuple[int, int]]] | None:
        """The first time from ``floor`` on at which ``ask`` fits for its whole time limit, and
        where: per-node shapes on the tightest nodes that take them, any split on the freest."""
        free = self.capacity[None, :] - self._window_max(ask.seconds)
        if ask.exclusive:
            free = np.where((free == self.capacity[None, :]) & (self.capacity > 0), free, 0)
        if ask.per_node:
            ok = (free >= ask.per_node).sum(axis=1) >= max(ask.nodes, 1)
        else:
            ok = np.clip(free, 0, None).sum(axis=1) >= ask.gpus
        ok &= self.times >= floor
        hits = np.flatnonzero(ok)
        if len(hits) == 0:
            return None
        k = int(hits[0])
        room = [(int(f), n) for n, f in enumerate(free[k])]
        if ask.per_node:
            fits = sorted((f, n) for f, n in room if f >= ask.per_node)
            return float(self.times[k]), [(n, ask.per_node) for _, n in fits[: max(ask.nodes, 1)]]
        taken: list[tuple[int, int]] = []
        left = ask.gpus
        for f, n in sorted(room, key=lambda fn: (-fn[0], fn[1])):
            if left <= 0 or f <= 0:
                break
            taken.append((n, min(f, left)))
            left -= min(f, left)
        return float(self.times[k]), taken

    def reserve(self, where: list[tuple[int, int]], start: float, seconds: float) -> None:
        for node, gpus in where:
            self._add(node, gpus, start, start + seconds)


def estimate_starts(
    capacity: Sequence[int],
    holds: Sequence[Hold],
    queue: Sequence[Ask],
    now: float,
    in_order: bool = False,
) -> list[Estimate]:
    """Each job of ``queue`` (in the policy's order) planned as the module docstring says."""
    plan = Plan(capacity, holds, now)
    running = Plan(capacity, holds, now)  # the running jobs alone: resources or priority
    out: list[Estimate] = []
    floor = now
    for ask in queue:
        if ask.gpus <= 0:
            out.append(Estimate(floor, "now" if floor <= now else "priority"))
            continue
        found = plan.earliest(ask, floor)
        if found is None:
            out.append(Estimate(None, "resources"))
            continue
        start, where = found
        plan.reserve(where, start, ask.seconds)
        if start <= now:
            why = "now"
        else:
            alone = running.earliest(ask, now)
            why = "priority" if alone is not None and alone[0] < start else "resources"
        out.append(Estimate(start, why, tuple(where)))
        if in_order:
            floor = max(floor, start)
    return out
