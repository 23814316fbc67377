"""``slurm-classic`` and ``slurm-fairtree``: Slurm's fair-share factors, as job order.

Usage is billing (GPUs held, by default) decayed with ``half_life`` (Slurm's
``PriorityDecayHalfLife``, 7 days) and updated every ``calc_period`` (``PriorityCalcPeriod``,
5 minutes): ``U_H = U_now + D·U_prev + D²…`` with ``D = 0.5^{calc/half_life}``; it rolls up
the account tree.

Classic (``classic_fair_share.shtml``): ``S`` = product of ``shares / Σ siblings`` down the path,
``U`` = usage over the total, ``UE = U + (UE_parent − U)·S_child/S_siblings`` (the top level:
``UE = U``), ``F = 2^{−UE/S/d}`` (``d`` = ``dampening``, 1).

Fair Tree (``fair_tree.shtml``): per level ``LF = S/U`` with ``S`` and ``U`` as fractions of the
siblings' (no usage: infinite); the tree is walked depth-first, children by ``LF`` descending;
users (leaves) get ``rank/N`` with ranks from N down; tied sibling leaves share a rank.

Queues are tried by their leaf's factor, highest first; ``limit`` is ``GrpTRES``. Fair share
never preempts in Slurm: these policies do not reclaim.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from schedlab.tenancy.config import parse_duration
from schedlab.tenancy.policy import SharePolicy
from schedlab.tenancy.state import TenantState
from schedlab.tenancy.tree import ROOT, QueueTree


def normalized_shares(tree: QueueTree) -> np.ndarray:
    """``S``: the product of ``shares / Σ siblings`` down each path (the root: 1)."""
    out = np.ones(len(tree))
    for node in tree.preorder()[1:]:
        sibs = tree.children[int(tree.parent[node])]
        total = float(tree.shares[sibs].sum())
        frac = float(tree.shares[node]) / total if total > 0 else 0.0
        out[node] = out[int(tree.parent[node])] * frac
    return out


def classic_factors(
    tree: QueueTree, usage: np.ndarray, dampening: float = 1.0, total: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Effective usage ``UE`` and factor ``F`` of every node, from usage rolled up the tree
    (``U`` = usage over ``total``, by default the root's: the whole cluster's)."""
    total = float(usage[ROOT]) if total is None else float(total)
    u = usage / total if total > 0 else np.zeros(len(tree))
    s = normalized_shares(tree)
    ue = np.zeros(len(tree))
    for node in tree.preorder()[1:]:
        parent = int(tree.parent[node])
        if parent == ROOT:
            ue[node] = u[node]
            continue
        sibs = tree.children[parent]
        sib_shares = float(tree.shares[sibs].sum())
        frac = float(tree.shares[node]) / sib_shares if sib_shares > 0 else 0.0
        ue[node] = u[node] + (ue[parent] - u[node]) * frac
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(s > 0, 2.0 ** (-ue / np.where(s > 0, s, 1) / dampening), 0.0)
    f[ROOT] = 1.0
    return ue, f


def level_fairshare(tree: QueueTree, usage: np.ndarray) -> np.ndarray:
    """Fair Tree's ``LF = S/U`` per node, shares and usage as fractions of the siblings'."""
    lf = np.full(len(tree), np.inf)
    for node in tree.preorder()[1:]:
        sibs = tree.children[int(tree.parent[node])]
        s_total = float(tree.shares[sibs].sum())
        u_total = float(usage[sibs].sum())
        s = float(tree.shares[node]) / s_total if s_total > 0 else 0.0
        u = float(usage[node]) / u_total if u_total > 0 else 0.0
        lf[node] = np.inf if u <= 0 else s / u
    return lf


def fairtree_factors(tree: QueueTree, usage: np.ndarray) -> np.ndarray:
    """Every leaf's Fair Tree factor ``rank/N`` (the others: 0)."""
    lf = level_fairshare(tree, usage)
    ordered: list[list[int]] = []  # groups of tied leaves, best first

    def walk(node: int) -> None:
        kids = sorted(tree.children[node], key=lambda c: (-lf[c], c))
        i = 0
        while i < len(kids):
            tied = [kids[i]]
            while i + len(tied) < len(kids) and lf[kids[i + len(tied)]] == lf[kids[i]]:
                tied.append(kids[i + len(tied)])
            i += len(tied)
            leaves = [c for c in tied if not tree.children[c]]
            if leaves:
                ordered.append(leaves)
            for c in tied:
                if tree.children[c]:
                    walk(c)

    walk(ROOT)
    n = sum(len(g) for g in ordered)
    out = np.zeros(len(tree))
    rank = n
    for group in ordered:
        for leaf in group:
            out[leaf] = rank / n if n else 0.0
        rank -= len(group)
    return out


