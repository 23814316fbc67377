"""The plan of one (d, m) as a mixed-integer linear program, solved by HiGHS
(``scipy.optimize.milp``).

A plan is a path through the layer chain: a stage is a segment ``[i, j)`` of units run on a
memory option ``o``. One binary ``v[i,j,o]`` per segment and option that fits in that memory
(``base + k_w·P_ij + (B_g/d)·act_ij ≤ M_o``; segments that do not fit get no variable); flow
conservation from boundary 0 to boundary ``L`` makes the chosen segments a cut of the chain, and
``Σ v ≤ max_stages`` bounds the stages. Everything a stage costs is a constant of its segment and
option: its forward and backward times ``T^f, T^b`` (compute over the option's speed; crossings
``c_i`` and ``c_j`` at its two ends, ``λ + μ·out/B``, zero at the chain's ends), its sync time
and its memory size. So the iteration time is linear:

    T = Σ v·(T^f + T^b) + (m − 1)·Tmax + Tsync
    Tmax  ≥ Σ_{segments covering unit l} v·(T^f + T^b)     for every unit l
    Tsync ≥ Σ_{segments covering unit l} v·sync             for every unit l

(exactly one chosen segment covers each unit, so each right-hand side is that stage's value and
the epigraph variables take the maxima; covering rows are tighter in the LP relaxation than one
row per segment). The layer→stage form with products of assignment and option binaries
linearised is exact too, but its relaxation is weak: seconds per program on 32 units, against
milliseconds here.

Time: minimise ``T``. Cost is ``price·d·ΣM·T + requests(stages)``, bilinear in memory and time;
with ``Σ v·M_o`` fixed to a value ``V`` it is linear, so :func:`solve` runs one program per
reachable ``V`` (ascending, stopping once ``price·d·V·T_min`` alone exceeds the best cost found)
and keeps the cheapest. ``uniform`` adds one binary per option with ``v[i,j,o] ≤ g[o]``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from schedlab.tune.serverless.objective import COST, Objective
from schedlab.tune.serverless.plan import (
    MB_PER_GB,
    Plan,
    Training,
    evaluate,
    micro_batch,
    request_usd,
    requests_cost,
    sync_time,
)
from schedlab.tune.serverless.platform import Platform
from schedlab.tune.serverless.profile import ModelProfile

#: HiGHS stops at a relative MIP gap of 1e-4 by default: far from the 1e-9 the planner's tests
#: compare plans at; the small programs here close the gap fully in milliseconds.
HIGHS_OPTIONS = {"mip_rel_gap": 1e-6, "disp": False}


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """HiGHS's MIP solver prints a debug line on the process's stdout that ``disp=False`` does
    not silence; stdout carries schedlab's tables (and ``--json``), so it is sent to /dev/null
    for the duration of a solve."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all: nothing to protect
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


class _Program:
    """Index bookkeeping and sparse rows of one program."""

    def __init__(self) -> None:
        self.n = 0
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[int] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.row_lb: list[float] = []
        self.row_ub: list[float] = []

    def var(self, lb: float, ub: float, integer: bool) -> int:
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(1 if integer else 0)
        self.n += 1
        return self.n - 1

    def row(self, terms: list[tuple[int, float]], lo: float, hi: float) -> None:
        r = len(self.row_lb)
        for col, val in terms:
            self.rows.append(r)
            self.cols.append(col)
            self.vals.append(val)
        self.row_lb.append(lo)
        self.row_ub.append(hi)


@dataclass
class Model:
    """A built program for one (d, m): the program and the segment each binary stands for."""

    program: _Program
    segments: dict[int, tuple[int, int, int]]  # column → (i, j, option)
    time_terms: list[tuple[int, float]]
    stage_terms: list[tuple[int, float]]  # Σ v: the number of stages
    memory_terms: list[tuple[int, float]]  # Σ v·M
    layers: int
    slots: int
    d: int
    m: int


