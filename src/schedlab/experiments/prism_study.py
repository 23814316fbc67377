"""Monolithic against disaggregated placement of the same DLRM serving apps (Prism, NSDI '25).

The instances running at the trace's concurrency peak are placed once each, in the order they
came up, by a placement plugin (the shared feasibility: CPU, memory, whole GPUs, RDMA NIC share,
each app's per-node limit):

* **disaggregated**: CN instances on CPU nodes, HN instances on GPU nodes (two pools);
* **monolithic**: each app's CN demand merged into its HN instances
  (:mod:`schedlab.experiments.prism_workload`), on GPU nodes only with the same total capacity
  (:mod:`schedlab.experiments.prism_cluster`).

Both clusters are sized by the disaggregated pools at ``load`` of their binding resource (a
crowded cluster). Measured: instances that found no node, CPU and GPU fragmentation
(:mod:`schedlab.metrics.serving_fragmentation`) and idle shares after the last placement, and the
fewest nodes at which every instance is placed (bisection over the node count of each pool, the
node shapes fixed; instances larger than an empty node are left out of that search and counted as
``unplaceable``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from schedlab.experiments.prism_cluster import (
    CPU_NODE,
    GPU_NODE,
    NodeShape,
    fits_empty,
    monolithic_shape,
    nodes_for,
    pool_cluster,
    trace_shapes,
)
from schedlab.experiments.prism_workload import PoolWorkload, merged_pool, role_pool
from schedlab.metrics.fragmentation import TargetWorkload
from schedlab.metrics.serving_fragmentation import (
    ServingFragmentation,
    ServingShapes,
    serving_fragmentation,
)
from schedlab.model.cluster import ClusterState
from schedlab.model.instances import ROLE_CN, ROLE_HN, ServingInstances
from schedlab.policies.api import PACK
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.reproduce.checks import Reproduction, direction
from schedlab.reproduce.context import StudyContext

DISAGGREGATED, MONOLITHIC = "disaggregated", "monolithic"

#: Fragmentation reductions of disaggregation the paper reports in a crowded cluster [paper].
PAPER_CPU_FRAG_CHANGE_PCT = -53.0
PAPER_GPU_FRAG_CHANGE_PCT = -27.0

#: The study gives up looking for a size that fits everything beyond this many times the bound.
MAX_GROWTH = 16


@dataclass(frozen=True)
class StudyConfig:
    policies: tuple[str, ...] = ("fgd", "bestfit", "random")
    seeds: tuple[int, ...] = (42,)
    #: Shares of each pool's binding resource the peak demand fills (one cluster per load).
    loads: tuple[float, ...] = (0.9,)
    #: Keep only apps whose index is a multiple of this (1: all apps); a smaller quick study.
    app_stride: int = 1
    #: Also search the fewest nodes that hold everything (several placements per point).
    nodes_needed: bool = True
    cpu_node: NodeShape = CPU_NODE
    gpu_node: NodeShape = GPU_NODE
    #: ``servers``: ``cpu_node``/``gpu_node`` as given; ``trace``: both from the instances'
    #: demand mix (:func:`~schedlab.experiments.prism_cluster.trace_shapes`).
    shapes: str = "servers"


@dataclass(frozen=True)
class PoolOutcome:
    state: ClusterState
    placed: int
    failed: int

    @property
    def nodes_used(self) -> int:
        s = self.state
        return int((s.cpu_free < s.cluster.cpu_milli).sum())


def place_pool(
    shape: NodeShape, count: int, workload: PoolWorkload, policy: str, seed: int
) -> PoolOutcome:
    """Place every pod of ``workload`` once, in order, on ``count`` nodes of ``shape``."""
    cluster = pool_cluster(shape, count)
    state = cluster.new_state()
    if len(workload) == 0:
        return PoolOutcome(state, 0, 0)
    policies = build(PACK, PolicyChoice(policy))
    policies.start(
        cluster, np.random.default_rng(seed), target=TargetWorkload.from_pods(workload.pods)
    )
    placer = policies.placer
    assert placer is not None
    failed = 0
    for pod in workload.requests():
        where = placer.place(pod, state)
        if where is None:
            failed += 1
            continue
        state.allocate(
            where.node,
            where.gpus,
            pod.cpu_milli,
            pod.memory_mib,
            pod.gpu_milli,
            pod.num_gpu,
            rdma=pod.rdma,
            app=pod.app,
            app_limit=pod.max_per_node,
        )
    return PoolOutcome(state, len(workload) - failed, failed)


def fragmentation(outcome: PoolOutcome, workload: PoolWorkload) -> ServingFragmentation:
    """The pool's fragmentation against the shapes of the pods meant for it."""
    p = workload.pods
    if len(workload) == 0:
        shapes = ServingShapes.of(np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1))
    else:
        shapes = ServingShapes.of(p.cpu_milli, p.memory_mib, p.num_gpu, workload.rdma)
    return serving_fragmentation(outcome.state, shapes)


