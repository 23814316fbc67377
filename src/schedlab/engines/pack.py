"""The pack engine: place a stream of pods once each; nothing ever leaves.

This is the protocol of the FGD study: a seeded shuffle and inflation of the pod list, then one
placement attempt per pod in order. A pod that fits nowhere fails and is not retried. After every
pod the engine records arrived and allocated GPU share and the cluster's fragmentation, from which
:mod:`schedlab.metrics.pack_curves` derives the published curves.

All randomness comes from one ``numpy.random.Generator`` seeded by the run's seed, drawn in a
fixed order (shuffle, inflation, tie order, then the policy), so a seed fixes the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from schedlab.engines.inflation import inflate
from schedlab.errors import InputError
from schedlab.metrics.fragmentation import FragmentationTracker, TargetWorkload
from schedlab.metrics.pack_curves import binned_means
from schedlab.model.cluster import GPU_MILLI, Cluster
from schedlab.model.pods import PodTable
from schedlab.policies.api import PACK
from schedlab.policies.placement.base import PodRequest
from schedlab.policies.wiring import PolicyChoice, build

NO_NODE = -1


@dataclass(frozen=True)
class PackConfig:
    policy: str
    seed: int = 42
    inflate: float = 1.3
    #: ``module:Class`` plugins to load before the policy is looked up.
    plugins: tuple[str, ...] = ()


@dataclass
class PackResult:
    """Per-pod record of a pack run (arrays aligned with ``pods``) and its totals."""

    config: PackConfig
    cluster: Cluster
    pods: PodTable
    node: np.ndarray  # chosen node index, NO_NODE for a failed pod
    gpus: list[tuple[int, ...]]
    arrived_milli: np.ndarray
    allocated_milli: np.ndarray
    frag_milli: np.ndarray
    idle_milli: np.ndarray
    copies: int
    typical_tasks: int
    wall_seconds: float
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def capacity_milli(self) -> int:
        return self.cluster.total_gpus * GPU_MILLI

    @property
    def arrived_pct(self) -> np.ndarray:
        return 100.0 * self.arrived_milli / self.capacity_milli

    @property
    def unallocated_pct(self) -> np.ndarray:
        return 100.0 - 100.0 * self.allocated_milli / self.capacity_milli

    @property
    def frag_amount_pct(self) -> np.ndarray:
        return 100.0 * self.frag_milli / self.capacity_milli

    @property
    def frag_ratio_pct(self) -> np.ndarray:
        idle = self.idle_milli
        return np.divide(100.0 * self.frag_milli, idle, out=np.zeros(len(idle)), where=idle > 0)

    @property
    def failed(self) -> np.ndarray:
        return self.node == NO_NODE

    def summary(self) -> dict[str, object]:
        arrived = self.arrived_pct
        return {
            "policy": self.config.policy,
            "seed": self.config.seed,
            "inflate": self.config.inflate,
            "nodes": self.cluster.size,
            "gpus": self.cluster.total_gpus,
            "pods_total": len(self.pods),
            "pods_copied": self.copies,
            "pods_failed": int(self.failed.sum()),
            "typical_tasks": self.typical_tasks,
            "wall_seconds": round(self.wall_seconds, 3),
            "unallocated_gpu_pct": binned_means(arrived, self.unallocated_pct),
            "frag_amount_pct": binned_means(arrived, self.frag_amount_pct),
            "frag_ratio_pct": binned_means(arrived, self.frag_ratio_pct),
        }


def run_pack(
    cluster: Cluster,
    pods: PodTable,
    config: PackConfig,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> PackResult:
    """Run one pack experiment; ``progress(done, total)`` is called now and then if given."""
    started = time.perf_counter()
    policies = build(PACK, PolicyChoice(config.policy, plugins=config.plugins))
    policy = policies.placement
    rng = np.random.default_rng(config.seed)
    target = TargetWorkload.from_pods(pods)
    try:
        stream = inflate(pods, config.inflate, cluster.total_gpus, rng)
    except ValueError as exc:
        raise InputError(str(exc), path=pods.source) from None
    policies.start(cluster, rng, target=target)
    placer = policies.placer
    assert placer is not None

    state = cluster.new_state()
    s = stream.pods
    n = len(s)
    tracker = FragmentationTracker(state, target)
    frag_total = tracker.total
    idle = int(state.gpu_free.sum())
    capacity = idle

    chosen = np.full(n, NO_NODE, dtype=np.int64)
    gpus: list[tuple[int, ...]] = [()] * n
    arrived = np.empty(n, dtype=np.int64)
    free_after = np.empty(n, dtype=np.int64)
    frag = np.empty(n, dtype=np.float64)
    cols = zip(
        s.cpu_milli.tolist(),
        s.memory_mib.tolist(),
        s.num_gpu.tolist(),
        s.gpu_milli.tolist(),
        s.model_mask.tolist(),
        strict=True,
    )
    arrived_so_far = 0
    for i, (cpu, mem, num_gpu, share, mask) in enumerate(cols):
        pod = PodRequest(cpu, mem, num_gpu, share, mask)
        arrived_so_far += num_gpu * share
        placement = placer.place(pod, state)
        if placement is not None:
            k = placement.node
            state.allocate(k, placement.gpus, cpu, mem, share, num_gpu)
            chosen[i] = k
            gpus[i] = placement.gpus
            idle -= len(placement.gpus) * share
            frag_total = tracker.update(state, [k])
        arrived[i] = arrived_so_far
        free_after[i] = idle
        frag[i] = frag_total
        if progress is not None and (i & 1023) == 0:
            progress(i, n)
    if progress is not None:
        progress(n, n)
    extra = {"rescored_states": float(getattr(policy, "rescored_states", 0))}
    return PackResult(
        config=config,
        cluster=cluster,
        pods=s,
        node=chosen,
        gpus=gpus,
        arrived_milli=arrived,
        allocated_milli=capacity - free_after,
        frag_milli=frag,
        idle_milli=free_after,
        copies=stream.copies,
        typical_tasks=len(target),
        wall_seconds=time.perf_counter() - started,
        extra=extra,
    )
