"""The queue tree: who is entitled to what, as arrays a share policy computes on.

Queues form a tree under an implicit root (index 0); jobs attach to leaves only. Every
per-resource quantity is an array ``[nodes, resources]`` in :func:`resources.resource_order`;
``inf`` means "no limit" and ``NaN`` "not set". A deserved quota of ``-1`` means "the whole of
what the parent divides" (KAI's ``quota: -1``); a limit of ``-1`` means none.

Oversubscribed deserved quotas (children over their parent, or top-level queues over the
cluster) are legal, as in KAI, which does not validate them: :attr:`QueueTree.warnings` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from schedlab.errors import InputError
from schedlab.tenancy.resources import GPU, check_resource, resource_order

ROOT = 0
#: Kueue's preemption settings, as a queue file spells them.
PREEMPTION_KEYS = {
    "within_cluster_queue": ("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
    "reclaim_within_cohort": ("Never", "LowerPriority", "Any"),
    "borrow_within_cohort": ("Never", "LowerPriority"),
}


@dataclass(frozen=True)
class QueueSpec:
    """One queue as a file or a live cluster describes it (``path`` like ``research/vision``)."""

    path: str
    deserved: Mapping[str, float] = field(default_factory=dict)
    limit: Mapping[str, float] = field(default_factory=dict)
    weight: float = 1.0
    priority: float = 0.0
    borrowing_limit: Mapping[str, float] = field(default_factory=dict)
    lending_limit: Mapping[str, float] = field(default_factory=dict)
    #: Kueue's ``withinClusterQueue`` / ``reclaimWithinCohort`` / ``borrowWithinCohort``
    #: (+ ``max_priority_threshold``), YuniKorn's ``allow_preemption`` and ``fence``.
    preemption: Mapping[str, object] = field(default_factory=dict)
    #: Job attributes that send a job here, e.g. ``({"vc": "ee9e8c"}, {"user": "ce2f4c"})``.
    match: tuple[Mapping[str, str], ...] = ()
    #: Shares (Slurm's ``Fairshare``; defaults to ``weight``).
    shares: float | None = None


@dataclass
class QueueTree:
    """The tree as arrays; node 0 is the root (``names[0] == ""``)."""

    names: list[str]
    parent: np.ndarray
    children: list[list[int]]
    resources: tuple[str, ...]
    deserved: np.ndarray
    limit: np.ndarray
    weight: np.ndarray
    priority: np.ndarray
    borrowing_limit: np.ndarray
    lending_limit: np.ndarray
    shares: np.ndarray
    preemption: list[dict[str, object]]
    match: list[tuple[Mapping[str, str], ...]]
    #: Whether the node was named in the queue file (False: created for a job's tenant).
    declared: np.ndarray
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._preorder: list[int] | None = None
        self.has_limits = bool(np.isfinite(self.limit).any())
        self.index = {name: i for i, name in enumerate(self.names)}
        self.depth = np.zeros(len(self.names), dtype=np.int64)
        for i in self.preorder()[1:]:
            self.depth[i] = self.depth[self.parent[i]] + 1
        self.is_leaf = np.array([not c for c in self.children], dtype=bool)
        self.is_leaf[ROOT] = False
        self.leaves = np.flatnonzero(self.is_leaf)
        # ancestors[i]: i and every node above it, up to (not including) the root
        self.ancestors: list[list[int]] = []
        for i in range(len(self.names)):
            path, n = [], i
            while n > ROOT:
                path.append(n)
                n = int(self.parent[n])
            self.ancestors.append(path)
        #: Every queue is right under the root.
        self.flat = all(len(path) <= 1 for path in self.ancestors)
        #: up[i]: ancestors[i] and the root.
        self.up = [[*path, ROOT] for path in self.ancestors]
        #: below[a, n]: n is a or under a (so values held at nodes sum up as below @ values).
        n = len(self.names)
        self.below = np.zeros((n, n)) if n <= 2048 else None
        if self.below is not None:
            for node, path in enumerate(self.up):
                self.below[path, node] = 1.0

    def __len__(self) -> int:
        return len(self.names)

    def label(self, node: int) -> str:
        return self.names[node] or "root"

    def preorder(self) -> list[int]:
        """Nodes parents-first, siblings in creation order (computed once)."""
        if self._preorder is None:
            out, stack = [], [ROOT]
            while stack:
                n = stack.pop()
                out.append(n)
                stack.extend(reversed(self.children[n]))
            self._preorder = out
        return self._preorder

    def parents(self) -> list[int]:
        """Nodes with children, parents first: the sibling groups a division walks."""
        return [n for n in self.preorder() if self.children[n]]

    def top_level(self) -> list[int]:
        return list(self.children[ROOT])

    def top_of(self, node: int) -> int:
        """The top-level queue above (or at) ``node``."""
        return self.ancestors[node][-1] if node != ROOT else ROOT

    def lca_children(self, a: int, b: int) -> tuple[int, int]:
        """The children of the lowest common ancestor of ``a`` and ``b`` on their two paths."""
        if self.flat and a != b:
            return a, b
        pa = [*reversed(self.ancestors[a])]
        pb = [*reversed(self.ancestors[b])]
        k = 0
        while k < min(len(pa), len(pb)) and pa[k] == pb[k]:
            k += 1
        return (pa[k] if k < len(pa) else a), (pb[k] if k < len(pb) else b)

    def resource(self, key: str) -> int:
        return self.resources.index(key)


def _split(path: str) -> list[str]:
    return [p for p in path.strip().strip("/").split("/") if p]


def build_tree(
    specs: Sequence[QueueSpec],
    where: str = "the queue file",
    extra_resources: Sequence[str] = (),
    created: Sequence[str] = (),
) -> QueueTree:
    """The tree of ``specs`` (parents may be named implicitly by a path, ``a/b`` under ``a``),
    with the queues ``created`` for tenants no spec names (deserved 0, weight 1, marked as not
    declared).

    Errors (naming ``where`` and the queue): a repeated queue, a negative quota (other than
    -1), an unknown resource. Warnings: children whose deserved quotas add up to more than
    their parent's (KAI does not validate it; neither do we).
    """
    keys = {GPU, *extra_resources}
    seen: dict[str, QueueSpec] = {}
    for spec in specs:
        name = "/".join(_split(spec.path))
        if not name:
            raise InputError(f"{where}: a queue has an empty name")
        if name in seen:
            raise InputError(f"{where}: queue {name!r} is defined twice")
        seen[name] = spec
        for fld in ("deserved", "limit", "borrowing_limit", "lending_limit"):
            for key in getattr(spec, fld):
                keys.add(check_resource(key, f"{where}: queue {name!r} field '{fld}'"))
    resources = resource_order(keys)
    names = [""]
    at: dict[str, int] = {"": ROOT}
    parent = [-1]
    children: list[list[int]] = [[]]
    declared = [False]
    extra = ("/".join(_split(c)) for c in created)
    for name in [*seen, *(c for c in extra if c and c not in seen)]:
        parts = name.split("/")
        for k in range(1, len(parts) + 1):
            sub = "/".join(parts[:k])
            if sub in at:
                continue
            up = at["/".join(parts[: k - 1])]
            at[sub] = len(names)
            names.append(sub)
            parent.append(up)
            children.append([])
            children[up].append(at[sub])
            declared.append(False)
        declared[at[name]] = name in seen
    n, r = len(names), len(resources)
    tree = QueueTree(
        names=names,
        parent=np.asarray(parent, dtype=np.int64),
        children=children,
        resources=resources,
        deserved=np.zeros((n, r)),
        limit=np.full((n, r), np.inf),
        weight=np.ones(n),
        priority=np.zeros(n),
        borrowing_limit=np.full((n, r), np.inf),
        lending_limit=np.full((n, r), np.inf),
        shares=np.ones(n),
        preemption=[{} for _ in range(n)],
        match=[() for _ in range(n)],
        declared=np.asarray(declared, dtype=bool),
    )
    for name, spec in seen.items():
        _fill(tree, tree.index[name], spec, where, name)
    tree.has_limits = bool(np.isfinite(tree.limit).any())
    tree.warnings.extend(oversubscription(tree))
    return tree


def _number(value: object, where: str, *, allow_all: bool = False) -> float:
    """A quota value: a number ≥ 0 (or -1 when ``allow_all``); anything else is an error."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{where} must be a number (got {value!r})")
    v = float(value)
    if not np.isfinite(v) or (v < 0 and not (allow_all and v == -1)):
        raise InputError(f"{where} must be ≥ 0{' or -1' if allow_all else ''} (got {value!r})")
    return v