def nodes_needed(shape: NodeShape, workload: PoolWorkload, policy: str, seed: int) -> int | None:
    """Fewest nodes of ``shape`` on which ``policy`` places every pod (None: no size found)."""
    if len(workload) == 0:
        return 0
    if not fits_empty(workload, shape).all():
        return None

    def fits(n: int) -> bool:
        return place_pool(shape, n, workload, policy, seed).failed == 0

    low = nodes_for(workload.demand(), shape)
    if fits(low):
        return low
    bound, high = low, 2 * low
    while not fits(high):
        if high >= MAX_GROWTH * bound:
            return None
        low, high = high, high * 2
    while high - low > 1:  # fits(high), not fits(low)
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid, high)
    return high


def peak_instances(
    instances: ServingInstances, app_stride: int = 1
) -> tuple[ServingInstances, float]:
    """The instances running at the concurrency peak (of the apps kept) and its time."""
    if app_stride > 1:
        instances = instances.select(instances.app % app_stride == 0)
    _, when = instances.concurrency_peak()
    return instances.select(instances.running_at(when)), when


def run_study(
    instances: ServingInstances,
    config: StudyConfig,
    progress: Callable[[str], None] | None = None,
) -> tuple[pd.DataFrame, dict[str, object]]:
    """One row per (load, architecture, policy, seed) and a description of the setup."""
    running, when = peak_instances(instances, config.app_stride)
    cn, hn = role_pool(running, ROLE_CN), role_pool(running, ROLE_HN)
    merged = merged_pool(running)
    setup: dict[str, object] = {
        "peak_time_seconds": when,
        "instances": len(running),
        "cn_instances": len(cn),
        "hn_instances": len(hn),
        "merged_instances": len(merged),
        "apps": len(np.unique(running.app)),
        "clusters": {},
    }
    rows = []
    cpu_node, gpu_node = config.cpu_node, config.gpu_node
    if config.shapes == "trace":
        cpu_node, gpu_node = trace_shapes(cn, hn)
    for load in config.loads:
        cpu_nodes = nodes_for(cn.demand(), cpu_node, load)
        gpu_nodes = nodes_for(hn.demand(), gpu_node, load)
        mono = monolithic_shape(cpu_nodes, gpu_nodes, cpu_node, gpu_node)
        setup["clusters"][str(load)] = {  # type: ignore[index]
            "cpu_nodes": cpu_nodes,
            "gpu_nodes": gpu_nodes,
            "monolithic_nodes": gpu_nodes,
            "node_shapes": [cpu_node.describe(), gpu_node.describe(), mono.describe()],
        }
        pools = {
            DISAGGREGATED: [(cpu_node, cpu_nodes, cn), (gpu_node, gpu_nodes, hn)],
            MONOLITHIC: [(mono, gpu_nodes, merged)],
        }
        for policy in config.policies:
            for seed in config.seeds:
                if progress is not None:
                    progress(f"load {load:g}, {policy}, seed {seed}")
                for architecture, parts in pools.items():
                    row = {
                        "shapes": config.shapes,
                        "load": load,
                        "architecture": architecture,
                        "policy": policy,
                    }
                    row |= _measure(parts, policy, seed, config.nodes_needed)
                    rows.append(row)
    return pd.DataFrame(rows), setup


