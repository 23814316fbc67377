"""Titan's toy case (ICNP '24, §4.4 of docs/network.md), exactly: four machines of four GPUs
with 4/3/2/1 free (M1 idle), one 4-GPU halving-doubling job.

Each placement is run on that state through its policy object; the cross-machine traffic is the
job's footprint (``network.footprint``) in Titan's count: every exchanging pair once per stage,
i.e. half the sender-side bytes, in units of the gradient size K.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.model.cluster import ClusterState
from schedlab.model.gpu_models import ANY_MODEL_MASK
from schedlab.model.snapshot import Allocation
from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import footprint
from schedlab.network.generators import leafspine
from schedlab.network.metrics import titan_pair_traffic
from schedlab.network.routing import Routing
from schedlab.network.topology import Topology, cluster_for
from schedlab.policies.api import REPLAY, PolicyContext
from schedlab.policies.placement.job_placement import JobPlacementPolicy, JobRequest
from schedlab.policies.registry import make_placement
from schedlab.results import write_csv

#: Free GPUs of M1…M4 before the job arrives.
TOY_FREE = (4, 3, 2, 1)
TOY_GPUS = 4
#: The job: N = 4 ranks, halving-doubling.
TOY_JOB = 4

#: The paper's rows: policy → (machines in use after, cross traffic in K).
PUBLISHED = {"bestfit-machine": (4, 0.0), "fragments-first": (3, 1.5), "titan": (3, 1.0)}
#: What the paper calls each placement.
PAPER_NAMES = {"bestfit-machine": "ElasticFlow", "fragments-first": "HiveD", "titan": "Titan"}
#: Placements run beyond the paper's three (no published value).
EXTRA = ("tiresias-skew", "hived")


@dataclass(frozen=True)
class ToyRow:
    policy: str
    allocation: Allocation
    machines_after: int
    cross_traffic_k: float

    def placement_text(self) -> str:
        """ "ranks 0–2 on M2, 3 on M4": consecutive ranks per machine, machines named from 1."""
        parts, rank = [], 0
        for node, gpus in self.allocation:
            last = rank + len(gpus) - 1
            span = f"{rank}" if last == rank else f"{rank}–{last}"
            parts.append(f"{span} on M{node + 1}")
            rank = last + 1
        return "ranks " + ", ".join(parts)


def toy_topology() -> Topology:
    """Four hosts of four GPUs under one leaf (the toy case has no fabric to cross)."""
    return leafspine(leaves=1, spines=1, hosts_per_leaf=4, g=TOY_GPUS, m=1, nic_gbps=100.0)


def toy_state(topo: Topology) -> ClusterState:
    """M1…M4 with 4/3/2/1 free GPUs: the busy GPUs are each machine's lowest ones."""
    state = cluster_for(topo).new_state()
    for node, free in enumerate(TOY_FREE):
        state.set_gpu_free(node, [0] * (TOY_GPUS - free) + [1000] * free)
    return state


def place_toy(policy: str) -> tuple[Allocation, ClusterState, Topology]:
    """The toy job placed by ``policy`` (a whole-job placement), with the state and topology."""
    topo = toy_topology()
    state = toy_state(topo)
    placement = make_placement(policy, REPLAY)
    assert isinstance(placement, JobPlacementPolicy)
    placement.reset(
        PolicyContext(state.cluster, None, np.random.default_rng(0), topology=topo, engine=REPLAY)
    )
    request = JobRequest(-1, TOY_JOB, 0, 0, ANY_MODEL_MASK)
    allocation = placement.place_job(request, state)
    if allocation is None:
        raise RuntimeError(f"{policy} did not place the toy job")
    return allocation, state, topo


def toy_row(policy: str, k_bytes: float = 1e9) -> ToyRow:
    """One row of the table; traffic is computed from the footprint of an HD job of K bytes."""
    allocation, state, topo = place_toy(policy)
    for node, gpus in allocation:
        state.allocate(node, gpus, 0, 0, 1000, len(gpus))
    busy = int((state.gpu_full_count < state.cluster.num_gpus).sum())
    fp = footprint(CommSpec("hd", k_bytes), allocation, topo, Routing())
    return ToyRow(policy, allocation, busy, titan_pair_traffic(fp) / k_bytes)


def toy_table() -> pd.DataFrame:
    """The paper's three placements beside the published values, then the extra ones."""
    rows = []
    for policy in (*PUBLISHED, *EXTRA):
        row = toy_row(policy)
        paper = PUBLISHED.get(policy)
        rows.append(
            {
                "policy": policy,
                "paper_name": PAPER_NAMES.get(policy, ""),
                "placement": row.placement_text(),
                "machines_after": row.machines_after,
                "paper_machines_after": paper[0] if paper else np.nan,
                "cross_traffic_K": row.cross_traffic_k,
                "paper_cross_traffic_K": paper[1] if paper else np.nan,
            }
        )
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame) -> str:
    """table.md: the toy case as a markdown table (— where the paper has no value)."""

    def cell(v: object) -> str:
        if isinstance(v, float):
            return "—" if np.isnan(v) else f"{v:g}"
        return str(v)

    lines = [
        "| " + " | ".join(table.columns) + " |",
        "|" + "---|" * len(table.columns),
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(False)]
    return "\n".join(lines) + "\n"


def paper_bars(
    path: Path,
    table: pd.DataFrame,
    label: str,
    panels: list[tuple[str, str, float, str]],
) -> None:
    """One panel per (our column, the paper's column, scale of ours, title): our bars beside the
    paper's (0 where it has none), one pair per row labelled by ``label``; saved as ``path``."""
    import matplotlib

    matplotlib.use("Agg")  # files only
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.4), squeeze=False)
    x = np.arange(len(table))
    for ax, (ours, paper, scale, title) in zip(axes[0], panels, strict=True):
        ax.bar(x - 0.2, table[ours] * scale, 0.4, label="schedlab")
        ax.bar(x + 0.2, table[paper].fillna(0), 0.4, label="paper (ICNP '24)")
        ax.set_xticks(x, table[label], rotation=30, ha="right", fontsize=7)
        ax.set_title(title, fontsize=9)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_toy(out: Path) -> pd.DataFrame:
    """table.csv, table.md and toy.png into ``out``."""
    table = toy_table()
    write_csv(out / "table.csv", table)
    (out / "table.md").write_text(markdown(table))
    panels = [
        ("machines_after", "paper_machines_after", 1.0, "machines in use after"),
        ("cross_traffic_K", "paper_cross_traffic_K", 1.0, "cross-machine traffic (K)"),
    ]
    paper_bars(out / "toy.png", table, "policy", panels)
    return table
