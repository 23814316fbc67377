"""Gavel's optimisation policies as linear programs solved by HiGHS: the max-min LPs through its
own bindings (:mod:`schedlab.policies.heterogeneous.highs_lp`, solved thousands of times a run),
the others through scipy's ``linprog``/``milp``.

Every policy chooses ``X`` (jobs × types) under Gavel's base constraints — ``x ≥ 0``,
``Σ_k x_jk ≤ 1`` per job, ``Σ_j s_j x_jk ≤ N_k`` per type — with ``thr_j(X) = Σ_k T_jk x_jk``:

* **max-min fairness** (LAS): maximise ``min_j c_j thr_j(X)``, ``c_j = s_j / (w_j T̄_j)`` with
  ``T̄_j`` the job's throughput on an equal share of every type. Epigraph form: maximise τ with
  ``τ ≤ c_j thr_j``. The LP is highly degenerate; Gavel's interior-point solver returns a
  central optimum while HiGHS returns a vertex, so by default (``tiebreak="sum"``) a second LP
  keeps ``τ ≥ τ*(1 − 1e-6)`` and maximises ``Σ_j c_j thr_j`` among the optima.
* **finish-time fairness** (FTF): minimise ``max_j ρ_j``, ``ρ_j = (t_j + R_j / thr_j) / E_j``
  with ``E_j = C_j + R_j / I_j`` (``I_j`` the isolated throughput, ``C_j`` the isolated time
  the job's progress so far is worth). Bisection on ρ over feasibility LPs
  (``thr_j ≥ R_j / (ρ E_j − t_j)``).
* **minimum makespan**: the smallest horizon H with ``thr_j ≥ R_j / H`` for all j, searched as
  Gavel does (halving [100, 10⁶] while ``1.05·lo < hi``, then [10⁶, 10⁷] and so on).
* **maximum total throughput**, optionally per dollar (``T_jk / p_k``), optionally with SLO
  rows ``thr_j ≥ R_j / (D_j − now)`` (dropped, with a warning naming the jobs, if infeasible).
* **hierarchical water-filling**: repeated max-min LPs over the unfrozen jobs and a MILP that
  finds which jobs can still grow (``scipy.optimize.milp``).

The heterogeneity-agnostic variants solve the same problems on a flattened matrix: 1 everywhere
for LAS, the V100 (reference) throughput on every type for FTF and makespan.

A solver failure never stops a run: the policy returns the isolated allocation (Gavel's own
fallback) and records why in :attr:`GavelLP.fallbacks`, which the run reports.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from schedlab.policies.heterogeneous.allocation import (
    AllocationPolicy,
    AllocationProblem,
    equal_share_throughput,
    isolated_allocation,
    isolated_throughput,
)
from schedlab.policies.heterogeneous.highs_lp import CsrRows, solve_lp

if TYPE_CHECKING:
    from scipy import sparse

#: Gavel's GCP prices, $ per GPU-hour, for the cost-aware policies.
DEFAULT_PRICES = {"v100": 0.74, "p100": 0.43, "k80": 0.135}
TIEBREAKS = ("sum", "none")
#: Water-filling: how far above its level a job must get to count as growing.
SLACK, EPSILON = 1.0001, 1e-5


class SolverFailure(RuntimeError):
    """HiGHS returned no usable solution (the caller falls back and says so)."""


@dataclass(frozen=True)
class BaseRows:
    """Gavel's base constraints over ``x`` (m·n variables, row-major) and ``extra`` more."""

    a_ub: sparse.csr_matrix
    b_ub: np.ndarray


def base_rows(problem: AllocationProblem, extra: int = 0) -> BaseRows:
    """``Σ_j s_j x_jk ≤ N_k`` and ``Σ_k x_jk ≤ 1`` as sparse rows over ``m·n + extra`` columns."""
    from scipy import sparse

    m, n = problem.throughput.shape
    cols = m * n + extra
    jj, kk = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    var = (jj * n + kk).ravel()
    capacity = sparse.csr_matrix(
        (problem.scale[jj.ravel()].astype(np.float64), (kk.ravel(), var)), shape=(n, cols)
    )
    rowsum = sparse.csr_matrix((np.ones(m * n), (jj.ravel(), var)), shape=(m, cols))
    return BaseRows(
        sparse.vstack([capacity, rowsum]).tocsr(),
        np.concatenate([problem.capacity.astype(np.float64), np.ones(m)]),
    )


