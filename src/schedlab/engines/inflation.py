"""The FGD paper's "workload inflation": turn a pod list into the stream a pack run places.

Pods are sorted by name (so the input's row order does not matter), shuffled with the run's
generator, then extended with copies drawn with replacement from the sorted originals until one
more copy would push the total GPU request past ``ratio`` × capacity. A ratio whose target the
originals already pass keeps the shuffled prefix that fits under it (a random subset).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.model.cluster import GPU_MILLI
from schedlab.model.pods import PodTable


@dataclass(frozen=True)
class InflatedStream:
    pods: PodTable
    origin: np.ndarray  # index into the name-sorted originals
    copies: int  # how many rows are drawn copies


def inflate(
    pods: PodTable, ratio: float, total_gpus: int, rng: np.random.Generator
) -> InflatedStream:
    if ratio <= 0:
        raise ValueError(f"'inflate' must be > 0 (got {ratio})")
    if len(pods) == 0 or not (pods.gpu_request_milli > 0).any():
        raise ValueError(
            "the pod list asks for no GPU share, so it cannot be inflated to a GPU load"
        )
    base = pods.sorted_by_name()
    order = rng.permutation(len(base))
    request = base.gpu_request_milli
    target = ratio * total_gpus * GPU_MILLI
    total = float(request.sum())
    if total > target:
        keep = int(np.searchsorted(np.cumsum(request[order]), target, side="right"))
        order = order[:keep]
        extra: list[int] = []
    else:
        extra = []
        while True:
            j = int(rng.integers(len(base)))
            if total + request[j] > target:
                break
            extra.append(j)
            total += request[j]
    origin = np.concatenate([order, np.asarray(extra, dtype=np.int64)]).astype(np.int64)
    names = base.name[origin].astype(object)
    if extra:
        n_orig = len(order)
        copy_no = np.arange(1, len(extra) + 1)
        names[n_orig:] = [f"{base.name[j]}~{k}" for j, k in zip(extra, copy_no, strict=True)]
    return InflatedStream(base.take(origin, names=names), origin, len(extra))
