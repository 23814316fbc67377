"""The exact energy and carbon figures of the energy spec (B.6), recomputed from the shipped data:
Zeus's power-limit curves, PWR's cluster power and the closed-form carbon savings.

Each function is a study of ``schedlab reproduce`` (``zeus``, ``pwr``, ``carbon``): it computes
the figures with :mod:`schedlab.energy.reproductions` and checks them exactly against the spec's
values, which were computed from the same files.
"""

from __future__ import annotations

from schedlab.energy.reproductions import (
    median_saving,
    peak_to_trough_saving,
    pwr_cluster_power,
    spatial_kg_per_mwh,
    tradeoff,
    zeus_cost_limit,
    zeus_curve,
)
from schedlab.reproduce.checks import Reproduction, exact
from schedlab.reproduce.context import StudyContext

#: The spec's figures: (GPU, groups, median saving %, median time increase %) at the
#: energy-optimal limit against the top limit.
ZEUS_MEDIANS = (
    ("v100", 68, 22.6, 19.7),
    ("a40", 53, 19.0, 7.2),
    ("rtx6000", 52, 22.6, 19.7),
    ("p100", 45, 12.0, 5.7),
)
#: PWR's openb cluster in kW: (empty, empty GPUs, empty CPUs, busy, busy GPUs, busy CPUs).
PWR_KW = {
    "empty": 227.2,
    "empty_gpu": 174.4,
    "empty_cpu": 52.7,
    "busy": 1590.1,
    "busy_gpu": 1028.8,
    "busy_cpu": 561.3,
}
#: lcs moving a 1-hour peak-hour job to the trough (a/(1 + a/2)), per synthetic preset, in %.
LCS_SAVING = {"gb2020": 30.4, "de2020": 21.4}
#: kg per MWh in the annual country table.
COUNTRY_KG = {"CHN": 582.3, "FRA": 56.0}


def zeus(ctx: StudyContext) -> Reproduction:
    data = ctx.shared / "data"
    result = Reproduction("zeus", "Zeus: energy against power limit", "You et al., NSDI '23")

    def run() -> None:
        v100 = zeus_curve(data, "v100")
        t = tradeoff(v100)
        add = result.checks.append
        add(
            exact(
                "V100 ResNet-50 b256: energy/epoch at 250 W (kJ)",
                t.top_energy_kj,
                774.2,
                fmt="{:.1f}",
            )
        )
        add(exact("V100: energy-optimal limit (W)", t.best_w, 150, fmt="{:.0f}"))
        add(exact("V100: energy/epoch at the optimum (kJ)", t.best_energy_kj, 599.9, fmt="{:.1f}"))
        add(exact("V100: energy saving (%)", 100 * t.energy_saving, 22.5, fmt="{:.1f}"))
        add(exact("V100: time increase (%)", 100 * t.time_increase, 18.0, fmt="{:.1f}"))
        add(
            exact(
                "Zeus cost η = 0.5, MAXPOWER 250 W: limit (W)",
                zeus_cost_limit(v100, eta=0.5, max_power_w=250),
                175,
                fmt="{:.0f}",
            )
        )
        a40 = tradeoff(zeus_curve(data, "a40"))
        add(exact("A40: energy/epoch at 300 W (kJ)", a40.top_energy_kj, 904.9, fmt="{:.1f}"))
        add(exact("A40: optimum (W)", a40.best_w, 200, fmt="{:.0f}"))
        add(exact("A40: energy at the optimum (kJ)", a40.best_energy_kj, 732.3, fmt="{:.1f}"))
        for gpu, groups, saving, stretch in ZEUS_MEDIANS:
            n, s, st = median_saving(data, gpu)
            add(exact(f"{gpu}: groups", n, groups, fmt="{:.0f}"))
            add(exact(f"{gpu}: median saving at the optimum (%)", 100 * s, saving, fmt="{:.1f}"))
            add(exact(f"{gpu}: median time increase (%)", 100 * st, stretch, fmt="{:.1f}"))

    ctx.step("Zeus curves", run)
    return result


def pwr(ctx: StudyContext) -> Reproduction:
    from schedlab.traces.cluster_spec import parse_cluster_spec

    result = Reproduction("pwr", "PWR: the openb cluster's power", "PWR, CCGrid '25")
    nodes = ctx.shared / "traces" / "alibaba-gpu-2023" / "openb_node_list_gpu_node.csv"

    def run() -> None:
        cluster = parse_cluster_spec(str(nodes))
        kw = pwr_cluster_power(cluster, ctx.shared / "data")
        result.checks.append(exact("nodes", cluster.size, 1213, fmt="{:.0f}"))
        for key, want in PWR_KW.items():
            label = key.replace("_", ", ").replace("gpu", "GPUs").replace("cpu", "CPUs")
            result.checks.append(exact(f"{label} (kW)", kw[key], want, fmt="{:,.1f}"))

    ctx.step("cluster power", run)
    return result


def carbon(ctx: StudyContext) -> Reproduction:
    result = Reproduction("carbon", "Carbon shifting in closed form", "energy spec B.6")

    def run() -> None:
        for preset, want in LCS_SAVING.items():
            got = 100 * peak_to_trough_saving(preset)
            result.checks.append(
                exact(
                    f"lcs peak → trough, 1-h job, noise-free {preset} (%)", got, want, fmt="{:.1f}"
                )
            )
        kg = {iso: spatial_kg_per_mwh(ctx.shared / "data", iso) for iso in COUNTRY_KG}
        for iso, want in COUNTRY_KG.items():
            result.checks.append(exact(f"1 MWh in {iso} (kg)", kg[iso], want, fmt="{:.1f}"))
        saving = 100 * (1 - kg["FRA"] / kg["CHN"])
        result.checks.append(exact("FRA against CHN (%)", -saving, -90.4, fmt="{:.1f}"))

    ctx.step("closed forms", run)
    return result
