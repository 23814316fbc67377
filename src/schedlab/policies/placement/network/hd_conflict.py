"""Does a vClos placement make an HD round cross one fabric link twice? (``check_conflict``, §4.2)

vClos sends each GPU's traffic on a rail of its own: the GPU a job holds at position j on a leaf
leaves it by the job's spine j mod S (S the job's spines), over parallel link ⌊j / S⌋ mod p (p
parallel links a leaf and spine pair), and reaches the peer's leaf down the same spine and lane.
Ranks follow the allocation, leaf by leaf. In a halving-doubling round every rank exchanges with
one peer at once; when two transfers of a round leave a leaf on the same uplink, or arrive on the
same downlink, they share it and the round takes twice as long: that placement is a conflict.
With s GPUs a leaf over s spines (vClos step 3) no round ever does; whole leaves over fewer
uplinks than GPUs (step 1 on an oversubscribed fabric) do.
"""

from __future__ import annotations

import numpy as np

from schedlab.network.collectives import halving_doubling


def hd_conflict(counts: list[int], spines: int, parallel: int) -> bool:
    """True when halving-doubling over leaves giving ``counts`` GPUs each (in rank order), rails
    over ``spines`` spines with ``parallel`` links a leaf and spine pair, uses a link twice in a
    round."""
    n = sum(counts)
    if n <= 1 or len(counts) <= 1 or spines <= 0:
        return False
    leaf = np.repeat(np.arange(len(counts)), counts)
    local = np.concatenate([np.arange(c) for c in counts])
    rail = (local % spines) * parallel + (local // spines) % max(parallel, 1)
    tr = halving_doubling(n, 1.0)
    far = leaf[tr.src] != leaf[tr.dst]
    phase, src, dst = tr.phase[far], tr.src[far], tr.dst[far]
    rails = spines * max(parallel, 1)
    legs = len(counts) * rails
    # Up: (phase, source leaf, rail); down: (phase, destination leaf, rail), apart from up.
    up = (phase * legs + leaf[src] * rails + rail[src]) * 2
    down = (phase * legs + leaf[dst] * rails + rail[src]) * 2 + 1
    keys = np.concatenate([up, down])
    return len(np.unique(keys)) < len(keys)