def build(
    profile: ModelProfile,
    platform: Platform,
    training: Training,
    d: int,
    m: int,
    max_stages: int,
    uniform: bool = False,
    fastest_only: bool = False,
) -> Model:
    """The program of ``(d, m)``; ``fastest_only`` keeps, per segment, only the fastest option
    that fits (the smallest of equally fast ones): exact for the time objective, where memory
    buys nothing but speed."""
    mu = micro_batch(training, d, m)
    assert mu is not None
    L, S, n_opt = len(profile), min(max_stages, len(profile)), len(platform.memory_mb)
    speed, size = platform.speeds, platform.memory
    zero = np.zeros(1)
    f = np.concatenate((zero, np.cumsum(profile.forward_seconds(mu))))
    k = np.concatenate((zero, np.cumsum(profile.backward_seconds(mu))))
    params = np.concatenate((zero, np.cumsum(profile.params)))
    act = np.concatenate((zero, np.cumsum(profile.act)))
    # crossing at boundary b (between units b-1 and b); none at the chain's two ends
    cross = np.zeros(L + 1)
    cross[1:L] = platform.latency_s + mu * profile.out[: L - 1] / platform.bandwidth_mb_s
    p = _Program()
    inf = np.inf
    segments: dict[int, tuple[int, int, int]] = {}
    per: dict[int, float] = {}
    sync: dict[int, float] = {}
    for i in range(L):
        for j in range(i + 1, L + 1):
            need = training.base_mb + training.k_w * (params[j] - params[i])
            need += (training.batch / d) * (act[j] - act[i])
            sides = (cross[i], cross[j])
            stage_sync = float(sync_time(params[j] - params[i], d, platform, training.sync))
            fit = [o for o in range(n_opt) if need <= size[o]]
            if fastest_only and fit:
                fit = [max(fit, key=lambda o: (speed[o], -size[o]))]
            for o in fit:
                fo = (f[j] - f[i]) / speed[o]
                ko = (k[j] - k[i]) / speed[o]
                if training.overlap:
                    t = max(fo, *sides) + max(ko, *sides)
                else:
                    t = fo + ko + 2 * (sides[0] + sides[1])
                col = p.var(0, 1, True)
                segments[col] = (i, j, o)
                per[col] = float(t)
                sync[col] = stage_sync
    tmax = p.var(0, inf, False)
    tsync = p.var(0, inf, False)
    starting: list[list[int]] = [[] for _ in range(L + 1)]
    ending: list[list[int]] = [[] for _ in range(L + 1)]
    covering: list[list[int]] = [[] for _ in range(L)]
    for col, (i, j, _) in segments.items():
        starting[i].append(col)
        ending[j].append(col)
        for unit in range(i, j):
            covering[unit].append(col)
    p.row([(c, 1.0) for c in starting[0]], 1, 1)
    for b in range(1, L):
        p.row([(c, 1.0) for c in starting[b]] + [(c, -1.0) for c in ending[b]], 0, 0)
    p.row([(c, 1.0) for c in segments], 1, S)
    for unit in range(L):
        p.row([(c, per[c]) for c in covering[unit]] + [(tmax, -1.0)], -inf, 0)
        if d > 1:
            p.row([(c, sync[c]) for c in covering[unit]] + [(tsync, -1.0)], -inf, 0)
    if uniform:
        g = [p.var(0, 1, True) for _ in range(n_opt)]
        p.row([(col, 1.0) for col in g], 1, 1)
        for col, (_, _, o) in segments.items():
            p.row([(col, 1.0), (g[o], -1.0)], -inf, 0)
    time_terms = [(c, per[c]) for c in segments] + [(tmax, float(m - 1)), (tsync, 1.0)]
    return Model(
        p,
        segments,
        time_terms,
        [(c, 1.0) for c in segments],
        [(c, float(size[o])) for c, (_, _, o) in segments.items()],
        L,
        S,
        d,
        m,
    )


