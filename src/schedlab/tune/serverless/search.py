"""The planner: the best plan over data-parallel degrees, micro-batch counts, cuts and memory,
and the baselines it is compared with.

``d`` runs over the divisors of the global batch up to ``max_d`` and ``m`` over the divisors of
``B_g/d`` up to ``max_m``. The ``exhaustive`` solver scores every plan (:mod:`.exhaustive`); the
``milp`` solver solves one program per ``(d, m)`` (:mod:`.milp`); ``auto`` is exhaustive up to
:data:`EXHAUSTIVE_LIMIT` plans. Both re-score their answer with :func:`.plan.evaluate`, so the
figures reported never come from a solver's tolerance.

Baselines (the same objective, the same platform):

- ``dp-serverless``: LambdaML-style data parallelism, one stage per function, ``d`` in
  {2, 4, …, 64}, one micro-batch, four-phase storage all-reduce;
- ``single-stage``: the same with the pipelined scatter-reduce;
- ``uniform``: FuncPipe's pipelines with one memory size for every stage.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from schedlab.errors import InputError
from schedlab.tune.serverless import exhaustive, milp
from schedlab.tune.serverless.objective import COST, TIME, WEIGHTED, Objective
from schedlab.tune.serverless.plan import (
    FOUR_PHASE,
    MB_PER_GB,
    PIPELINED,
    Evaluation,
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

EXHAUSTIVE_LIMIT = 1_000_000
SOLVERS = ("auto", "exhaustive", "milp")
PLANNER = "funcpipe"
BASELINES = ("dp-serverless", "single-stage", "uniform")
DP_DEGREES = (2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class Limits:
    """The plan space: at most ``max_stages`` stages, ``d ≤ max_d``, ``m ≤ max_m``."""

    max_stages: int = 8
    max_d: int = 64
    max_m: int = 64

    def __post_init__(self) -> None:
        for name in ("max_stages", "max_d", "max_m"):
            if getattr(self, name) < 1:
                raise InputError(
                    f"'--{name.replace('_', '-')}' must be ≥ 1 (got {getattr(self, name)})"
                )


@dataclass
class Result:
    """A planner's answer: its best plan, the plans it scored that no other beats in both time
    and cost (the front), and how it searched."""

    planner: str
    best: Evaluation | None
    front: list[Evaluation]
    solver: str
    plans_considered: int
    seconds: float
    objective: Objective
    notes: list[str] = field(default_factory=list)


def pairs(training: Training, limits: Limits, degrees: tuple[int, ...] | None = None):
    """(d, m) with whole micro-batches, in ascending d then m. Neither can exceed the batch
    (each takes at least one sample), so the ranges stop there whatever the limits say."""
    b = training.batch
    ds = degrees if degrees is not None else tuple(range(1, min(limits.max_d, b) + 1))
    for d in ds:
        if d > limits.max_d or b % d:
            continue
        for m in range(1, min(limits.max_m, b // d) + 1):
            if micro_batch(training, d, m) is not None:
                yield d, m


def check_fits_somewhere(profile: ModelProfile, platform: Platform, training: Training) -> None:
    """A layer unit whose parameters alone (with the base footprint) exceed the largest
    function can never be placed: say which, before any search."""
    need = training.base_mb + training.k_w * profile.params
    worst = int(np.argmax(need))
    if need[worst] > platform.largest_mb:
        layer = profile.layers[worst]
        raise InputError(
            f"layer {worst} ({layer.name!r}) needs {need[worst]:,.0f} MB for its parameters and "
            f"optimizer state alone (base {training.base_mb:g} + {training.k_w:g} × "
            f"{layer.params_mb:g} MB), more than the largest function of {platform.name} "
            f"({platform.largest_mb:g} MB)"
        )


def front_of(evals: list[Evaluation]) -> list[Evaluation]:
    """The time–cost Pareto front, fastest first (ties in both: the first)."""
    ordered = sorted(evals, key=lambda e: (e.t_iter, e.cost))
    out: list[Evaluation] = []
    for e in ordered:
        if not out or e.cost < out[-1].cost:
            out.append(e)
    return out


def _front_indices(t: np.ndarray, c: np.ndarray) -> np.ndarray:
    order = np.lexsort((c, t))
    best = np.minimum.accumulate(c[order])
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = c[order][1:] < best[:-1]
    return order[keep]


def plan(
    profile: ModelProfile,
    platform: Platform,
    training: Training,
    objective: Objective,
    limits: Limits = Limits(),
    solver: str = "auto",
    uniform: bool = False,
    planner: str = PLANNER,
) -> Result:
    """The best pipelined plan under ``objective`` (a weighted objective must be anchored)."""
    if solver not in SOLVERS:
        raise InputError(f"'--solver' must be one of {', '.join(SOLVERS)} (got {solver!r})")
    started = time.perf_counter()
    grid = list(pairs(training, limits))
    per_pair = exhaustive.count_plans(
        len(profile), len(platform.memory_mb), limits.max_stages, uniform
    )
    total = per_pair * len(grid)
    chosen = solver if solver != "auto" else ("exhaustive" if total <= EXHAUSTIVE_LIMIT else "milp")
    if chosen == "exhaustive":
        best, front = _exhaustive(profile, platform, training, objective, limits, grid, uniform)
    else:
        best, front = _milp(profile, platform, training, objective, limits, grid, uniform)
    return Result(planner, best, front, chosen, total, time.perf_counter() - started, objective)


def _exhaustive(profile, platform, training, objective, limits, grid, uniform):
    scored = [
        exhaustive.score(profile, platform, training, d, m, limits.max_stages, uniform)
        for d, m in grid
    ]
    scored = [s for s in scored if len(s.t)]
    if not scored:
        return None, []
    best_key, best_plan = None, None
    candidates: list[Evaluation] = []
    for s in scored:
        value = _values(objective, s.t, s.c)
        # lexsort: last key first — score, then time, then cost, then order
        i = int(np.lexsort((np.arange(len(value)), s.c, s.t, value))[0])
        key = (float(value[i]), float(s.t[i]), float(s.c[i]))
        if best_key is None or key < best_key:
            best_key, best_plan = key, s.plan(i)
        candidates += [
            evaluate(profile, platform, training, s.plan(int(i))) for i in _front_indices(s.t, s.c)
        ]
    assert best_plan is not None
    return evaluate(profile, platform, training, best_plan), front_of(candidates)


def _values(objective: Objective, t: np.ndarray, c: np.ndarray) -> np.ndarray:
    if objective.kind == TIME:
        return t
    if objective.kind == COST:
        return c
    return objective.w * t / objective.t0 + (1 - objective.w) * c / objective.c0


def lower_bounds(
    profile: ModelProfile, platform: Platform, training: Training, d: int, m: int, limits: Limits
) -> tuple[float, float]:
    """(time, cost) no plan of ``(d, m)`` can beat: all compute at the fastest option spread
    over ``max_stages`` stages (the slowest stage holds at least 1/S of it), the sync of 1/S of
    the parameters, and memory-seconds no fewer than ``m·W/ρ`` (``ρ``: the most speed per MB)."""
    mu = micro_batch(training, d, m)
    assert mu is not None
    w = milp.work(profile, mu)
    stages = min(limits.max_stages, len(profile))
    v_max = float(platform.speeds.max())
    t_sync = float(sync_time(profile.total_params_mb / stages, d, platform, training.sync))
    t_low = w / v_max * (1 + (m - 1) / stages) + t_sync
    rho = float((platform.speeds / platform.memory).max())
    mb_seconds = max(m * w / rho, min(platform.memory_mb) * t_low)
    puts, gets, lists = request_usd(1, d, m, platform)
    c_low = platform.price_gb_s * d * mb_seconds / MB_PER_GB + requests_cost(
        puts, gets, lists, platform
    )
    return t_low, c_low


def _seeds(profile, platform, training, grid) -> list[Evaluation]:
    """One-stage plans of every (d, m) and memory option that fit: scored exactly in no time,
    they give the MILP loop an incumbent to prune against from the start."""
    out = []
    for d, m in grid:
        for o in range(len(platform.memory_mb)):
            e = evaluate(profile, platform, training, Plan((len(profile),), (o,), d, m))
            if e.fits:
                out.append(e)
    return out


def _milp(profile, platform, training, objective, limits, grid, uniform):
    evals: list[Evaluation] = _seeds(profile, platform, training, grid)
    order = {pair: i for i, pair in enumerate(grid)}

    def key(e: Evaluation) -> tuple[float, ...]:
        return (*objective.key(e.t_iter, e.cost), order[e.plan.d, e.plan.m])

    best: Evaluation | None = min(evals, key=key) if evals else None
    # Most promising (d, m) first, so the bounds cut the rest early.
    bounded = []
    for d, m in grid:
        t_low, c_low = lower_bounds(profile, platform, training, d, m, limits)
        bounded.append((objective.value(t_low, c_low), t_low, d, m))
    bounded.sort()
    for low, t_low, d, m in bounded:
        incumbent = (
            (objective.value(best.t_iter, best.cost), best.t_iter) if best else (np.inf,) * 2
        )
        if not milp.could_beat(low, t_low, incumbent):
            continue
        fast = milp.fastest(profile, platform, training, d, m, limits.max_stages, uniform)
        if fast is None:
            continue
        plans = [fast]
        if objective.kind != TIME:
            first = evaluate(profile, platform, training, fast)
            if first.fits:
                incumbent = min(
                    incumbent, (objective.value(first.t_iter, first.cost), first.t_iter)
                )
            plans += milp.cheapest(
                profile, platform, training, d, m, limits.max_stages, objective,
                first.t_iter, uniform, incumbent,
            )  # fmt: skip
        for p in plans:
            e = evaluate(profile, platform, training, p)
            if not e.fits:  # a solver tolerance let a plan through that does not fit
                continue
            evals.append(e)
            if best is None or key(e) < key(best):
                best = e
    if best is not None and objective.kind == TIME:
        best = _least_memory(profile, platform, training, limits, best, uniform)
        evals.append(best)
    return best, front_of(evals)


def _least_memory(profile, platform, training, limits, best, uniform) -> Evaluation:
    """Among plans as fast as the time-optimal one (same d, m), one with the least memory: the
    time program alone is indifferent to memory that buys no time, so a second program
    minimises ``Σ v·M`` with the time held at the optimum (1e-9 relative)."""
    p = best.plan
    model = milp.build(profile, platform, training, p.d, p.m, limits.max_stages, uniform)
    n = model.program.n
    found = milp._solve(
        model,
        milp._vector(n, model.memory_terms),
        None,
        (model.time_terms, best.t_iter * (1 + 1e-9)),
    )
    if found is None:
        return best
    e = evaluate(profile, platform, training, found)
    if e.fits and e.t_iter <= best.t_iter * (1 + 1e-9) and e.cost < best.cost:
        return e
    return best


def baseline(
    name: str,
    profile: ModelProfile,
    platform: Platform,
    training: Training,
    objective: Objective,
    limits: Limits = Limits(),
    solver: str = "auto",
) -> Result:
    """One of :data:`BASELINES` under ``objective``."""
    if name == "uniform":
        return plan(profile, platform, training, objective, limits, solver, True, name)
    started = time.perf_counter()
    sync = FOUR_PHASE if name == "dp-serverless" else PIPELINED
    t = training.with_sync(sync)
    evals = []
    for d in DP_DEGREES:
        if d > limits.max_d or micro_batch(t, d, 1) is None:
            continue
        for o in range(len(platform.memory_mb)):
            e = evaluate(profile, platform, t, Plan((len(profile),), (o,), d, 1))
            if e.fits:
                evals.append(e)
    best = min(evals, key=lambda e: objective.key(e.t_iter, e.cost)) if evals else None
    considered = len(DP_DEGREES) * len(platform.memory_mb)
    return Result(
        name, best, front_of(evals), "exhaustive", considered, time.perf_counter() - started,
        objective,
    )  # fmt: skip


def anchor(
    objective: Objective,
    profile: ModelProfile,
    platform: Platform,
    training: Training,
    limits: Limits,
) -> Objective:
    """A weighted objective with ``T₀``, ``C₀`` of the best dp-serverless plans."""
    if objective.kind != WEIGHTED:
        return objective
    fast = baseline("dp-serverless", profile, platform, training, Objective(TIME), limits).best
    cheap = baseline("dp-serverless", profile, platform, training, Objective(COST), limits).best
    if fast is None or cheap is None:
        raise InputError(
            "'--objective weighted' needs a dp-serverless plan that fits, to scale time and cost; "
            "none does on this platform (use time or cost)"
        )
    return objective.anchored(fast.t_iter, cheap.cost)