def _fill(tree: QueueTree, i: int, spec: QueueSpec, where: str, name: str) -> None:
    at = f"{where}: queue {name!r}"
    for fld, arr, allow_all, none in (
        ("deserved", tree.deserved, True, None),
        ("limit", tree.limit, True, np.inf),
        ("borrowing_limit", tree.borrowing_limit, False, None),
        ("lending_limit", tree.lending_limit, False, None),
    ):
        for key, value in getattr(spec, fld).items():
            r = tree.resource(check_resource(key, f"{at} field '{fld}'"))
            v = _number(value, f"{at} field '{fld}.{key}'", allow_all=allow_all)
            arr[i, r] = none if (none is not None and v == -1) else v
    for r, key in enumerate(tree.resources):
        deserved, limit = tree.deserved[i, r], tree.limit[i, r]
        if 0 <= limit < deserved:  # KAI takes it (the limit caps the share): a warning
            tree.warnings.append(
                f"{at}: deserved {key} {deserved:g} is above its limit {limit:g} (it never "
                f"gets more than {limit:g})"
            )
    tree.weight[i] = _number(spec.weight, f"{at} field 'weight'")
    priority = spec.priority
    number = not isinstance(priority, bool) and isinstance(priority, int | float)
    if not number or not np.isfinite(priority):
        raise InputError(f"{at} field 'priority' must be a finite number (got {priority!r})")
    tree.priority[i] = float(spec.priority)
    shares = spec.shares if spec.shares is not None else spec.weight
    tree.shares[i] = _number(shares, f"{at} field 'shares'")
    for key, value in spec.preemption.items():
        allowed = PREEMPTION_KEYS.get(key)
        if allowed is not None and value not in allowed:
            raise InputError(
                f"{at} field 'preemption.{key}' must be one of {', '.join(allowed)} (got {value!r})"
            )
    tree.preemption[i] = dict(spec.preemption)
    tree.match[i] = tuple(spec.match)


def oversubscription(tree: QueueTree) -> list[str]:
    """Where children are promised more than their parent has (a warning, as in KAI)."""
    out = []
    for p in range(len(tree)):
        kids = tree.children[p]
        if p == ROOT or not kids:
            continue
        for r, key in enumerate(tree.resources):
            own = tree.deserved[p, r]
            if own < 0:
                continue
            total = float(np.clip(tree.deserved[kids, r], 0, None).sum())
            if total > own + 1e-9:
                out.append(
                    f"queue {tree.label(p)!r}: its children's deserved {key} add up to "
                    f"{total:g}, more than its own {own:g} (oversubscribed)"
                )
    return out
