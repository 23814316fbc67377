"""Where a pack run's cluster and pods come from, as small picklable descriptions.

Sweeps send these to worker processes instead of the arrays themselves; each worker loads a
source once and keeps it, so a 60-run grid reads its files twice (once per worker), not 60 times.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from schedlab.experiments.shipped import local_path
from schedlab.model.cluster import Cluster
from schedlab.model.pods import PodTable
from schedlab.traces.alibaba import read_node_list, read_pod_list


@dataclass(frozen=True)
class FileWorkload:
    """An openb node list and pod list on disk."""

    nodes: str
    pods: str

    @property
    def label(self) -> str:
        return Path(self.pods).stem

    def load(self) -> tuple[Cluster, PodTable]:
        return _load_files(self.nodes, self.pods)

    def describe(self) -> dict[str, object]:
        return {"nodes": self.nodes, "pods": self.pods}


@dataclass(frozen=True)
class SyntheticWorkload:
    """The embedded openb-like generator: no files needed."""

    nodes: int = 300
    seed: int = 0

    @property
    def label(self) -> str:
        return f"synthetic-openb-{self.nodes}"

    def load(self) -> tuple[Cluster, PodTable]:
        return _generate(self.nodes, self.seed)

    def describe(self) -> dict[str, object]:
        return {
            "generator": "openb-like",
            "generator_nodes": self.nodes,
            "generator_seed": self.seed,
        }


Workload = FileWorkload | SyntheticWorkload


@cache
def _load_files(nodes: str, pods: str) -> tuple[Cluster, PodTable]:
    return read_node_list(local_path(nodes)), read_pod_list(local_path(pods))


@cache
def _generate(nodes: int, seed: int) -> tuple[Cluster, PodTable]:
    from schedlab.traces.synthetic_openb import generate_openb_like

    return generate_openb_like(nodes=nodes, seed=seed)
