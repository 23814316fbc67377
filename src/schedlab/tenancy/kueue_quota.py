"""Kueue's quota arithmetic over a cohort tree: what each node may still use, and its dominant
resource share (DRS).

After Kueue ``pkg/cache/scheduler/resource_node.go`` and ``fair_sharing.go``. Leaves are
ClusterQueues, inner nodes Cohorts (the tree's root is the top cohort); a node's ``deserved`` is
its nominal quota (a cohort's own is a shared pool). Per resource:

* ``local(n) = max(0, subtree(n) - lending_limit(n))`` when a lending limit is set, else 0: the
  part only ``n``'s subtree may use;
* the root's own nominal is what the cluster has beyond all quotas;
* ``subtree(leaf) = nominal``; ``subtree(cohort) = nominal + Σ_c (subtree(c) - local(c))``;
* ``usage(cohort) = Σ_c max(0, usage(c) - local(c))``;
* ``avail(root) = subtree - usage``; ``avail(n) = max(0, local - usage) + min(avail(parent),
  subtree - local - max(0, usage - local) + borrowing_limit)`` (no ``min`` without a limit);
* ``potential(root) = subtree``, ``potential(n) = local + potential(parent)``, capped at
  ``subtree + borrowing_limit``; ``DRS(n) = max_r 1000 · Σ max(0, usage + req - subtree) /
  potential(parent) / weight`` (weight 0 while borrowing: infinite; the root: 0).
"""

from __future__ import annotations

import numpy as np

from schedlab.tenancy.tree import ROOT, QueueTree

INFINITE_DRS = float("inf")


class KueueQuota:
    """The static part (nominal, subtree, local, potential) of a tree, and the usage-dependent
    figures for any allocation of the leaves."""

    def __init__(self, tree: QueueTree, capacity: np.ndarray) -> None:
        self.tree = tree
        d = tree.deserved
        self.nominal = np.where(d < 0, capacity[None, :], d)
        # What the cluster has beyond every nominal quota is the root cohort's own pool (a
        # Cohort's resource group in Kueue), which any queue may borrow.
        self.nominal[ROOT] = np.maximum(0.0, capacity - self.nominal[1:].sum(axis=0))
        self.lending = tree.lending_limit
        self.borrowing = tree.borrowing_limit
        n = len(tree)
        self.subtree = np.zeros_like(self.nominal)
        self.local = np.zeros_like(self.nominal)
        self.order = tree.preorder()
        for node in reversed(self.order):
            kids = tree.children[node]
            sub = self.nominal[node].copy()
            for c in kids:
                sub += self.subtree[c] - self.local[c]
            self.subtree[node] = sub
            if node != ROOT:
                lend = self.lending[node]
                self.local[node] = np.where(np.isfinite(lend), np.maximum(0.0, sub - lend), 0.0)
        self.potential = np.zeros((n, d.shape[1]))
        for node in self.order:
            if node == ROOT:
                self.potential[node] = self.subtree[node]
                continue
            pot = self.local[node] + self.potential[tree.parent[node]]
            cap = self.subtree[node] + self.borrowing[node]
            self.potential[node] = np.minimum(pot, cap)
        # The walks below, a level (or an inner node) at a time: every node of a level depends
        # only on its parent's figures, every inner node only on its children's.
        self.inner = [(node, np.asarray(tree.children[node])) for node in reversed(self.order)
                      if tree.children[node]]  # fmt: skip
        depth = tree.depth
        self.levels = [
            (nodes, tree.parent[nodes])
            for d in range(1, int(depth.max(initial=0)) + 1)
            if len(nodes := np.asarray([n for n in self.order if depth[n] == d], dtype=np.int64))
        ]

    def usage(self, alloc: np.ndarray) -> np.ndarray:
        """Per-node usage from the leaves' allocation (``alloc`` rows of inner nodes ignored)."""
        out = np.zeros_like(self.nominal)
        leaves = self.tree.leaves
        out[leaves] = alloc[leaves]
        for node, kids in self.inner:  # deepest first; children summed in order, from zero
            lent = np.maximum(0.0, out[kids] - self.local[kids])
            out[node] = np.cumsum(np.vstack([out[node][None, :], lent]), axis=0)[-1]
        return out

    def avail(self, usage: np.ndarray) -> np.ndarray:
        """What each node may still take (a request ``x`` fits node ``n`` iff ``x ≤ avail``)."""
        out = np.zeros_like(self.nominal)
        out[ROOT] = self.subtree[ROOT] - usage[ROOT]
        for nodes, parents in self.levels:
            local, used = self.local[nodes], usage[nodes]
            own = np.maximum(0.0, local - used)
            up = out[parents]
            room = (
                self.subtree[nodes] - local - np.maximum(0.0, used - local) + self.borrowing[nodes]
            )
            out[nodes] = own + np.where(np.isfinite(room), np.minimum(up, room), up)
        return out

    def usage_with(self, usage: np.ndarray, leaf: int, req: np.ndarray) -> np.ndarray:
        """``usage`` with ``req`` added at ``leaf`` (negative: removed), up its path."""
        out = usage.copy()
        tree = self.tree
        node, delta = leaf, req.astype(np.float64)
        while node != ROOT:
            before = out[node].copy()
            out[node] = before + delta
            parent = int(tree.parent[node])
            local = self.local[node]
            delta = np.maximum(0.0, out[node] - local) - np.maximum(0.0, before - local)
            node = parent
        out[ROOT] += delta
        return out

    def drs(self, node: int, usage: np.ndarray) -> float:
        """Dominant resource share of ``node`` under ``usage`` (×1000, over its weight)."""
        if node == ROOT:
            return 0.0
        tree = self.tree
        borrowed = np.maximum(0.0, usage[node] - self.subtree[node])
        lend = self.potential[tree.parent[node]]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(lend > 0, 1000.0 * borrowed / np.where(lend > 0, lend, 1), 0.0)
        share = float(ratio.max()) if ratio.size else 0.0
        w = float(tree.weight[node])
        if w <= 0:
            return INFINITE_DRS if (borrowed > 0).any() else 0.0
        return share / w

    def borrowing_now(self, node: int, usage: np.ndarray, resources: np.ndarray) -> bool:
        """Is ``node`` using more than its nominal quota (subtree for a cohort) in any of
        ``resources`` (a boolean mask)?"""
        return bool((usage[node, resources] > self.subtree[node, resources] + 1e-9).any())