def throughput_rows(weights: np.ndarray, extra: int = 0) -> sparse.csr_matrix:
    """Row j = ``weights[j, k]`` on ``x_jk`` (so row · z = Σ_k weights_jk x_jk)."""
    from scipy import sparse

    m, n = weights.shape
    jj, kk = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return sparse.csr_matrix(
        (weights.ravel(), (jj.ravel(), (jj * n + kk).ravel())), shape=(m, m * n + extra)
    )


def with_tau(rows: sparse.spmatrix, tau: np.ndarray) -> sparse.csr_matrix:
    """``rows`` with one more column (the epigraph variable τ) holding ``tau``."""
    from scipy import sparse

    return sparse.hstack([rows, sparse.csr_matrix(tau.reshape(-1, 1))]).tocsr()


def floor_rows(scale: np.ndarray, weights: np.ndarray, tau: bool = False) -> sparse.csr_matrix:
    """The base rows (:func:`base_rows`) then, per job j, ``−Σ_k weights_jk x_jk`` (plus τ when
    ``tau``): every LP of the max-min and feasibility families, built straight into CSR.

    The same matrix, entry for entry (explicit zeros and their signs included), as stacking
    :func:`base_rows`, ``−throughput_rows(weights)`` and :func:`with_tau` — so HiGHS gets the
    same input and returns the same vertex — at a fraction of the cost of scipy's generic
    constructors (the LP family is built thousands of times in a run)."""
    from scipy import sparse

    rows = floor_csr(scale, weights, tau)
    return sparse.csr_matrix((rows.data, rows.indices, rows.indptr), shape=rows.shape)


@lru_cache(maxsize=64)
def _floor_pattern(m: int, n: int, tau: bool) -> tuple[np.ndarray, np.ndarray]:
    """Column indices and row pointers of :func:`floor_csr` for ``m`` jobs and ``n`` types:
    they depend on the shape only, and consecutive resets mostly see the same few shapes."""
    width = n + 1 if tau else n
    capacity = (np.arange(m)[None, :] * n + np.arange(n)[:, None]).ravel()
    per_job = np.arange(m * n)
    if tau:
        own = np.concatenate([per_job.reshape(m, n), np.full((m, 1), m * n)], axis=1).ravel()
    else:
        own = per_job
    indices = np.concatenate([capacity, per_job, own]).astype(np.int32)
    lengths = np.concatenate([np.full(n, m), np.full(m, n), np.full(m, width)])
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    indices.flags.writeable = False
    indptr.flags.writeable = False
    return indices, indptr


def floor_csr(scale: np.ndarray, weights: np.ndarray, tau: bool = False) -> CsrRows:
    """:func:`floor_rows` as bare CSR arrays, for :func:`solve_lp`, which reads nothing else:
    the max-min LPs skip scipy's matrix constructor and its checks (a third of the build)."""
    m, n = weights.shape
    indices, indptr = _floor_pattern(m, n, tau)
    if tau:
        floor = np.concatenate([-weights, np.ones((m, 1))], axis=1).ravel()
    else:
        floor = (-weights).ravel()
    data = np.concatenate([np.tile(scale.astype(np.float64), n), np.ones(m * n), floor])
    return CsrRows(data, indices, indptr, (n + 2 * m, m * n + int(tau)))


def _solve(c, a_ub, b_ub, bounds, what: str):
    from scipy.optimize import linprog

    result = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if result.status != 0 or result.x is None:
        raise SolverFailure(f"{what}: {result.message}")
    return result


def _solve_max_min(
    cost: np.ndarray,
    a_ub: CsrRows,
    b_ub: np.ndarray,
    what: str,
    lower: np.ndarray | float = 0.0,
) -> np.ndarray:
    result = solve_lp(cost, a_ub, b_ub, lower)
    if result.x is None:
        raise SolverFailure(f"{what}: {result.status}")
    return result.x


