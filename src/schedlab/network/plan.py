"""What a network placement reserves besides GPUs, and the ledger of who holds what.

Some placements need more than GPUs to run a job as they intend: vClos reserves the fabric links
between the job's leaves and spines, OCS-vClos sets optical circuits of its own. Such a placement
hands the scheduler a :class:`NetPlan` with the allocation; the scheduler puts it on the
``Start`` decision and the replay engine routes the job over it.

Which links and circuit ports are taken must be visible to the next placement: the one of a job
started earlier, and the one of a job planned a moment ago in the same decision round on the
scheduler's scratch copy of the cluster. So the :class:`NetLedger` lives in the
:class:`~schedlab.model.cluster.ClusterState` (``state.net``) and is copied with it: the engine
records a plan in the live state when it applies a start and drops it when the job gives its GPUs
up; a scheduler records its planned starts in its scratch copy the same way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NetPlan:
    """A job's network reservation for one run of it.

    ``links``: fabric link ids the job holds alone (both directions); the job is routed over
    them only (``source`` routing). ``circuits``: OCS circuits set up for the job alone, pairs
    (leaf switch id, spine or leaf switch id); the job is routed over them only. ``private``:
    nothing else crosses the job's fabric links, so it runs at its isolated iteration time.
    """

    links: frozenset[int] = frozenset()
    circuits: tuple[tuple[int, int], ...] = ()
    private: bool = True

    @property
    def empty(self) -> bool:
        return not self.links and not self.circuits

    def ports(self) -> Counter[int]:
        """OCS ports per switch the circuits use (a leaf-to-leaf circuit uses one at each end)."""
        used: Counter[int] = Counter()
        for a, b in self.circuits:
            used[a] += 1
            used[b] += 1
        return used


class NetLedger:
    """Links and OCS ports held by jobs: who holds each link, ports in use per switch."""

    def __init__(self) -> None:
        self.plans: dict[int, NetPlan] = {}
        self.link_owner: dict[int, int] = {}
        self.ports_used: Counter[int] = Counter()

    def copy(self) -> NetLedger:
        other = NetLedger()
        other.plans = dict(self.plans)
        other.link_owner = dict(self.link_owner)
        other.ports_used = Counter(self.ports_used)
        return other

    def conflict(self, job: int, plan: NetPlan) -> str | None:
        """Why ``plan`` cannot be held by ``job`` now (a link another job holds), else None.
        Port counts are checked by the topology when circuits are set, not here."""
        if job in self.plans:
            return f"job {job} already holds a network plan"
        for link in plan.links:
            owner = self.link_owner.get(link)
            if owner is not None:
                return f"link {link} is reserved by job {owner}"
        return None

    def hold(self, job: int, plan: NetPlan) -> None:
        """Record ``plan`` as ``job``'s; ValueError when a link is already held."""
        why = self.conflict(job, plan)
        if why is not None:
            raise ValueError(why)
        self.plans[job] = plan
        for link in plan.links:
            self.link_owner[link] = job
        self.ports_used.update(plan.ports())

    def release(self, job: int) -> NetPlan | None:
        """Drop ``job``'s plan (if any) and return it."""
        plan = self.plans.pop(job, None)
        if plan is None:
            return None
        for link in plan.links:
            del self.link_owner[link]
        self.ports_used.subtract(plan.ports())
        for switch in [s for s, n in self.ports_used.items() if n <= 0]:
            del self.ports_used[switch]
        return plan

    def held_links(self) -> set[int]:
        return set(self.link_owner)
