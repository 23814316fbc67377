"""Iteration times of jobs sharing links: T = C + κ + max(0, D − o·C), D from the footprints.

Alone, phase t of job j takes τ_t = max_l b_{t,l}/c_l. Sharing stretches each of its link terms by
a slowdown σ_{j,l} ≥ 1 that a *sharing rule* computes from the other jobs on the link; the duty
φ_{k,l} = (Σ_t b_{k,t,l}/c_l) / T_k of a job depends on its own T, so T is a fixed point, solved
by Jacobi rounds (damped when the change grows).

:class:`SharingSolver` is incremental: adding, removing or re-prioritising a job marks it and the
jobs sharing a link with it; :meth:`SharingSolver.solve` iterates only those, the rest frozen.
Everything inside a round is numpy over a job × link incidence, so thousands of jobs on thousands
of links solve in milliseconds per round.

Two refinements keep ``random-phase`` honest where links are crowded; both leave the spec's
formula exactly as it is where a link is its jobs' bottleneck and below capacity (the worked
examples):

- *Bursts on links that are not the bottleneck.* A job's share u of a phase on link l (its
  seconds there over the phase's time alone) below 1 means l alone does not pace the phase; it
  does when enough others transmit at once. With m others active (each active with probability
  p_k = seconds of k's phases using l / T_k, m binomial with their mean) the phase's term on l is
  τ·E[max(1, (m + 1)·u)]; for u = 1 that is τ·(1 + Σ p_k), the spec's rule.
- *Capacity.* Σ_k φ_{k,l} is the link's long-run utilisation and cannot exceed 1; the rules'
  fixed points can (four communication-bound jobs on one link: random-phase σ ≈ 2.3 where each
  gets a quarter of it). A per-link multiplier, raised while the utilisation is above 1 and
  lowered back towards 1 when it is below, stretches the link's σ until the link is exactly
  full, never beyond worst-case (σ = n). ``interleaved`` (CASSINI's ideal) is left unbounded:
  it is the optimistic end of the rules' order interleaved ≤ random-phase ≤ worst-case, and at
  saturation it is below what capacity allows.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from schedlab.errors import InputError
from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import Footprint
from schedlab.network.options import DEFAULT_RULE, check_rule
from schedlab.network.options import RULES as RULES  # where the rules were always found

#: Undamped Jacobi rounds allowed before a slowly shrinking change turns damping on.
SLOW_ROUNDS = 8

#: Per-step latency α, seconds (ours).
DEFAULT_ALPHA = 10e-6
#: Floor of the bandwidth share left to a lower priority level.
PRIORITY_EPS = 0.05
PROPAGATE = ("affected", "component")
#: Rules bounded by link capacity (see the module's docstring).
CAPACITY_BOUNDED = ("random-phase",)
#: Largest number of other active jobs the burst term counts exactly (beyond it the link is so
#: far below its own share that the term is bounded by Jensen's inequality instead).
BURST_TERMS = 16
#: A solve whose links number more than 1/SCAN_RATIO of all jobs' shared links finds the jobs
#: beside it by scanning every job rather than through each link's users.
SCAN_RATIO = 8


def iteration_time(spec: CommSpec, comm: float) -> float:
    """T = C + κ + max(0, D − o·C)."""
    return spec.compute + spec.penalty + max(0.0, comm - spec.overlap * spec.compute)


@dataclass
class _Job:
    fp: Footprint
    spec: CommSpec
    links: np.ndarray  # unique links, ascending
    load: np.ndarray  # Σ_t seconds per link (link-seconds per iteration)
    d0: float
    t_iso: float
    t: float
    d: float
    shared: np.ndarray  # the links other jobs may use too (indexed in link_jobs)
    entry_pos: np.ndarray  # per footprint entry, the position of its link in ``links``
    phase_starts: np.ndarray  # first footprint entry of every non-empty phase
    active: np.ndarray  # per link: Σ of the alone times τ_t of the phases that use it
    share: np.ndarray  # per footprint entry: its seconds / its phase's τ_t (≤ 1)
    speed: float = 1.0  # max-min share v


class SharingSolver:
    """Iteration times of a changing set of jobs under one sharing rule.

    ``propagate='affected'`` iterates the changed jobs and their link neighbours (others frozen);
    ``'component'`` iterates whole connected components (to measure the error of freezing).
    ``maxmin`` always re-solves whole components: progressive filling is a global allocation.
    ``private`` (a mask over link ids) marks links no two jobs can use (a GPU's intra-host
    link): they count in a job's time but are not indexed, which keeps the bookkeeping of
    large jobs to the links that can be contended.
    """

    def __init__(
        self,
        rule: str = DEFAULT_RULE,
        alpha: float = DEFAULT_ALPHA,
        tol: float = 1e-6,
        max_rounds: int = 20,
        propagate: str = "affected",
        private: np.ndarray | None = None,
    ) -> None:
        self.rule = check_rule(rule)
        if propagate not in PROPAGATE:
            raise InputError(f"bad value: field 'propagate', value {propagate!r}")
        self.alpha = alpha
        self.tol = tol
        self.max_rounds = max_rounds
        self.propagate = propagate
        self.private = private
        self.jobs: dict[Hashable, _Job] = {}
        self.link_jobs: dict[int, set[Hashable]] = {}
        self.pending: set[Hashable] = set()
        self.last_rounds = 0
        self.total_rounds = 0
        # Link id → its position among a solve's links (−1: not among them); reset after use.
        self.link_map = np.full(0, -1, dtype=np.int64)
        self.shared_entries = 0  # Σ over jobs of their shared links

    def _grow_map(self, size: int) -> None:
        if size > len(self.link_map):
            self.link_map = np.full(max(size, 2 * len(self.link_map)), -1, dtype=np.int64)

    # -- changes ---------------------------------------------------------------------------------
    def add(self, key: Hashable, fp: Footprint, spec: CommSpec) -> None:
        """Start (or re-route) job ``key`` with footprint ``fp``."""
        if key in self.jobs:
            self.remove(key)
        links, _, load = fp.link_totals()
        d0 = fp.comm_time(self.alpha)
        t_iso = iteration_time(spec, d0)
        own = np.ones(len(links), dtype=bool) if self.private is None else ~self.private[links]
        shared = links[own]
        ptr = fp.phase_ptr
        entry_pos = np.searchsorted(links, fp.links).astype(np.int64)
        tau = np.repeat(fp.phase_times(), np.diff(ptr))  # each entry's phase time alone
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(tau > 0, fp.seconds / np.where(tau > 0, tau, 1.0), 1.0)
        self.jobs[key] = _Job(
            fp,
            spec,
            links,
            load,
            d0,
            t_iso,
            t_iso,
            d0,
            shared,
            entry_pos=entry_pos,
            phase_starts=ptr[np.flatnonzero(np.diff(ptr) > 0)].astype(np.int64),
            active=np.bincount(entry_pos, tau, len(links)),
            share=np.minimum(share, 1.0),
        )
        if len(links):
            self._grow_map(int(links[-1]) + 1)
        for link in shared.tolist():
            self.link_jobs.setdefault(link, set()).add(key)
        self.shared_entries += len(shared)
        self.pending |= self.neighbours(key)

    def remove(self, key: Hashable) -> None:
        """Stop job ``key``; its neighbours are re-solved at the next :meth:`solve`."""
        job = self.jobs.pop(key)
        self.pending.discard(key)
        self.shared_entries -= len(job.shared)
        for link in job.shared.tolist():
            users = self.link_jobs[link]
            users.discard(key)
            self.pending |= users
            if not users:
                del self.link_jobs[link]

    def set_priority(self, key: Hashable, level: int) -> None:
        job = self.jobs[key]
        job.spec = replace(job.spec, priority=level)
        self.pending |= self.neighbours(key)

    def neighbours(self, key: Hashable) -> set[Hashable]:
        """The job and every job sharing a link with it."""
        out = {key}
        for link in self.jobs[key].shared.tolist():
            out |= self.link_jobs[link]
        return out

    def component(self, keys: Iterable[Hashable]) -> set[Hashable]:
        seen = set(keys)
        todo = list(seen)
        while todo:
            for other in self.neighbours(todo.pop()):
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        return seen

    # -- results ---------------------------------------------------------------------------------
    def iteration_time(self, key: Hashable) -> float:
        return self.jobs[key].t

    def comm_time(self, key: Hashable) -> float:
        return self.jobs[key].d

    def isolated_time(self, key: Hashable) -> float:
        return self.jobs[key].t_iso

    def link_duty(self) -> dict[int, float]:
        """Σ_k φ_{k,l} per link in use: the share of time the link is busy (may exceed 1)."""
        out: dict[int, float] = {}
        for job in self.jobs.values():
            for link, w in zip(job.links.tolist(), job.load.tolist(), strict=True):
                out[link] = out.get(link, 0.0) + w / job.t
        return out

    # -- solving ---------------------------------------------------------------------------------
    def solve(self) -> dict[Hashable, float]:
        """Re-solve the jobs touched since the last call; returns their new iteration times."""
        todo = set(self.pending)
        self.pending.clear()
        if not todo:
            self.last_rounds = 0
            return {}
        if self.propagate == "component" or self.rule == "maxmin":
            todo = self.component(todo)
        keys = sorted(todo, key=repr)
        self.last_rounds = self._solve(keys)
        self.total_rounds += self.last_rounds
        return {k: self.jobs[k].t for k in keys}

    def _solve(self, keys: list[Hashable]) -> int:
        jobs = [self.jobs[k] for k in keys]
        if self.rule == "isolated":
            for j in jobs:
                j.t, j.d = j.t_iso, j.d0
            return 1
        if self.rule == "maxmin":
            return self._maxmin(jobs)
        problem = _Problem.build(self, keys)
        t = np.array([j.t for j in jobs])
        prev_change = np.inf
        damped = False
        rounds = 0
        d = np.array([j.d for j in jobs])
        for rounds in range(1, self.max_rounds + 1):
            d, f = problem.apply(t)
            change = float(np.max(np.abs(f - t) / np.maximum(t, 1e-300))) if len(t) else 0.0
            # Damp once the change grows, or once the rounds stall: an undamped Jacobi round on
            # this map (T's duty falls as T grows) oscillates, and contracts slowly when its
            # slope is near −1, so it could end at max_rounds short of the fixed point; halving
            # the step makes the slope (1 + s)/2, at most 1/2.
            if change > prev_change or (rounds > SLOW_ROUNDS and change > prev_change / 2):
                damped = True
            t = (t + f) / 2 if damped else f
            prev_change = change
            if (change < self.tol and problem.settled) or self.rule == "worst-case":
                break
        for j, tj, dj in zip(jobs, t.tolist(), d.tolist(), strict=True):
            j.t, j.d = tj, dj
        return rounds

    def _maxmin(self, jobs: list[_Job]) -> int:
        """Progressive filling of speeds v ∈ (0, 1]: job j uses v_j·load_{j,l}/D⁰_j of link l."""
        comm = [j for j in jobs if j.d0 > 0 and len(j.links)]
        for j in jobs:
            j.speed = 1.0
        if comm:
            links, inv = np.unique(np.concatenate([j.links for j in comm]), return_inverse=True)
            owner = np.repeat(np.arange(len(comm)), [len(j.links) for j in comm])
            rate = np.concatenate([j.load / j.d0 for j in comm])
            speed = np.zeros(len(comm))
            frozen = np.zeros(len(comm), dtype=bool)
            used = np.zeros(len(links))
            rounds = 0
            while not frozen.all():
                rounds += 1
                live = ~frozen[owner]
                demand = np.bincount(inv[live], rate[live], len(links))
                room = np.maximum(1.0 - used, 0.0)
                with np.errstate(divide="ignore"):
                    level = np.where(demand > 0, room / np.where(demand > 0, demand, 1), np.inf)
                x = min(float(level.min()), 1.0)
                if x >= 1.0:
                    full = ~frozen
                else:
                    tight = np.flatnonzero(level <= x * (1 + 1e-12))
                    hit = np.zeros(len(links), dtype=bool)
                    hit[tight] = True
                    full = np.zeros(len(comm), dtype=bool)
                    full[owner[live & hit[inv]]] = True
                    full &= ~frozen
                speed[full] = max(x, 1e-12)
                frozen |= full
                used = np.bincount(inv, rate * speed[owner], len(links))
            for j, v in zip(comm, speed.tolist(), strict=True):
                j.speed = v
        for j in jobs:
            j.d = j.d0 / j.speed
            j.t = iteration_time(j.spec, j.d)
        return 1


def _others_on(solver: SharingSolver, keys: list[Hashable], links: np.ndarray) -> list[Hashable]:
    """The solver's jobs outside ``keys`` with a shared link among ``links`` (marked in the
    solver's link map): from the links' users when they are few, else by one scan of every
    job's shared links (a solve that touches much of the network)."""
    in_a = set(keys)
    if len(links) * SCAN_RATIO < solver.shared_entries:
        users = solver.link_jobs  # private links have none
        return list(set().union(*(users.get(link, ()) for link in links.tolist())) - in_a)
    rest = [k for k in solver.jobs if k not in in_a]
    if not rest:
        return []
    shared = [solver.jobs[k].shared for k in rest]
    owner = np.repeat(np.arange(len(rest)), [len(s) for s in shared])
    hit = solver.link_map[np.concatenate(shared)] >= 0
    return [rest[i] for i in np.unique(owner[hit]).tolist()]


