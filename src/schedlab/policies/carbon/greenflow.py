"""``greenflow`` and ``powerflow``: least mean JCT under a carbon (or energy) budget.

A GreenFlow-like allocator (GreenFlow, TPDS 2025; its text and power model are not public, so the
rule is ours). A configuration of a job is (GPU count n, power-limit fraction p): n from the job's
levels as ElasticFlow builds them (its caps and throughput curves), p from the Zeus grid of its
GPU (only the top limit without ``--power-model measured``). It runs at throughput(n)·speed(p)
and draws n·power(p)·TDP. Only limits from the energy-optimal one (least power/speed: energy per
unit of work, on the curve of the GPU the job runs on) up to the top are used: a lower limit is
both slower and costlier per unit of work (on the A40 curve the A100 uses, the lowest limit costs
1.4× the top limit's energy per unit of work).

Every slot (``slot`` seconds, and at every carbon-intensity step) the slot's allowance is
A = B_rem·(Δ/CI_now) / ∫_now^t_end dt/CI: the budget left, spread so that cleaner hours get more
of it, over t_end = max(last arrival, now + drain), drain = the GPU-seconds the active jobs still
need at their cheapest configuration over the cluster's GPUs (the soonest the work can be done;
no fixed tail, so a budget is not left to trickle out while the cluster idles). Pass 1 gives
jobs, fewest remaining one-GPU seconds first, (smallest level, energy-optimal p) while the
slot's carbon stays ≤ A and GPUs remain. Pass 2 repeatedly applies the single increment — a
job's next GPU level or its next power step — with the largest decrease of its estimated time
to finish per gram added to what finishing its work would emit (per unit of work, not per
slot: an increment that costs nothing per unit of work, such as a GPU that scales linearly,
comes first), until the allowance or the GPUs run out, and never beyond what the budget leaves
once finishing all the work at the cheapest configurations is paid for (jobs yet to arrive
included, at the series' mean intensity). B_rem falls by the jobs' actual
emissions (the energy meter's); unused allowance carries over to the next slot (so a job too
costly for one slot's share runs once enough has been saved up), and once B_rem reaches 0, or no
longer buys a slot, nothing runs (jobs left are reported as unfinished). ``powerflow`` is the
same with CI ≡ 1: an energy budget in kWh.

Placement goes through the run's placement policy; the engine's ``--resize-overhead`` and
``--restart-overhead`` are the reconfiguration costs.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from schedlab.energy.carbon import CarbonSeries
from schedlab.model.snapshot import Decision, Reject, Snapshot
from schedlab.policies.api import REPLAY_ONLY, never_fits
from schedlab.policies.carbon.base import CarbonAware
from schedlab.policies.carbon.elastic import apply_counts
from schedlab.policies.elastic.elasticflow import ElasticFlow
from schedlab.policies.scheduler import (
    ReplayContext,
    SchedulingPolicy,
    between_rounds,
    check_slot,
    next_round,
)

J_PER_KWH = 3.6e6


class GreenFlow(CarbonAware, SchedulingPolicy):
    name = "greenflow"
    summary = "least mean JCT under a carbon budget: GPU count and power limit per job per slot"
    elastic = True  # it sizes every job itself
    engines = REPLAY_ONLY
    stateful = True
    preemptive = True

    def __init__(self, budget_kg: float = math.inf, slot: float | None = 60.0) -> None:
        """``budget_kg``: carbon the jobs may emit in total (inf: carbon-agnostic sizing)."""
        if not budget_kg >= 0:
            raise ValueError(f"'budget_kg' must be ≥ 0 (got {budget_kg})")
        self.budget = float(budget_kg) * 1000.0  # grams
        self.slot = check_slot(slot) or 60.0

    def describe(self) -> str:
        return self.name

    def series(self) -> CarbonSeries:
        return self.carbon

    def reset(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        sizing = ElasticFlow()
        sizing.reset(ctx)  # ElasticFlow's levels and throughput curves per job
        self.levels: list[list[int]] = sizing.levels
        self.rates: list[dict[int, float]] = sizing.curves
        self.ci = self.series()
        self.inverse = self.ci.reciprocal()
        self.last_arrival = float(ctx.jobs.submit_time.max()) if len(ctx.jobs) else 0.0
        gpu_nodes = np.flatnonzero(ctx.cluster.num_gpus > 0)
        self.plan_model = int(ctx.cluster.model[gpu_nodes[0]]) if len(gpu_nodes) else -1
        self.emitted_estimate = 0.0
        self.carry = 0.0  # allowance of earlier slots left unspent
        self.stalled_since = math.nan  # when the whole budget left stopped buying any slot
        self.last_slot: tuple[float, float] | None = None
        #: The budget left cannot finish any active job, even in its cheapest configuration at
        #: the series' lowest intensity: the run ends and those jobs are reported unfinished
        #: (rather than idling for weeks towards a rare clean hour to buy a part of one).
        self.exhausted = False
        self.ci_low = float(self.ci.values.min()) if len(self.ci.values) else 0.0
        self.ci_mean = float(self.ci.values.mean()) if len(self.ci.values) else 0.0
        self._cheapest_j_per_work: dict[int, float] = {}
        self.limit_now: dict[int, int] = {}

    # -- the job's configuration space ------------------------------------------------------
    def grid(self, job: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(p, speed, power fraction) of the job's power steps from the energy-optimal limit of
        its GPU's curve to the top (only p = 1 when unmeasured)."""
        run = self.energy_run
        curves = getattr(run, "curves", None)
        if curves is None or self.plan_model < 0:
            one = np.ones(1)
            return one, one, one
        c = curves.curve(job, self.plan_model)
        k = c.energy_optimal()
        return c.p[k:], c.speed[k:], c.power[k:]

    def remaining_g(self, now: float) -> float:
        meter = getattr(self.energy_run, "meter", None)
        emitted = meter.jobs_carbon_g(now) if meter is not None else self.emitted_estimate
        return max(0.0, self.budget - emitted)

    def allowance(self, now: float, slot: float, drain: float) -> float:
        """The slot's share of the budget left, spread to max(last arrival, now + drain)."""
        if math.isinf(self.budget):
            return math.inf
        left = self.remaining_g(now)
        end = max(self.last_arrival, now + max(drain, slot))
        spread = self.inverse.integral(now, end)
        share = self.inverse.integral(now, now + slot)
        return left * share / spread if spread > 0 else left

    # -- decisions --------------------------------------------------------------------------
    def next_wakeup(self, snap: Snapshot) -> float:
        if not (snap.pending_set or snap.running_set):
            return math.inf
        if self.exhausted or (not snap.running_set and self.remaining_g(snap.now) <= 0):
            return math.inf  # the budget is spent and never comes back: nothing will run
        patience = 0.0 if self.ci.is_constant else self.ci.period
        if not snap.running_set and snap.now - self.stalled_since >= patience:
            return math.inf  # what is left buys no slot at any intensity the series has
        wake = next_round(snap.now, self.slot)
        steps = self.ci.steps_between(snap.now, wake)
        return min([wake, *steps])

    def decide(self, snap: Snapshot) -> list[Decision]:
        decisions: list[Decision] = []
        refused: set[int] = set()
        for job in snap.new_pending:
            why = never_fits(snap.cluster, self.levels[job][0], int(snap.jobs.gpu_model_mask[job]))
            if why is not None:
                decisions.append(Reject(job, why))
                refused.add(job)
        on_step = bool(self.ci.steps_between(snap.now - 1e-9, snap.now))
        if between_rounds(snap.now, self.slot) and not on_step:
            return decisions
        active = sorted(j for j in (*snap.running_set, *snap.pending_set) if j not in refused)
        if not active:
            return decisions
        wake = self.next_wakeup(snap)
        slot = max(1e-9, (wake if math.isfinite(wake) else snap.now + self.slot) - snap.now)
        config = self.allocate(snap, active, slot)
        target = {j: n for j, (n, _) in config.items()}
        for j in active:
            target.setdefault(j, 0)
        run = self.energy_run
        limits = getattr(run, "limits", None)
        refresh: set[int] = set()
        for j, (_, k) in config.items():
            p_grid = self.grid(j)[0]
            if limits is not None and limits[j] != p_grid[k]:
                limits[j] = p_grid[k]
                refresh.add(j)
        changes, got = apply_counts(snap, self.ctx.placer, target, self.level_map(active), refresh)
        if getattr(run, "meter", None) is None:
            watts = self.gpu_watts()
            self.emitted_estimate += sum(
                got[j] * watts * slot * self.ci.at(snap.now) / J_PER_KWH for j in got
            )
        return decisions + changes

    def future_g(self, snap: Snapshot, ci: float) -> float:
        """Grams the jobs yet to arrive would emit at their cheapest configuration, at the
        series' mean intensity (0 without a budget)."""
        if math.isinf(self.budget) or ci <= 0:
            return 0.0
        later = np.flatnonzero(self.ctx.jobs.submit_time > snap.now)
        if not len(later):
            return 0.0
        work = snap.remaining_work(later)
        watts = self.gpu_watts()
        total = 0.0
        for j, w in zip(later.tolist(), work.tolist(), strict=True):
            e = self._cheapest_j_per_work.get(j)
            if e is None:
                _, speed, power = self.grid(j)
                rate = self.rates[j][self.levels[j][0]] * float(speed[0])
                e = self.levels[j][0] * float(power[0]) * watts / max(rate, 1e-300)
                self._cheapest_j_per_work[j] = e
            total += w * e
        return total * self.ci_mean / J_PER_KWH

    def level_map(self, jobs: list[int]) -> dict[int, list[int]]:
        return {j: self.levels[j] for j in jobs}

    def allocate(
        self, snap: Snapshot, active: list[int], slot: float
    ) -> dict[int, tuple[int, int]]:
        """(GPU level, power step) per job that runs this slot: pass 1, then pass 2."""
        remaining = snap.remaining_work(np.asarray(active))
        left_work = dict(zip(active, remaining.tolist(), strict=True))
        grids = {j: self.grid(j) for j in active}
        cheapest = sum(
            left_work[j]
            / max(self.rates[j][self.levels[j][0]] * float(grids[j][1][0]), 1e-300)
            * self.levels[j][0]
            for j in active
        )
        drain = cheapest / max(snap.cluster.total_gpus, 1)
        allowance = self.allowance(snap.now, slot, drain)
        if math.isfinite(allowance):
            allowance = min(allowance + self.carry, self.remaining_g(snap.now))
        if allowance <= 0:
            self.stalled_since = snap.now if math.isnan(self.stalled_since) else self.stalled_since
            return {}
        ci = self.ci.at(snap.now)
        watts = self.gpu_watts()
        grams_per_w = slot * ci / J_PER_KWH

        def rate(j: int, li: int, k: int) -> float:
            return self.rates[j][self.levels[j][li]] * float(grids[j][1][k])

        def per_second(j: int, li: int, k: int) -> float:
            return self.levels[j][li] * float(grids[j][2][k]) * watts * grams_per_w / slot

        def time_left(j: int, li: int, k: int) -> float:
            r = rate(j, li, k)
            return left_work[j] / r if r > 0 else math.inf

        def grams(j: int, li: int, k: int) -> float:
            """What the configuration emits in this slot (a job that ends in it, until then)."""
            return per_second(j, li, k) * min(slot, time_left(j, li, k))

        def to_finish(j: int, li: int, k: int) -> float:
            """Grams finishing the job's work at this configuration would emit (at this CI)."""
            return per_second(j, li, k) * time_left(j, li, k)

        if math.isfinite(self.budget) and ci > 0:
            least = min(to_finish(j, 0, 0) for j in active) * self.ci_low / ci
            self.exhausted = self.remaining_g(snap.now) < least
            if self.exhausted:
                return {}
        free = snap.cluster.total_gpus
        spent = 0.0
        config: dict[int, tuple[int, int]] = {}
        one_gpu = sorted(
            active, key=lambda j: (left_work[j] / max(self.rates[j][self.levels[j][0]], 1e-300), j)
        )
        for j in one_gpu:
            need, cost = self.levels[j][0], grams(j, 0, 0)
            if need > free or spent + cost > allowance:
                break
            config[j] = (0, 0)
            free -= need
            spent += cost
        # What finishing all the work would still emit, every job at its cheapest configuration
        # (at the series' mean intensity, or this slot's if higher; jobs yet to arrive at the
        # mean): an increment may spend only what is left of the budget beyond that, so
        # speed-ups never leave work unpaid for.
        dear = max(ci, self.ci_mean) / ci if ci > 0 else 1.0
        plan = dear * sum(to_finish(j, 0, 0) for j in active) + self.future_g(snap, ci)
        room = self.remaining_g(snap.now) - plan if math.isfinite(self.budget) else math.inf
        heap: list[tuple[float, int, int, int, int]] = []
        version = dict.fromkeys(config, 0)

        def push(j: int) -> None:
            li, k = config[j]
            now_t, now_g = time_left(j, li, k), to_finish(j, li, k)
            for nli, nk in ((li + 1, k), (li, k + 1)):
                if nli >= len(self.levels[j]) or nk >= len(grids[j][0]):
                    continue
                gain = now_t - time_left(j, nli, nk)
                added = to_finish(j, nli, nk) - now_g
                if gain <= 0:
                    continue
                score = gain / added if added > 1e-12 * max(now_g, 1e-300) else math.inf
                heapq.heappush(heap, (-score, j, nli, nk, version[j]))

        for j in config:
            push(j)
        while heap:
            _, j, nli, nk, ver = heapq.heappop(heap)
            if ver != version[j]:
                continue
            li, k = config[j]
            extra = self.levels[j][nli] - self.levels[j][li]
            added = grams(j, nli, nk) - grams(j, li, k)
            dearer = dear * (to_finish(j, nli, nk) - to_finish(j, li, k))
            if extra > free or spent + added > allowance or dearer > room:
                continue  # this step does not fit; the job's other step may
            config[j] = (nli, nk)
            free -= extra
            spent += added
            room -= max(0.0, dearer)
            version[j] += 1
            push(j)
        if math.isfinite(allowance):
            self.carry = allowance - spent
        saturated = not config and allowance >= self.remaining_g(snap.now) - 1e-12
        if not saturated:
            self.stalled_since = math.nan
        elif math.isnan(self.stalled_since):
            self.stalled_since = snap.now
        return {j: (self.levels[j][li], k) for j, (li, k) in config.items()}


class PowerFlow(GreenFlow):
    name = "powerflow"
    summary = "least mean JCT under an energy budget: GPU count and power limit per job per slot"

    def __init__(self, budget_kwh: float = math.inf, slot: float | None = 60.0) -> None:
        """``budget_kwh``: energy the jobs may use in total (inf: unlimited)."""
        super().__init__(budget_kwh, slot)
        self.budget = float(budget_kwh)  # with CI ≡ 1 g/kWh a "gram" is a kWh

    def series(self) -> CarbonSeries:
        return CarbonSeries.constant(1.0, "energy")

    def remaining_g(self, now: float) -> float:
        meter = getattr(self.energy_run, "meter", None)
        if meter is None:
            return max(0.0, self.budget - self.emitted_estimate)
        used_kwh = meter.jobs_energy_j(now) / J_PER_KWH
        return max(0.0, self.budget - used_kwh)
