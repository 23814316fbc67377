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
#: Up to this many new flow aggregates are routed one by one rather than as arrays.
FEW_PATHS = 8


@lru_cache(maxsize=512)
def unit_transfers(collective: str, n: int, channels: int) -> Transfers:
    """The collective's transfers on ``n`` ranks for a gradient of one byte (bytes scale)."""
    return transfers(CommSpec(collective, 1.0), n, channels)


def bandwidth_test(
    topo: Topology,
    util: np.ndarray,
    routing: Routing,
    job: int,
    spec: CommSpec,
    allocation: Allocation,
    routes: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]] | None = None,
) -> tuple[int | None, np.ndarray]:
    """The machine to drop, and the links whose utilisation the verdict read.

    The machine is None if ``allocation`` passes the test on links loaded to ``util``;
    otherwise, of the machine pair whose aggregate meets the most overloaded link (demand /
    residual), the machine holding fewer of the job's ranks (ties: the higher index). The
    verdict holds as long as the links read keep their utilisation (intra-host links are never
    judged, so never read).

    ``routes`` caches the job's fabric path per (source machine, destination machine, NIC)
    between calls: a placement tests several candidates that share most machine pairs."""
    none = np.zeros(0, dtype=np.int64)
    host, gpu = ranks_of(allocation, topo)
    if len(np.unique(host)) < 2:
        return None, none
    tr = unit_transfers(spec.collective, len(host), channels_of(host, topo))
    if not len(tr.src) or spec.gradient_bytes <= 0:
        return None, none
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
    at, fabric, share = _fabric_paths(
        topo, routing, job, a_sh, a_dh, a_snic, {} if routes is None else routes
    )
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
    judged = topo.link_tier[k_link] != TIER_INTRA
    read = np.unique(k_link[judged])
    ratio = np.where(judged, need / np.maximum(residual, 1e-12 * cap), 0.0)
    if not len(ratio) or ratio.max() <= 1.0 + SLACK:
        return None, read
    score = np.zeros(count)
    np.maximum.at(score, e_agg, ratio[k_inv[: len(e_agg)]])
    worst = int(np.argmax(score))
    a, b = int(a_sh[worst]), int(a_dh[worst])
    ranks = np.bincount(host, minlength=max(a, b) + 1)
    return max((a, b), key=lambda x: (-int(ranks[x]), x)), read


def _fabric_paths(
    topo: Topology,
    routing: Routing,
    job: int,
    src: np.ndarray,
    dst: np.ndarray,
    nic: np.ndarray,
    routes: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(aggregate index, fabric link, share) as ``routing.many`` gives them, routing only the
    (src, dst, NIC) keys ``routes`` does not hold yet (and adding them to it)."""
    keys = list(zip(src.tolist(), dst.tolist(), nic.tolist(), strict=True))
    missing = sorted({k for k in keys if k not in routes})
    if len(missing) <= FEW_PATHS:  # one at a time costs less than the array set-up
        for key in missing:
            hops = routing.fabric_shares(topo, job, *key)
            routes[key] = (
                np.array([link for link, _ in hops], dtype=np.int64),
                np.array([share for _, share in hops], dtype=np.float64),
            )
    else:
        ms, md, mn = (np.array(c, dtype=np.int64) for c in zip(*missing, strict=True))
        at, link, share = routing.many(topo, job, ms, md, mn)
        order = np.argsort(at, kind="stable")
        bounds = np.searchsorted(at[order], np.arange(len(missing) + 1))
        for i, key in enumerate(missing):
            sel = order[bounds[i] : bounds[i + 1]]
            routes[key] = (link[sel], share[sel])
    paths = [routes[k] for k in keys]
    lengths = [len(p[0]) for p in paths]
    if not sum(lengths):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    return (
        np.repeat(np.arange(len(keys)), lengths),
        np.concatenate([p[0] for p in paths]).astype(np.int64),
        np.concatenate([p[1] for p in paths]).astype(np.float64),
    )
