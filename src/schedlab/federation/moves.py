"""Moving jobs between sites: ``reconsider = "periodic:S"`` and ``move_running = true``.

Every ``S`` seconds each queued job — and, with ``move_running``, each running one — is scored
by the dispatcher's own score twice: staying where it is, and going to each other feasible site
with the transfers the move needs. It moves to the best other site (ties to the site listed
first) when that site's score is below ``(1 − move_margin)`` × its own.

- A **queued** job keeps its place in line if it stays (``W`` counts only the jobs ahead of it)
  and goes to the back of the queue elsewhere. Its input comes from ``data_site`` or, once it is
  staged where the job is (``before-queue``), from there — whichever scores better.
- A **running** job stays at its pace (its remaining work, and any restart overhead still to
  pay); elsewhere it stops as a preemption stops it (without a checkpoint its work is lost),
  moves its ``ckpt_gb`` checkpoint from its site — with its input, or the input from
  ``data_site`` beside it — and pays ``--restart-overhead`` when it starts again.

Score terms as at dispatch: ``least-loaded`` compares loads (the job counted where it is, added
where it would go), ``cheapest`` dollars (GPU time left plus the move's egress and the output's
way back; money already spent does not count), ``greenest`` grams, ``earliest-finish`` seconds
from now to the estimated end, ``joint`` the weighted sum over the minima of all the options
scored. Jobs pinned with ``site``, jobs on their way over the WAN and jobs staging in on
admission are left where they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from schedlab.federation import dispatch
from schedlab.federation.site import Site, estimated_seconds

if TYPE_CHECKING:
    from schedlab.federation.sim import Manager


@dataclass(frozen=True)
class Leg:
    """One transfer a job needs before it runs at its site: ``gb`` from ``src``."""

    src: str
    gb: float


@dataclass(frozen=True)
class Option:
    """Moving a job to ``site`` with the transfers ``legs``, as estimated."""

    site: Site
    legs: tuple[Leg, ...]
    estimate: dispatch.Estimate


class Mover:
    """Re-scores the jobs of a manager's sites and moves those another site serves better."""

    def __init__(self, manager: Manager) -> None:
        self.m = manager
        fed = manager.fed
        self.kind = fed.dispatcher
        self.need_wait = self.kind in ("greenest", "earliest-finish", "joint")
        self.keep = 1.0 - fed.move_margin

    def tick(self, now: float) -> set[int]:
        """One round of re-scoring at ``now``; the sites whose queue or GPUs changed."""
        m = self.m
        touched: set[int] = set()
        moved: set[int] = set()
        rounds = [False, True] if m.fed.move_running else [False]
        for running in rounds:  # the queued jobs of every site first, then the running ones
            for site in m.sites:
                jobs = list(site.run.running if running else site.run.pending)
                for job in jobs:
                    if job in moved or job in m.paused or m.data.pinned[job]:
                        continue
                    option = self.better_site(job, site, now, running)
                    if option is not None:
                        m.move(job, site, option, now, running)
                        moved.add(job)
                        touched |= {site.index, option.site.index}
        return touched

    # -- scoring ---------------------------------------------------------------------------
    def better_site(self, job: int, here: Site, now: float, running: bool) -> Option | None:
        """The option to take, or None when the job stays."""
        m = self.m
        options = [
            option
            for site in m.sites
            if site.index != here.index and site.feasible(m.jobs, job)
            for option in self.options(job, here, site, now, running)
        ]
        if not options:
            return None
        own = self.own(job, here, now, running)
        scores = self.scores(job, here, own, options, now)
        best = 1 + dispatch.argmin(scores[1:])
        return options[best - 1] if scores[best] < self.keep * scores[0] else None

    def scores(
        self, job: int, here: Site, own: dispatch.Estimate, options: list[Option], now: float
    ) -> list[float]:
        """The dispatcher's score of staying (first) and of each option."""
        estimates = [own, *(o.estimate for o in options)]
        if self.kind == "least-loaded":
            n = int(self.m.jobs.num_gpus[job])
            return [self.m.load(here, 0)] + [self.m.load(o.site, n) for o in options]
        if self.kind == "cheapest":
            return [e.cost for e in estimates]
        if self.kind == "greenest":
            return [e.carbon_g for e in estimates]
        if self.kind == "earliest-finish":
            return [e.finish - now for e in estimates]
        return dispatch.joint_scores(estimates, now, self.m.fed.weights)

    def own(self, job: int, here: Site, now: float, running: bool) -> dispatch.Estimate:
        """Staying: a running job finishes its remaining work; a queued one keeps its place."""
        m = self.m
        factor = m.fed.runtime_factor
        out_usd = m.output_egress(job, here)[1]
        if running:
            rt = here.run.rt
            left = max(0.0, float(rt.progress_from[job]) - now)  # restart overhead still due
            seconds = left + estimated_seconds(
                here, m.jobs, job, m.remaining_work(here, job, now), factor
            )
            return m.make_estimate(here, job, now, seconds, 0.0, now, out_usd, 0.0)
        seconds = estimated_seconds(here, m.jobs, job, m.work[job], factor)
        legs = m.legs_at_admission(job, here)
        refundable = sum(m.place_egress(leg) for leg in legs)
        # its place in line: where the site's plan puts it, behind the jobs ahead of it only
        wait = m.plan(here, now).start_of(job) if self.need_wait else now
        transfer = m.legs_seconds(legs, here)
        moved = sum(leg.gb for leg in legs)
        return m.make_estimate(here, job, now, seconds, transfer, wait, out_usd + refundable, moved)

    def options(self, job: int, here: Site, there: Site, now: float, running: bool) -> list[Option]:
        """Every way to move ``job`` from ``here`` to ``there`` (input from ``data_site`` first,
        then from ``here`` where it is staged), skipping those over a missing WAN link."""
        m = self.m
        factor = m.fed.runtime_factor
        if running:
            work = m.remaining_work(here, job, now) if m.jobs.checkpoint[job] else m.work[job]
            seconds = here.run.cfg.restart_overhead + estimated_seconds(
                there, m.jobs, job, work, factor
            )
        else:
            seconds = estimated_seconds(there, m.jobs, job, m.work[job], factor)
        wait = m.wait_until(there, job, seconds, now) if self.need_wait else now
        out_usd = m.output_egress(job, there)[1]
        out: list[Option] = []
        for legs in self.leg_choices(job, here, there, running):
            if any(m.fed.link(leg.src, there.name) is None for leg in legs):
                continue
            transfer = m.legs_seconds(legs, there)
            egress = out_usd + sum(m.place_egress(leg) for leg in legs)
            moved = sum(leg.gb for leg in legs)
            estimate = m.make_estimate(there, job, now, seconds, transfer, wait, egress, moved)
            out.append(Option(there, legs, estimate))
        return out

    def leg_choices(
        self, job: int, here: Site, there: Site, running: bool
    ) -> list[tuple[Leg, ...]]:
        """The transfers a move may take: the input from ``data_site`` (with a running job's
        checkpoint from ``here`` beside it), and — where the input is staged at ``here`` — both
        from ``here`` in one transfer."""
        m = self.m
        src, gb = m.data.data_site[job], float(m.data.data_gb[job])
        ckpt = float(m.data.ckpt_gb[job]) if running else 0.0
        data = (Leg(src, gb),) if gb > 0 and src != there.name else ()
        ckpt_leg = (Leg(here.name, ckpt),) if ckpt > 0 else ()
        choices = [data + ckpt_leg]
        staged = running or m.fed.stage_in == "before-queue"
        if staged and gb > 0 and src != here.name and src != there.name:
            choices.append((Leg(here.name, gb + ckpt),))
        return choices
