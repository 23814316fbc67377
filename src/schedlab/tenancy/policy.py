"""The share-policy contract: fair shares, queue order, admission gate and reclaim rule.

A share policy never places a job and never touches an engine: the tenant scheduler
(:mod:`schedlab.tenancy.scheduler`) asks it, at every decision, for

1. ``shares(state)``: each queue's fair share of each resource (its own notion: KAI's fair
   share, Kueue's nominal quota, Slurm's share of the cluster, ...);
2. ``queue_key(state, fair, leaf, job)``: the order in which queues' head jobs are tried;
3. ``admit(state, fair, leaf, job)``: None if the head may start when it fits, else why not
   (quota, limit, borrowing);
4. ``select_victims(...)``: which running jobs of other queues a blocked head may take
   (by default: ``reclaimer``, ``victim_candidates`` in order, ``allow_victim`` for each,
   ``quota_fits`` for the set).

The same object serves replay, sweeps and both live engines: only the state's source differs.
Time-based policies also keep usage (:meth:`observe`) and ask to be woken every ``tick``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from schedlab.errors import InputError
from schedlab.tenancy.state import TenantState
from schedlab.tenancy.tree import QueueTree

#: Why a running job was reclaimed (metrics group by these).
PRIORITY, DESERVED, FAIR_SHARE, BORROW = "priority", "deserved", "fair-share", "borrow"
REASONS = (PRIORITY, DESERVED, FAIR_SHARE, BORROW)


class SharePolicy:
    """Base of every share policy; defaults describe a policy that never reclaims."""

    name: ClassVar[str]
    summary: ClassVar[str]
    #: Settings the queue file's ``[tenancy.<name>]`` table may hold, with their defaults.
    settings: ClassVar[dict[str, Any]] = {}
    #: Whether the policy keeps usage over time (and wants a wake-up every ``tick`` seconds).
    time_based: ClassVar[bool] = False
    #: A queue's key depends only on the nodes of its own path (so a start elsewhere leaves
    #: it as it was, and the scheduler keeps it).
    local_keys: ClassVar[bool] = True
    #: Whether every answer depends only on the decision state (allocation, shares, running
    #: jobs, the job asked about), never on the time: a queue that could start nothing keeps
    #: failing while that state stays, and the scheduler tries only the queues that changed.
    repeatable: ClassVar[bool] = False

    def __init__(self, settings: Mapping[str, Any] | None = None, source: str = "") -> None:
        given = dict(settings or {})
        unknown = set(given) - set(self.settings)
        if unknown:
            allowed = ", ".join(sorted(self.settings)) or "none"
            raise InputError(
                f"{source or 'tenancy'}: [tenancy.{self.name}] has an unknown setting "
                f"{sorted(unknown)[0]!r} (settings: {allowed})"
            )
        self.options = {**self.settings, **given}
        self.source = source
        self.configure(self.options)

    def configure(self, options: Mapping[str, Any]) -> None:
        """Check and take the settings (an InputError names the setting and value)."""

    def setting_error(self, key: str, value: object, what: str) -> InputError:
        return InputError(
            f"{self.source or 'tenancy'}: [tenancy.{self.name}] setting {key!r} {what} "
            f"(got {value!r})"
        )

    # -- life cycle ------------------------------------------------------------------------
    def reset(self, tree: QueueTree, capacity: np.ndarray) -> None:
        """Start on a tree and a cluster (replay: once; serve: every cycle, state imported)."""
        self.tree = tree
        self.capacity = capacity

    def observe(self, now: float, alloc: np.ndarray) -> None:
        """The allocation held from ``now`` on (time-based policies accumulate usage)."""

    def usage(self, now: float) -> np.ndarray | None:
        """Usage over capacity per node and resource at ``now`` (None: not time-based)."""
        return None

    def next_tick(self, now: float) -> float:
        """When the policy wants to decide again even if nothing happens."""
        return float("inf")

    def export_state(self) -> dict[str, Any]:
        return {}

    def import_state(self, state: Mapping[str, Any]) -> None:
        """Take back :meth:`export_state` after a reset."""

    def ceiling(self) -> np.ndarray:
        """The most each node could ever hold, per resource (``[nodes, resources]``): the
        cluster, and every limit on the way up. A job asking more is turned away."""
        tree = self.tree
        out = np.empty((len(tree), len(tree.resources)))
        for node in range(len(tree)):
            out[node] = self.capacity
            for n in tree.ancestors[node]:
                out[node] = np.minimum(out[node], tree.limit[n])
        return out

    # -- the four questions ----------------------------------------------------------------
    def shares(self, st: TenantState) -> np.ndarray:
        """Fair share per node and resource (default: the deserved quota)."""
        return np.clip(st.tree.deserved, 0, None) + 0.0

    def queue_key(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> list:
        """Where ``job`` of ``leaf`` goes in the order of queues: ``[(node, key), ...]`` from
        the top level down; two leaves compare by the keys of their ancestors just below
        their common ancestor (lower first)."""
        req = st.demand[job]
        return [(n, self.node_key(st, fair, n, req)) for n in reversed(st.tree.ancestors[leaf])]

    def node_key(self, st: TenantState, fair: np.ndarray, node: int, req: np.ndarray) -> tuple:
        """One queue's key with a job of demand ``req``: default, allocation with the job over
        fair share (lower first), then the older queue."""
        return (_over(st.alloc[node] + req, fair[node]), node)

    def admit(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> str | None:
        """Why ``job`` of ``leaf`` may not start even where it fits (None: it may): by default
        a queue or ancestor ``limit`` it would pass."""
        return limit_reason(st, leaf, job)

    def reclaimer(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> bool:
        """May ``job`` of ``leaf`` take resources from other queues' running jobs?"""
        return False

    def victim_candidates(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int
    ) -> list[int]:
        """Running jobs ``job`` may take from, in the order they are tried."""
        return []

    def allow_victim(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int
    ) -> bool:
        """May ``victim`` be taken now (``st`` already without the victims chosen so far)?"""
        return True

    def quota_fits(self, st: TenantState, fair: np.ndarray, leaf: int, job: int) -> bool:
        """Does ``job`` pass its queue's gate in ``st`` (with the victims chosen so far gone)?
        By default: no limit on its path is passed."""
        return limit_reason(st, leaf, job) is None

    def may_reclaim_any(self, st: TenantState, fair: np.ndarray, smallest: np.ndarray) -> bool:
        """Could any leaf reclaim for a job of ``smallest[leaf]`` GPUs (its smallest waiting)?
        A quick test that lets a decision with no free room end at once; by default: yes
        whenever the policy reclaims at all."""
        return type(self).reclaimer is not SharePolicy.reclaimer

    def select_victims(
        self,
        st: TenantState,
        fair: np.ndarray,
        leaf: int,
        job: int,
        fits: Callable[[list[int]], bool],
    ) -> list[int] | None:
        """The running jobs to reclaim so that ``job`` starts (None: no set works).

        ``fits(victims)`` says whether the placement finds room with ``victims`` gone. The
        default takes :meth:`victim_candidates` in order, skipping those
        :meth:`allow_victim` refuses, until the quota and the placement fit. ``st`` is left
        as it was found.
        """
        candidates = self.worth_trying(st, fair, leaf, job, fits)
        if candidates is None:
            return None
        chosen: list[int] = []
        found = False
        for v in candidates:
            if not self.allow_victim(st, fair, leaf, job, v):
                continue
            chosen.append(v)
            st.give_back(v)
            if self.quota_fits(st, fair, leaf, job) and fits(chosen):
                found = True
                break
        for v in chosen:
            st.take(v)
        return chosen if found else None

    def worth_trying(
        self,
        st: TenantState,
        fair: np.ndarray,
        leaf: int,
        job: int,
        fits: Callable[[list[int]], bool],
    ) -> list[int] | None:
        """:meth:`victim_candidates` in order, or None when the quick tests already say no set
        can work (no right to reclaim, :meth:`cannot_make_room`, or not even all the candidates
        together make room): what every selection starts from."""
        if not self.reclaimer(st, fair, leaf, job) or self.cannot_make_room(
            st, fair, leaf, job, fits
        ):
            return None
        candidates = self.victim_candidates(st, fair, leaf, job)
        possible = getattr(fits, "possible", None)
        if possible is not None and not possible(candidates):
            return None
        return candidates

    def cannot_make_room(
        self, st: TenantState, fair: np.ndarray, leaf: int, job: int, fits: object
    ) -> bool:
        """A quick test a policy may offer before its victims are ordered and tried: True when
        no set of victims its rule could accept makes room (typically ``fits.possible`` on a
        superset of them); False when it cannot tell."""
        return False

    def reason(self, st: TenantState, fair: np.ndarray, leaf: int, job: int, victim: int) -> str:
        """Why ``victim`` is reclaimed for ``job`` (one of :data:`REASONS`)."""
        within = (st.alloc[leaf] + st.demand[job] <= st.tree.deserved[leaf] + 1e-9).all()
        return DESERVED if within else FAIR_SHARE

    def status(self, st: TenantState, fair: np.ndarray) -> dict[str, np.ndarray]:
        """Extra per-node figures for ``serve status`` and the report (e.g. Kueue's DRS)."""
        return {}