@dataclass
class _Problem:
    """Flat arrays for one fixed-point solve over jobs A (iterated) and their neighbours B."""

    rule: str
    alpha: float
    n_a: int
    t_fixed: np.ndarray  # T of B \ A (frozen), aligned after A's entries
    inc_job: np.ndarray  # incidence over B × L: job (0..|B|), link (local), load
    inc_link: np.ndarray
    inc_load: np.ndarray
    inc_active: np.ndarray  # per incidence entry: the job's active seconds on the link
    num_links: int
    level: np.ndarray  # priority level index per B job
    num_levels: int
    a_link: np.ndarray  # A's incidence entries (the first of B's): local link
    a_users: np.ndarray  # and the jobs of B on that link (n of the rules)
    e_link: np.ndarray  # phase entries of A: local link, seconds, incidence position
    e_sec: np.ndarray
    e_inc: np.ndarray
    e_job: np.ndarray
    e_share: np.ndarray  # per phase entry of A: its seconds / its phase's time alone
    phase_start: np.ndarray  # first entry of every non-empty phase
    phase_job: np.ndarray
    steps: np.ndarray
    compute: np.ndarray
    overlap: np.ndarray
    penalty: np.ndarray
    #: Per local link, the capacity multiplier of the bounded rules (1: below capacity).
    mult: np.ndarray | None = None
    #: False while a capacity multiplier is still moving (the solve must go on).
    settled: bool = True

    @classmethod
    def build(cls, solver: SharingSolver, keys: list[Hashable]) -> _Problem:
        a_jobs = [solver.jobs[k] for k in keys]
        # Link ids map to their place among A's links through the solver's table (−1: not
        # there), which also finds those links, ascending, without sorting.
        local = solver.link_map
        local[np.concatenate([j.links for j in a_jobs] + [np.zeros(0, np.int64)])] = 0
        links = np.flatnonzero(local >= 0)
        local[links] = np.arange(len(links))
        b_keys = keys + sorted(_others_on(solver, keys, links), key=repr)
        b_jobs = [solver.jobs[k] for k in b_keys]
        # Each job's links are ascending, so the incidence comes out sorted by (job, link).
        b_links = np.concatenate([j.links for j in b_jobs])
        b_load = np.concatenate([j.load for j in b_jobs])
        b_active = np.concatenate([j.active for j in b_jobs])
        b_size = np.array([len(j.links) for j in b_jobs], dtype=np.int64)
        b_owner = np.repeat(np.arange(len(b_jobs)), b_size)
        pos = local[b_links]
        ok = pos >= 0
        ij, il, iw = b_owner[ok].astype(np.int64), pos[ok], b_load[ok]
        ia = b_active[ok]
        # A's jobs come first and all their links are among ``links``: job i's incidence
        # entries are its own links, from the sum of the earlier A jobs' link counts on.
        a_ends = np.cumsum(b_size[: len(a_jobs)])
        inc_start = np.concatenate([[0], a_ends[:-1]]).astype(np.int64)
        a_link = il[: int(a_ends[-1]) if len(a_ends) else 0]
        sizes = np.array([len(j.fp.links) for j in a_jobs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        el = local[np.concatenate([j.fp.links for j in a_jobs] + [np.zeros(0, np.int64)])]
        local[links] = -1
        ej = np.repeat(np.arange(len(a_jobs)), sizes).astype(np.int64)
        counts = np.array([len(j.phase_starts) for j in a_jobs], dtype=np.int64)
        starts = np.concatenate([j.phase_starts for j in a_jobs] + [np.zeros(0, np.int64)])
        e_inc = np.concatenate([j.entry_pos for j in a_jobs] + [np.zeros(0, np.int64)])
        e_inc = e_inc + inc_start[ej]
        levels = np.array([j.spec.priority for j in b_jobs])
        uniq, level_idx = np.unique(levels, return_inverse=True)
        return cls(
            rule=solver.rule,
            alpha=solver.alpha,
            n_a=len(a_jobs),
            t_fixed=np.array([j.t for j in b_jobs[len(a_jobs) :]]),
            inc_job=ij,
            inc_link=il,
            inc_load=iw,
            inc_active=ia,
            num_links=len(links),
            level=level_idx.astype(np.int64),
            num_levels=len(uniq),
            a_link=a_link,
            a_users=np.bincount(il, minlength=len(links))[a_link],
            e_link=el,
            e_sec=np.concatenate([j.fp.seconds for j in a_jobs]),
            e_inc=e_inc,
            e_job=ej,
            e_share=np.concatenate([j.share for j in a_jobs] + [np.zeros(0)]),
            phase_start=starts + np.repeat(offsets, counts),
            phase_job=np.repeat(np.arange(len(a_jobs)), counts).astype(np.int64),
            steps=np.array([j.fp.steps for j in a_jobs], dtype=np.float64),
            compute=np.array([j.spec.compute for j in a_jobs]),
            overlap=np.array([j.spec.overlap for j in a_jobs]),
            penalty=np.array([j.spec.penalty for j in a_jobs]),
            mult=np.ones(len(links)) if solver.rule in CAPACITY_BOUNDED else None,
        )

    def slowdown(self, t_a: np.ndarray) -> np.ndarray:
        """σ of every phase entry of A, given A's current iteration times."""
        if self.rule == "worst-case":
            return self.a_users[self.e_inc].astype(np.float64)
        t = np.concatenate([t_a, self.t_fixed])
        phi = self.inc_load / t[self.inc_job]
        if self.rule == "priority":
            own = phi[self.e_inc]
            lv = self.level[self.inc_job]
            by_level = np.zeros((self.num_levels, self.num_links))
            np.add.at(by_level, (lv, self.inc_link), phi)
            above = np.cumsum(by_level[::-1], axis=0)[::-1] - by_level  # Σ of higher levels
            q = self.level[self.e_job]
            same = by_level[q, self.e_link] - own
            return (1.0 + same) / np.maximum(PRIORITY_EPS, 1.0 - above[q, self.e_link])
        # σ per incidence entry of A (one per job and link), then per phase entry: a job's
        # phases repeat its links.
        total = np.bincount(self.inc_link, phi, self.num_links)
        if self.rule == "interleaved":
            return np.maximum(1.0, total[self.a_link])[self.e_inc]
        return self._bounded(self._random_phase(t), total)

    def _random_phase(self, t: np.ndarray) -> np.ndarray:
        """Per phase entry of A: E[max(1, (m + 1)·u)] / u, m the other jobs active on the link
        (binomial over the n − 1 others with their mean probability); 1 + Σ p_k where u = 1."""
        p = np.minimum(1.0, self.inc_active / t[self.inc_job])
        lam = np.bincount(self.inc_link, p, self.num_links)[self.a_link] - p[: len(self.a_link)]
        lam = np.maximum(lam, 0.0)[self.e_inc]
        sigma = 1.0 + lam
        u = self.e_share
        part = np.flatnonzero(u < 1.0 - 1e-12)
        if len(part):
            sigma[part] = _burst(u[part], lam[part], self.a_users[self.e_inc[part]] - 1.0)
        return sigma

    def _bounded(self, sigma: np.ndarray, total: np.ndarray) -> np.ndarray:
        """σ with the capacity multiplier of each link (moved by this round's utilisation),
        never above n."""
        if self.mult is None:
            return sigma
        before = self.mult
        users = np.bincount(self.inc_link, minlength=self.num_links)
        self.mult = np.clip(before * total, 1.0, np.maximum(users, 1.0))
        self.settled = bool(np.all(np.abs(self.mult - before) <= 1e-6 * before))
        return np.minimum(sigma * self.mult[self.e_link], self.a_users[self.e_inc])

    def apply(self, t_a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(D, F(T)) of A's jobs."""
        stretched = self.e_sec * self.slowdown(t_a)
        if len(stretched):
            phase = np.maximum.reduceat(stretched, self.phase_start)
            d = np.bincount(self.phase_job, phase, self.n_a)
        else:
            d = np.zeros(self.n_a)
        d = d + self.alpha * self.steps
        return d, self.compute + self.penalty + np.maximum(0.0, d - self.overlap * self.compute)


def _burst(u: np.ndarray, lam: np.ndarray, others: np.ndarray) -> np.ndarray:
    """E[max(1, (m + 1)·u)] / u for m ~ Binomial(others, lam/others), entry by entry.

    = (1 + λ) + Σ_{m : (m+1)u < 1} P(m)·(1 − (m + 1)·u) / u; the sum runs over at most
    :data:`BURST_TERMS` values of m, and the result is kept ≥ max(1/u, 1 + λ) (Jensen).
    The terms are computed in place, in the order the formula's operations take (the same
    floats as a fresh array per operation, without the allocations).
    """
    n = np.maximum(others, 0.0)
    q = np.where(n > 0, np.minimum(lam / np.where(n > 0, n, 1.0), 1.0 - 1e-12), 0.0)
    pm = (1.0 - q) ** n  # P(m = 0)
    rest = 1.0 - q
    extra = np.zeros_like(u)
    gap, term, count = np.empty_like(u), np.empty_like(u), np.empty_like(u)
    for m in range(BURST_TERMS):
        np.multiply(u, m + 1, out=gap)
        np.subtract(1.0, gap, out=gap)  # 1 − (m + 1)·u
        if not (gap > 0).any():
            break
        np.maximum(gap, 0.0, out=gap)
        np.multiply(pm, gap, out=term)
        extra += term
        np.subtract(n, m, out=count)
        np.maximum(count, 0.0, out=count)
        np.multiply(pm, count, out=pm)
        np.divide(pm, m + 1, out=pm)
        np.multiply(pm, q, out=pm)
        np.divide(pm, rest, out=pm)
    return np.maximum(np.maximum(1.0 / u, 1.0 + lam), 1.0 + lam + extra / u)


def iteration_times(
    jobs: Sequence[tuple[Footprint, CommSpec]],
    rule: str = DEFAULT_RULE,
    alpha: float = DEFAULT_ALPHA,
) -> np.ndarray:
    """Iteration time of every job of a fixed mix (all solved together)."""
    solver = SharingSolver(rule, alpha, propagate="component")
    for i, (fp, spec) in enumerate(jobs):
        solver.add(i, fp, spec)
    solver.solve()
    return np.array([solver.iteration_time(i) for i in range(len(jobs))])
