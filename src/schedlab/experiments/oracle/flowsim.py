"""A round-based, flow-level max-min simulator of data-parallel collectives: the validation oracle
for the fast sharing model in ``schedlab.network.sharing``.

Separate code on purpose: the rounds (ring steps, halving-doubling stages, all-to-all, push and
pull) are generated here from the ranks, not taken from the footprint, and bandwidth is shared by
max-min fairness between flows (a flow = job, phase, src host, src NIC, dst host, dst NIC),
recomputed at every flow start and end. Only the topology, the placement and the ECMP path of
each flow come from the library; under ``spray`` routing a flow is split evenly over every
shortest switch path, which the oracle enumerates itself (one sub-flow per path). Slow (pure
Python events, numpy water-filling); meant for ≤ 64 GPUs.

Each job loops: compute C; at (1 − o)·C its collective starts; each round starts its flows
together and ends with the last one, plus α; the iteration ends at max(compute end, collective
end) + κ. Job j starts at a given offset.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from schedlab.model.snapshot import Allocation
from schedlab.network.collectives import CommSpec
from schedlab.network.routing import Routing
from schedlab.network.topology import Topology

_EPS = 1e-9


@dataclass(eq=False)
class Flow:
    job: int
    links: np.ndarray
    remaining: float
    total: float


@dataclass
class _JobState:
    spec: CommSpec
    rounds: list[list[tuple[np.ndarray, float]]]  # per round: (links, bytes) flows
    start: float = 0.0  # current iteration's start
    comm_end: float = 0.0
    next_round: int = 0
    live_flows: int = 0
    timer: float = 0.0  # next scheduled action
    action: str = "start"  # start | comm | round | finish
    durations: list[float] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)


def _ranks(placement: Allocation) -> tuple[list[int], list[int]]:
    hosts = [h for h, gpus in placement for _ in gpus]
    gpus = [g for _, gs in placement for g in gs]
    return hosts, gpus


def collective_rounds(spec: CommSpec, n: int) -> list[list[tuple[int, int, float, int]]]:
    """Rounds of (src rank, dst rank, bytes, ring channel or -1); channels are filled in later
    for rings (one ring per channel)."""
    s = spec.gradient_bytes
    if n <= 1 or s == 0:
        return []
    if spec.collective == "ring":
        step = [(r, (r + 1) % n, s / n, 0) for r in range(n)]
        return [list(step) for _ in range(2 * (n - 1))]
    if spec.collective == "hd":
        base = 1
        while base * 2 <= n:
            base *= 2
        stages = []
        k = 1
        while k < base:
            stages.append([(r, r ^ k, s / (2 * k), -1) for r in range(base)])
            k *= 2
        rounds = stages + stages[::-1]
        if base < n:
            fold = [(base + i, i, s, -1) for i in range(n - base)]
            unfold = [(i, base + i, s, -1) for i in range(n - base)]
            rounds = [fold, *rounds, unfold]
        return rounds
    if spec.collective == "a2a":
        return [[(a, b, s / n, -1) for a in range(n) for b in range(n) if a != b]]
    if spec.collective == "ps":
        return [[(w, 0, s, -1) for w in range(1, n)], [(0, w, s, -1) for w in range(1, n)]]
    raise ValueError(f"the oracle does not simulate {spec.collective!r}")


def _flows_of_round(
    transfers: list[tuple[int, int, float, int]],
    hosts: list[int],
    gpus: list[int],
    channels: int,
    topo: Topology,
    routing: Routing,
    job: int,
) -> list[tuple[np.ndarray, float]]:
    """Aggregate a round's transfers into flows with their link paths."""
    agg: dict[tuple, float] = {}
    for src, dst, nbytes, chan in transfers:
        hs, hd = hosts[src], hosts[dst]
        if hs == hd:
            key: tuple = ("intra", topo.intra(hs, gpus[src]))
            agg[key] = agg.get(key, 0.0) + nbytes
            continue
        if chan >= 0:  # a ring step: split over the job's channels, one NIC each
            for c in range(channels):
                sn, dn = c % int(topo.host_nics[hs]), c % int(topo.host_nics[hd])
                key = (hs, sn, hd, dn)
                agg[key] = agg.get(key, 0.0) + nbytes / channels
        else:
            key = (hs, topo.nic_of_gpu(hs, gpus[src]), hd, topo.nic_of_gpu(hd, gpus[dst]))
            agg[key] = agg.get(key, 0.0) + nbytes
    flows = []
    for key, nbytes in agg.items():
        if key[0] == "intra":
            flows.append((np.array([key[1]]), nbytes))
            continue
        hs, sn, hd, dn = key
        if routing.mode == "spray":
            middles = _switch_paths(topo, int(topo.host_leaf[hs]), int(topo.host_leaf[hd]))
        else:
            middles = [[link for link, _ in routing.fabric_shares(topo, job, hs, hd, sn)]]
        for middle in middles:
            path = [topo.nic_up(hs, sn), *middle, topo.nic_down(hd, dn)]
            flows.append((np.array(path), nbytes / len(middles)))
    return flows


def _switch_paths(topo: Topology, a: int, b: int) -> list[list[int]]:
    """Every shortest path of fabric links from switch ``a`` to switch ``b``."""
    if a == b:
        return [[]]
    out = []
    for link in topo.next_hops(a, b).tolist():
        for rest in _switch_paths(topo, topo.link_far_end(link), b):
            out.append([link, *rest])
    return out