def _over(value: np.ndarray, share: np.ndarray) -> float:
    """max over resources of value / share (a zero share: value × 1000, as KAI)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(share > 0, value / np.where(share > 0, share, 1), value * 1000.0)
    return float(ratio.max()) if ratio.size else 0.0


def limit_reason(st: TenantState, leaf: int, job: int) -> str | None:
    """The first queue on ``leaf``'s path whose ``limit`` the job would pass, as a reason."""
    tree = st.tree
    if not tree.has_limits:
        return None
    req = st.demand[job]
    for node in tree.ancestors[leaf]:
        over = st.alloc[node] + req > tree.limit[node] + 1e-9
        if over.any():
            r = int(np.flatnonzero(over)[0])
            return (
                f"queue {tree.label(node)!r} would pass its {tree.resources[r]} limit "
                f"{tree.limit[node, r]:g}"
            )
    return None


def goes_before(a: list, b: list) -> bool:
    """Whether queue key path ``a`` ([(node, key), ...] from the top level down) goes before
    ``b``: compared from where the two paths part (just below their common ancestor), level
    by level while the keys tie."""
    parted = False
    for (na, ka), (nb, kb) in zip(a, b, strict=False):
        if na != nb:
            parted = True
        if parted and ka != kb:
            return bool(ka < kb)
    return len(a) < len(b)


def first_queue(keys: dict[int, list]) -> int:
    """The leaf whose key path goes first."""
    best = None
    for leaf, path in keys.items():
        if best is None or goes_before(path, keys[best]):
            best = leaf
    assert best is not None
    return best
