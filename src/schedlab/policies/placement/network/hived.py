"""``hived``: HiveD's buddy cell allocation (OSDI '20; ``pkg/algorithm`` of
``microsoft/hivedscheduler``), without virtual clusters (traces name no tenants).

Every node is a chain of cells as in HiveD's ``cellTypes``: GPU → pair → quad → node → rack
(for a node of g GPUs the levels are g, g/2, … down to 1 while g is even, then single GPUs; the
rack is the node's leaf). A cell of size s is s consecutive GPU slots at a multiple of s.

A cell is *free* when all its GPUs are; the buddy free lists hold the *maximal* free cells (free,
and their parent is not). The free lists are therefore a function of which GPUs are free: a
release merges buddies simply by freeing GPUs, and the policy keeps no state between decisions.

* n ≤ node size: the smallest level with ≥ n GPUs; among its free cells the one whose parent
  has the fewest free GPUs (ties: lowest node, then lowest cell); if there is none, the smallest
  free higher-level cell is split (buddy) and its first sub-cell of that level taken. The job
  uses the cell's first n GPUs.
* larger jobs: ⌈n/node⌉ node cells (idle nodes) in one rack if one holds them (the rack with the
  fewest idle GPUs that suffice), else over the fewest racks (most idle GPUs first).

A topology file's ``[[cells]]`` (:mod:`schedlab.network.cells`) replaces that chain: the node's
cell sizes are those of the cells below it, and a level above the node makes racks of that many
consecutive hosts instead of leaves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from schedlab.model.cluster import GPU_MILLI, ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.policies.api import PolicyContext
from schedlab.policies.placement.job_placement import JobPlacementPolicy, JobRequest
from schedlab.policies.placement.network.machines import Blocks, machines, to_allocation


def cell_sizes(gpus: int) -> tuple[int, ...]:
    """Cell sizes of a node of ``gpus`` GPUs, node first: 8 → (8, 4, 2, 1); 6 → (6, 3, 1)."""
    sizes = [gpus]
    while sizes[-1] > 1:
        s = sizes[-1]
        sizes.append(s // 2 if s % 2 == 0 else 1)
    return tuple(sizes)


@dataclass(frozen=True)
class FreeCells:
    """HiveD's free lists: the maximal free cells (free, their parent not), one entry each:
    ``size`` GPUs of ``node`` from slot ``start``; ``parent_free`` is the free GPUs of the cell's
    parent (for a node cell, of its rack). Sorted by size, node, slot."""

    size: np.ndarray
    node: np.ndarray
    start: np.ndarray
    parent_free: np.ndarray

    def as_tuples(self) -> list[tuple[int, int, int]]:
        """(size, node, start) of every free cell, for reading and tests."""
        return list(zip(self.size.tolist(), self.node.tolist(), self.start.tolist(), strict=True))


#: Cell sizes of a node of that many GPUs, node first (:func:`cell_sizes` or a topology's chain).
SizesOf = Callable[[int], tuple[int, ...]]


def free_cells(
    free_slots: np.ndarray,
    node_gpus: np.ndarray,
    rack_free: np.ndarray,
    sizes_of: SizesOf = cell_sizes,
) -> FreeCells:
    """The free lists of nodes whose free GPU slots are ``free_slots`` (nodes × slots, bool);
    nodes with ``node_gpus`` 0 are left out; ``rack_free`` is per node its rack's free GPUs."""
    parts: list[tuple[np.ndarray, ...]] = []
    for g in np.unique(node_gpus[node_gpus > 0]).tolist():
        nodes = np.flatnonzero(node_gpus == g)
        mask = free_slots[nodes, :g]
        sizes = sizes_of(g)
        parent_cells = np.zeros((len(nodes), 1), dtype=bool)  # a rack is never one free cell
        parent_count = rack_free[nodes][:, None].astype(np.int64)
        for s in sizes:
            counts = mask.reshape(len(nodes), g // s, s).sum(axis=2)
            cells = counts == s
            per_parent = cells.shape[1] // parent_cells.shape[1]
            maximal = cells & ~np.repeat(parent_cells, per_parent, axis=1)
            i, c = np.nonzero(maximal)
            parent = np.repeat(parent_count, per_parent, axis=1)[i, c]
            parts.append((np.full(len(i), s), nodes[i], c * s, parent))
            parent_cells, parent_count = cells, counts
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return FreeCells(empty, empty, empty, empty)
    columns = zip(*parts, strict=True)
    size, node, start, parent = (np.concatenate(x).astype(np.int64) for x in columns)
    order = np.lexsort((start, node, size))
    return FreeCells(size[order], node[order], start[order], parent[order])


def _cell_pick(
    cells: FreeCells, num_gpus: int, node_gpus: np.ndarray, sizes_of: SizesOf = cell_sizes
) -> int | None:
    """Index in ``cells`` of the cell a job of ``num_gpus`` ≤ node size goes into: of the
    smallest size ≥ the level it needs (a bigger one is split, its first sub-cell taken), the
    one whose parent has the fewest free GPUs (ties: node, slot), or None."""
    level = np.zeros(len(node_gpus), dtype=np.int64)
    for g in np.unique(node_gpus).tolist():
        level[node_gpus == g] = _level(int(g), num_gpus, sizes_of)
    ok = np.flatnonzero(cells.size >= level[cells.node])
    if not len(ok):
        return None
    order = np.lexsort((cells.start[ok], cells.node[ok], cells.parent_free[ok], cells.size[ok]))
    return int(ok[order[0]])


def _level(gpus: int, num_gpus: int, sizes_of: SizesOf = cell_sizes) -> int:
    """The smallest cell of a node of ``gpus`` GPUs that holds ``num_gpus`` (a huge number when
    none does)."""
    fitting = [s for s in sizes_of(gpus) if s >= num_gpus] if gpus > 0 else []
    return min(fitting) if fitting else 1 << 62


class HiveD(JobPlacementPolicy):
    name = "hived"
    summary = "buddy cells GPU → pair → quad → node → rack, split and merged (HiveD, OSDI '20)"

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        chain = ctx.topology.cells if ctx.topology is not None else None
        self.sizes_of: SizesOf = cell_sizes
        self.racks: np.ndarray | None = None
        if chain is not None:
            inside = chain.node_sizes()
            self.sizes_of = lambda g: inside if g == inside[0] else cell_sizes(g)
            if chain.nodes_per_rack:
                hosts = np.arange(ctx.cluster.size, dtype=np.int64)
                self.racks = hosts // chain.nodes_per_rack

    def place_job(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        m = machines(state, request, self.model_bits)
        if self.racks is not None:
            m = replace(m, rack=self.racks)
        n = request.num_gpus
        allowed = m.free > 0
        if not allowed.any():
            return None
        node_size = int(m.size[allowed].max())
        if n > node_size:
            blocks = _multi_node(m.idle, m.size, m.rack, n)
            return None if blocks is None else to_allocation(blocks, state, request)
        slots = state.gpu_exists & (state.gpu_free >= GPU_MILLI) & allowed[:, None]
        gpus = np.where(allowed, m.size, 0)
        racks = int(m.rack.max()) + 1
        rack_free = np.bincount(m.rack, weights=m.free, minlength=racks)[m.rack]
        cells = free_cells(slots, gpus, rack_free, self.sizes_of)
        pick = _cell_pick(cells, n, gpus, self.sizes_of)
        if pick is None:
            return None
        start = int(cells.start[pick])
        return ((int(cells.node[pick]), tuple(range(start, start + n))),)


def _multi_node(idle: np.ndarray, size: np.ndarray, rack: np.ndarray, n: int) -> Blocks | None:
    """Idle nodes for a job larger than a node: one rack if one holds it (the rack with the
    fewest idle GPUs that suffice), else the racks with the most idle GPUs first; nodes by
    index inside a rack, the last one partly used."""
    idle_gpus = np.bincount(rack, weights=np.where(idle, size, 0), minlength=int(rack.max()) + 1)
    enough = np.flatnonzero(idle_gpus >= n)
    if len(enough):
        racks = [int(enough[np.argmin(idle_gpus[enough])])]
    else:
        order = np.lexsort((np.arange(len(idle_gpus)), -idle_gpus))
        racks = [int(r) for r in order if idle_gpus[r] > 0]
    blocks: Blocks = []
    left = n
    for r in racks:
        for node in np.flatnonzero(idle & (rack == r)).tolist():
            take = min(left, int(size[node]))
            blocks.append((node, take))
            left -= take
            if left == 0:
                return blocks
    return None
