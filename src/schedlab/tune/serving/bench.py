"""Search cost of the tuners over held-out services: how many profiling samples each needs
before it has sampled the true optimum (judged on the noise-free objective).

Each (held-out service, seed, tuner) is one run; a run stops once it samples an optimal
configuration, or after ``budget`` samples for the model-based tuners (grid and random cost
nothing to plan and always run to the end of the space). A run that never samples the optimum
counts as "more than the budget": medians are order statistics, so they stay exact as long as
fewer than half of the runs are censored (otherwise the median is reported as ``> K``).
Normalised regret ``1 − J(incumbent)/J*`` is recorded after 5, 10, 20 and 30 samples (a run
that stopped earlier keeps its last incumbent).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from schedlab.tune.serving import tuners
from schedlab.tune.serving.meta import MetaWeights
from schedlab.tune.serving.model import Service, evaluate

REGRET_AT = (5, 10, 20, 30)
CHEAP = ("grid", "random")


@dataclass(frozen=True)
class BenchTask:
    service: Service
    index: int
    seed: int
    tuner: str
    budget: int
    weights: list[np.ndarray] | None


def run_task(task: BenchTask) -> dict[str, object]:
    """One run (a module-level function, so it can run in a worker process)."""
    perf = evaluate(task.service)
    optimal = tuners.optimal_set(perf)
    rng = np.random.default_rng([task.seed, task.index, tuners.TUNERS.index(task.tuner)])
    budget = len(perf.objective) if task.tuner in CHEAP else task.budget
    result = tuners.run(task.tuner, perf, budget, rng, task.weights, stop=optimal)
    cost = result.search_cost(optimal)
    return {
        "service": task.service.name,
        "seed": task.seed,
        "tuner": task.tuner,
        "search_cost": cost if cost is not None else math.nan,
        "samples": len(result.samples),
        "optimum_index": perf.best,
        **{f"regret_{k}": result.regret(perf, k) for k in REGRET_AT},
    }


def tasks(
    services: list[Service],
    seeds: list[int],
    names: list[str],
    budget: int,
    weights: MetaWeights | None,
) -> list[BenchTask]:
    return [
        BenchTask(
            service,
            i,
            seed,
            name,
            budget,
            weights.for_tuner(name) if (weights and name in tuners.LEARNED) else None,
        )
        for i, service in enumerate(services)
        for seed in seeds
        for name in names
    ]


def censored_median(costs: pd.Series) -> float:
    """The median with runs that never found the optimum counted as above every other value
    (inf when half or more of them are such runs)."""
    values = np.sort(costs.fillna(np.inf).to_numpy(dtype=np.float64))
    return float(np.median(values)) if len(values) else math.nan


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for name, group in runs.groupby("tuner", sort=False):
        med = censored_median(group["search_cost"])
        rows.append(
            {
                "tuner": name,
                "runs": len(group),
                "found": int(group["search_cost"].notna().sum()),
                "median_search_cost": med,
                "mean_search_cost_found": float(group["search_cost"].mean()),
                **{f"median_regret_{k}": float(group[f"regret_{k}"].median()) for k in REGRET_AT},
            }
        )
    return pd.DataFrame(rows)


def ratios(table: pd.DataFrame, reference: str = "meta") -> dict[str, float]:
    """Each tuner's median search cost over ``reference``'s (Morphling's 3–22× is BO's and
    random's over its meta-learned tuner)."""
    medians = dict(zip(table["tuner"], table["median_search_cost"], strict=True))
    base = medians.get(reference)
    if base is None or not (base > 0 and math.isfinite(base)):
        return {}
    return {name: value / base for name, value in medians.items() if name != reference}
