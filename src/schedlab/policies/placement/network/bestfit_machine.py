"""``bestfit-machine``: ElasticFlow's placement as the Titan paper (ICNP '24) compares with it.

A job goes to the machine with the fewest free GPUs that still holds it whole; a job no machine
holds takes whole idle machines (lowest index first) and puts the rest on the best-fitting other
machine. It never looks at the network and never fills fragments with part of a job, which is
why it keeps the most machines busy.
"""

from __future__ import annotations

import numpy as np

from schedlab.policies.placement.network.machines import BlockPlacement, Blocks, Machines, best_fit


def bestfit_machine_blocks(m: Machines, num_gpus: int) -> Blocks | None:
    """The machines and rank counts :class:`BestFitMachine` chooses, or None (the job waits)."""
    allowed = m.free > 0
    node = best_fit(m.free, allowed, num_gpus)
    if node >= 0:
        return [(node, num_gpus)]
    blocks: Blocks = []
    left = num_gpus
    for node in np.flatnonzero(m.idle).tolist():
        if m.free[node] <= left:
            blocks.append((node, int(m.free[node])))
            left -= int(m.free[node])
        if left == 0:
            return blocks
    rest = allowed.copy()
    rest[[n for n, _ in blocks]] = False
    node = best_fit(m.free, rest, left)
    return [*blocks, (node, left)] if node >= 0 else None


class BestFitMachine(BlockPlacement):
    name = "bestfit-machine"
    summary = (
        "fewest free GPUs that hold the job, else whole idle machines + best fit "
        "(ElasticFlow as compared in Titan, ICNP '24)"
    )
    rule = staticmethod(bestfit_machine_blocks)
