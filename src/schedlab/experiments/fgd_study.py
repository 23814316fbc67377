"""``schedlab reproduce fgd``: the FGD paper's pack table (Weng et al., USENIX ATC '23).

All six placement policies on the default openb pod list and the 1,213 GPU nodes, inflation 1.3,
seeds 42..51 — the grid of the README's ``schedlab sweep`` command, run with the same code. Each
policy's mean unallocated GPU % at arrived 100 % and 130 % must lie within 0.3 points of the
published value (the published seed-to-seed spread of fgd is about 0.1 point; a policy that
places differently moves its mean by more), and the policies must rank as published.
"""

from __future__ import annotations

from schedlab.experiments.pack_sweep import PackTask, aggregate, results_table, run_task
from schedlab.experiments.published import (
    FGD_REFERENCE_INFLATE,
    FGD_REFERENCE_TRACE,
    FGD_UNALLOCATED_AT_100,
    FGD_UNALLOCATED_AT_130,
)
from schedlab.experiments.workloads import FileWorkload
from schedlab.reproduce.checks import Reproduction, markdown_table, order, within
from schedlab.reproduce.context import StudyContext

POLICIES = ("random", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd")
PUBLISHED = {100: FGD_UNALLOCATED_AT_100, 130: FGD_UNALLOCATED_AT_130}
TOLERANCE_PP = 0.3
SEEDS = tuple(range(42, 52))


def reproduce(ctx: StudyContext) -> Reproduction:
    result = Reproduction("fgd", "FGD pack table", "Weng et al., USENIX ATC '23")
    trace = ctx.shared / "traces" / "alibaba-gpu-2023"
    workload = FileWorkload(
        str(trace / "openb_node_list_gpu_node.csv"), str(trace / f"{FGD_REFERENCE_TRACE}.csv")
    )
    seeds = SEEDS[:1] if ctx.quick else SEEDS
    tasks = [PackTask(workload, p, s, FGD_REFERENCE_INFLATE) for p in POLICIES for s in seeds]
    summaries = ctx.map(run_task, tasks, f"{len(tasks)} pack runs")
    table = results_table(summaries, POLICIES)
    agg = aggregate(table).set_index("policy")
    table.to_csv(ctx.out / "results.csv", index=False)
    agg.to_csv(ctx.out / "aggregate.csv")
    rows = []
    for arrived in (100, 130):
        column = f"unallocated_gpu_pct_{arrived}_mean"
        mine = {p: float(agg.at[p, column]) for p in POLICIES}
        for policy in POLICIES:
            result.checks.append(
                within(
                    f"unallocated GPU % at arrived {arrived} %, {policy}",
                    mine[policy],
                    PUBLISHED[arrived][policy],
                    TOLERANCE_PP,
                )
            )
        result.checks.append(
            order(
                f"ranking at arrived {arrived} %, most unallocated first",
                mine,
                PUBLISHED[arrived],
                gated=True,
            )
        )
    for policy in POLICIES:
        sd = agg.at[policy, "unallocated_gpu_pct_100_std"]
        rows.append(
            {
                "policy": policy,
                "schedlab @100": f"{agg.at[policy, 'unallocated_gpu_pct_100_mean']:.2f}"
                + ("" if sd is None else f" ± {sd:.2f}"),
                "published @100": f"{PUBLISHED[100][policy]:.2f}",
                "schedlab @130": f"{agg.at[policy, 'unallocated_gpu_pct_130_mean']:.2f}",
                "published @130": f"{PUBLISHED[130][policy]:.2f}",
            }
        )
    result.tables.append(
        (
            f"Unallocated GPU %, mean ± sd over seeds {seeds[0]}..{seeds[-1]}, inflation 1.3",
            markdown_table(rows, list(rows[0])),
        )
    )
    return result
