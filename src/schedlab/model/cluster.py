"""Cluster description (what the hardware is) and cluster state (what is free right now).

The state is a handful of numpy arrays indexed by node, so a placement policy scores every node in
one vectorised expression. GPU shares are in milli-GPU (1000 = one whole GPU); fractional sharing
is first-class, so each GPU slot carries its own free share. Nodes with fewer GPUs than the widest
node have padding slots that do not exist (``gpu_exists`` is False there, free share 0).

Two resources serve long-running serving instances and are off unless a cluster or pod uses them,
so pack and replay pay nothing for them: an RDMA NIC share per node (``Cluster.rdma``, in % of one
NIC: 100 per NIC; None = not modelled, no limit) and, per app, how many of its instances each node
holds (``ClusterState.app_count``), against which a pod's per-node density limit is checked.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from schedlab.model.gpu_models import GPU_MODELS

if TYPE_CHECKING:
    from schedlab.network.plan import NetLedger

GPU_MILLI = 1000
"""Milli-GPU in one whole GPU."""

#: Version stamps: every change of any node of any state takes the next one, so a node's version
#: names its contents across a state and the copies made of it (a copy that changes a node
#: differently from the original never shows the same version with other contents).
_STAMPS = itertools.count(1)
#: Largest cluster any reader accepts (``--cluster``, a topology's hosts): beyond it a count is a
#: unit or typing slip, and the arrays would not fit in memory.
MAX_NODES = 1_000_000
#: Changes a state's journal keeps before it starts again (see ClusterState.changed_since).
JOURNAL_LIMIT = 1 << 16
#: Most GPUs one node may have.
MAX_GPUS_PER_NODE = 64

#: Pod classes tracked per node (the tag set of gpu-clustering, plus CPU-only).
POD_CLASSES: tuple[str, ...] = ("cpu", "share", "1gpu", "2gpu", "4gpu", "8gpu")


def pod_class(num_gpu: int, gpu_milli: int) -> int:
    """Index into :data:`POD_CLASSES` for a pod's shape; other multi-GPU counts map to the nearest
    larger power of two so that odd sizes still get a tag."""
    if num_gpu == 0:
        return 0
    if gpu_milli < GPU_MILLI:
        return 1
    if num_gpu <= 1:
        return 2
    if num_gpu <= 2:
        return 3
    if num_gpu <= 4:
        return 4
    return 5


@dataclass(frozen=True)
class Cluster:
    """Immutable description of the nodes.

    ``model`` holds an index into :data:`GPU_MODELS`, or -1 for a node without GPUs.
    """

    names: np.ndarray  # str, (N,)
    cpu_milli: np.ndarray  # int64, (N,)
    memory_mib: np.ndarray  # int64, (N,)
    num_gpus: np.ndarray  # int64, (N,)
    model: np.ndarray  # int64, (N,)
    source: str = field(default="<memory>")
    rack: np.ndarray | None = None  # int64, (N,): topology for rack-aware placement
    rdma: np.ndarray | None = None  # int64, (N,): RDMA NIC share, 100 per NIC; None: no limit

    def __post_init__(self) -> None:
        n = len(self.names)
        if self.rack is None:
            # Without topology every node is its own rack: "fewest racks" = "fewest nodes".
            object.__setattr__(self, "rack", np.arange(n, dtype=np.int64))
        for attr in ("cpu_milli", "memory_mib", "num_gpus", "model", "rack", "rdma"):
            if getattr(self, attr) is not None and len(getattr(self, attr)) != n:
                raise ValueError(f"Cluster.{attr} has {len(getattr(self, attr))} entries, not {n}")

    @property
    def size(self) -> int:
        return len(self.names)

    @cached_property
    def total_gpus(self) -> int:
        """GPUs of the cluster (kept: schedulers ask at every decision point)."""
        return int(self.num_gpus.sum())

    @property
    def max_gpus_per_node(self) -> int:
        return int(self.num_gpus.max()) if self.size else 0

    def model_names(self) -> list[str]:
        return [GPU_MODELS[m] if m >= 0 else "" for m in self.model]

    def summary(self) -> dict[str, object]:
        """Counts a user checks first: nodes, GPUs, and the mix by model."""
        by_model: dict[str, dict[str, int]] = {}
        for m in sorted(set(int(x) for x in self.model)):
            sel = self.model == m
            key = GPU_MODELS[m] if m >= 0 else "cpu-only"
            by_model[key] = {"nodes": int(sel.sum()), "gpus": int(self.num_gpus[sel].sum())}
        return {
            "nodes": self.size,
            "gpus": self.total_gpus,
            "cpu_cores": int(self.cpu_milli.sum() // 1000),
            "by_model": by_model,
        }

    def new_state(self) -> ClusterState:
        return ClusterState.empty(self)


def _slot_widths(gpu_exists: np.ndarray) -> list[int] | None:
    """Each node's slot count when every node's slots are a prefix of its row (as
    :meth:`ClusterState.empty` makes them): a slot then exists exactly below it. None
    otherwise (the slots are checked against the row)."""
    counts = gpu_exists.sum(axis=1)
    prefix = np.arange(gpu_exists.shape[1])[None, :] < counts[:, None]
    return counts.tolist() if np.array_equal(prefix, gpu_exists) else None


class ClusterState:
    """Free resources on every node; the only thing an engine mutates.

    Policies receive it read-only (they must not write to it); engines change it through
    :meth:`allocate`, which checks capacity so that no bug anywhere can over-allocate silently.
    ``version`` stamps each node's contents (a fresh stamp at every change, unique across this
    state and its copies), so a policy may cache per-node scores and recompute only the nodes
    whose version moved.
    """

    def __init__(
        self,
        cluster: Cluster,
        cpu_free: np.ndarray,
        mem_free: np.ndarray,
        gpu_free: np.ndarray,
        gpu_exists: np.ndarray,
        class_counts: np.ndarray,
        rdma_free: np.ndarray | None = None,
        app_counts: dict[int, np.ndarray] | None = None,
    ) -> None:
        # copy() sets every attribute itself (without recomputing the aggregates): an attribute
        # added here must be added there too.
        self.cluster = cluster
        self.cpu_free = cpu_free
        self.mem_free = mem_free
        self.gpu_free = gpu_free
        self.gpu_exists = gpu_exists
        self.class_counts = class_counts
        #: Free RDMA NIC share per node (None when the cluster does not model RDMA).
        self.rdma_free = rdma_free
        #: App index → instances of that app on each node; apps with none placed are absent.
        self.app_counts: dict[int, np.ndarray] = {} if app_counts is None else app_counts
        self.version = np.zeros(cluster.size, dtype=np.int64)
        self.changes = 0
        # The nodes whose version moved, in order: entry i is the node of change
        # ``journal_base + i`` (see :meth:`changed_since`).
        self.journal: list[int] = []
        self.journal_base = 0
        #: Links and circuit ports held by jobs (a NetLedger; None without a network plan).
        self.net: NetLedger | None = None
        # Per-node aggregates kept up to date by every change, so that scoring all nodes costs
        # O(nodes) instead of O(nodes × GPU slots) per pod or job.
        self.gpu_free_sum = gpu_free.sum(axis=1)
        self.gpu_full_count = (gpu_exists & (gpu_free == GPU_MILLI)).sum(axis=1)
        self._widths = _slot_widths(gpu_exists)

    @classmethod
    def empty(cls, cluster: Cluster) -> ClusterState:
        width = max(cluster.max_gpus_per_node, 1)
        exists = np.arange(width)[None, :] < cluster.num_gpus[:, None]
        gpu_free = np.where(exists, GPU_MILLI, 0).astype(np.int64)
        return cls(
            cluster,
            cluster.cpu_milli.astype(np.int64).copy(),
            cluster.memory_mib.astype(np.int64).copy(),
            gpu_free,
            exists,
            np.zeros((cluster.size, len(POD_CLASSES)), dtype=np.int64),
            None if cluster.rdma is None else cluster.rdma.astype(np.int64).copy(),
        )

    # -- read-only views ---------------------------------------------------------------------
    @property
    def gpu_free_total(self) -> np.ndarray:
        """Free milli-GPU per node (read-only)."""
        return self.gpu_free_sum

    def copy(self) -> ClusterState:
        """An independent copy a policy may allocate on while it plans."""
        other = ClusterState.__new__(ClusterState)
        other.cluster = self.cluster
        other.cpu_free = self.cpu_free.copy()
        other.mem_free = self.mem_free.copy()
        other.gpu_free = self.gpu_free.copy()
        other.gpu_exists = self.gpu_exists
        other.class_counts = self.class_counts.copy()
        other.rdma_free = None if self.rdma_free is None else self.rdma_free.copy()
        other.app_counts = {app: counts.copy() for app, counts in self.app_counts.items()}
        other.version = self.version.copy()
        other.changes = 0
        other.journal = []
        other.journal_base = 0
        other.net = self.net.copy() if self.net is not None else None
        # The aggregates are kept in step with every change: copied, not recomputed.
        other.gpu_free_sum = self.gpu_free_sum.copy()
        other.gpu_full_count = self.gpu_full_count.copy()
        other._widths = self._widths
        return other

    def set_gpu_free(self, node: int, shares: np.ndarray | list[int]) -> None:
        """Set the free share of every GPU slot of ``node`` (live adapters and tests build a
        state this way); keeps the per-node aggregates and the version in step."""
        values = np.asarray(shares, dtype=np.int64)
        if values.shape != self.gpu_free[node].shape:
            raise ValueError(
                f"node {node} has {self.gpu_free.shape[1]} GPU slots, got {values.shape}"
            )
        if ((values < 0) | (values > GPU_MILLI) | (~self.gpu_exists[node] & (values != 0))).any():
            raise ValueError(f"free shares for node {node} out of range: {values.tolist()}")
        self.gpu_free[node] = values
        self.gpu_free_sum[node] = int(values.sum())
        self.gpu_full_count[node] = int((values == GPU_MILLI).sum())
        self._stamp(node)

    def _stamp(self, node: int) -> None:
        """``node`` changed: it takes the next version stamp, and the journal records it."""
        self.version[node] = next(_STAMPS)
        self.changes += 1
        journal = self.journal
        if len(journal) >= JOURNAL_LIMIT:  # bounded: older marks fall back on the versions
            self.journal_base += len(journal)
            journal.clear()
        journal.append(node)

    def changed_since(self, mark: int) -> list[int] | None:
        """The nodes changed since this state's ``changes`` was ``mark``, each once; None when
        the journal no longer reaches back that far (compare the versions instead). A cache of
        per-node values kept against one state rescores just these, instead of comparing every
        node's version."""
        start = mark - self.journal_base
        if start < 0:
            return None
        moved = self.journal[start:]
        return list(dict.fromkeys(moved)) if len(moved) > 1 else moved

    def touch(self, node: int) -> None:
        """Record that ``node`` changed: for code that writes the arrays directly (the sharing
        engine's views), so that version-keyed caches see the change."""
        self._stamp(node)

    def app_count(self, app: int) -> np.ndarray:
        """Instances of ``app`` on each node (read-only; zeros for an app with none placed)."""
        counts = self.app_counts.get(app)
        return np.zeros(self.cluster.size, dtype=np.int64) if counts is None else counts

    def allocated_gpu_milli(self) -> int:
        return int(self.cluster.num_gpus.sum() * GPU_MILLI - self.gpu_free.sum())

    # -- mutation (engines only) -------------------------------------------------------------
    def _check_slots(
        self, node: int, gpus: np.ndarray | list[int] | tuple[int, ...]
    ) -> Sequence[int]:
        """GPU indices as a list (or the tuple given), after checking that the node and every
        slot exist and that no slot repeats (a negative index would otherwise wrap around silently).

        Plain Python: a placement touches at most a handful of slots, where numpy's per-call
        overhead would dominate.
        """
        widths = self._widths
        # The usual call (a placement's tuple of int slots, every node's slots a prefix of its
        # row): the same checks against the node's slot count.
        if (
            widths is not None
            and type(gpus) is tuple
            and type(node) is int
            and 0 <= node < len(widths)
        ):
            width = widths[node]
            for g in gpus:
                if type(g) is not int or not 0 <= g < width:
                    break
            else:
                if len(gpus) < 2 or len(set(gpus)) == len(gpus):
                    return gpus
        size = len(self.cpu_free)
        if not 0 <= node < size:
            raise ValueError(f"no node {node} (the cluster has {size})")
        slots = [g if type(g) is int else int(g) for g in gpus]
        if slots:
            exists = self.gpu_exists[node].tolist()
            width = len(exists)
            for g in slots:
                if not 0 <= g < width or not exists[g]:
                    raise ValueError(f"node {node} has no GPU slot among {slots}")
            if len(slots) > 1 and len(set(slots)) != len(slots):
                raise ValueError(f"GPU chosen twice on node {node}: {slots}")
        return slots

    def allocate(
        self,
        node: int,
        gpus: np.ndarray | list[int] | tuple[int, ...],
        cpu_milli: int,
        memory_mib: int,
        gpu_milli: int,
        num_gpu: int,
        *,
        rdma: int = 0,
        app: int = -1,
        app_limit: int = -1,
    ) -> None:
        """Take ``cpu_milli``, ``memory_mib`` and ``gpu_milli`` on each GPU in ``gpus`` of ``node``,
        and ``rdma`` NIC share; count one more instance of ``app`` (≥ 0) on the node.

        Raises ValueError (and changes nothing) if that would drive anything below zero, use a
        GPU slot the node does not have, or put more than ``app_limit`` (≥ 1) instances of
        ``app`` on the node.
        """
        slots = self._check_slots(node, gpus)
        if len(slots) != (num_gpu if gpu_milli > 0 else 0):
            raise ValueError(f"pod asks for {num_gpu} GPU(s) but {len(slots)} were chosen")
        if self.cpu_free.item(node) < cpu_milli or self.mem_free.item(node) < memory_mib:
            raise ValueError(f"node {node} lacks CPU or memory for the pod")
        row = self.gpu_free[node]
        shares = row.tolist()
        for g in slots:
            if shares[g] < gpu_milli:
                raise ValueError(f"GPU share on node {node} would go below zero")
        if rdma or app >= 0:
            self._take_extras(node, rdma, app, app_limit)
        if cpu_milli:
            self.cpu_free[node] -= cpu_milli
        if memory_mib:
            self.mem_free[node] -= memory_mib
        if gpu_milli > 0:
            full = 0
            for g in slots:
                if shares[g] == GPU_MILLI:
                    full += 1
                row[g] = shares[g] - gpu_milli
            counts, sums = self.gpu_full_count, self.gpu_free_sum
            if full:
                counts[node] = counts.item(node) - full
            sums[node] = sums.item(node) - gpu_milli * len(slots)
        cls, classes = pod_class(num_gpu, gpu_milli), self.class_counts
        classes[node, cls] = classes.item(node, cls) + 1
        self._stamp(node)

    def release(
        self,
        node: int,
        gpus: np.ndarray | list[int] | tuple[int, ...],
        cpu_milli: int,
        memory_mib: int,
        gpu_milli: int,
        num_gpu: int,
        *,
        rdma: int = 0,
        app: int = -1,
    ) -> None:
        """Give back what :meth:`allocate` took; raises (changing nothing) if it would exceed
        capacity or if the node holds no such pod."""
        slots = self._check_slots(node, gpus)
        c = self.cluster
        cls, classes = pod_class(num_gpu, gpu_milli), self.class_counts
        if classes.item(node, cls) == 0:
            raise ValueError(f"node {node} holds no pod of class {POD_CLASSES[cls]!r} to release")
        if self.cpu_free.item(node) + cpu_milli > c.cpu_milli.item(node):
            raise ValueError(f"node {node} CPU would exceed capacity")
        if self.mem_free.item(node) + memory_mib > c.memory_mib.item(node):
            raise ValueError(f"node {node} memory would exceed capacity")
        row = self.gpu_free[node]
        shares = row.tolist()
        for g in slots:
            if shares[g] + gpu_milli > GPU_MILLI:
                raise ValueError(f"GPU share on node {node} would exceed capacity")
        if rdma or app >= 0:
            self._give_extras(node, rdma, app)
        if cpu_milli:
            self.cpu_free[node] += cpu_milli
        if memory_mib:
            self.mem_free[node] += memory_mib
        if gpu_milli > 0:
            full = 0
            for g in slots:
                share = shares[g] + gpu_milli
                row[g] = share
                if share == GPU_MILLI:
                    full += 1
            counts, sums = self.gpu_full_count, self.gpu_free_sum
            if full:
                counts[node] = counts.item(node) + full
            sums[node] = sums.item(node) + gpu_milli * len(slots)
        classes[node, cls] = classes.item(node, cls) - 1
        self._stamp(node)

    # -- RDMA share and per-app counts (serving instances only) ---------------------------------
    def _take_extras(self, node: int, rdma: int, app: int, app_limit: int) -> None:
        """Check, then take, ``rdma`` NIC share and one ``app`` slot on ``node``."""
        if rdma and self.rdma_free is not None and self.rdma_free[node] < rdma:
            raise ValueError(f"node {node} lacks RDMA NIC share for the pod")
        counts = self.app_counts.get(app) if app >= 0 else None
        if app_limit > 0 and counts is not None and counts[node] >= app_limit:
            raise ValueError(f"node {node} already holds {app_limit} instance(s) of app {app}")
        if rdma and self.rdma_free is not None:
            self.rdma_free[node] -= rdma
        if app >= 0:
            if counts is None:
                counts = self.app_counts[app] = np.zeros(self.cluster.size, dtype=np.int64)
            counts[node] += 1

    def _give_extras(self, node: int, rdma: int, app: int) -> None:
        """Check, then give back, what :meth:`_take_extras` took."""
        cap = self.cluster.rdma
        free = self.rdma_free
        if rdma and free is not None and cap is not None and free[node] + rdma > cap[node]:
            raise ValueError(f"node {node} RDMA share would exceed capacity")
        counts = self.app_counts.get(app) if app >= 0 else None
        if app >= 0 and (counts is None or counts[node] == 0):
            raise ValueError(f"node {node} holds no instance of app {app} to release")
        if rdma and self.rdma_free is not None:
            self.rdma_free[node] += rdma
        if counts is not None:
            counts[node] -= 1
