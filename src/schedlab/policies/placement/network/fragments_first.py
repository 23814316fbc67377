"""``fragments-first``: HiveD's placement as the Titan paper (ICNP '24) describes it.

Partly used machines are filled before an idle one is touched: the remainder goes whole to the
non-idle machine with the fewest free GPUs that holds it, else the non-idle machine with the most
free GPUs is filled and the rest placed again; idle machines come last, by the same rule. It
keeps idle machines idle at the price of spreading jobs over fragments (cross-machine traffic).
"""

from __future__ import annotations

from schedlab.policies.placement.network.machines import (
    BlockPlacement,
    fragments_first_blocks,
)


class FragmentsFirst(BlockPlacement):
    name = "fragments-first"
    summary = (
        "non-idle machines first (best fit, else the one with most free), idle ones last "
        "(HiveD as compared in Titan, ICNP '24)"
    )
    rule = staticmethod(fragments_first_blocks)
