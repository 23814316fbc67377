"""Titan's per-phase bandwidth test (step 3 of ``titan``), at the level of machine pairs.

A candidate allocation passes when, in every phase of the job's collective, each link its
transfers cross has room for the job's bytes on it at the rate the phase runs alone at line rate:
demand_{t,l} / τ_t ≤ c_l·(1 − u_l), with τ_t = max_l demand_{t,l}/c_l the phase's duration alone
and u_l the link's utilisation by the running jobs. The bytes and links are those the job's
footprint would have (same transfers, NICs and ECMP paths), summed per flow aggregate (phase,
source machine and NIC, destination machine and NIC) so that a 64-rank job costs a few dozen
routed aggregates rather than hundreds of transfers: the test runs once per candidate and a
placement may try many candidates.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from schedlab.model.snapshot import Allocation
from schedlab.network.collectives import CommSpec, Transfers, transfers
from schedlab.network.footprint import channels_of, ranks_of
from schedlab.network.routing import Routing
from schedlab.network.topology import TIER_INTRA, Topology

#: Relative slack on the test (rounding in the utilisation sums).
SLACK = 1e-9


@lru_cache(maxsize=512)
def unit_transfers(collective: str, n: int, channels: int) -> Transfers:
    """The collective's transfers on ``n`` ranks for a gradient of one byte (bytes scale)."""
    return transfers(CommSpec(collective, 1.0), n, channels)


def worst_machine(
    topo: Topology,
    util: np.ndarray,
    routing: Routing,
    job: int,
    spec: CommSpec,
    allocation: Allocation,
) -> int | None:
    """None if ``allocation`` passes the test on links loaded to ``util``; otherwise, of the
    machine pair whose aggregate meets the most overloaded link (demand / residual), the machine
    holding fewer of the job's ranks (ties: the higher index)."""
    host, gpu = ranks_of(allocation, topo)
    if len(np.unique(host)) < 2:
        return None
    tr = unit_transfers(spec.collective, len(host), channels_of(host, topo))
    if not len(tr.src) or spec.gradient_bytes <= 0:
        return None
    sh, dh, sg, dg = host[tr.src], host[tr.dst], gpu[tr.src], gpu[tr.dst]
    nbytes = tr.nbytes * spec.gradient_bytes
    nics, gpus = topo.host_nics, topo.host_gpus
    ring = tr.channel >= 0
    snic = np.where(ring, tr.channel % nics[sh], sg * nics[sh] // gpus[sh])
    dnic = np.where(ring, tr.channel % nics[dh], dg * nics[dh] // gpus[dh])
    far = sh != dh
    # Flow aggregates of the cross-machine transfers.
    h, m = topo.num_hosts, int(nics.max())
    code = (((tr.phase * h + sh) * m + snic) * h + dh) * m + dnic
    _, first, inv = np.unique(code[far], return_index=True, return_inverse=True)
    a_bytes = np.bincount(inv, nbytes[far])
    a_ph, a_sh, a_dh = tr.phase[far][first], sh[far][first], dh[far][first]
    a_snic, a_dnic = snic[far][first], dnic[far][first]
    count = len(first)
    at, fabric, share = routing.many(topo, job, a_sh, a_dh, a_snic)
    e_agg = np.concatenate([np.arange(count), np.arange(count), at])
    e_link = np.concatenate(
        [topo.nic_base[a_sh] + a_snic, topo.num_nics + topo.nic_base[a_dh] + a_dnic, fabric]
    )
    e_bytes = np.concatenate([a_bytes, a_bytes, a_bytes[at] * share])
    # Per (phase, link) demand, with the transfers inside machines (they may set τ).
    links = topo.num_links
    local = ~far
    intra = topo.intra_base[sh[local]] + sg[local]
    keys = np.concatenate([a_ph[e_agg] * links + e_link, tr.phase[local] * links + intra])
    uniq, k_inv = np.unique(keys, return_inverse=True)
    demand = np.bincount(k_inv, np.concatenate([e_bytes, nbytes[local]]))
    k_ph, k_link = np.divmod(uniq, links)
    cap = topo.link_bytes_per_s[k_link]
    tau = np.zeros(tr.num_phases)
    np.maximum.at(tau, k_ph, demand / cap)
    residual = cap * np.clip(1.0 - util[k_link], 0.0, 1.0)
    need = demand / tau[k_ph]
    ratio = np.where(
        topo.link_tier[k_link] == TIER_INTRA, 0.0, need / np.maximum(residual, 1e-12 * cap)
    )
    if not len(ratio) or ratio.max() <= 1.0 + SLACK:
        return None
    score = np.zeros(count)
    np.maximum.at(score, e_agg, ratio[k_inv[: len(e_agg)]])
    worst = int(np.argmax(score))
    a, b = int(a_sh[worst]), int(a_dh[worst])
    ranks = np.bincount(host, minlength=max(a, b) + 1)
    return max((a, b), key=lambda x: (-int(ranks[x]), x))
