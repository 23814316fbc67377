"""Random job mixes on a 64-GPU leaf-spine, for comparing the fast model with the oracle."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.model.snapshot import Allocation
from schedlab.network.collectives import GRADIENT_BYTES, CommSpec
from schedlab.network.footprint import Footprint, footprint
from schedlab.network.generators import leafspine
from schedlab.network.routing import Routing
from schedlab.network.sharing import RULES, iteration_times
from schedlab.network.topology import Topology

SIZES = (2, 4, 8, 16, 32)
ORACLE_COLLECTIVES = ("ring", "hd", "a2a", "ps")


def study_topology() -> Topology:
    """4 leaves × 2 hosts × 8 GPUs (64 GPUs), one 100 Gbps NIC per host, 2 spines, 1:1."""
    return leafspine(leaves=4, spines=2, hosts_per_leaf=2, g=8, m=1, nic_gbps=100.0)


@dataclass(frozen=True)
class Mix:
    jobs: list[tuple[CommSpec, Allocation]]
    offsets: list[float]
    footprints: list[Footprint]


def random_mix(topo: Topology, rng: np.random.Generator, routing: Routing, alpha: float) -> Mix:
    """Jobs of 2…32 GPUs until the next does not fit (or ~90 % is used); each either packed host
    by host from a random host or on random free GPUs; random collective, model, C and o."""
    free = {h: list(range(int(topo.host_gpus[h]))) for h in range(topo.num_hosts)}
    jobs: list[tuple[CommSpec, Allocation]] = []
    target = rng.uniform(0.5, 0.95) * topo.total_gpus
    used = 0
    while used < target:
        n = int(rng.choice(SIZES))
        if n > sum(len(v) for v in free.values()):
            break
        if rng.random() < 0.5:
            start = int(rng.integers(topo.num_hosts))
            order = [(start + i) % topo.num_hosts for i in range(topo.num_hosts)]
            picked = [(h, g) for h in order for g in free[h]][:n]
        else:
            pool = [(h, g) for h in free for g in free[h]]
            picked = [pool[i] for i in sorted(rng.choice(len(pool), n, replace=False))]
        for h, g in picked:
            free[h].remove(g)
        by_host: dict[int, list[int]] = {}
        for h, g in picked:
            by_host.setdefault(h, []).append(g)
        place = tuple((h, tuple(gs)) for h, gs in by_host.items())
        model = str(rng.choice(sorted(GRADIENT_BYTES)))
        spec = CommSpec(
            str(rng.choice(ORACLE_COLLECTIVES)),
            GRADIENT_BYTES[model] * (0.25 if n >= 16 else 1.0),
            compute=float(rng.uniform(0.02, 0.3)),
            overlap=float(rng.choice([0.0, 0.3, 0.5])),
        )
        jobs.append((spec, place))
        used += n
    fps = [footprint(s, p, topo, routing, job=j) for j, (s, p) in enumerate(jobs)]
    iso = iteration_times(list(zip(fps, [s for s, _ in jobs], strict=True)), "isolated", alpha)
    offsets = [float(rng.uniform(0, t)) for t in iso]
    return Mix(jobs, offsets, fps)


def model_times(mix: Mix, alpha: float) -> dict[str, np.ndarray]:
    """Iteration time of every job of ``mix`` under every sharing rule."""
    pairs = list(zip(mix.footprints, [s for s, _ in mix.jobs], strict=True))
    return {rule: iteration_times(pairs, rule, alpha) for rule in RULES if rule != "priority"}


#: Oversubscription and jobs per leaf uplink of the crowded regimes.
OVERSUBSCRIPTION = (1.0, 2.0, 4.0, 8.0)
JOBS_PER_LINK = (1, 2, 4, 8)
#: GPUs per host in the crowded regimes (each job: one host on each leaf).
CROWDED_GPUS = 2


def crowded_topology(oversub: float, per_link: int) -> Topology:
    """2 leaves × ``per_link`` hosts of :data:`CROWDED_GPUS` GPUs, one 100 Gbps NIC each, 2
    spines; each leaf's two uplinks carry 1/``oversub`` of its hosts' NIC capacity (at 1:1 an
    uplink is as fast as half the leaf's NICs)."""
    full = per_link * 100.0 / 2
    return leafspine(
        leaves=2,
        spines=2,
        hosts_per_leaf=per_link,
        g=CROWDED_GPUS,
        m=1,
        nic_gbps=100.0,
        uplink_gbps=full,
        oversub=oversub,
    )


def crowded_mix(
    topo: Topology, rng: np.random.Generator, routing: Routing, alpha: float, per_link: int
) -> Mix:
    """``per_link`` jobs, job i on host i of leaf 0 and host i of leaf 1 (all their GPUs), so
    with ``spray`` routing every leaf uplink carries every job. Ring or halving-doubling, a
    model's gradient, compute 0.1–4 × the collective's time alone (from light to heavy duty),
    overlap 0 or 0.3."""
    jobs: list[tuple[CommSpec, Allocation]] = []
    g = int(topo.host_gpus[0])
    for i in range(per_link):
        place = ((i, tuple(range(g))), (per_link + i, tuple(range(g))))
        model = str(rng.choice(sorted(GRADIENT_BYTES)))
        spec = CommSpec(str(rng.choice(["ring", "hd"])), GRADIENT_BYTES[model], compute=1.0)
        alone = footprint(spec, place, topo, routing, job=i).comm_time(alpha)
        spec = CommSpec(
            spec.collective,
            spec.gradient_bytes,
            compute=alone * float(rng.uniform(0.1, 4.0)),
            overlap=float(rng.choice([0.0, 0.3])),
        )
        jobs.append((spec, place))
    fps = [footprint(s, p, topo, routing, job=j) for j, (s, p) in enumerate(jobs)]
    iso = iteration_times(list(zip(fps, [s for s, _ in jobs], strict=True)), "isolated", alpha)
    offsets = [float(rng.uniform(0, t)) for t in iso]
    return Mix(jobs, offsets, fps)