def _measure(
    parts: list[tuple[NodeShape, int, PoolWorkload]], policy: str, seed: int, search: bool
) -> dict[str, object]:
    """Place each pool, then sum their measures into one row."""
    frag: ServingFragmentation | None = None
    placed = failed = used = unplaceable = 0
    needed: dict[str, float] = {"nodes": 0.0, "gpus": 0.0, "vcpu": 0.0}
    for shape, count, workload in parts:
        outcome = place_pool(shape, count, workload, policy, seed)
        f = fragmentation(outcome, workload)
        frag = f if frag is None else frag + f
        placed, failed, used = (
            placed + outcome.placed,
            failed + outcome.failed,
            used + outcome.nodes_used,
        )
        fits = fits_empty(workload, shape)
        unplaceable += int((~fits).sum())
        n = nodes_needed(shape, workload.subset(fits), policy, seed) if search else None
        for key, per_node in (("nodes", 1), ("gpus", shape.gpus), ("vcpu", shape.cpu_milli / 1000)):
            needed[key] += math.nan if n is None else n * per_node
    assert frag is not None
    return {
        "seed": seed,
        "nodes": sum(count for _, count, _ in parts),
        "gpus": frag.gpu_capacity,
        "vcpu": frag.cpu_capacity_milli / 1000,
        "placed": placed,
        "failed": failed,
        "unplaceable": unplaceable,
        "nodes_used": used,
        "cpu_frag_pct": frag.cpu_frag_pct,
        "gpu_frag_pct": frag.gpu_frag_pct,
        "cpu_idle_pct": 100.0 * frag.cpu_idle_milli / frag.cpu_capacity_milli,
        "gpu_idle_pct": 100.0 * frag.gpu_idle / frag.gpu_capacity if frag.gpu_capacity else 0.0,
        "nodes_needed": needed["nodes"],
        "gpus_needed": needed["gpus"],
        "vcpu_needed": needed["vcpu"],
    }


def comparison(table: pd.DataFrame) -> pd.DataFrame:
    """Per policy, means over seeds: fragmentation under each architecture and the change from
    monolithic to disaggregated, beside the paper's figures."""
    keys = ["shapes", "load", "policy", "architecture"]
    means = table.groupby(keys, sort=False).mean(numeric_only=True)
    rows = []
    points = zip(table["shapes"], table["load"], table["policy"], strict=True)
    for shapes, load, policy in dict.fromkeys(points):
        d = means.loc[(shapes, load, policy, DISAGGREGATED)]
        m = means.loc[(shapes, load, policy, MONOLITHIC)]
        rows.append(
            {
                "shapes": shapes,
                "load": load,
                "policy": policy,
                "cpu_frag_mono_pct": m["cpu_frag_pct"],
                "cpu_frag_disagg_pct": d["cpu_frag_pct"],
                "cpu_frag_change_pct": _change(m["cpu_frag_pct"], d["cpu_frag_pct"]),
                "paper_cpu_change_pct": PAPER_CPU_FRAG_CHANGE_PCT,
                "gpu_frag_mono_pct": m["gpu_frag_pct"],
                "gpu_frag_disagg_pct": d["gpu_frag_pct"],
                "gpu_frag_change_pct": _change(m["gpu_frag_pct"], d["gpu_frag_pct"]),
                "paper_gpu_change_pct": PAPER_GPU_FRAG_CHANGE_PCT,
                "failed_mono": m["failed"],
                "failed_disagg": d["failed"],
                "gpus_needed_mono": m["gpus_needed"],
                "gpus_needed_disagg": d["gpus_needed"],
                "vcpu_needed_mono": m["vcpu_needed"],
                "vcpu_needed_disagg": d["vcpu_needed"],
            }
        )
    return pd.DataFrame(rows)


