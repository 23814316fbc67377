"""Synthesised clusters for the Prism study (the v2025 trace lists no nodes).

Two sets of node shapes. **servers** (ours, from common server configurations; the trace's
largest requests fit them):

* **CPU node** (hosts CN instances): 256 vCPU (2 × 64-core CPUs with SMT), 1,536 GiB memory,
  2 RDMA NICs (share 200), no GPU. The largest CN request is 192 vCPU and 1,000 GiB.
* **GPU node** (hosts HN instances): 8 GPUs (A10), 128 vCPU, 1,024 GiB, 4 RDMA NICs (one per
  two GPUs, share 400). Eight typical HN instances (8 vCPU, 40 GiB, 25 % of a NIC) use 64 vCPU,
  320 GiB and 2 NICs.
* **Monolithic node**: the same total capacity as the disaggregated cluster, on GPU nodes only:
  as many nodes as the disaggregated cluster has GPU nodes, each with 8 GPUs and an equal share of
  all the vCPU, memory and NICs of both pools (rounded down to a milli-core, MiB and NIC percent).

**trace** (from the instances' own requests, :func:`trace_shapes`): each pool's node carries
its instances' demand mix — a GPU node has 8 GPUs and, per GPU, the vCPU and memory the GPU
pool's instances ask per GPU (rounded up to a vCPU and a GiB), with the NICs their RDMA shares
add up to (rounded up to whole NICs); a CPU node keeps 256 vCPU and takes memory and NICs in the
CPU pool's ratio to vCPU. Such nodes are balanced for the average instance, so the spread of
the shapes, not spare capacity, decides what is stranded (with the servers' GPU nodes, 16 vCPU
and 128 GiB per GPU against a typical instance's 8 and 40, no GPU can be stranded).

A pool is sized so that the placed demand fills ``load`` of its binding resource (the largest of
CPU, memory, GPU and RDMA demand over one node's capacity, times the nodes): a crowded cluster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from schedlab.experiments.prism_workload import PoolWorkload
from schedlab.model.cluster import Cluster
from schedlab.model.gpu_models import model_index

MIB_PER_GIB = 1024


@dataclass(frozen=True)
class NodeShape:
    """One kind of node: vCPU (milli), memory (MiB), GPUs, RDMA share (100 per NIC)."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    rdma: int
    model: str = "A10"

    def describe(self) -> str:
        nics = f"{self.rdma / 100:g} RDMA NICs"
        gpus = f", {self.gpus} × {self.model}" if self.gpus else ""
        return (
            f"{self.name}: {self.cpu_milli / 1000:g} vCPU, "
            f"{self.memory_mib / MIB_PER_GIB:g} GiB{gpus}, {nics}"
        )

    def capacity(self) -> dict[str, float]:
        return {
            "cpu_milli": float(self.cpu_milli),
            "memory_mib": float(self.memory_mib),
            "gpus": float(self.gpus),
            "rdma": float(self.rdma),
        }


CPU_NODE = NodeShape("cpu-node", 256_000, 1_536 * MIB_PER_GIB, 0, 200)
GPU_NODE = NodeShape("gpu-node", 128_000, 1_024 * MIB_PER_GIB, 8, 400)


#: GPUs of a trace-shaped GPU node and vCPU of a trace-shaped CPU node.
TRACE_GPUS, TRACE_VCPU = 8, 256


def trace_shapes(cpu_pool: PoolWorkload, gpu_pool: PoolWorkload) -> tuple[NodeShape, NodeShape]:
    """(CPU node, GPU node) in the demand mix of the pods meant for each pool (see above)."""
    c, g = cpu_pool.demand(), gpu_pool.demand()
    per_gpu = {k: g[k] / g["gpus"] for k in ("cpu_milli", "memory_mib", "rdma")}
    gpu_node = NodeShape(
        "gpu-node (trace)",
        1000 * math.ceil(TRACE_GPUS * per_gpu["cpu_milli"] / 1000 - 1e-9),
        MIB_PER_GIB * math.ceil(TRACE_GPUS * per_gpu["memory_mib"] / MIB_PER_GIB - 1e-9),
        TRACE_GPUS,
        100 * math.ceil(TRACE_GPUS * per_gpu["rdma"] / 100 - 1e-9),
    )
    per_vcpu = {k: c[k] / (c["cpu_milli"] / 1000) for k in ("memory_mib", "rdma")}
    cpu_node = NodeShape(
        "cpu-node (trace)",
        TRACE_VCPU * 1000,
        MIB_PER_GIB * math.ceil(TRACE_VCPU * per_vcpu["memory_mib"] / MIB_PER_GIB - 1e-9),
        0,
        100 * math.ceil(TRACE_VCPU * per_vcpu["rdma"] / 100 - 1e-9),
    )
    return cpu_node, gpu_node


def nodes_for(demand: dict[str, float], shape: NodeShape, load: float = 1.0) -> int:
    """Nodes of ``shape`` whose binding resource the demand fills to ``load`` (at least 1)."""
    need = 0.0
    for key, cap in shape.capacity().items():
        if demand.get(key, 0.0) > 0:
            need = max(need, math.inf if cap == 0 else demand[key] / cap)
    return max(1, math.ceil(need / load - 1e-9))


def monolithic_shape(
    cpu_nodes: int, gpu_nodes: int, cpu_node: NodeShape = CPU_NODE, gpu_node: NodeShape = GPU_NODE
) -> NodeShape:
    """A GPU node carrying its share of the whole disaggregated cluster's capacity."""

    def share(cpu_value: int, gpu_value: int) -> int:
        return (cpu_nodes * cpu_value + gpu_nodes * gpu_value) // gpu_nodes

    return NodeShape(
        "monolithic-node",
        share(cpu_node.cpu_milli, gpu_node.cpu_milli),
        share(cpu_node.memory_mib, gpu_node.memory_mib),
        gpu_node.gpus,
        share(cpu_node.rdma, gpu_node.rdma),
        gpu_node.model,
    )


def pool_cluster(shape: NodeShape, count: int) -> Cluster:
    """``count`` identical nodes of ``shape``."""
    model = model_index(shape.model) if shape.gpus else -1
    return Cluster(
        names=np.array([f"{shape.name}-{k:05d}" for k in range(count)], dtype=object),
        cpu_milli=np.full(count, shape.cpu_milli, dtype=np.int64),
        memory_mib=np.full(count, shape.memory_mib, dtype=np.int64),
        num_gpus=np.full(count, shape.gpus, dtype=np.int64),
        model=np.full(count, model, dtype=np.int64),
        source=f"<{count} × {shape.name}>",
        rdma=np.full(count, shape.rdma, dtype=np.int64),
    )


def fits_empty(workload: PoolWorkload, shape: NodeShape) -> np.ndarray:
    """Mask of the pods that fit an empty node of ``shape`` (the rest fit no cluster of it)."""
    p = workload.pods
    return (
        (p.cpu_milli <= shape.cpu_milli)
        & (p.memory_mib <= shape.memory_mib)
        & (p.num_gpu <= shape.gpus)
        & (workload.rdma <= shape.rdma)
    )
