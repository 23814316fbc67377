"""``plan.json`` and ``plans.csv``: the planner's plan, each baseline's, and the time–cost fronts.

Nothing here depends on the clock (search seconds are printed, not written), so the same inputs
give byte-identical files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.results import atomic_write, write_json
from schedlab.tune.serverless.plan import Evaluation, Training
from schedlab.tune.serverless.platform import Platform
from schedlab.tune.serverless.profile import ModelProfile
from schedlab.tune.serverless.search import Result


def comparison(result: Result, baselines: list[Result]) -> dict[str, dict[str, float]]:
    """The planner's plan against each baseline's: speed-up (their time ÷ ours) and cost
    ratio (ours ÷ theirs; below 1 is cheaper)."""
    out: dict[str, dict[str, float]] = {}
    if result.best is None:
        return out
    for b in baselines:
        if b.best is None:
            continue
        out[b.planner] = {
            "speedup": b.best.t_iter / result.best.t_iter,
            "cost_ratio": result.best.cost / b.best.cost,
        }
    return out


def _plan_block(result: Result, platform: Platform) -> dict[str, Any]:
    return {
        "solver": result.solver,
        "plans_considered": result.plans_considered,
        "plan": None if result.best is None else result.best.to_json(platform),
        "label": None if result.best is None else result.best.plan.label(platform),
    }


def payload(
    profile: ModelProfile,
    platform: Platform,
    training: Training,
    result: Result,
    baselines: list[Result],
) -> dict[str, Any]:
    return {
        "model": profile.name,
        "layer_units": len(profile),
        "params_mb": profile.total_params_mb,
        "platform": platform.name,
        "batch": training.batch,
        "k_w": training.k_w,
        "base_mb": training.base_mb,
        "overlap": training.overlap,
        "sync": training.sync,
        "objective": result.objective.label(),
        **(
            {"anchor": {"t0_s": result.objective.t0, "c0_usd": result.objective.c0}}
            if result.objective.kind == "weighted"
            else {}
        ),
        result.planner: _plan_block(result, platform),
        "baselines": {b.planner: _plan_block(b, platform) for b in baselines},
        "vs_baselines": comparison(result, baselines),
    }


def _rows(result: Result, platform: Platform) -> list[dict[str, Any]]:
    def row(e: Evaluation) -> dict[str, Any]:
        p = e.plan
        return {
            "planner": result.planner,
            "t_iter_s": e.t_iter,
            "cost_usd": e.cost,
            "stages": len(p.sizes),
            "layers": "|".join(str(n) for n in p.sizes),
            "memory_mb": "|".join(f"{platform.memory_mb[o]:g}" for o in p.memory),
            "d": p.d,
            "m": p.m,
            "best": e is result.best or e.plan == (result.best.plan if result.best else None),
        }

    return [row(e) for e in result.front]


def write(
    out: Path,
    profile: ModelProfile,
    platform: Platform,
    training: Training,
    result: Result,
    baselines: list[Result],
) -> dict[str, Any]:
    data = payload(profile, platform, training, result, baselines)
    rows = [r for res in (result, *baselines) for r in _rows(res, platform)]
    frame = pd.DataFrame(
        rows,
        columns=["planner", "t_iter_s", "cost_usd", "stages", "layers", "memory_mb", "d", "m",
                 "best"],
    )  # fmt: skip
    # Dollars per iteration are small: nine significant digits, not a fixed six decimals.
    atomic_write(
        out / "plans.csv",
        lambda fh: frame.to_csv(fh, index=False, float_format="%.9g", lineterminator="\n"),
    )
    write_json(out / "plan.json", data)
    return data
