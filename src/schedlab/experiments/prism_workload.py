"""What the Prism study places: the serving instances running at one moment, as pods for a
disaggregated cluster (CN and HN instances kept apart) or a monolithic one (each app's CN demand
merged into its GPU instances).

**Merge rule (monolithic).** For an app with h > 0 HN instances running, the CPU, memory and RDMA
share of all its running CN instances is split evenly over its HN instances (rounded up to a whole
milli-core and MiB, so no demand is lost): merged instance i asks for HN_i's GPUs and RDMA share
plus 1/h of the CN CPU and memory. The CN instances' RDMA share is dropped: it carries the CN↔HN
traffic, which stays inside the server once both halves share one. Each merged instance keeps
HN_i's per-node limit and start time. An app with no HN instance running keeps its CN instances
as they are (CPU-only pods on GPU servers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.model.cluster import GPU_MILLI
from schedlab.model.instances import ROLE_CN, ROLE_HN, ServingInstances
from schedlab.model.pods import PodTable
from schedlab.policies.placement.base import PodRequest


@dataclass(frozen=True)
class PoolWorkload:
    """Pods for one pool of nodes, in placement order, with their RDMA share and app limits."""

    pods: PodTable
    rdma: np.ndarray  # int64, % of one NIC
    app: np.ndarray  # int64
    max_per_node: np.ndarray  # int64, -1 = no limit

    def __len__(self) -> int:
        return len(self.pods)

    def requests(self) -> list[PodRequest]:
        p = self.pods
        return [
            PodRequest(int(c), int(m), int(g), int(s), rdma=int(r), app=int(a), max_per_node=int(k))
            for c, m, g, s, r, a, k in zip(
                p.cpu_milli,
                p.memory_mib,
                p.num_gpu,
                p.gpu_milli,
                self.rdma,
                self.app,
                self.max_per_node,
                strict=True,
            )
        ]

    def subset(self, mask: np.ndarray) -> PoolWorkload:
        """The pods where ``mask`` is true, order kept."""
        index = np.flatnonzero(mask)
        return PoolWorkload(
            self.pods.take(index), self.rdma[index], self.app[index], self.max_per_node[index]
        )

    def demand(self) -> dict[str, float]:
        """Totals: CPU milli-cores, memory MiB, GPUs, RDMA share."""
        return {
            "cpu_milli": float(self.pods.cpu_milli.sum()),
            "memory_mib": float(self.pods.memory_mib.sum()),
            "gpus": float(self.pods.num_gpu.sum()),
            "rdma": float(self.rdma.sum()),
        }


def _pool(
    names: np.ndarray,
    cpu: np.ndarray,
    memory: np.ndarray,
    gpus: np.ndarray,
    rdma: np.ndarray,
    app: np.ndarray,
    limit: np.ndarray,
    start: np.ndarray,
    source: str,
) -> PoolWorkload:
    order = np.argsort(start, kind="stable")  # the order they came up; row order among ties
    pods = PodTable.from_columns(
        source=source,
        name=np.asarray(names, dtype=object)[order],
        cpu_milli=np.asarray(cpu, dtype=np.int64)[order],
        memory_mib=np.asarray(memory, dtype=np.int64)[order],
        num_gpu=np.asarray(gpus, dtype=np.int64)[order],
        gpu_milli=np.where(np.asarray(gpus)[order] > 0, GPU_MILLI, 0),
    )
    return PoolWorkload(
        pods,
        np.asarray(rdma, dtype=np.int64)[order],
        np.asarray(app, dtype=np.int64)[order],
        np.asarray(limit, dtype=np.int64)[order],
    )


def role_pool(instances: ServingInstances, role: int) -> PoolWorkload:
    """The instances of one role as they are (the disaggregated placement)."""
    x = instances.select(instances.role == role)
    return _pool(
        x.name,
        x.cpu_milli,
        x.memory_mib,
        x.num_gpu,
        x.rdma,
        x.app,
        x.max_per_node,
        x.start,
        x.source,
    )


def merged_pool(instances: ServingInstances) -> PoolWorkload:
    """Each app's CN demand merged into its HN instances (the module docstring's rule)."""
    x = instances
    cn, hn = x.role == ROLE_CN, x.role == ROLE_HN
    n_apps = len(x.app_names)
    h = np.bincount(x.app[hn], minlength=n_apps)
    cn_cpu = np.bincount(x.app[cn], weights=x.cpu_milli[cn], minlength=n_apps)
    cn_mem = np.bincount(x.app[cn], weights=x.memory_mib[cn], minlength=n_apps)
    per_cpu = np.ceil(np.divide(cn_cpu, h, out=np.zeros(n_apps), where=h > 0)).astype(np.int64)
    per_mem = np.ceil(np.divide(cn_mem, h, out=np.zeros(n_apps), where=h > 0)).astype(np.int64)
    # Merged HN instances, then the CN instances of apps with no HN instance running.
    keep_cn = cn & (h[x.app] == 0)
    take = hn | keep_cn
    extra = np.where(hn, 1, 0)
    return _pool(
        x.name[take],
        (x.cpu_milli + extra * per_cpu[x.app])[take],
        (x.memory_mib + extra * per_mem[x.app])[take],
        x.num_gpu[take],
        x.rdma[take],
        x.app[take],
        x.max_per_node[take],
        x.start[take],
        x.source,
    )
