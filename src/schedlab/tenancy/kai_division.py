"""KAI-Scheduler's division of a resource among sibling queues, and of a tree top-down.

After KAI ``pkg/scheduler/plugins/proportion/resource_division/resource_division.go``:

1. each queue is first given its deserved quota, capped by what it asks (``min(limit,
   request)``); ``deserved = -1`` means "all of it";
2. what is left is shared over quota, priority by priority (higher first), in rounds: each
   unsatisfied queue's share is ``P = max(0, W' + k(W' - u))`` of the round's amount, ``W'`` its
   normalised over-quota weight and ``u`` its time-decayed usage (0 without history); a queue
   whose need fits in its share takes the need, the others the whole part of theirs, and the
   fractions are remembered; rounds repeat while some queue was satisfied and something is left;
3. whole units left over go, one each, to the queues with the largest remembered fractions
   (older queues first on ties), even to one that needs less than a unit, as KAI does.

The hierarchy divides the cluster among top-level queues, then each queue's share among its
children. Plain Python over lists: sibling groups are small, and this runs at every decision.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from schedlab.tenancy.tree import ROOT, QueueTree


def divide(
    total: float,
    deserved: Sequence[float],
    request: Sequence[float],
    weight: Sequence[float],
    priority: Sequence[float] | None = None,
    usage: Sequence[float] | None = None,
    k: float = 1.0,
    limit: Sequence[float] | None = None,
    rounding: bool = True,
) -> list[float]:
    """Fair shares of ``total`` among siblings listed oldest first (the tie-break order).

    ``rounding=False`` gives the exact (continuous) division: every queue keeps its exact
    share, no remainders (the reference entitlement of the metrics, with ``k = 0``).
    """
    n = len(deserved)
    req = [
        min(float(request[q]), float(limit[q])) if limit is not None else float(request[q])
        for q in range(n)
    ]
    fair = [min(total if deserved[q] < 0 else float(deserved[q]), req[q]) for q in range(n)]
    left = total - sum(fair)
    if left <= 0:
        return fair
    prio = [0.0] * n if priority is None else [float(p) for p in priority]
    use = [0.0] * n if usage is None else [float(u) for u in usage]
    k = max(0.0, k)
    frac: dict[int, float] = {}
    for level in sorted(set(prio), reverse=True):
        members = [q for q in range(n) if prio[q] == level]
        while left > 0:
            unmet = [q for q in members if fair[q] < req[q]]
            w_sum = sum(weight[q] for q in unmet)
            if not unmet or w_sum <= 0:
                break
            parts = {}
            for q in unmet:
                if weight[q] <= 0:
                    continue
                wn = weight[q] / w_sum
                parts[q] = max(0.0, wn + k * (wn - use[q]))
            p_sum = sum(parts.values())
            if p_sum <= 0:
                break
            amount = left
            again = False
            for q, p in parts.items():
                share = amount * p / p_sum
                need = req[q] - fair[q]
                if need <= share:
                    fair[q] += need
                    left -= need
                    frac.pop(q, None)
                    again = True
                elif rounding:
                    whole = math.floor(share)
                    fair[q] += whole
                    left -= whole
                    frac[q] = share - whole
                else:
                    fair[q] += share
                    left -= share
            if not again or left <= 1e-12:
                break
    if rounding:
        for level in sorted(set(prio), reverse=True):
            if left <= 0:
                break
            ranked = sorted((q for q in frac if prio[q] == level), key=lambda q: (-frac[q], q))
            for q in ranked:
                if left <= 0:
                    break
                unit = min(1.0, left)
                fair[q] += unit
                left -= unit
    return fair


def divide_tree(
    tree: QueueTree,
    capacity: np.ndarray,
    request: np.ndarray,
    usage: np.ndarray | None = None,
    k: float = 1.0,
    rounding: bool = True,
    weights: np.ndarray | None = None,
    deserved: np.ndarray | None = None,
    use_priority: bool = True,
) -> np.ndarray:
    """Fair share of every node of ``tree`` in every resource: ``[nodes, resources]``.

    ``request[node, r]`` is the node's allocation plus pending demand, summed up the tree.
    The root's share is the cluster; each node's children divide the node's share.
    """
    nodes, res = request.shape
    fair = np.zeros((nodes, res))
    fair[ROOT] = capacity
    w = tree.weight if weights is None else weights
    d = tree.deserved if deserved is None else deserved
    for parent in tree.preorder():
        kids = tree.children[parent]
        if not kids:
            continue
        for r in range(res):
            out = divide(
                float(fair[parent, r]),
                d[kids, r].tolist(),
                request[kids, r].tolist(),
                w[kids].tolist(),
                tree.priority[kids].tolist() if use_priority else None,
                usage[kids, r].tolist() if usage is not None else None,
                k,
                tree.limit[kids, r].tolist(),
                rounding,
            )
            fair[kids, r] = out
    return fair
