"""``ocs-vclos``: vClos on an optical circuit switch — circuits made for each job (§4.3).

With an OCS between leaves and spines any leaf uplink port can be joined to any spine port or to
another leaf's uplink port, so only port counts matter: a job never waits for a spine set that
reaches exactly its leaves, as vClos does on fixed wiring. Its circuits are its own (no other job
crosses them) and are set up when it starts, which costs the OCS reconfiguration delay; they are
torn down when it stops. First success wins, for r GPUs and gpl GPUs a leaf:

1. one leaf: the leaf with the fewest free GPUs ≥ r; no circuits;
2. a leaf pair (r even, r/2 ≤ gpl): the two leaves with r/2 free GPUs and r/2 free uplink ports
   and the fewest free GPUs, joined by r/2 leaf-to-leaf circuits;
3. one spine: for s = gpl/2, gpl/4, …, 1 dividing r, m = r/s leaves with ≥ s free GPUs and ≥ s
   free ports (fewest free GPUs first) and the spine with the fewest free ports ≥ r; s circuits
   from each leaf to it;
4. whole leaves (r a multiple of gpl): the lowest-index empty leaves and the smallest power of
   two k of spines with ≥ r/k free ports each (fewest free first); gpl/k circuits from each leaf
   to each of them.

5. ``migrate=true``, whole leaves only: when step 4 fails but the spines' free ports add up to
   r, running jobs' circuits are repacked onto other spines to free k of them (see
   :mod:`~schedlab.policies.placement.network.ocs_repack`); the moved jobs keep their GPUs and
   pause for the OCS reconfiguration delay, as the new job does.

Circuits take ports in index order. Ports in use are those of running jobs' circuits (the
cluster state's ledger); the wiring the run starts from is not counted: under this placement
every fabric path a job uses is a circuit of its own. Inside a host a job's GPUs are taken in
aligned power-of-two groups (:mod:`~schedlab.policies.placement.network.buddy`).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from schedlab.errors import InputError
from schedlab.model.cluster import ClusterState
from schedlab.model.snapshot import Allocation
from schedlab.network.plan import NetPlan
from schedlab.network.topology import SPINE
from schedlab.policies.api import REPLAY, PolicyContext
from schedlab.policies.placement.job_placement import JobPlacementPolicy, JobRequest
from schedlab.policies.placement.network.buddy import buddy_free_gpus
from schedlab.policies.placement.network.leaves import LeafIndex, by_key
from schedlab.policies.placement.network.ocs_repack import repack

#: (leaf, GPUs from it) pairs and the circuits (switch, switch) set up for the job.
Choice = tuple[list[tuple[int, int]], list[tuple[int, int]]]


class OcsVClosPlacement(JobPlacementPolicy):
    """OCS-vClos: private circuits per job, set up at its start."""

    name = "ocs-vclos"
    summary = "vClos on an optical circuit switch: private circuits per job (arXiv 2308.05692)"
    engines = frozenset({REPLAY})
    makes_plans = True
    #: It runs only where the topology has an optical circuit switch.
    needs_ocs: ClassVar[bool] = True

    def __init__(self, migrate: bool = False) -> None:
        if not isinstance(migrate, bool):
            raise ValueError(f"migrate must be true or false (got {migrate!r})")
        self.migrate = migrate

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        topo = ctx.topology
        assert topo is not None
        if topo.ocs is None:
            raise InputError(
                f"placement '{self.name}' needs a topology with an optical circuit switch "
                f"(e.g. --topology ocs), not {topo.name!r}"
            )
        self.leaves = LeafIndex(topo)
        caps = set(self.leaves.capacity.tolist())
        if len(caps) != 1:
            raise InputError(f"placement '{self.name}' needs leaves of equal GPU counts")
        self.gpl = caps.pop()
        self.leaf_switch = topo.leaves
        self.spine_switch = np.flatnonzero(topo.switch_level == SPINE)
        self.leaf_ports = topo.ocs.leaf_ports
        self.spine_ports = topo.ocs.spine_ports

    def place_job(self, request: JobRequest, state: ClusterState) -> Allocation | None:
        host_free, leaf_free = self.leaves.free(state, request, self.model_bits)
        if int(leaf_free.sum()) < request.num_gpus:
            return None
        used = state.net.ports_used if state.net is not None else {}
        leaf_ports = self.leaf_ports - np.array([used.get(int(s), 0) for s in self.leaf_switch])
        spine_ports = self.spine_ports - np.array([used.get(int(s), 0) for s in self.spine_switch])
        choice = self.choose(request.num_gpus, leaf_free, leaf_ports, spine_ports)
        moves: tuple[tuple[int, NetPlan], ...] = ()
        if choice is None and self.migrate and state.net is not None:
            found = self.choose_moving(request.num_gpus, leaf_free, leaf_ports, spine_ports, state)
            if found is None:
                return None
            choice, moves = found
        if choice is None:
            return None
        counts, circuits = choice
        allocation = self.leaves.allocation(state, host_free, counts, buddy_free_gpus)
        plan = NetPlan(circuits=tuple(circuits), moves=moves)
        return self.planned(request.job, allocation, plan)

    def choose_moving(
        self,
        r: int,
        leaf_free: np.ndarray,
        leaf_ports: np.ndarray,
        spine_ports: np.ndarray,
        state: ClusterState,
    ) -> tuple[Choice, tuple[tuple[int, NetPlan], ...]] | None:
        """Step 5: whole leaves over spines freed by moving running jobs' circuits."""
        gpl = self.gpl
        if r % gpl:
            return None
        leaves = self.empty_leaves(leaf_free, leaf_ports)[: r // gpl]
        if len(leaves) < r // gpl:
            return None
        assert state.net is not None
        found = repack(r, gpl, self.spine_switch, spine_ports, self.spine_ports, state.net.plans)
        if found is None:
            return None
        targets, moved = found
        per = gpl // len(targets)
        circuits = [
            (int(self.leaf_switch[leaf]), int(self.spine_switch[p]))
            for leaf in leaves
            for p in targets
            for _ in range(per)
        ]
        return ([(leaf, gpl) for leaf in leaves], circuits), tuple(moved.items())

    def empty_leaves(self, leaf_free: np.ndarray, leaf_ports: np.ndarray) -> list[int]:
        """Leaves with every GPU and every uplink port free, by index."""
        return np.flatnonzero((leaf_free == self.gpl) & (leaf_ports >= self.gpl)).tolist()

    def choose(
        self, r: int, leaf_free: np.ndarray, leaf_ports: np.ndarray, spine_ports: np.ndarray
    ) -> Choice | None:
        """Leaves (with GPU counts) and circuits for ``r`` GPUs, or None: the job waits."""
        gpl, leaf_id, spine_id = self.gpl, self.leaf_switch, self.spine_switch
        fits = np.flatnonzero(leaf_free >= r)
        if len(fits):  # 1. one leaf
            return [(int(by_key(leaf_free, fits)[0]), r)], []
        half = r // 2
        if r % 2 == 0 and half <= gpl:  # 2. a leaf pair
            ok = np.flatnonzero((leaf_free >= half) & (leaf_ports >= half))
            if len(ok) >= 2:
                a, b = sorted(by_key(leaf_free, ok)[:2].tolist())
                return [(a, half), (b, half)], [(int(leaf_id[a]), int(leaf_id[b]))] * half
        s = gpl // 2
        while s >= 1:  # 3. one spine
            if r % s == 0:
                m = r // s
                ok = np.flatnonzero((leaf_free >= s) & (leaf_ports >= s))
                spines = np.flatnonzero(spine_ports >= r)
                if len(ok) >= m and len(spines):
                    chosen = sorted(by_key(leaf_free, ok)[:m].tolist())
                    spine = int(spine_id[by_key(spine_ports, spines)[0]])
                    circuits = [(int(leaf_id[leaf]), spine) for leaf in chosen for _ in range(s)]
                    return [(leaf, s) for leaf in chosen], circuits
            s //= 2
        if r % gpl == 0:  # 4. whole leaves over k spines
            leaves = self.empty_leaves(leaf_free, leaf_ports)[: r // gpl]
            k = 1
            while len(leaves) == r // gpl and k <= len(spine_id) and gpl % k == 0:
                spines = np.flatnonzero(spine_ports >= r // k)
                if len(spines) >= k:
                    chosen = by_key(spine_ports, spines)[:k]
                    per = gpl // k
                    circuits = [
                        (int(leaf_id[leaf]), int(spine_id[p]))
                        for leaf in leaves
                        for p in chosen.tolist()
                        for _ in range(per)
                    ]
                    return [(leaf, gpl) for leaf in leaves], circuits
                k *= 2
        return None
