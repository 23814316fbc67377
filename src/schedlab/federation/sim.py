"""The federation's manager: one clock over every site's replay engine.

At each event time ``t``: every site applies its own events due at ``t`` (completions first),
then transfers ending at ``t`` deliver their jobs, then the manager dispatches the jobs
submitted at ``t`` (and grows MultiKueue Incremental nominations), then each site with
something new decides, in file order. A MultiKueue copy that a site starts wins at that
instant; its other copies are withdrawn at once, and a site that had already decided at ``t``
decides again (the copy may have blocked its queue).
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field

import numpy as np

from schedlab.errors import InputError
from schedlab.federation import dispatch
from schedlab.federation.config import MULTIKUEUE, Federation
from schedlab.federation.site import Site, estimated_seconds
from schedlab.federation.wan import Wan
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import FUTURE, PENDING, RUNNING

INF = math.inf
ARRIVE, ROUND = 0, 1


@dataclass
class JobData:
    """Where each job's input is and how big (per job, in the engines' order)."""

    data_site: list[str]
    data_gb: np.ndarray
    output_gb: np.ndarray
    pinned: list[str]  # "" = the dispatcher decides


def job_data(fed: Federation, jobs: JobTable) -> JobData:
    """The trace's ``data_site``/``data_gb``/``output_gb``/``site`` columns, or the defaults."""
    extra = jobs.extra or {}
    n = len(jobs)
    default_gb = fed.default_data_gb * (jobs.num_gpus if fed.data_gb_per_gpu else np.ones(n))

    def text(name: str, default: str) -> list[str]:
        if name not in extra:
            return [default] * n
        return [str(v).strip() or default for v in np.asarray(extra[name]).tolist()]

    def number(name: str, default: np.ndarray) -> np.ndarray:
        if name not in extra:
            return np.asarray(default, dtype=np.float64)
        values = np.asarray(extra[name], dtype=np.float64)
        return np.where(np.isnan(values), default, values)

    data = JobData(
        text("data_site", fed.data_site_default),
        number("data_gb", default_gb),
        number("output_gb", np.zeros(n)),
        text("site", ""),
    )
    places, sites = fed.places, {s.name for s in fed.sites}
    for i in range(n):
        if data.data_site[i] not in places:
            raise InputError(
                f"job {jobs.job_id[i]!r}: 'data_site' {data.data_site[i]!r} is no site or data "
                f"store of {fed.path}",
                path=jobs.source,
                column="data_site",
            )
        if data.pinned[i] and data.pinned[i] not in sites:
            raise InputError(
                f"job {jobs.job_id[i]!r}: 'site' {data.pinned[i]!r} is no site of {fed.path}",
                path=jobs.source,
                column="site",
            )
    return data


@dataclass
class Outcome:
    """What the manager recorded per job (the engines record the rest)."""

    site: np.ndarray  # index of the site that ran (or holds) it; -1: unplaceable
    arrived: np.ndarray  # when it joined its site's queue
    transfer_s: np.ndarray
    egress_gb: np.ndarray
    egress_usd: np.ndarray
    nominated: np.ndarray
    hold_gpu_s: np.ndarray
    wall_seconds: float = 0.0
    dispatch_seconds: float = 0.0
    unplaceable: int = 0
    ci_short: dict[int, float] = field(default_factory=dict)


