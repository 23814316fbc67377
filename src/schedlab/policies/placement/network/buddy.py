"""Free GPUs of a host as buddy groups: aligned power-of-two blocks, split to serve, merged when
freed (§4.3).

A host's GPUs are numbered so that aligned blocks (2 GPUs at an even index, 4 at a multiple of
4, …) share the fastest intra-host links. Taking a job's GPUs in such blocks, each from the
smallest free block that holds it, keeps the large blocks whole for later jobs, as a buddy
allocator keeps memory. The free groups are not stored: they are read off the free-GPU mask,
so two freed buddies are one group again as soon as both are free (the merge).
"""

from __future__ import annotations

import numpy as np

from schedlab.model.cluster import GPU_MILLI, ClusterState


def free_groups(free: np.ndarray) -> list[tuple[int, int]]:
    """The free buddy groups of a mask: maximal aligned power-of-two blocks wholly free, as
    (offset, size), by offset."""
    n = len(free)
    groups: list[tuple[int, int]] = []
    i = 0
    while i < n:
        if not free[i]:
            i += 1
            continue
        size = 1
        while i % (size * 2) == 0 and i + size * 2 <= n and free[i : i + size * 2].all():
            size *= 2
        groups.append((i, size))
        i += size
    return groups


def buddy_pick(free: np.ndarray, count: int) -> tuple[int, ...]:
    """``count`` GPUs of a host with free mask ``free``, in aligned power-of-two blocks.

    ``count`` is split into its binary decomposition, largest block first. A block of size b
    takes the aligned b-block that lies in the smallest free group (ties: lowest index),
    splitting that group; when no aligned b-block is free the block is halved and its halves
    placed in turn. Raises ValueError when fewer than ``count`` GPUs are free.
    """
    avail = np.asarray(free, dtype=bool).copy()
    if int(avail.sum()) < count:
        raise ValueError(f"{int(avail.sum())} free GPUs, {count} asked")
    blocks = [1 << b for b in range(count.bit_length() - 1, -1, -1) if count >> b & 1]
    taken: list[int] = []
    while blocks:
        size = blocks.pop(0)
        best: tuple[int, int] | None = None  # (group size, offset) of the chosen block
        for offset, group in free_groups(avail):
            if group >= size and (best is None or group < best[0]):
                best = (group, offset)
        if best is None:
            blocks[0:0] = [size // 2, size // 2]
            continue
        start = best[1]
        taken += range(start, start + size)
        avail[start : start + size] = False
    return tuple(sorted(taken))


def buddy_free_gpus(state: ClusterState, node: int, count: int) -> tuple[int, ...]:
    """``count`` wholly free GPUs of ``node`` taken in buddy groups (see :func:`buddy_pick`)."""
    n = int(state.cluster.num_gpus[node])
    free = state.gpu_exists[node, :n] & (state.gpu_free[node, :n] >= GPU_MILLI)
    return buddy_pick(free, count)