def maxmin_rates(
    paths: list[np.ndarray], capacity: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """Weighted max-min fair rates (bytes/s) of flows over directed links, by water-filling:
    every unfrozen flow grows at ``weight`` × the common level until a link fills."""
    n = len(paths)
    rate = np.zeros(n)
    if n == 0:
        return rate
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    owner = np.concatenate([np.full(len(p), i) for i, p in enumerate(paths)])
    link = np.concatenate(paths)
    links, inv = np.unique(link, return_inverse=True)
    room = capacity[links].astype(np.float64).copy()
    frozen = np.zeros(n, dtype=bool)
    while not frozen.all():
        live = ~frozen[owner]
        demand = np.bincount(inv[live], w[owner[live]], minlength=len(links))
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(demand > 0, room / demand, np.inf)
        delta = float(share.min())
        rate[~frozen] += delta * w[~frozen]
        room -= delta * demand
        full = np.zeros(len(links), dtype=bool)
        full[share <= delta * (1 + 1e-9)] = True
        hit = np.zeros(n, dtype=bool)
        hit[owner[live & full[inv]]] = True
        frozen |= hit
    return rate


def job_fair_weights(flows: list[Flow]) -> np.ndarray:
    """Weights that make sharing fair per job rather than per flow: a flow of job j gets 1/k,
    k = the most flows j has on any one link right now."""
    most: dict[int, int] = {}
    for job in {f.job for f in flows}:
        links = np.concatenate([f.links for f in flows if f.job == job])
        most[job] = int(np.unique(links, return_counts=True)[1].max())
    return np.array([1.0 / most[f.job] for f in flows])


def simulate(
    topo: Topology,
    jobs: list[tuple[CommSpec, Allocation]],
    offsets: list[float],
    alpha: float,
    routing: Routing,
    iterations: int = 8,
    max_events: int = 2_000_000,
    fairness: str = "flow",
) -> np.ndarray:
    """Mean iteration time of every job over its iterations that start once all jobs run, until
    each has ``iterations`` of them. ``fairness='job'`` weights flows so that each job, not each
    flow, gets an equal share of a link (the premise of the ``worst-case`` rule)."""
    capacity = topo.link_bytes_per_s
    states = []
    for j, (spec, placement) in enumerate(jobs):
        hosts, gpus = _ranks(placement)
        channels = min(int(topo.host_nics[h]) for h in set(hosts))
        rounds = [
            _flows_of_round(r, hosts, gpus, channels, topo, routing, j)
            for r in collective_rounds(spec, len(hosts))
        ]
        states.append(_JobState(spec, rounds, timer=offsets[j]))
    warm = max(offsets)
    flows: list[Flow] = []
    rates = np.zeros(0)
    now = 0.0

    def measured(st: _JobState) -> int:
        return sum(1 for s in st.starts if s >= warm)

    for _ in range(max_events):
        if all(measured(st) >= iterations for st in states):
            break
        t_flow = min(
            (now + f.remaining / r for f, r in zip(flows, rates, strict=True) if r > 0),
            default=np.inf,
        )
        t_timer = min(st.timer for st in states)
        t = min(t_flow, t_timer)
        for f, r in zip(flows, rates, strict=True):
            f.remaining -= r * (t - now)
        now = t
        changed = False
        done = [f for f in flows if f.remaining <= _EPS * f.total]
        if done:
            changed = True
            flows = [f for f in flows if f.remaining > _EPS * f.total]
            for f in done:
                st = states[f.job]
                st.live_flows -= 1
                if st.live_flows == 0:
                    st.timer, st.action = now + alpha, "round"
        for j, st in enumerate(states):
            while st.timer <= now + 1e-15:
                changed |= _step(st, j, now, flows)
        if changed:
            weights = job_fair_weights(flows) if fairness == "job" else None
            rates = maxmin_rates([f.links for f in flows], capacity, weights)
    else:
        raise RuntimeError("oracle did not converge within its event budget")
    out = []
    for st in states:
        picked = [d for s, d in zip(st.starts, st.durations, strict=True) if s >= warm]
        out.append(float(np.mean(picked[:iterations])))
    return np.array(out)


def _step(st: _JobState, j: int, now: float, flows: list[Flow]) -> bool:
    """Run the job's due action; True when flows started."""
    spec = st.spec
    if st.action == "start":
        st.start = now
        st.next_round = 0
        st.timer, st.action = now + (1 - spec.overlap) * spec.compute, "comm"
        return False
    if st.action in ("comm", "round"):
        if st.next_round < len(st.rounds):
            for links, nbytes in st.rounds[st.next_round]:
                flows.append(Flow(j, links, nbytes, nbytes))
            st.live_flows = len(st.rounds[st.next_round])
            st.next_round += 1
            st.timer, st.action = np.inf, "round"
            return True
        st.comm_end = now
        end = max(st.start + spec.compute, st.comm_end) + spec.penalty
        st.timer, st.action = end, "finish"
        return False
    # finish: record and start the next iteration at once
    st.starts.append(st.start)
    st.durations.append(now - st.start)
    st.timer, st.action = now, "start"
    return False
