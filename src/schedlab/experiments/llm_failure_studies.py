"""The LLM planner, failure and AcmeTrace reproductions as ``schedlab reproduce`` studies.

Each study runs the table functions of :mod:`.llm_planner_study`, :mod:`.failure_study` and
:mod:`.acme_study` and turns every row into a check: a figure within its tolerance (relative or
absolute), or a property (an ordering, a bound) that holds. All are gated except rows a study
marks as skipped (a trace that is not there).
"""

from __future__ import annotations

import math

import pandas as pd

from schedlab.reproduce.checks import Check, Reproduction, within
from schedlab.reproduce.context import StudyContext


def _checks(table: pd.DataFrame) -> list[Check]:
    out = []
    for _, r in table.iterrows():
        what = f"{r['target']}: {r['item']}"
        if r["verdict"] == "skipped":
            out.append(Check(what, str(r["published"]), str(r["ours"]), "", "skipped", False,
                             "reported"))  # fmt: skip
        elif r["unit"] == "property":
            ok = r["verdict"] == "pass"
            out.append(Check(what, str(r["published"]), str(r["ours"]), "holds",
                             "pass" if ok else "FAIL", True, "order"))  # fmt: skip
        else:
            relative = r["unit"] == "relative"
            unit = "" if relative else f" {r['unit'].split(' ')[0]}"
            ours = float(r["ours"]) if r["ours"] is not None else math.nan
            fmt = "{:.4g}"
            out.append(within(what, ours, float(r["published"]), float(r["tolerance"]),
                              relative=relative, fmt=fmt, unit=unit))  # fmt: skip
    return out


def _save(ctx: StudyContext, name: str, table: pd.DataFrame) -> None:
    table.to_csv(ctx.out / f"{name}.csv", index=False)


def llm_planner(ctx: StudyContext) -> Reproduction:
    """V1–V5: parameter counts, ZeRO memory, FLOPs bookkeeping, InternEvo and Megatron SC '21."""
    from schedlab.experiments.llm_planner_study import REPRODUCTIONS

    result = Reproduction(
        "llm-planner", "The LLM planner: parameters, memory, FLOPs and throughput",
        "Megatron-LM SC '21, ZeRO, InternEvo",
    )  # fmt: skip
    for name, fn in REPRODUCTIONS.items():
        table = ctx.step(name, fn)
        _save(ctx, name, table)
        result.checks += _checks(table)
    return result


def failures(ctx: StudyContext) -> Reproduction:
    """F1–F6 (quick: seeds 1–2, F5 left out)."""
    from schedlab.experiments import failure_study as fs

    result = Reproduction(
        "failures", "Failures and checkpointing: Llama 3 405B and OPT-175B",
        "Llama 3 paper Table 5; Daly 2006; metaseq OPT-175B logbook",
    )  # fmt: skip
    seeds = (1, 2) if ctx.quick else fs.SEEDS
    studies = [fs.reproduce_f1_f3, fs.reproduce_f4, fs.reproduce_f6]
    if not ctx.quick:
        studies.append(fs.reproduce_f5)
    for fn in studies:
        table = ctx.step(fn.__name__, lambda fn=fn: fn(seeds, ctx.workers))
        _save(ctx, fn.__name__, table)
        result.checks += _checks(table)
    return result


def acme(ctx: StudyContext) -> Reproduction:
    """AcmeTrace's published statistics against its trace files (skipped when absent)."""
    from schedlab.experiments.acme_study import reproduce_acme_stats

    result = Reproduction("acme", "AcmeTrace: job, state and job-type statistics",
                          "Hu et al., NSDI '24; InternLM/AcmeTrace")  # fmt: skip
    table = ctx.step("statistics", lambda: reproduce_acme_stats(ctx.shared / "data" / "acme"))
    _save(ctx, "acme", table)
    result.checks += _checks(table)
    return result
