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
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from schedlab.network.topology import Topology


@dataclass(frozen=True, slots=True)
class NetPlan:
    """A job's network reservation for one run of it.

    ``links``: fabric link ids the job holds alone (both directions); the job is routed over
    them only (``source`` routing). ``circuits``: OCS circuits set up for the job alone, pairs
    (leaf switch id, spine or leaf switch id); the job is routed over them only. ``private``:
    nothing else crosses the job's fabric links, so it runs at its isolated iteration time.
    ``moves``: running jobs whose circuits this start re-wires, each with its new plan (its GPUs
    stay where they are). They change hands with the start's own plan, in one step, so no
    placement in between ever sees a port counted twice or not at all; each moved job pauses
    for the OCS reconfiguration delay.
    """

    links: frozenset[int] = frozenset()
    circuits: tuple[tuple[int, int], ...] = ()
    private: bool = True
    moves: tuple[tuple[int, NetPlan], ...] = ()

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


def ocs_port_limits(topo: Topology) -> dict[int, int]:
    """OCS ports per switch of ``topo`` (uplink ports of each leaf, ports of each spine); empty
    without an OCS."""
    from schedlab.network.topology import LEAF, SPINE

    if topo.ocs is None:
        return {}
    limits = {int(s): topo.ocs.leaf_ports for s in (topo.switch_level == LEAF).nonzero()[0]}
    limits.update({int(s): topo.ocs.spine_ports for s in (topo.switch_level == SPINE).nonzero()[0]})
    return limits


class NetLedger:
    """Links and OCS ports held by jobs: who holds each link, ports in use per switch.

    ``port_limits``: OCS ports per switch; when given, a plan that would use more ports than a
    switch has is refused like a link another job holds (empty: ports are not checked here).
    """

    def __init__(self, port_limits: Mapping[int, int] | None = None) -> None:
        self.plans: dict[int, NetPlan] = {}
        self.link_owner: dict[int, int] = {}
        self.ports_used: Counter[int] = Counter()
        self.port_limits: Mapping[int, int] = port_limits or {}

    def copy(self) -> NetLedger:
        other = NetLedger(self.port_limits)
        other.plans = dict(self.plans)
        other.link_owner = dict(self.link_owner)
        other.ports_used = Counter(self.ports_used)
        return other

    def conflict(self, job: int, plan: NetPlan) -> str | None:
        """Why ``plan`` cannot be held by ``job`` now, else None: a link another job holds, a
        moved job that holds no plan, or (with ``port_limits``) more ports than a switch has."""
        if job in self.plans:
            return f"job {job} already holds a network plan"
        moved = dict(plan.moves)
        for other, new in plan.moves:
            if other == job or other not in self.plans:
                return f"job {other}'s circuits cannot move: it holds no network plan"
            if new.moves:
                return f"job {other}'s new plan moves other jobs"
        for link in plan.links | frozenset(x for new in moved.values() for x in new.links):
            owner = self.link_owner.get(link)
            if owner is not None and owner not in moved:
                return f"link {link} is reserved by job {owner}"
        if self.port_limits:
            used = Counter(self.ports_used)
            for other, new in moved.items():
                used.subtract(self.plans[other].ports())
                used.update(new.ports())
            used.update(plan.ports())
            for switch, count in sorted(used.items()):
                limit = self.port_limits.get(switch, 0)
                if count > limit:
                    return f"switch {switch} would use {count} OCS ports of its {limit}"
        return None

    def hold(self, job: int, plan: NetPlan) -> None:
        """Record ``plan`` as ``job``'s, and the new plans of the jobs it moves; ValueError when
        :meth:`conflict` finds a reason not to."""
        why = self.conflict(job, plan)
        if why is not None:
            raise ValueError(why)
        for other, new in plan.moves:
            self.release(other)
            self._hold(other, new)
        self._hold(job, replace(plan, moves=()) if plan.moves else plan)

    def _hold(self, job: int, plan: NetPlan) -> None:
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
