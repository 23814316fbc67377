"""GPU fragmentation against a target workload (the measure of the FGD paper, ATC '23).

Idle GPU share on a node is "fragmented" for a task when the task cannot use it: the task needs no
GPU, the node's model is not allowed, the task does not fit at all, or the idle share sits on GPUs
whose free slice is smaller than the task's per-GPU need. A node's fragmentation is the expectation
of that over the target workload (the typical tasks and their frequencies); the cluster's is the
sum over nodes. Memory plays no part in the measure.

The same function serves the metric (after every placement) and the ``fgd`` policy (to score
hypothetical "after" states), so the two can never disagree. It is vectorised over a batch of node
states × typical tasks × GPU slots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.model.pods import PodTable

#: Share of pods the typical tasks must cover (the FGD paper's 95 %).
DEFAULT_COVERAGE = 0.95


@dataclass(frozen=True)
class TargetWorkload:
    """Typical tasks and their probabilities ``prob`` (summing to 1)."""

    cpu_milli: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    model_mask: np.ndarray
    prob: np.ndarray
    count: np.ndarray

    def __len__(self) -> int:
        return len(self.prob)

    @classmethod
    def from_pods(cls, pods: PodTable, coverage: float = DEFAULT_COVERAGE) -> TargetWorkload:
        """Group pods by (CPU, per-GPU share, GPU count, model constraint); keep the most common
        groups until they cover ``coverage`` of all pods; renormalise their frequencies.

        Ties in group size are broken by the group key so the result does not depend on row order.
        """
        if len(pods) == 0:
            raise ValueError("cannot derive a target workload from an empty pod list")
        if not 0 < coverage <= 1:
            raise ValueError(f"'coverage' must be in (0, 1] (got {coverage})")
        keys = np.stack([pods.cpu_milli, pods.gpu_milli, pods.num_gpu, pods.model_mask], axis=1)
        uniq, counts = np.unique(keys, axis=0, return_counts=True)
        # Most common first; np.unique already sorted keys, and a stable sort keeps that order
        # among equal counts.
        order = np.argsort(-counts, kind="stable")
        uniq, counts = uniq[order], counts[order]
        covered = np.cumsum(counts) / counts.sum()
        keep = int(np.searchsorted(covered, coverage - 1e-12) + 1)
        uniq, counts = uniq[:keep], counts[:keep]
        return cls(
            cpu_milli=uniq[:, 0].copy(),
            gpu_milli=uniq[:, 1].copy(),
            num_gpu=uniq[:, 2].copy(),
            model_mask=uniq[:, 3].copy(),
            prob=counts / counts.sum(),
            count=counts,
        )


def node_fragmentation(
    cpu_free: np.ndarray,
    gpu_free: np.ndarray,
    node_model: np.ndarray,
    target: TargetWorkload,
) -> np.ndarray:
    """Expected fragmented milli-GPU of each node state in a batch.

    Args:
        cpu_free: (K,) free CPU in milli-cores.
        gpu_free: (K, G) free share per GPU slot (0 for slots that do not exist).
        node_model: (K,) GPU model index of each node (-1 for nodes without GPUs).
        target: the typical tasks.

    Returns:
        (K,) float64: Σ_m p_m F_n(m) in milli-GPU.
    """
    r = np.asarray(gpu_free)
    total = r.sum(axis=1)  # (K,)
    d = target.gpu_milli  # (M,)
    fits_share = r[:, None, :] >= d[None, :, None]  # (K, M, G)
    n_fit = fits_share.sum(axis=2)  # (K, M)
    usable = (r[:, None, :] * fits_share).sum(axis=2)  # idle share on GPUs big enough
    model_ok = ((target.model_mask[None, :] >> np.maximum(node_model, 0)[:, None]) & 1) == 1
    fits = (
        (target.num_gpu[None, :] > 0)
        & model_ok
        & (np.asarray(cpu_free)[:, None] >= target.cpu_milli[None, :])
        & (n_fit >= target.num_gpu[None, :])
    )
    per_task = np.where(fits, total[:, None] - usable, total[:, None])
    return per_task @ target.prob


@dataclass(frozen=True)
class FragmentationSnapshot:
    """Cluster-level fragmentation at one instant."""

    frag_milli: float
    idle_milli: int
    total_gpus: int

    @property
    def amount_pct(self) -> float:
        """Fragmented share as % of all GPU capacity."""
        return 100.0 * self.frag_milli / (GPU_MILLI * self.total_gpus) if self.total_gpus else 0.0

    @property
    def ratio_pct(self) -> float:
        """Fragmented share as % of the idle share (0 when nothing is idle)."""
        return 100.0 * self.frag_milli / self.idle_milli if self.idle_milli else 0.0


def cluster_fragmentation(state: ClusterState, target: TargetWorkload) -> FragmentationSnapshot:
    """Fragmentation of a whole cluster (sum over its nodes)."""
    per_node = node_fragmentation(state.cpu_free, state.gpu_free, state.cluster.model, target)
    return FragmentationSnapshot(
        frag_milli=float(per_node.sum()),
        idle_milli=int(state.gpu_free.sum()),
        total_gpus=state.cluster.total_gpus,
    )


class FragmentationTracker:
    """Cluster fragmentation kept up to date as nodes change, without rescoring every node.

    Engines call :meth:`update` with the nodes a placement or departure touched; the total is the
    running sum of per-node changes (the same arithmetic in every engine, so curves agree exactly).
    """

    def __init__(self, state: ClusterState, target: TargetWorkload) -> None:
        self.target = target
        self.node = node_fragmentation(state.cpu_free, state.gpu_free, state.cluster.model, target)
        self.total = float(self.node.sum())

    def update(self, state: ClusterState, nodes: np.ndarray | list[int]) -> float:
        """Rescore ``nodes`` (distinct indices) and return the new cluster total."""
        k = np.asarray(nodes, dtype=np.int64)
        if len(k) == 1:
            j = int(k[0])
            new = node_fragmentation(
                state.cpu_free[j : j + 1],
                state.gpu_free[j : j + 1],
                state.cluster.model[j : j + 1],
                self.target,
            )[0]
            self.total += new - self.node[j]
            self.node[j] = new
        elif len(k):
            new_all = node_fragmentation(
                state.cpu_free[k], state.gpu_free[k], state.cluster.model[k], self.target
            )
            self.total += float((new_all - self.node[k]).sum())
            self.node[k] = new_all
        return self.total
