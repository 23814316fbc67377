"""``schedlab reproduce vclos``: vClos and OCS-vClos over load, two job-size mixes.

The spec's mix (LumosCore's TPU v4 sizes) and a mix that exercises vClos's spine sets (the GPU
counts LumosCore profiles its small models at): see :mod:`schedlab.experiments.vclos_load`. The
published figures are [secondary] and the group's Helios durations are not public, so every
comparison is a direction or a bound reported beside ours, none gated.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from schedlab.experiments import vclos_load as vl
from schedlab.reproduce.checks import Reproduction, direction, order, reported, within
from schedlab.reproduce.context import StudyContext

#: The published figures [secondary].
OCS_JWT_VS_VCLOS = -65.65
OCS_JCT_WITHIN_IDEAL = 3.38
VCLOS_VS_ELECTRICAL = "up to −20 %"
#: The load points of the profiled mix: the three highest of the spec's mix, in offered load.
PROFILED_POINTS = 3


def settings(ctx: StudyContext) -> list[vl.Setting]:
    """The spec's mix at its five load points, the profiled mix at the same offered loads
    for the highest :data:`PROFILED_POINTS` (its arrival gaps scaled by its smaller jobs)."""
    base = vl.QUICK if ctx.quick else vl.Setting()
    ratio = vl.mean_size(ctx.shared, "profiled") / vl.mean_size(ctx.shared, "tpuv4", base.size_cap)
    betas = tuple(round(b * ratio, 1) for b in base.betas[-PROFILED_POINTS:])
    return [base, replace(base, mix="profiled", betas=betas)]


def reproduce(ctx: StudyContext) -> Reproduction:
    result = Reproduction("vclos", "vClos and OCS-vClos over load", "arXiv 2308.05692")
    traces = ctx.out / "traces"
    traces.mkdir()
    tasks = [t for s in settings(ctx) for t in vl.tasks_for(ctx.shared, s, traces)]
    lumos = [] if ctx.quick else vl.tasks_for(ctx.shared, vl.LUMOS_4096, traces)
    rows = ctx.map(
        vl.run_task,
        [*tasks, *lumos],
        f"{len(tasks) + len(lumos)} replays",
        slow_first=lambda t: t.label == "vclos",
    )
    table = vl.sort_table(pd.DataFrame(rows[: len(tasks)]))
    rel = vl.write_outputs(table, ctx.out)
    for mix, part in rel.groupby("mix", sort=False):
        result.checks += mix_checks(str(mix), part, table[table["mix"] == mix])
    result.tables.append(("Runs and relative changes", vl.markdown(table, rel)))
    if lumos:
        got = pd.DataFrame(rows[len(tasks) :])
        ref = vl.lumos_reference(ctx.shared).set_index("variant")
        got.to_csv(ctx.out / "lumos-4096.csv", index=False)
        by = got.set_index("run")
        for ours, theirs in (("electrical", "ele"), ("ideal", "best")):
            result.checks.append(
                reported(
                    f"4,096 GPUs, β = 2,000 s: {ours} average JCT (s), group's log",
                    float(by.at[ours, "avg_jct"]),
                    float(ref.at[theirs, "avg_jct"]),
                    fmt="{:,.0f}",
                )
            )
    return result


def mix_checks(mix: str, rel: pd.DataFrame, table: pd.DataFrame) -> list:
    """At the highest load of the mix: the published directions and bound."""
    top = rel.sort_values("load").iloc[-1]
    at = f"{mix} sizes, load {top['load']:.2f}"
    checks = [
        direction(
            f"{at}: OCS-vClos average JWT against vClos",
            100 * top["ocs_vs_vclos_jwt"],
            OCS_JWT_VS_VCLOS,
            fmt="{:+.2f} %",
        ),
        reported(
            f"{at}: OCS-vClos average JWT against vClos (%)",
            100 * top["ocs_vs_vclos_jwt"],
            OCS_JWT_VS_VCLOS,
            fmt="{:+.2f}",
        ),
        within(
            f"{at}: OCS-vClos average JCT against the ideal (%)",
            100 * top["ocs_vs_ideal_jct"],
            0.0,
            OCS_JCT_WITHIN_IDEAL,
            fmt="{:+.2f}",
            gated=False,
        ),
        direction(
            f"{at}: vClos average JCT against the electrical fabric",
            100 * top["vclos_vs_electrical_jct"],
            VCLOS_VS_ELECTRICAL,
            expect=-1.0,
            fmt="{:+.1f} %",
        ),
    ]
    last = table[table["beta"] == top["beta"]].set_index("run")["avg_jwt"]
    if math.isfinite(float(last.get("vclos", np.nan))):
        checks.append(
            order(
                f"{at}: average JWT of the isolated runs, longest first",
                {r: float(last[r]) for r in ("vclos", "ocs-vclos", "ideal")},
                {"vclos": 3.0, "ocs-vclos": 2.0, "ideal": 1.0},
            )
        )
    return checks
