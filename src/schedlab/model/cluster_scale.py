"""A scaled-down copy of a cluster with the same mix of node kinds (spec A.6 ``--scale-gpus``).

The trace's own load fills about 1 % of the full Alibaba cluster, so a time replay contends only
on a few dozen GPUs. Scaling keeps the mix: nodes are grouped by (GPU model, GPUs, CPU, memory);
each group gets whole nodes in proportion to its GPUs (the floor first, then one more node per
group by largest remainder, ties to the larger group, while the GPU budget allows), taken in name
order inside the group.
"""

from __future__ import annotations

import numpy as np

from schedlab.errors import InputError
from schedlab.model.cluster import Cluster


def scale_cluster(cluster: Cluster, gpus: int) -> Cluster:
    """Keep at most ``gpus`` GPUs of ``cluster`` (nodes without GPUs are dropped)."""
    total = cluster.total_gpus
    if not 0 < gpus <= total:
        raise InputError(f"'--scale-gpus' must be between 1 and {total} (got {gpus})")
    has_gpu = np.flatnonzero(cluster.num_gpus > 0)
    keys = [
        (
            int(cluster.model[i]),
            int(cluster.num_gpus[i]),
            int(cluster.cpu_milli[i]),
            int(cluster.memory_mib[i]),
        )
        for i in has_gpu.tolist()
    ]
    groups: dict[tuple[int, int, int, int], list[int]] = {}
    for i, key in zip(has_gpu.tolist(), keys, strict=True):
        groups.setdefault(key, []).append(i)
    quota = {key: gpus * len(members) / total for key, members in groups.items()}
    take = {key: int(q) for key, q in quota.items()}
    budget = gpus - sum(take[key] * key[1] for key in groups)
    by_remainder = sorted(groups, key=lambda k: (-(quota[k] - take[k]), -len(groups[k]) * k[1], k))
    for key in by_remainder:
        if take[key] < len(groups[key]) and key[1] <= budget and quota[key] > take[key]:
            take[key] += 1
            budget -= key[1]
    chosen: list[int] = []
    for key, members in groups.items():
        members.sort(key=lambda i: str(cluster.names[i]))
        chosen.extend(members[: take[key]])
    if not chosen:
        raise InputError(f"'--scale-gpus' {gpus} keeps no node (the smallest has more GPUs)")
    index = np.array(sorted(chosen), dtype=np.int64)
    return Cluster(
        names=cluster.names[index],
        cpu_milli=cluster.cpu_milli[index],
        memory_mib=cluster.memory_mib[index],
        num_gpus=cluster.num_gpus[index],
        model=cluster.model[index],
        source=f"{cluster.source} scaled to {gpus} GPUs",
        rack=None if cluster.rack is None else cluster.rack[index],
    )
