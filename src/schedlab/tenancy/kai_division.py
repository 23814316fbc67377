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

INF = math.inf
#: Relative margin on a recorded bound (a request must clear it by this much for the division
#: to be reused): float rounding of ``request - fair`` can never flip a comparison then.
MARGIN = 1e-9
#: The root's bound (any request of the root divides alike; finite, so the margin stays finite).
LOWEST = 1e308


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
    bounds: list[float] | None = None,
) -> list[float]:
    """Fair shares of ``total`` among siblings listed oldest first (the tie-break order).

    ``rounding=False`` gives the exact (continuous) division: every queue keeps its exact
    share, no remainders (the reference entitlement of the metrics, with ``k = 0``).

    ``bounds`` (an empty list) receives, for each queue, a bound above which its request may
    move freely without changing any share (``inf``: none). A queue that never has its need met
    (it starts on its deserved quota below its request, and in every round its need exceeds its
    part) takes the same amounts whatever its request beyond the largest ``fair + part`` it
    saw, and leaves the others the same: a division of a busy cluster, where most queues ask
    more than they get, is then reused as requests change.
    """
    n = len(deserved)
    if limit is not None:
        req = [min(float(r), float(cap)) for r, cap in zip(request, limit, strict=True)]
    else:
        req = [float(r) for r in request]
    fair: list[float] = []
    bound: list[float] = [] if bounds is None else bounds
    waiting: list[int] = []  # queues whose deserved quota leaves them short, in age order
    for q in range(n):
        d = deserved[q]
        f = total if d < 0 else float(d)
        if f < req[q]:
            fair.append(f)
            bound.append(f)
            waiting.append(q)
        else:
            fair.append(req[q])
            bound.append(INF)
    left = total - sum(fair)
    if left <= 0:
        return fair
    k = max(0.0, k)
    levels = [0.0] if priority is None else sorted({float(p) for p in priority}, reverse=True)
    frac: dict[int, float] = {}
    for level in levels:
        unmet = (
            waiting if len(levels) == 1 else [q for q in waiting if float(priority[q]) == level]  # type: ignore[index]
        )
        while left > 0:
            unmet = [q for q in unmet if fair[q] < req[q]]
            w_sum = sum([weight[q] for q in unmet])
            if not unmet or w_sum <= 0:
                break
            parts = []
            p_sum = 0
            for q in unmet:
                w = weight[q]
                if w <= 0:
                    continue
                wn = w / w_sum
                p = max(0.0, wn + k * (wn - (float(usage[q]) if usage is not None else 0.0)))
                parts.append((q, p))
                p_sum += p
            if p_sum <= 0:
                break
            amount = left
            again = False
            for q, p in parts:
                share = amount * p / p_sum
                f = fair[q]
                need = req[q] - f
                if need <= share:
                    fair[q] = f + need
                    left -= need
                    frac.pop(q, None)
                    bound[q] = INF
                    again = True
                    continue
                if f + share > bound[q]:
                    bound[q] = f + share
                if rounding:
                    whole = math.floor(share)
                    fair[q] = f + whole
                    left -= whole
                    frac[q] = share - whole
                else:
                    fair[q] = f + share
                    left -= share
            if not again or left <= 1e-12:
                break
    if rounding and frac:
        for level in levels:
            if left <= 0:
                break
            ranked = sorted(
                (q for q in frac if len(levels) == 1 or float(priority[q]) == level),  # type: ignore[index]
                key=lambda q: (-frac[q], q),
            )
            for q in ranked:
                if left <= 0:
                    break
                unit = min(1.0, left)
                fair[q] += unit
                left -= unit
    return fair


class TreeDivider:
    """KAI's division of a tree, with the tree's fixed lists read once, reusing its last
    answer while only requests above their bounds (:func:`divide`) moved.

    Whether a division can be reused is judged top-down: the root's share is the cluster; a
    parent whose share is unchanged divides it among its children alike when every child whose
    request moved stayed above its bound, by a margin no float rounding of ``request − fair``
    could cross (and the bound is below the child's limit: a request clipped there moved
    nowhere).
    """

    def __init__(
        self,
        tree: QueueTree,
        k: float = 1.0,
        rounding: bool = True,
        weights: np.ndarray | None = None,
        deserved: np.ndarray | None = None,
        use_priority: bool = True,
    ) -> None:
        self.tree = tree
        self.k = k
        self.rounding = rounding
        w = tree.weight if weights is None else weights
        d = tree.deserved if deserved is None else deserved
        self.resources = len(tree.resources)
        self.groups = [
            (
                parent,
                kids,
                w[kids].tolist(),
                tree.priority[kids].tolist() if use_priority else None,
                [d[kids, r].tolist() for r in range(self.resources)],
                [tree.limit[kids, r].tolist() for r in range(self.resources)],
            )
            for parent in tree.preorder()
            if (kids := list(tree.children[parent]))
        ]
        self.limits = tree.limit.ravel().tolist()
        self.last: tuple[list[float], list[float], bytes, np.ndarray] | None = None

    def divide(
        self, capacity: np.ndarray, request: np.ndarray, usage: np.ndarray | None = None
    ) -> np.ndarray:
        """Fair share of every node in every resource: ``[nodes, resources]`` (the array of
        the last call when nothing that matters moved: never write to it)."""
        extra = capacity.tobytes() + (usage.tobytes() if usage is not None else b"")
        asked = request.ravel().tolist()  # plain floats: the arrays are small, lists quicker
        last = self.last
        if last is not None and last[2] == extra:
            before, bound = last[0], last[1]
            if asked == before or all(
                a == b or (a > (m := c + MARGIN * max(1.0, abs(c))) and m < cap)
                for a, b, c, cap in zip(asked, before, bound, self.limits, strict=True)
            ):
                self.last = (asked, bound, extra, last[3])
                return last[3]
        nodes, res = request.shape
        fair = [0.0] * (nodes * res)  # flat, node-major like ``asked``
        bound = [-LOWEST] * (nodes * res)  # the root's request never matters
        fair[ROOT * res : ROOT * res + res] = capacity.tolist()
        use = usage.ravel().tolist() if usage is not None else None
        k, rounding = self.k, self.rounding
        for parent, kids, weight, prio, deserved, limit in self.groups:
            for r in range(res):
                below: list[float] = []
                out = divide(
                    fair[parent * res + r],
                    deserved[r],
                    [asked[q * res + r] for q in kids],
                    weight,
                    prio,
                    [use[q * res + r] for q in kids] if use is not None else None,
                    k,
                    limit[r],
                    rounding,
                    below,
                )
                for q, f, b in zip(kids, out, below, strict=True):
                    fair[q * res + r] = f
                    bound[q * res + r] = b
        shares = np.asarray(fair, dtype=np.float64).reshape(nodes, res)
        self.last = (asked, bound, extra, shares)
        return shares


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
    divider = TreeDivider(tree, k, rounding, weights, deserved, use_priority)
    return divider.divide(capacity, request, usage)
