"""The federation's manager: one clock over every site's replay engine.

At each event time ``t``: every site applies its own events due at ``t`` (completions first),
then transfers ending at ``t`` deliver their jobs, then the manager dispatches the jobs
submitted at ``t`` (and grows MultiKueue Incremental nominations), then each site with
something new decides, in file order. A MultiKueue copy that a site starts wins at that
instant; its other copies are withdrawn at once, and a site that had already decided at ``t``
decides again (the copy may have blocked its queue). With ``reconsider``, the jobs are
re-scored after the sites' decisions at every multiple of its period, and the sites whose queue
or GPUs a move changed decide again (:mod:`schedlab.federation.moves`).
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
from schedlab.federation.moves import Leg, Mover, Option
from schedlab.federation.plan import QueuePlan
from schedlab.federation.site import Site, estimated_seconds
from schedlab.federation.wan import Transfer, Wan
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import FUTURE, PENDING, RUNNING

INF = math.inf
ARRIVE, ROUND, TICK = 0, 1, 2


@dataclass
class JobData:
    """Where each job's input is and how big (per job, in the engines' order)."""

    data_site: list[str]
    data_gb: np.ndarray
    output_gb: np.ndarray
    pinned: list[str]  # "" = the dispatcher decides
    ckpt_gb: np.ndarray  # checkpoint a move of the running job carries


def job_data(fed: Federation, jobs: JobTable) -> JobData:
    """The trace's ``data_site``/``data_gb``/``output_gb``/``site`` columns, or the defaults."""
    extra = jobs.extra or {}
    n = len(jobs)
    default_gb = fed.default_data_gb * (jobs.num_gpus if fed.data_gb_per_gpu else np.ones(n))
    default_ckpt = fed.default_ckpt_gb * (jobs.num_gpus if fed.ckpt_gb_per_gpu else np.ones(n))

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
        number("ckpt_gb", default_ckpt),
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
    moves: np.ndarray
    #: Seconds waited in the queues of the sites a moved job left (0 for the others).
    wait_before: np.ndarray
    #: When a moved job first started at the site it is at now (NaN: not yet, or never moved).
    visit_start: np.ndarray
    #: Energy (kWh) and carbon (g) of the job's WAN transfers (``wan_kwh_per_gb``).
    wan_kwh: np.ndarray
    wan_g: np.ndarray
    #: Every move: (time, job, from site, to site, was it running?).
    move_log: list[tuple[float, int, int, int, bool]] = field(default_factory=list)
    wall_seconds: float = 0.0
    dispatch_seconds: float = 0.0
    #: ``W_k`` calls that kept the site's plan (wholly or in part) and calls that rebuilt it
    plans_kept: int = 0
    plans_rebuilt: int = 0
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
            np.zeros(n), np.zeros(n, dtype=np.int64), np.zeros(n), np.zeros(n, dtype=np.int64),
            np.zeros(n), np.full(n, np.nan), np.zeros(n), np.zeros(n),
        )  # fmt: skip
        self.wan = Wan(fed.wan_sharing)
        self.heap: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.rr = 0
        self.copies: dict[int, list[int]] = {}  # job → sites holding a copy (MultiKueue)
        self.todo: list[int] = []  # MultiKueue Incremental: sites not yet nominated, per job
        self.later: dict[int, list[int]] = {}
        self.transit: dict[int, int] = {}  # job → site it is staged to (before-queue)
        self.transit_at: list[dict[int, None]] = [{} for _ in sites]  # the same, per site
        self.transit_gpus = np.zeros(len(sites), dtype=np.int64)
        self.plans = [QueuePlan() for _ in sites]  # W_k, kept between dispatches
        self.num_gpus = jobs.num_gpus.astype(np.int64)
        self.paused: dict[int, float] = {}  # job → when its on-admit hold began
        self.new: list[list[int]] = [[] for _ in sites]
        self.ci_until = np.zeros(len(sites))  # latest time a carbon series was asked about
        self.multikueue = fed.dispatcher in MULTIKUEUE
        # moves (reconsider): jobs waiting for their first start at the site they moved to,
        # what a moved running job carries, transfers still to stage on admission, transfers
        # under way per job (more than one), and the progress delay a stage-in postpones
        self.mover = Mover(self) if fed.reconsider_s > 0 else None
        self.moving: set[int] = set()
        self.carry: dict[int, tuple[float, float, float]] = {}
        self.legs: dict[int, tuple[Leg, ...]] = {}
        self.inflight: dict[int, int] = {}
        self.resume_delay: dict[int, float] = {}
        self.unsettled = True  # something changed since the last re-scoring
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

    def queued_entry(self, site: Site, job: int) -> tuple[int, float]:
        """A queued job as ``W_k`` places it: (GPUs, estimated seconds at ``site``)."""
        return (
            int(self.jobs.num_gpus[job]),
            estimated_seconds(site, self.jobs, job, self.work[job], self.fed.runtime_factor),
        )

    def queue_of(self, site: Site) -> list[int]:
        """The jobs queued at ``site`` in its queue's order, then those in transit to it."""
        return [*site.run.pending, *self.transit_at[site.index]]

    def plan(self, site: Site, now: float) -> QueuePlan:
        """The site's queue placed on its profile at ``now`` (see :mod:`.plan`)."""
        running, ends = self.releases(site)
        plan = self.plans[site.index]
        rel_g = site.run.rt.alloc_n[running].astype(np.float64)
        plan.update(
            now, site.run.free_gpus, ends, rel_g, self.queue_of(site),
            lambda j: self.queued_entry(site, j),
        )  # fmt: skip
        return plan

    def wait_until(self, site: Site, job: int, seconds: float, now: float) -> float:
        """``W_k``: behind the site's whole queue and the jobs in transit to it."""
        return self.plan(site, now).wait(now, int(self.jobs.num_gpus[job]), seconds)

    def releases(self, site: Site) -> tuple[np.ndarray, np.ndarray]:
        """The running jobs of ``site`` and when each gives its GPUs back: the completion the
        engine has scheduled (progress restart + remaining work ÷ rate, the same number
        whenever it is asked), INF for a job that makes no progress."""
        r = site.run
        running = np.fromiter(r.running, dtype=np.int64, count=len(r.running))
        rt = r.rt
        rate = rt.rate[running]
        with np.errstate(divide="ignore", invalid="ignore"):
            ends = np.where(rate > 0, rt.progress_from[running] + rt.remaining[running] / rate, INF)
        if self.paused:
            self._staging_ends(site, running, ends)
        return running, ends

    def _staging_ends(self, site: Site, running: np.ndarray, ends: np.ndarray) -> None:
        """Jobs holding their GPUs while their input stages in (on-admit) make no progress, so
        the snapshot puts their end at INF: they end their run time after their transfers."""
        rt, n = site.run.rt, len(self.jobs)
        for i in np.flatnonzero(np.isinf(ends)).tolist():
            job = int(running[i])
            if job not in self.paused or not rt.rate[job] > 0:
                continue
            legs = [self.wan.expected_end(k) for k in (job, job + n) if k in self.wan.active]
            staged = max(legs, default=site.run.now)
            delay = self.resume_delay.get(job, 0.0)
            ends[i] = staged + delay + float(rt.remaining[job]) / float(rt.rate[job])

    def estimate(self, site: Site, job: int, now: float, need_wait: bool) -> dispatch.Estimate:
        jobs, fed = self.jobs, self.fed
        run = estimated_seconds(site, jobs, job, self.work[job], fed.runtime_factor)
        transfer = self.transfer_seconds(job, site)
        wait = self.wait_until(site, job, run, now) if need_wait else now
        moved = sum(leg.gb for leg in self.default_legs(job, site))
        egress = self.egress_usd(job, site)
        return self.make_estimate(site, job, now, run, transfer, wait, egress, moved)

    def make_estimate(
        self, site: Site, job: int, now: float, run: float, transfer: float, wait: float,
        egress: float, moved_gb: float,
    ) -> dispatch.Estimate:  # fmt: skip
        """Start, finish, $ and grams of ``job`` at ``site``: ``run`` seconds from the later of
        its data's arrival (``transfer`` s on idle links) and ``wait``; ``egress`` $ added, and
        with ``wan_kwh_per_gb`` the WAN's carbon for ``moved_gb`` in and the output back."""
        jobs, fed = self.jobs, self.fed
        start = max(now + transfer, wait)
        n = int(jobs.num_gpus[job])
        price = site.price[site.model_for(jobs, job)]
        cost = n * run / 3600.0 * price + egress
        watts = n * site.gpu_w[site.model_for(jobs, job)]
        carbon = 0.0
        if fed.dispatcher in ("greenest", "joint"):
            carbon = dispatch.carbon_g(site, watts, start, run)
            self.ci_until[site.index] = max(self.ci_until[site.index], start + run)
            if fed.wan_kwh_per_gb > 0:
                carbon += dispatch.wan_carbon_g(
                    site, fed.wan_kwh_per_gb * moved_gb, start - transfer, transfer
                ) + dispatch.wan_carbon_g(
                    site, fed.wan_kwh_per_gb * self.output_egress(job, site)[0], start + run, 0.0
                )  # fmt: skip
        return dispatch.Estimate(start, start + run, cost, carbon)

    def wan_energy(self, transfer: Transfer, now: float) -> None:
        """A transfer ended at ``now``: its energy (``wan_kwh_per_gb`` × GB) and carbon at the
        receiving site's grid, charged to its job."""
        kwh = self.fed.wan_kwh_per_gb * transfer.gb
        site = self.sites[self.index[transfer.dst]]
        job = transfer.key % len(self.jobs)
        self.out.wan_kwh[job] += kwh
        self.out.wan_g[job] += dispatch.wan_carbon_g(
            site, kwh, transfer.began, now - transfer.began
        )
        self.ci_until[site.index] = max(self.ci_until[site.index], now)

    def output_wan_energy(self, end_time: np.ndarray) -> None:
        """The outputs written back to their data sites when the jobs ended: their WAN energy,
        at the grid of the site that ran the job, at that instant."""
        kwh_per_gb = self.fed.wan_kwh_per_gb
        for job in np.flatnonzero(np.isfinite(end_time) & (self.out.site >= 0)).tolist():
            site = self.sites[int(self.out.site[job])]
            gb = self.output_egress(job, site)[0]
            if gb > 0:
                kwh = kwh_per_gb * gb
                self.out.wan_kwh[job] += kwh
                self.out.wan_g[job] += dispatch.wan_carbon_g(site, kwh, float(end_time[job]), 0.0)

    def load(self, site: Site, extra_gpus: int) -> float:
        """Least-loaded's load: (busy GPUs + GPUs of the jobs queued or in transit there +
        ``extra_gpus``) ÷ total GPUs."""
        pending = site.run.pending
        queued = int(self.num_gpus[np.fromiter(pending, np.int64, len(pending))].sum())
        busy = site.busy_gpus() + queued + int(self.transit_gpus[site.index]) + extra_gpus
        return busy / site.cluster.total_gpus

    # -- what moves cost -------------------------------------------------------------------
    def remaining_work(self, site: Site, job: int, now: float) -> float:
        """Work a running job has left at ``now``."""
        rt = site.run.rt
        done = max(0.0, now - float(rt.progress_from[job])) * float(rt.rate[job])
        return max(0.0, float(rt.remaining[job]) - done)

    def default_legs(self, job: int, site: Site) -> tuple[Leg, ...]:
        src, gb = self.data.data_site[job], float(self.data.data_gb[job])
        return (Leg(src, gb),) if gb > 0 and src != site.name else ()

    def legs_at_admission(self, job: int, site: Site) -> tuple[Leg, ...]:
        """What a job queued at ``site`` stages when admitted there (only under on-admit)."""
        if self.fed.stage_in != "on-admit":
            return ()
        return self.legs[job] if job in self.legs else self.default_legs(job, site)

    def legs_seconds(self, legs: tuple[Leg, ...], site: Site) -> float:
        """The transfers' time on idle links (they run side by side)."""
        seconds = 0.0
        for leg in legs:
            link = self.fed.link(leg.src, site.name)
            assert link is not None
            seconds = max(seconds, link.seconds(leg.gb))
        return seconds

    def place_egress(self, leg: Leg) -> float:
        return self.fed.places[leg.src].egress.cost(leg.gb)

    def output_egress(self, job: int, site: Site) -> tuple[float, float]:
        """(GB, $) of the job's output written back to its data site from ``site``."""
        if self.data.data_site[job] == site.name:
            return 0.0, 0.0
        gb = float(self.data.output_gb[job])
        return gb, site.place.egress.cost(gb)

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
            return feasible[dispatch.argmin([self.load(s, 0) for s in feasible])]
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
            self._to_transit(job, site)
            self._start_transfer(job, site, now)
        else:
            self._arrive(job, site, now)

    def _bill_egress(self, job: int, site: Site) -> None:
        src = self.data.data_site[job]
        if src != site.name:
            self.out.egress_gb[job] = self.data.data_gb[job] + self.data.output_gb[job]
        self.out.egress_usd[job] = self.egress_usd(job, site)

    def _to_transit(self, job: int, site: Site) -> None:
        self.transit[job] = site.index
        self.transit_at[site.index][job] = None
        self.transit_gpus[site.index] += int(self.jobs.num_gpus[job])

    def _start_transfer(self, job: int, site: Site, now: float) -> None:
        self._start_legs(job, site, self.default_legs(job, site), now)

    def _start_legs(self, job: int, site: Site, legs: tuple[Leg, ...], now: float) -> None:
        """Start the job's transfers to ``site``; it is staged when the last one ends."""
        n = len(self.jobs)
        for i, leg in enumerate(legs):
            link = self.fed.link(leg.src, site.name)
            assert link is not None
            self.wan.start(job + i * n, leg.src, site.name, leg.gb, link, now)
        if len(legs) > 1:
            self.inflight[job] = len(legs)
        self.out.transfer_s[job] -= now  # completed at the last transfer's end

    def _arrive(self, job: int, site: Site, now: float) -> None:
        carried = self.carry.pop(job, None)
        if carried is None:
            site.run.inject(job, now)
        else:  # a running job moved here: its remaining work comes with it
            site.run.inject_resumed(job, now, *carried)
        self.new[site.index].append(job)
        if math.isnan(self.out.arrived[job]):
            self.out.arrived[job] = now

    def _push(self, t: float, kind: int, job: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, job))

    # -- events ----------------------------------------------------------------------------
    def transfer_ended(self, key: int, now: float) -> None:
        job = key % len(self.jobs)
        if job in self.inflight:  # one of several transfers of a move
            self.inflight[job] -= 1
            if self.inflight[job]:
                return
            del self.inflight[job]
        self.out.transfer_s[job] += now
        k = self.transit.pop(job, None)
        if k is not None:  # before-queue: the job joins its site's queue now
            del self.transit_at[k][job]
            self.transit_gpus[k] -= int(self.jobs.num_gpus[job])
            self._arrive(job, self.sites[k], now)
            return
        site = self.sites[int(self.out.site[job])]  # on-admit: its GPUs start working now
        began = self.paused.pop(job)
        self.out.hold_gpu_s[job] += (now - began) * int(site.run.rt.alloc_n[job])
        site.run.now = now
        delay = self.resume_delay.pop(job, None)  # a moved job's restart overhead
        site.run.resume_progress(job, now if delay is None else now + delay)

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
            if job in self.moving:
                if site.run.rt.status[job] == RUNNING:
                    self._started_after_move(job, site, now)
                continue
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

    # -- moves ----------------------------------------------------------------------------
    def move(self, job: int, here: Site, option: Option, now: float, running: bool) -> None:
        """Take ``job`` from ``here`` to ``option.site``: withdrawn from the queue (or stopped
        as a preemption stops it), billed for the move's transfers, then staged and queued
        there as a dispatched job is."""
        out, there, legs = self.out, option.site, option.legs
        if running:
            began = out.visit_start[job] if out.moves[job] else float(here.run.first_start[job])
            self.carry[job] = here.run.evict(job, now)
            out.wait_before[job] += began - out.arrived[job]
            unneeded: tuple[Leg, ...] = ()
        else:
            unneeded = self.legs_at_admission(job, here)  # billed, never to happen now
            here.run.withdraw(job)
            out.wait_before[job] += now - out.arrived[job]
        self.legs.pop(job, None)
        gb_was, usd_was = self.output_egress(job, here)
        gb_now, usd_now = self.output_egress(job, there)
        out.egress_gb[job] += (
            sum(leg.gb for leg in legs) + gb_now - gb_was - sum(leg.gb for leg in unneeded)
        )
        out.egress_usd[job] += (
            sum(self.place_egress(leg) for leg in legs)
            + usd_now
            - usd_was
            - sum(self.place_egress(leg) for leg in unneeded)
        )
        out.moves[job] += 1
        out.move_log.append((now, job, here.index, there.index, running))
        out.site[job] = there.index
        out.arrived[job] = math.nan
        out.visit_start[job] = math.nan
        self.moving.add(job)
        if self.fed.stage_in == "before-queue" and legs:
            self._to_transit(job, there)
            self._start_legs(job, there, legs, now)
        else:
            if legs:  # on-admit: staged once the new site admits it
                self.legs[job] = legs
            self._arrive(job, there, now)

    def _started_after_move(self, job: int, site: Site, now: float) -> None:
        """A moved job's first start at its new site; under on-admit its transfers start now,
        its GPUs held, and its restart overhead follows them."""
        self.moving.discard(job)
        self.out.visit_start[job] = now
        legs = self.legs.pop(job, ())
        if legs:
            self.resume_delay[job] = max(0.0, float(site.run.rt.progress_from[job]) - now)
            self.paused[job] = now
            site.run.pause_progress(job)
            self._start_legs(job, site, legs, now)

    def _busy(self) -> bool:
        """Is there a job still to arrive, queued, or in transit (moves may still help)?"""
        if self.transit or any(kind != TICK for _, _, kind, _ in self.heap):
            return True
        return any(s.run.pending or (self.fed.move_running and s.run.running) for s in self.sites)

    def _only_ticks_left(self, site_times: list[float]) -> bool:
        """Nothing but a re-scoring is due, and nothing changed since the last one (which moved
        nothing): time would pass with no change at all (jobs no site starts stay queued, as
        without moves)."""
        return (
            not self.unsettled
            and min(site_times) == INF
            and self.wan.next_time() == INF
            and all(kind == TICK for _, _, kind, _ in self.heap)
        )

    # -- the loop --------------------------------------------------------------------------
    def decide_sites(self, now: float, pending: set[int]) -> None:
        """Each site in ``pending`` decides, in file order; a copy that wins at one site makes
        the sites it is withdrawn from decide again."""
        while pending:
            k = min(pending)
            pending.discard(k)
            s = self.sites[k]
            new, self.new[k] = self.new[k], []
            s.run.decide(now, new)
            pending.update(self.admitted(s, now))

    def run(self) -> float:
        began = time.perf_counter()
        submit = self.jobs.submit_time.tolist()
        for s in self.sites:
            s.run.begin(external=True)
        for job in range(len(submit)):
            self._push(submit[job], ARRIVE, job)
        if self.mover is not None:
            self._push(self.fed.reconsider_s, TICK, -1)
        now = 0.0
        while True:
            site_times = [s.run.next_time() for s in self.sites]
            now = min(self.heap[0][0] if self.heap else INF, self.wan.next_time(), min(site_times))
            if now == INF or now > self.until:
                break
            if self.mover is not None and self._only_ticks_left(site_times):
                now = INF  # as a run with nothing left to do ends
                break
            due = [t <= now for t in site_times]
            for s in self.sites:
                if due[s.index]:
                    self.new[s.index] += s.run.advance(now)
            ended = self.wan.advance(now)
            for t in ended:
                if self.fed.wan_kwh_per_gb > 0:
                    self.wan_energy(t, now)
                self.transfer_ended(t.key, now)
            tick, events = False, any(due) or bool(ended)
            while self.heap and self.heap[0][0] <= now:
                _, _, kind, job = heapq.heappop(self.heap)
                if kind == ARRIVE:
                    self.dispatch(job, now)
                elif kind == ROUND:
                    self.round(job, now)
                else:
                    tick = True
                events = events or kind != TICK
            self.decide_sites(
                now, {s.index for s in self.sites if due[s.index] or self.new[s.index]}
            )
            if tick:
                assert self.mover is not None
                touched = self.mover.tick(now)
                self.unsettled = bool(touched)
                self.decide_sites(now, touched | {k for k, new in enumerate(self.new) if new})
                if self._busy():
                    self._push(now + self.fed.reconsider_s, TICK, -1)
            elif events:
                self.unsettled = True
        self.out.wall_seconds = time.perf_counter() - began
        self.out.plans_kept = sum(p.kept for p in self.plans)
        self.out.plans_rebuilt = sum(p.rebuilt for p in self.plans)
        return now


def status_of(site: Site, job: int) -> int:
    return int(site.run.rt.status[job])


__all__ = ["FUTURE", "Manager", "job_data"]