def _run(
    model: Model,
    objective: np.ndarray,
    extra: tuple[list, float] | None,
    upper: tuple[list, float] | None = None,
    relax: bool = False,
):
    """HiGHS on the program with ``objective``, ``extra`` = (terms, value) an added equality
    row and ``upper`` = (terms, bound) an added ≤ row (None: no such row); ``relax`` drops the
    integrality (the LP relaxation, a lower bound)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_array

    p = model.program
    rows, row_lb, row_ub = list(p.rows), list(p.row_lb), list(p.row_ub)
    cols, vals = list(p.cols), list(p.vals)
    for added, lo_equal in ((extra, True), (upper, False)):
        if added is None:
            continue
        terms, value = added
        r = len(row_lb)
        for col, val in terms:
            rows.append(r)
            cols.append(col)
            vals.append(val)
        row_lb.append(value if lo_equal else -np.inf)
        row_ub.append(value)
    matrix = csr_array((vals, (rows, cols)), shape=(len(row_lb), p.n))
    integrality = np.zeros(p.n) if relax else np.asarray(p.integer)
    with _quiet_stdout():
        return milp(
            objective,
            constraints=LinearConstraint(matrix, row_lb, row_ub),
            integrality=integrality,
            bounds=Bounds(np.asarray(p.lb), np.asarray(p.ub)),
            options=HIGHS_OPTIONS,
        )


def _solve(
    model: Model,
    objective: np.ndarray,
    extra: tuple[list, float] | None,
    upper: tuple[list, float] | None = None,
) -> Plan | None:
    """The program's optimal plan (None: infeasible); see :func:`_run` for the arguments."""
    if not model.segments:
        return None
    result = _run(model, objective, extra, upper)
    return None if result.x is None else _decode(model, result.x)


def _decode(model: Model, x: np.ndarray) -> Plan:
    chosen = sorted(model.segments[c] for c in model.segments if x[c] > 0.5)
    sizes = tuple(j - i for i, j, _ in chosen)
    memory = tuple(o for _, _, o in chosen)
    return Plan(sizes, memory, model.d, model.m)


def _vector(n: int, terms: list[tuple[int, float]], scale: float = 1.0) -> np.ndarray:
    c = np.zeros(n)
    for col, val in terms:
        c[col] += scale * val
    return c


def speed_sums(platform: Platform, slots: int, uniform: bool) -> dict[float, float]:
    """For each reachable total of memory sizes over 1..slots stages, the largest total speed
    it can buy (what bounds the compute time of any plan with that total from below)."""
    sizes, speeds = platform.memory_mb, platform.speed
    if uniform:
        best: dict[float, float] = {}
        for n in range(1, slots + 1):
            for mem, sp in zip(sizes, speeds, strict=True):
                best[n * mem] = max(best.get(n * mem, 0.0), n * sp)
        return dict(sorted(best.items()))
    reach: dict[float, float] = {}
    level = {0.0: 0.0}
    for _ in range(slots):
        nxt: dict[float, float] = {}
        for total, sp in level.items():
            for mem, s in zip(sizes, speeds, strict=True):
                nxt[total + mem] = max(nxt.get(total + mem, 0.0), sp + s)
        level = nxt
        for total, sp in level.items():
            reach[total] = max(reach.get(total, 0.0), sp)
    return dict(sorted(reach.items()))


def work(profile: ModelProfile, mu: int) -> float:
    """Seconds of forward and backward compute of one micro-batch at speed 1."""
    return float(profile.forward_seconds(mu).sum() + profile.backward_seconds(mu).sum())


def fastest(
    profile: ModelProfile,
    platform: Platform,
    training: Training,
    d: int,
    m: int,
    max_stages: int,
    uniform: bool = False,
) -> Plan | None:
    """The time-optimal plan of ``(d, m)`` (None: nothing fits)."""
    model = build(profile, platform, training, d, m, max_stages, uniform, fastest_only=not uniform)
    return _solve(model, _vector(model.program.n, model.time_terms), None)