def _change(before: float, after: float) -> float:
    return 100.0 * (after - before) / before if before else math.nan


# -- schedlab reproduce prism ---------------------------------------------------------------------

#: The node-shape sets the study compares (see :mod:`schedlab.experiments.prism_cluster`).
SHAPE_SETS = ("servers", "trace")


@dataclass(frozen=True)
class PrismTask:
    """The study for one node-shape set and one load."""

    trace: str
    shapes: str
    load: float
    quick: bool


def run_prism_task(task: PrismTask) -> tuple[list[dict[str, object]], dict[str, object]]:
    """Every policy and seed of one (shape set, load): rows and the setup."""
    from schedlab.traces.alibaba_2025 import read_alibaba_2025

    config = StudyConfig(
        seeds=(42,) if task.quick else (42, 43, 44),
        loads=(task.load,),
        app_stride=8 if task.quick else 1,
        shapes=task.shapes,
    )
    table, setup = run_study(read_alibaba_2025(task.trace), config)
    return table.to_dict("records"), setup


def reproduce(ctx: StudyContext) -> Reproduction:
    from schedlab.experiments.prism_report import figure
    from schedlab.report.deadline_figures import markdown_table

    result = Reproduction("prism", "Disaggregated DLRM serving", "Prism, NSDI '25")
    trace = ctx.shared / "traces" / "alibaba-gpu-2025" / "disaggregated_DLRM_trace.csv"
    loads = (0.9,) if ctx.quick else (0.9, 0.95)
    tasks = [
        PrismTask(str(trace), shapes, load, ctx.quick) for shapes in SHAPE_SETS for load in loads
    ]
    done = ctx.map(run_prism_task, tasks, f"{len(tasks)} (node shapes, load) studies")
    table = pd.DataFrame([row for rows, _ in done for row in rows])
    compare = comparison(table)
    table.to_csv(ctx.out / "table.csv", index=False)
    compare.to_csv(ctx.out / "comparison.csv", index=False)
    figure(compare, ctx.out / "fragmentation.png")
    for r in compare.to_dict("records"):
        at = f"{r['shapes']} shapes, load {r['load']:g}, {r['policy']}"
        result.checks.append(
            direction(
                f"{at}: CPU fragmentation, disaggregated against monolithic",
                float(r["cpu_frag_change_pct"]),
                PAPER_CPU_FRAG_CHANGE_PCT,
            )
        )
        result.checks.append(
            direction(
                f"{at}: GPU fragmentation, disaggregated against monolithic",
                float(r["gpu_frag_change_pct"]),
                PAPER_GPU_FRAG_CHANGE_PCT,
            )
        )
    shapes_seen = []
    for (_, setup), task in zip(done, tasks, strict=True):
        c = setup["clusters"][str(task.load)]  # type: ignore[index]
        shapes_seen.append(
            f"- {task.shapes}, load {task.load:g}: {c['cpu_nodes']:,} CPU + {c['gpu_nodes']:,} "
            f"GPU nodes; " + "; ".join(c["node_shapes"])
        )
    setup = done[0][1]
    result.tables.append(
        (
            f"{setup['instances']:,} instances at the concurrency peak ({setup['cn_instances']:,} "
            f"CN, {setup['hn_instances']:,} HN; {setup['merged_instances']:,} monolithic after "
            "merging). Fragmentation in % of the cluster's CPU or GPUs, means over seeds",
            "\n".join(shapes_seen) + "\n\n" + markdown_table(compare, floats="{:.2f}"),
        )
    )
    return result