def _feasible(problem: AllocationProblem, need: np.ndarray, throughput: np.ndarray):
    """An X meeting ``thr_j ≥ need_j`` under the base constraints, or None."""
    from scipy.optimize import linprog

    m, n = throughput.shape
    a_ub = floor_rows(problem.scale, throughput)
    b_ub = np.concatenate([problem.capacity.astype(np.float64), np.ones(m), -need])
    result = linprog(np.zeros(m * n), A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    if result.status == 2:  # infeasible
        return None
    if result.status != 0 or result.x is None:
        raise SolverFailure(f"feasibility LP: {result.message}")
    return result.x.reshape(m, n)


def max_min_allocation(
    problem: AllocationProblem, throughput: np.ndarray, tiebreak: str = "sum"
) -> np.ndarray:
    """Maximise ``min_j c_j thr_j(X)`` (``c_j = s_j / (w_j T̄_j)``), then the tie-break."""
    m, n = throughput.shape
    share = (throughput @ problem.capacity) / float(problem.capacity.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(share > 0, problem.scale / (problem.weight * share), 0.0)
    weighted = throughput * c[:, None]
    limits = np.concatenate([problem.capacity.astype(np.float64), np.ones(m)])
    a_ub = floor_csr(problem.scale, weighted, tau=True)
    b_ub = np.concatenate([limits, np.zeros(m)])
    cost = np.zeros(m * n + 1)
    cost[-1] = -1.0
    lower = np.zeros(m * n + 1)  # x ≥ 0, τ free
    lower[-1] = -np.inf
    first = _solve_max_min(cost, a_ub, b_ub, "max-min LP", lower)
    tau = float(first[-1])
    if tiebreak == "none" or tau <= 0:
        return first[: m * n].reshape(m, n)
    a2 = floor_csr(problem.scale, weighted)
    b2 = np.concatenate([limits, np.full(m, -tau * (1 - 1e-6))])
    try:
        second = _solve_max_min(-weighted.ravel(), a2, b2, "max-min tie-break LP")
    except SolverFailure:
        return first[: m * n].reshape(m, n)
    return second.reshape(m, n)


class GavelLP(AllocationPolicy):
    """Base of the solver-backed policies: falls back to the isolated allocation on failure."""

    def __init__(self) -> None:
        self.fallbacks: list[tuple[float, str]] = []

    def reset(self, seed: int) -> None:
        self.fallbacks = []

    def allocate(self, problem: AllocationProblem) -> np.ndarray:
        if problem.size == 0:
            return np.zeros((0, len(problem.types)))
        try:
            return self.solve(problem)
        except SolverFailure as exc:
            self.fallbacks.append((problem.now, str(exc)))
            return isolated_allocation(problem)

    def solve(self, problem: AllocationProblem) -> np.ndarray:
        raise NotImplementedError


def reference_column(problem: AllocationProblem) -> np.ndarray:
    """Each job's throughput on the reference type (v100 if present, else the first), on every
    type: what Gavel's agnostic FTF and makespan policies see."""
    k = problem.types.index("v100") if "v100" in problem.types else 0
    return np.repeat(problem.throughput[:, k : k + 1], len(problem.types), axis=1)


class MaxMinFairness(GavelLP):
    """LAS. ``perf``: per-type throughputs; agnostic: 1 on every type."""

    def __init__(self, perf: bool = True, tiebreak: str = "sum") -> None:
        super().__init__()
        if tiebreak not in TIEBREAKS:
            raise ValueError(f"'tiebreak' must be one of {', '.join(TIEBREAKS)} (got {tiebreak!r})")
        self.perf_aware = perf
        self.name = "max_min_fairness_perf" if perf else "max_min_fairness"
        self.tiebreak = tiebreak

    def solve(self, problem: AllocationProblem) -> np.ndarray:
        t = problem.throughput if self.perf_aware else np.ones_like(problem.throughput)
        return max_min_allocation(problem, t, self.tiebreak)


class FinishTimeFairness(GavelLP):
    """FTF: minimise the largest ρ by bisection over feasibility LPs."""

    def __init__(self, perf: bool = True, tolerance: float = 1e-4) -> None:
        super().__init__()
        self.perf_aware = perf
        self.name = "finish_time_fairness_perf" if perf else "finish_time_fairness"
        self.tolerance = tolerance
        self.isolated_time: dict[int, float] = {}
        self.prev_remaining: dict[int, float] = {}
        self.prev_isolated: dict[int, float] = {}

    def reset(self, seed: int) -> None:
        super().reset(seed)
        self.isolated_time, self.prev_remaining, self.prev_isolated = {}, {}, {}

    def allocate(self, problem: AllocationProblem) -> np.ndarray:
        t = problem.throughput if self.perf_aware else reference_column(problem)
        view = replace(problem, throughput=t)
        iso = isolated_throughput(view)
        for r, job in enumerate(problem.jobs.tolist()):
            spent = self.isolated_time.get(job, 0.0)
            if job in self.prev_remaining and self.prev_isolated[job] > 0:
                spent += (self.prev_remaining[job] - problem.remaining[r]) / self.prev_isolated[job]
            self.isolated_time[job] = spent
        self.prev_remaining = dict(
            zip(problem.jobs.tolist(), problem.remaining.tolist(), strict=True)
        )
        self.prev_isolated = dict(zip(problem.jobs.tolist(), iso.tolist(), strict=True))
        self._iso = iso
        return super().allocate(view)

    def solve(self, problem: AllocationProblem) -> np.ndarray:
        t = problem.throughput
        iso = self._iso
        spent = np.array([self.isolated_time[j] for j in problem.jobs.tolist()])
        with np.errstate(divide="ignore"):
            expected = spent + np.where(iso > 0, problem.remaining / iso, np.inf)
        best = t.max(axis=1)
        age, left = problem.age, problem.remaining
        if not np.all(np.isfinite(expected)) or not np.all(best > 0):
            raise SolverFailure("a job has no isolated throughput (FTF undefined)")
        lo = float(np.max((age + left / best) / expected))

        def attempt(rho: float) -> np.ndarray | None:
            slack = rho * expected - age
            if np.any(slack <= 0):
                return None
            return _feasible(problem, left / slack, t)

        hi = max(lo, 1e-9)
        x = attempt(hi)
        for _ in range(200):
            if x is not None:
                break
            lo, hi = hi, hi * 2.0
            x = attempt(hi)
        if x is None:
            raise SolverFailure("no finish-time fairness level is feasible")
        while hi - lo > self.tolerance * hi:
            mid = 0.5 * (lo + hi)
            candidate = attempt(mid)
            if candidate is None:
                lo = mid
            else:
                hi, x = mid, candidate
        return x


class MinTotalDuration(GavelLP):
    """Minimum makespan: the smallest horizon every job can finish in, searched as Gavel."""

    def __init__(self, perf: bool = True) -> None:
        super().__init__()
        self.perf_aware = perf
        self.name = "min_total_duration_perf" if perf else "min_total_duration"

    def solve(self, problem: AllocationProblem) -> np.ndarray:
        t = problem.throughput if self.perf_aware else reference_column(problem)
        lo, hi, ceiling = 100.0, 1e6, 1e6
        best = None
        for _ in range(12):  # horizons up to 10^17 s
            while 1.05 * lo < hi:
                horizon = (lo + hi) / 2.0
                x = _feasible(problem, problem.remaining / horizon, t)
                if x is not None:
                    best, hi = x, horizon
                else:
                    lo = horizon
            if best is not None:
                return best
            lo, hi, ceiling = ceiling, ceiling * 10.0, ceiling * 10.0
        raise SolverFailure("no horizon up to 10^17 s lets every job finish")


class MaxSumThroughput(GavelLP):
    """Maximum total throughput (``cost``: per dollar; ``slos``: with deadline rows)."""

    def __init__(
        self, cost: bool = False, slos: bool = False, prices: dict[str, float] | None = None
    ) -> None:
        super().__init__()
        self.cost, self.slos = cost or slos, slos
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)
        self.name = (
            "max_sum_throughput_normalized_by_cost_perf_SLOs"
            if slos
            else "max_sum_throughput_normalized_by_cost_perf"
            if cost
            else "max_sum_throughput_perf"
        )
        self.dropped_slos: list[tuple[float, list[int]]] = []

    def reset(self, seed: int) -> None:
        super().reset(seed)
        self.dropped_slos = []

    def solve(self, problem: AllocationProblem) -> np.ndarray:
        from scipy import sparse
        from scipy.optimize import linprog

        t = problem.throughput
        m, n = t.shape
        price = np.ones(n)
        if self.cost:
            price = np.array([self.prices.get(k, 1.0) for k in problem.types])
        objective = -(t / price[None, :]).ravel()
        base = base_rows(problem)
        if self.slos and problem.deadline is not None:
            has = np.isfinite(problem.deadline)
            if has.any():
                window = problem.deadline - problem.now
                need = np.where(has, problem.remaining / np.where(window > 0, window, 1e-9), 0.0)
                rows = -throughput_rows(t)[np.flatnonzero(has)]
                result = linprog(
                    objective,
                    A_ub=sparse.vstack([base.a_ub, rows]).tocsr(),
                    b_ub=np.concatenate([base.b_ub, -need[has]]),
                    bounds=(0, None),
                    method="highs",
                )
                if result.status == 0:
                    return result.x.reshape(m, n)
                self.dropped_slos.append((problem.now, problem.jobs[has].tolist()))
        result = _solve(objective, base.a_ub, base.b_ub, (0, None), "max-throughput LP")
        return result.x.reshape(m, n)


#: How water-filling shares an entity's weight among its jobs (``none``: every job its own
#: entity with its own weight).
ENTITY_POLICIES = ("none", "fairness", "fifo")


def parse_entity_weights(text: str) -> dict[str, float]:
    """``"alice=2,bob=1"`` → entity weights (an entity not named weighs 1)."""
    weights: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        try:
            weight = float(value)
        except ValueError:
            weight = float("nan")
        if not sep or not name.strip() or not weight >= 0:
            raise ValueError(f"entity weights are NAME=WEIGHT≥0 joined by ',' (got {part!r})")
        weights[name.strip()] = weight
    return weights


def entity_weights(
    weight: np.ndarray,
    entity: np.ndarray,
    frozen: np.ndarray,
    policy: str,
    of_entity: dict[str, float],
) -> np.ndarray:
    """Each job's weight in this water-filling step: ``fairness`` splits its entity's weight
    ``W_e`` among the entity's unfrozen jobs in proportion to their own weights; ``fifo`` gives
    all of ``W_e`` to the entity's first unfrozen job (lowest id) and 0 to the others. Frozen
    jobs weigh 0."""
    out = np.zeros(len(weight))
    labels = entity.astype(str)
    for name in dict.fromkeys(labels.tolist()):
        rows = np.flatnonzero((labels == name) & ~frozen)
        if len(rows) == 0:
            continue
        w_e = of_entity.get(name, 1.0)
        if policy == "fifo":
            out[rows[0]] = w_e  # rows ascend with job id
            continue
        total = float(weight[rows].sum())
        if total > 0:
            out[rows] = w_e * weight[rows] / total
    return out


class WaterFilling(GavelLP):
    """Hierarchical max-min fairness by water-filling (Gavel's Fig. 11): alternately raise
    every unfrozen job's normalised throughput as far as the slowest can go (LP), then find with
    a MILP which jobs can still grow, and freeze the others.

    ``entities`` groups jobs by their user: ``fairness`` shares each user's weight among its
    unfrozen jobs, ``fifo`` gives it to the user's oldest unfrozen job (the next one gets it once
    that one froze); ``entity_weights`` (``"alice=2,bob=1"``) weighs users (default 1 each).
    Jobs of weight 0 at a step neither bound the level nor freeze."""

    def __init__(self, perf: bool = True, entities: str = "none", weights: str = "") -> None:
        super().__init__()
        if entities not in ENTITY_POLICIES:
            raise ValueError(
                f"'entities' must be one of {', '.join(ENTITY_POLICIES)} (got {entities!r})"
            )
        self.perf_aware = perf
        self.entities = entities
        self.entity_weight = parse_entity_weights(weights)
        self.name = (
            "max_min_fairness_water_filling_perf" if perf else "max_min_fairness_water_filling"
        )

    def step_weights(self, problem: AllocationProblem, frozen: np.ndarray) -> np.ndarray:
        w = problem.weight.astype(np.float64)
        if self.entities == "none" or problem.entity is None:
            return np.where(frozen, 0.0, w)
        return entity_weights(w, problem.entity, frozen, self.entities, self.entity_weight)

    def solve(self, problem: AllocationProblem) -> np.ndarray:
        from scipy import sparse

        t = problem.throughput if self.perf_aware else np.ones_like(problem.throughput)
        m, n = t.shape
        share = equal_share_throughput(replace(problem, throughput=t))
        with np.errstate(divide="ignore", invalid="ignore"):
            norm = np.where(share[:, None] > 0, t / share[:, None], 0.0)  # ŷ_j = norm_j · x_j
        s = problem.scale.astype(np.float64)
        big = float((norm * s[:, None]).max()) if m else 1.0
        level = np.zeros(m)
        frozen = np.zeros(m, dtype=bool)
        x = np.zeros((m, n))
        base = base_rows(problem, extra=1)
        for _ in range(2 * m + 1):
            w = self.step_weights(problem, frozen)
            live = np.flatnonzero(~frozen & (w > 0))
            if len(live) == 0:
                break
            # (a) raise the live jobs together: maximise τ, (ŷ_j − y_j)·s_j/w_j ≥ τ (live),
            #     ŷ_j ≥ y_j (all).
            coef = np.zeros(m)
            coef[live] = s[live] / w[live]
            grow = with_tau(-(sparse.diags(coef) @ throughput_rows(norm)), np.ones(m))
            keep = with_tau(-throughput_rows(norm), np.zeros(m))
            a_ub = sparse.vstack([base.a_ub, grow.tocsr()[live], keep]).tocsr()
            b_ub = np.concatenate([base.b_ub, -(level * coef)[live], -level])
            cost = np.zeros(m * n + 1)
            cost[-1] = -1.0
            bounds = [(0, None)] * (m * n) + [(None, None)]
            result = _solve(cost, a_ub, b_ub, bounds, "water-filling LP")
            tau = max(0.0, float(result.x[-1]))
            x = result.x[: m * n].reshape(m, n)
            level[live] += tau * w[live] / s[live]
            # (b) which live jobs can still rise above their level (binary z_j)?
            z = self._can_grow(problem, norm, level, frozen | (w <= 0), big)
            newly = ~frozen & ~z & (w > 0)
            if not newly.any():
                break
            frozen |= newly
        return x

    @staticmethod
    def _can_grow(
        problem: AllocationProblem,
        norm: np.ndarray,
        level: np.ndarray,
        frozen: np.ndarray,
        big: float,
    ) -> np.ndarray:
        from scipy import sparse
        from scipy.optimize import Bounds, LinearConstraint, milp

        m, n = norm.shape
        cols = m * n + m
        base = base_rows(problem, extra=m)
        y = throughput_rows(norm, extra=m)
        zcols = sparse.csr_matrix(
            (np.full(m, big), (np.arange(m), m * n + np.arange(m))), shape=(m, cols)
        )
        # ŷ ≥ y;  M z_j ≥ ŷ_j − 1.0001 y_j + 1e-5 (a job above its level must say so);
        # M (1 − z_j) ≥ 1.0001 y_j − ŷ_j (a job that says so must be above it).
        a = sparse.vstack([base.a_ub, -y, y - zcols, zcols - y]).tocsr()
        upper = np.concatenate([base.b_ub, -level, SLACK * level - EPSILON, big - SLACK * level])
        lower = np.full(len(upper), -np.inf)
        integrality = np.concatenate([np.zeros(m * n), np.ones(m)])
        ub_z = np.where(frozen, 0.0, 1.0)
        result = milp(
            c=np.concatenate([np.zeros(m * n), -np.ones(m)]),
            constraints=LinearConstraint(a, lower, upper),
            integrality=integrality,
            bounds=Bounds(np.zeros(cols), np.concatenate([np.full(m * n, np.inf), ub_z])),
            options={"mip_rel_gap": 1e-4},
        )
        if result.status != 0 or result.x is None:
            return np.zeros(m, dtype=bool)  # as Gavel: no job is known to grow, all freeze
        return result.x[m * n :] > 0.5
