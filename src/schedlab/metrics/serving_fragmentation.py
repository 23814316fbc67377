"""CPU and GPU fragmentation of a cluster holding serving instances (whole GPUs, RDMA share).

FGD's measure (:mod:`schedlab.metrics.fragmentation`) extended to CPU and to the resources of
serving instances. Idle CPU (or GPUs) on a node is *fragmented* for a typical instance when that
instance cannot start there: too little free CPU, memory, RDMA NIC share or whole GPUs. For GPUs,
as in FGD, idle GPUs are also fragmented for an instance that needs no GPU. A node's fragmented
amount is the expectation of that over the typical instances (shapes weighted by how often they
occur); the cluster's is the sum over nodes, reported as % of the cluster's capacity of that
resource. Per-app density limits are not part of the measure: they concern one app, not a shape.

With whole-GPU instances and no memory or RDMA in play this is FGD's amount for GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.model.cluster import GPU_MILLI, ClusterState


@dataclass(frozen=True)
class ServingShapes:
    """Typical instances: distinct (CPU, memory, GPUs, RDMA) shapes and their probabilities."""

    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    gpus: np.ndarray
    rdma: np.ndarray
    prob: np.ndarray

    @classmethod
    def of(
        cls, cpu_milli: np.ndarray, memory_mib: np.ndarray, gpus: np.ndarray, rdma: np.ndarray
    ) -> ServingShapes:
        """Every distinct shape among the given instances, weighted by its count."""
        if len(cpu_milli) == 0:
            raise ValueError("cannot derive typical instances from no instances")
        keys = np.stack([cpu_milli, memory_mib, gpus, rdma], axis=1).astype(np.int64)
        uniq, counts = np.unique(keys, axis=0, return_counts=True)
        return cls(uniq[:, 0], uniq[:, 1], uniq[:, 2], uniq[:, 3], counts / counts.sum())


@dataclass(frozen=True)
class ServingFragmentation:
    """Fragmented and idle CPU (milli-cores) and GPUs of a cluster, with its capacity."""

    cpu_frag_milli: float
    gpu_frag: float
    cpu_idle_milli: int
    gpu_idle: int
    cpu_capacity_milli: int
    gpu_capacity: int

    @property
    def cpu_frag_pct(self) -> float:
        """Fragmented CPU as % of all CPU."""
        return (
            100.0 * self.cpu_frag_milli / self.cpu_capacity_milli
            if self.cpu_capacity_milli
            else 0.0
        )

    @property
    def gpu_frag_pct(self) -> float:
        """Fragmented GPUs as % of all GPUs."""
        return 100.0 * self.gpu_frag / self.gpu_capacity if self.gpu_capacity else 0.0

    def __add__(self, other: ServingFragmentation) -> ServingFragmentation:
        """Two pools of one cluster together."""
        return ServingFragmentation(
            self.cpu_frag_milli + other.cpu_frag_milli,
            self.gpu_frag + other.gpu_frag,
            self.cpu_idle_milli + other.cpu_idle_milli,
            self.gpu_idle + other.gpu_idle,
            self.cpu_capacity_milli + other.cpu_capacity_milli,
            self.gpu_capacity + other.gpu_capacity,
        )


def serving_fragmentation(state: ClusterState, shapes: ServingShapes) -> ServingFragmentation:
    """The measure of the module docstring for every node of ``state``, summed."""
    free_gpus = state.gpu_full_count
    rdma_free = state.rdma_free
    fits = (
        (state.cpu_free[:, None] >= shapes.cpu_milli[None, :])
        & (state.mem_free[:, None] >= shapes.memory_mib[None, :])
        & (free_gpus[:, None] >= shapes.gpus[None, :])
    )
    if rdma_free is not None:
        fits &= rdma_free[:, None] >= shapes.rdma[None, :]
    p_fit = fits.astype(np.float64) @ shapes.prob  # (N,) chance a typical instance fits
    p_gpu_use = (fits & (shapes.gpus[None, :] > 0)).astype(np.float64) @ shapes.prob
    idle_gpus = state.gpu_free_sum // GPU_MILLI
    return ServingFragmentation(
        cpu_frag_milli=float((state.cpu_free * (1.0 - p_fit)).sum()),
        gpu_frag=float((idle_gpus * (1.0 - p_gpu_use)).sum()),
        cpu_idle_milli=int(state.cpu_free.sum()),
        gpu_idle=int(idle_gpus.sum()),
        cpu_capacity_milli=int(state.cluster.cpu_milli.sum()),
        gpu_capacity=int(state.cluster.num_gpus.sum()),
    )