class _SlurmFairShare(SharePolicy):
    settings: ClassVar[dict[str, Any]] = {
        "half_life": "7d",
        "calc_period": "5m",
        "dampening": 1.0,
    }

    def configure(self, options: Mapping[str, Any]) -> None:
        at = f"{self.source or 'tenancy'}: [tenancy.{self.name}]"
        self.half_life = parse_duration(options["half_life"], f"{at} half_life")
        self.calc = parse_duration(options["calc_period"], f"{at} calc_period")
        if not self.calc > 0:
            raise self.setting_error("calc_period", options["calc_period"], "must be > 0")
        d = options["dampening"]
        if isinstance(d, bool) or not isinstance(d, int | float) or not 1 <= d < math.inf:
            raise self.setting_error("dampening", d, "must be a finite number ≥ 1")
        self.dampening = float(d)
        self.time_based = True  # type: ignore[misc]

    def reset(self, tree: QueueTree, capacity: np.ndarray) -> None:
        super().reset(tree, capacity)
        self.raw = np.zeros(len(tree))  # decayed GPU-seconds per node
        self.last_calc: float | None = None
        self.held = np.zeros(len(tree))
        self.since = 0.0
        self.factor = np.ones(len(tree))

    def observe(self, now: float, alloc: np.ndarray) -> None:
        if self.last_calc is None:
            self.last_calc = now
            self.since = now
        while now >= self.last_calc + self.calc:
            end = self.last_calc + self.calc
            decay = 0.5 ** (self.calc / self.half_life) if self.half_life > 0 else 1.0
            self.raw = self.raw * decay + self.held * (end - self.since)
            self.since = end
            self.last_calc = end
            self.factor = self._factors()
        self.raw = self.raw + self.held * (now - self.since)
        self.since = now
        self.held = alloc[:, 0].astype(np.float64).copy()

    def usage(self, now: float) -> np.ndarray | None:
        total = self.raw[ROOT]
        return (self.raw / total if total > 0 else self.raw * 0.0)[:, None]

    def next_tick(self, now: float) -> float:
        return (self.last_calc or now) + self.calc

    def export_state(self) -> dict[str, Any]:
        return {
            "raw": dict(zip(self.tree.names, self.raw.tolist(), strict=True)),
            "last_calc": self.last_calc,
            "since": self.since,
        }

    def import_state(self, state: Mapping[str, Any]) -> None:
        raw = state.get("raw") or {}
        self.raw = np.array([float(raw.get(n, 0.0)) for n in self.tree.names])
        self.last_calc = state.get("last_calc")
        self.since = float(state.get("since") or 0.0)
        self.factor = self._factors()

    def _factors(self) -> np.ndarray:
        raise NotImplementedError

    def shares(self, st: TenantState) -> np.ndarray:
        """The normalised shares of the cluster (Slurm's ``S``) stand in for a fair share."""
        return normalized_shares(st.tree)[:, None] * st.capacity[None, :]

    def node_key(self, st: TenantState, fair: np.ndarray, node: int, req: np.ndarray) -> tuple:
        return (-float(self.factor[node]), node)

    def status(self, st: TenantState, fair: np.ndarray) -> dict[str, np.ndarray]:
        return {"fairshare": self.factor.copy()}


class SlurmClassic(_SlurmFairShare):
    name = "slurm-classic"
    summary = "Slurm classic fair-share factor (decayed usage over shares)"

    def _factors(self) -> np.ndarray:
        rolled = self.raw
        return classic_factors(self.tree, rolled, self.dampening)[1]


class SlurmFairTree(_SlurmFairShare):
    name = "slurm-fairtree"
    summary = "Slurm Fair Tree: level fair-share, depth-first ranking"

    def _factors(self) -> np.ndarray:
        return fairtree_factors(self.tree, self.raw)
