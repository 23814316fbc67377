"""Source-routed reserved paths for replay's ``--net-routing source``.

When a job takes an allocation, it gets one shortest path per ordered pair of its leaves, chosen
hop by hop from the source leaf: among the next-hop links on a shortest path, the ones no other
job holds come first, and among those the least utilised (then the lowest id). The links are
reserved for the job until it gives the allocation up, so another job's flows never cross them.
When every candidate at a hop is held by another job there is no free shortest path: the job
takes the candidate held by the fewest jobs and shares it (counted in :attr:`Reservations.
shared_hops`), so a job always runs; it is then slowed by the sharing rule like any shared link.
A job's own pairs may share its own links (a ring's pairs out of one leaf use one uplink).
"""

from __future__ import annotations

import numpy as np

from schedlab.network.topology import Topology


class Reservations:
    """Which jobs hold which fabric links, and how often a reservation found no free path."""

    def __init__(self) -> None:
        self.holders: dict[int, set[int]] = {}  # link → jobs holding it
        self.held: dict[int, list[int]] = {}  # job → links it holds
        self.shared_hops = 0  # hops where every candidate was already held by another job

    def reserve(
        self, topo: Topology, job: int, leaves: list[int], util: np.ndarray
    ) -> dict[tuple[int, int], tuple[int, ...]]:
        """Reserve and return a path for every ordered pair of ``leaves`` (``util``: each link's
        current utilisation, the load that breaks ties between free candidates)."""
        paths: dict[tuple[int, int], tuple[int, ...]] = {}
        mine = self.held.setdefault(job, [])
        for a in leaves:
            for b in leaves:
                if a == b:
                    continue
                path = []
                x = a
                while x != b:
                    link = self._pick(topo.next_hops(x, b).tolist(), job, util)
                    path.append(link)
                    holders = self.holders.setdefault(link, set())
                    if job not in holders:
                        holders.add(job)
                        mine.append(link)
                    x = topo.link_far_end(link)
                paths[(a, b)] = tuple(path)
        return paths

    def release(self, job: int) -> None:
        """The job gives up every link it holds."""
        for link in self.held.pop(job, []):
            holders = self.holders[link]
            holders.discard(job)
            if not holders:
                del self.holders[link]

    def _pick(self, candidates: list[int], job: int, util: np.ndarray) -> int:
        def others(link: int) -> int:
            holders = self.holders.get(link, ())
            return len(holders) - (job in holders)

        best = min(candidates, key=lambda link: (others(link), float(util[link]), link))
        if others(best) > 0:
            self.shared_hops += 1
        return best