class Manager:
    def __init__(
        self, fed: Federation, jobs: JobTable, sites: list[Site], data: JobData, until: float
    ) -> None:
        self.fed, self.jobs, self.sites, self.data, self.until = fed, jobs, sites, data, until
        n = len(jobs)
        self.index = {s.name: s.index for s in sites}
        self.work = sites[0].run.work
        self.out = Outcome(
            np.full(n, -1, dtype=np.int64), np.full(n, np.nan), np.zeros(n), np.zeros(n),
            np.zeros(n), np.zeros(n, dtype=np.int64), np.zeros(n),
        )  # fmt: skip
        self.wan = Wan(fed.wan_sharing)
        self.heap: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.rr = 0
        self.copies: dict[int, list[int]] = {}  # job → sites holding a copy (MultiKueue)
        self.todo: list[int] = []  # MultiKueue Incremental: sites not yet nominated, per job
        self.later: dict[int, list[int]] = {}
        self.transit: dict[int, int] = {}  # job → site it is staged to (before-queue)
        self.transit_gpus = np.zeros(len(sites), dtype=np.int64)
        self.paused: dict[int, float] = {}  # job → when its on-admit hold began
        self.new: list[list[int]] = [[] for _ in sites]
        self.ci_until = np.zeros(len(sites))  # latest time a carbon series was asked about
        self.multikueue = fed.dispatcher in MULTIKUEUE
        self._check_links()

    # -- set-up checks ---------------------------------------------------------------------
    def _check_links(self) -> None:
        """Every transfer a job may need has a WAN link (refused before any work)."""
        needed: set[tuple[str, str]] = set()
        for src, gb, pin in zip(self.data.data_site, self.data.data_gb.tolist(),
                                self.data.pinned, strict=True):  # fmt: skip
            if gb > 0:
                for s in self.sites:
                    if s.name != src and (not pin or pin == s.name):
                        needed.add((src, s.name))
        for src, dst in sorted(needed):
            if self.fed.link(src, dst) is None:
                raise InputError(
                    f"{self.fed.path}: no WAN link between {src!r} and {dst!r}, which a job's "
                    f"data needs (add wan.{dst} to {src!r} or wan.{src} to {dst!r})"
                )

    # -- estimates -------------------------------------------------------------------------
    def transfer_seconds(self, job: int, site: Site) -> float:
        src, gb = self.data.data_site[job], float(self.data.data_gb[job])
        if gb <= 0 or src == site.name:
            return 0.0
        link = self.fed.link(src, site.name)
        assert link is not None
        return link.seconds(gb)

    def egress_usd(self, job: int, site: Site) -> float:
        places = self.fed.places
        src = self.data.data_site[job]
        cost = 0.0
        if src != site.name:
            cost += places[src].egress.cost(float(self.data.data_gb[job]))
            cost += site.place.egress.cost(float(self.data.output_gb[job]))
        return cost

    def queued_ahead(self, site: Site) -> list[tuple[int, float]]:
        r = site.run
        jobs = self.jobs
        queue = [j for j in r.pending] + [j for j, k in self.transit.items() if k == site.index]
        return [
            (int(jobs.num_gpus[j]), estimated_seconds(site, jobs, j, self.work[j],
                                                       self.fed.runtime_factor))
            for j in queue
        ]  # fmt: skip

    def wait_until(self, site: Site, job: int, seconds: float, now: float) -> float:
        r = site.run
        snap = r.snapshot(now, [])
        running = snap.running()
        ends = snap.estimated_end(running) if len(running) else np.zeros(0)
        releases = list(zip(ends.tolist(), r.rt.alloc_n[running].tolist(), strict=True))
        return dispatch.earliest_start(
            r.free_gpus, releases, self.queued_ahead(site), int(self.jobs.num_gpus[job]),
            seconds, now,
        )  # fmt: skip

    def estimate(self, site: Site, job: int, now: float, need_wait: bool) -> dispatch.Estimate:
        jobs, fed = self.jobs, self.fed
        run = estimated_seconds(site, jobs, job, self.work[job], fed.runtime_factor)
        transfer = self.transfer_seconds(job, site)
        wait = self.wait_until(site, job, run, now) if need_wait else now
        start = max(now + transfer, wait)
        n = int(jobs.num_gpus[job])
        price = site.price[site.model_for(jobs, job)]
        cost = n * run / 3600.0 * price + self.egress_usd(job, site)
        watts = n * site.gpu_w[site.model_for(jobs, job)]
        carbon = 0.0
        if fed.dispatcher in ("greenest", "joint"):
            carbon = dispatch.carbon_g(site, watts, start, run)
            self.ci_until[site.index] = max(self.ci_until[site.index], start + run)
        return dispatch.Estimate(start, start + run, cost, carbon)

    # -- dispatch --------------------------------------------------------------------------
    def choose(self, job: int, feasible: list[Site], now: float) -> Site:
        kind = self.fed.dispatcher
        if kind == "round-robin":
            k = len(self.sites)
            ok = {s.index for s in feasible}
            for step in range(k):
                i = (self.rr + step) % k
                if i in ok:
                    self.rr = i + 1
                    return self.sites[i]
        if kind == "least-loaded":
            loads = []
            for s in feasible:
                queued = sum(int(self.jobs.num_gpus[j]) for j in s.run.pending)
                busy = s.busy_gpus() + queued + int(self.transit_gpus[s.index])
                loads.append(busy / s.cluster.total_gpus)
            return feasible[dispatch.argmin(loads)]
        need_wait = kind in ("greenest", "earliest-finish", "joint")
        est = [self.estimate(s, job, now, need_wait) for s in feasible]
        if kind == "cheapest":
            scores = [e.cost for e in est]
        elif kind == "greenest":
            scores = [e.carbon_g for e in est]
        elif kind == "earliest-finish":
            scores = [e.finish for e in est]
        else:
            scores = dispatch.joint_scores(est, now, self.fed.weights)
        return feasible[dispatch.argmin(scores)]

    def dispatch(self, job: int, now: float) -> None:
        began = time.perf_counter()
        pin = self.data.pinned[job]
        candidates = [self.sites[self.index[pin]]] if pin else self.sites
        feasible = [s for s in candidates if s.feasible(self.jobs, job)]
        if not feasible:
            self.out.unplaceable += 1
            return
        if self.multikueue and not pin:
            step = len(feasible) if self.fed.dispatcher == "multikueue-allatonce" else self.fed.step
            first, rest = feasible[:step], feasible[step:]
            self.copies[job] = []
            for s in first:
                self._enqueue_copy(job, s, now)
            if rest:
                self.later[job] = [s.index for s in rest]
                self._push(now + self.fed.round_s, ROUND, job)
        else:
            site = feasible[0] if len(feasible) == 1 else self.choose(job, feasible, now)
            self.send(job, site, now)
        self.out.dispatch_seconds += time.perf_counter() - began

    def _enqueue_copy(self, job: int, site: Site, now: float) -> None:
        self.copies[job].append(site.index)
        self.out.nominated[job] += 1
        self._arrive(job, site, now)

    def send(self, job: int, site: Site, now: float) -> None:
        """Give ``job`` to ``site``: staged first (before-queue), or queued at once."""
        out = self.out
        out.site[job] = site.index
        out.nominated[job] = 1
        self._bill_egress(job, site)
        if self.fed.stage_in == "before-queue" and self.transfer_seconds(job, site) > 0:
            self.transit[job] = site.index
            self.transit_gpus[site.index] += int(self.jobs.num_gpus[job])
            self._start_transfer(job, site, now)
        else:
            self._arrive(job, site, now)

    def _bill_egress(self, job: int, site: Site) -> None:
        src = self.data.data_site[job]
        if src != site.name:
            self.out.egress_gb[job] = self.data.data_gb[job] + self.data.output_gb[job]
        self.out.egress_usd[job] = self.egress_usd(job, site)

    def _start_transfer(self, job: int, site: Site, now: float) -> None:
        src = self.data.data_site[job]
        link = self.fed.link(src, site.name)
        assert link is not None
        self.wan.start(job, src, site.name, float(self.data.data_gb[job]), link, now)
        self.out.transfer_s[job] = -now  # completed at the transfer's end

    def _arrive(self, job: int, site: Site, now: float) -> None:
        site.run.inject(job, now)
        self.new[site.index].append(job)
        if math.isnan(self.out.arrived[job]):
            self.out.arrived[job] = now

    def _push(self, t: float, kind: int, job: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, job))

    # -- events ----------------------------------------------------------------------------
    def transfer_ended(self, job: int, now: float) -> None:
        self.out.transfer_s[job] += now
        k = self.transit.pop(job, None)
        if k is not None:  # before-queue: the job joins its site's queue now
            self.transit_gpus[k] -= int(self.jobs.num_gpus[job])
            self._arrive(job, self.sites[k], now)
            return
        site = self.sites[int(self.out.site[job])]  # on-admit: its GPUs start working now
        began = self.paused.pop(job)
        self.out.hold_gpu_s[job] += (now - began) * int(site.run.rt.alloc_n[job])
        site.run.now = now
        site.run.resume_progress(job, now)

    def round(self, job: int, now: float) -> None:
        """MultiKueue Incremental: no site admitted the job this round; nominate more."""
        if job not in self.copies or self.out.site[job] >= 0:
            return
        rest = self.later.pop(job, [])
        for k in rest[: self.fed.step]:
            self._enqueue_copy(job, self.sites[k], now)
        if rest[self.fed.step :]:
            self.later[job] = rest[self.fed.step :]
            self._push(now + self.fed.round_s, ROUND, job)

    def admitted(self, site: Site, now: float) -> list[int]:
        """Jobs placed at ``site`` at its last decision: copies win (the others are withdrawn,
        returning the sites that must decide again); on-admit jobs start their stage-in."""
        again: list[int] = []
        placed, site.observer.placed_now = site.observer.placed_now, []
        for job in placed:
            if site.run.first_start[job] != now or site.run.rt.status[job] != RUNNING:
                continue
            if job in self.copies:
                holders = self.copies.pop(job)
                self.later.pop(job, None)
                self.out.site[job] = site.index
                self._bill_egress(job, site)
                for k in holders:
                    other = self.sites[k]
                    if k != site.index and other.run.rt.status[job] == PENDING:
                        other.run.withdraw(job)
                        again.append(k)
            elif self.fed.stage_in != "on-admit" or job in self.paused:
                continue
            needs_data = self.transfer_seconds(job, site) > 0
            if self.fed.stage_in == "on-admit" and needs_data and job not in self.paused:
                self.paused[job] = now
                site.run.pause_progress(job)
                self._start_transfer(job, site, now)
        return again

    # -- the loop --------------------------------------------------------------------------
    def run(self) -> float:
        began = time.perf_counter()
        submit = self.jobs.submit_time.tolist()
        for s in self.sites:
            s.run.begin(external=True)
        for job in range(len(submit)):
            self._push(submit[job], ARRIVE, job)
        now = 0.0
        while True:
            site_times = [s.run.next_time() for s in self.sites]
            now = min(self.heap[0][0] if self.heap else INF, self.wan.next_time(), min(site_times))
            if now == INF or now > self.until:
                break
            due = [t <= now for t in site_times]
            for s in self.sites:
                if due[s.index]:
                    self.new[s.index] += s.run.advance(now)
            for t in self.wan.advance(now):
                self.transfer_ended(t.key, now)
            while self.heap and self.heap[0][0] <= now:
                _, _, kind, job = heapq.heappop(self.heap)
                if kind == ARRIVE:
                    self.dispatch(job, now)
                else:
                    self.round(job, now)
            pending = {s.index for s in self.sites if due[s.index] or self.new[s.index]}
            while pending:
                k = min(pending)
                pending.discard(k)
                s = self.sites[k]
                new, self.new[k] = self.new[k], []
                s.run.decide(now, new)
                pending.update(self.admitted(s, now))
        self.out.wall_seconds = time.perf_counter() - began
        return now


def status_of(site: Site, job: int) -> int:
    return int(site.run.rt.status[job])


__all__ = ["FUTURE", "Manager", "job_data"]