def could_beat(score: float, t: float, best: tuple[float, float]) -> bool:
    """Whether a plan no better than (``score``, ``t``) — lower bounds — could still come
    first under the (score, then time) order against the incumbent ``best``."""
    best_score, best_t = best
    if score < best_score * (1 - 1e-12):
        return True
    return score <= best_score * (1 + 1e-12) and t < best_t * (1 - 1e-12)


def cheapest(
    profile: ModelProfile,
    platform: Platform,
    training: Training,
    d: int,
    m: int,
    max_stages: int,
    objective: Objective,
    t_min: float,
    uniform: bool = False,
    incumbent: tuple[float, float] = (np.inf, np.inf),
) -> list[Plan]:
    """For a cost or weighted objective: the best plan of each memory total worth trying,
    ascending. A total is skipped when lower bounds on its score and time cannot beat the
    ``incumbent`` (score, time): its time is at least ``t_min`` (the time-optimal plan's) and at
    least ``m·W/σ(V)``, the compute of ``m`` micro-batches at the largest total speed ``σ(V)``
    the total buys; the loop stops at the first total whose score bound from ``t_min`` alone is
    worse (it grows with the total). The totals left are then ranked by their programs' LP
    relaxations (a lower bound each) and solved best-first while their bound can still win."""
    model = build(profile, platform, training, d, m, max_stages, uniform)
    n = model.program.n
    mu = micro_batch(training, d, m)
    assert mu is not None
    compute = m * work(profile, mu)
    per_gb = platform.price_gb_s * d / MB_PER_GB
    puts, gets, lists = request_usd(1, d, m, platform)
    cheapest_requests = requests_cost(puts, gets, lists, platform)
    # Requests per iteration grow with each stage by the boundary traffic and one more sync.
    per_stage = requests_cost(*request_usd(2, d, m, platform), platform) - cheapest_requests
    best = incumbent
    plans: list[Plan] = []
    # Totals that survive the closed-form bounds, with their programs' objective vectors.
    worth: list[tuple[float, float, np.ndarray, float, float]] = []
    for total, speed in speed_sums(platform, model.slots, uniform).items():
        a = per_gb * total
        if objective.value(t_min, a * t_min + cheapest_requests) > best[0] * (1 + 1e-12):
            break  # larger totals only cost more
        t_low = max(t_min, compute / speed)
        if not could_beat(objective.value(t_low, a * t_low + cheapest_requests), t_low, best):
            continue
        # score = (c·x)·scale + const for every plan of this total
        if objective.kind == COST:
            scale = a if a > 0 else 1.0
            c = _vector(n, model.time_terms, a / scale)
            c += _vector(n, model.stage_terms, per_stage / scale)
            const = cheapest_requests - per_stage
        else:
            w, t0, c0 = objective.w, objective.t0, objective.c0
            scale = 1.0
            c = _vector(n, model.time_terms, w / t0 + (1 - w) * a / c0)
            c += _vector(n, model.stage_terms, (1 - w) * per_stage / c0)
            const = (1 - w) * (cheapest_requests - per_stage) / c0
        # The LP relaxation bounds the total's best score in a fraction of the MILP's time.
        relaxed = _run(model, c, (model.memory_terms, total), relax=True)
        if relaxed.x is None:
            continue  # no plan has this total
        # (less a hair: the LP is solved to a tolerance, and a tie may still win on time)
        worth.append(((relaxed.fun * scale + const) * (1 - 1e-9), total, c, t_low, a))
    # Most promising totals first; each MILP only where its LP bound may still win.
    for low, total, c, t_low, _ in sorted(worth, key=lambda w: (w[0], w[1])):
        if not could_beat(low, t_low, best):
            continue
        plan = _solve(model, c, (model.memory_terms, total))
        if plan is None:
            continue
        plans.append(plan)
        e = evaluate(profile, platform, training, plan)
        if e.fits:
            best = min(best, (objective.value(e.t_iter, e.cost), e.t_iter))
    return plans


__all__ = ["cheapest", "could_beat", "fastest", "speed_sums"]
