"""Sia's configuration space (SOSP '23): the (GPU type, nodes, GPUs) shapes a job may be given.

A job never gets an arbitrary scatter of GPUs: on a type with ``g`` GPUs per node it gets 1, 2,
4, … up to ``g`` GPUs on one node, or whole nodes (2·g, 3·g, …, at most 64 GPUs), and never more
nodes than the type has. Sia's default cluster (6 × 4 T4, 3 × 8 RTX 2080 Ti, 2 × 8 A100) gives
8 + 6 + 5 = 19 configurations. Keeping the space this small is what makes its per-round ILP
tractable: one binary per (job, configuration).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The most GPUs any configuration holds.
MAX_GPUS = 64


@dataclass(frozen=True, order=True)
class GpuPool:
    """The nodes of one GPU type."""

    name: str
    nodes: int
    gpus_per_node: int

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class Config:
    """``gpus`` GPUs of type ``pool`` on ``nodes`` nodes."""

    pool: str
    nodes: int
    gpus: int


def pool_configs(pool: GpuPool, max_gpus: int = MAX_GPUS) -> list[Config]:
    """The configurations of one type: powers of two within a node up to a full node, then
    whole nodes (as many as the type has, at most ``max_gpus`` GPUs)."""
    g = pool.gpus_per_node
    out: list[Config] = []
    size = 1
    while size < g and size <= max_gpus:
        out.append(Config(pool.name, 1, size))
        size *= 2
    for nodes in range(1, pool.nodes + 1):
        if nodes * g > max_gpus:
            break
        out.append(Config(pool.name, nodes, nodes * g))
    return out


def config_space(pools: list[GpuPool], max_gpus: int = MAX_GPUS) -> list[Config]:
    """Every configuration of every type, type by type in the cluster's order."""
    return [c for pool in pools for c in pool_configs(pool, max_gpus)]
