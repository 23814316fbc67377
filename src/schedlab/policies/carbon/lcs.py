"""``lcs``: lowest-carbon start ("Let's Wait Awhile", GAIA).

At arrival a job is given the start t ∈ {arrival} ∪ {CI steps in (arrival, arrival + slack]}
minimising ∫_t^{t+d} CI (ties: earliest; d = oracle run time at the requested size). It is held
until t, then queues first come, first served behind the jobs already waiting, and once started it
is never interrupted. A busy cluster may start it later than t: the hold is a lower bound.
"""

from __future__ import annotations

import heapq
from dataclasses import replace

from schedlab.energy.shifting import lowest_carbon_start
from schedlab.model.snapshot import Decision, Snapshot
from schedlab.policies.carbon.base import SlackScheduler
from schedlab.policies.ordering.fifo import Fifo
from schedlab.policies.ordering.queue_scheduler import QueueScheduler
from schedlab.policies.scheduler import ReplayContext


class LowestCarbonStart(SlackScheduler):
    name = "lcs"
    summary = "hold each job to its lowest-carbon start within its slack, then FIFO"
    preemptive = False

    def reset(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        self.queue = QueueScheduler(Fifo(), "fifo", slot=self.slot)
        self.queue.reset(ctx)
        self.held: set[int] = set()
        self.releases: list[tuple[float, int]] = []
        self.start_at: dict[int, float] = {}

    def decide(self, snap: Snapshot) -> list[Decision]:
        ci = self.carbon
        for job in snap.new_pending:
            if job in self.start_at:
                continue
            d = self.oracle_seconds(snap, job)
            slack = self.slack_of(snap, job, self.slack)
            t = lowest_carbon_start(ci, snap.now, d, slack) if d < float("inf") else snap.now
            self.start_at[job] = t
            if t > snap.now:
                self.held.add(job)
                heapq.heappush(self.releases, (t, job))
        released: list[int] = []
        while self.releases and self.releases[0][0] <= snap.now:
            _, job = heapq.heappop(self.releases)
            self.held.discard(job)
            released.append(job)
        arrivals = [j for j in snap.new_pending if j not in self.held and j not in released]
        view = replace(
            snap,
            new_pending=sorted(arrivals + released),
            pending_set={j: None for j in snap.pending_set if j not in self.held},
            _pending=None,
        )
        return self.queue.decide(view)

    def next_wakeup(self, snap: Snapshot) -> float:
        wake = self.releases[0][0] if self.releases else float("inf")
        return min(wake, self.queue.next_wakeup(snap))
