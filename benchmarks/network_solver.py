"""Solve time of the network sharing model: 5,000 jobs on the 8,192-GPU vClos leaf-spine.

Builds one footprint per job (ECMP), solves every sharing rule on the whole mix from scratch,
then times incremental events (one job stops, another starts, re-solve the affected jobs).

    python benchmarks/network_solver.py [--jobs 5000] [--events 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import print_whole_process

from schedlab.network.collectives import COLLECTIVES, GRADIENT_BYTES, CommSpec
from schedlab.network.footprint import footprint
from schedlab.network.generators import parse_topology
from schedlab.network.routing import Routing
from schedlab.network.sharing import RULES, SharingSolver

SIZES = np.array([1, 2, 4, 8, 16, 32])
#: Size mixes: (name, jobs, probabilities over SIZES). Mostly single GPUs (mean ≈ 1.6) so that
#: 5,000 jobs fit; or 1,000 jobs that all communicate.
SCENARIOS = (
    ("5,000 jobs, mean 1.6 GPUs", 5000, np.array([0.8, 0.12, 0.05, 0.02, 0.008, 0.002])),
    ("1,000 jobs of 2-32 GPUs", 1000, np.array([0.0, 0.4, 0.3, 0.2, 0.08, 0.02])),
)


def place_jobs(topo, n_jobs: int, size_p: np.ndarray, rng: np.random.Generator) -> list[tuple]:
    """Jobs of 1…32 GPUs; half packed host by host from a random host, half on random free GPUs
    (fragmented, so many jobs share NICs and leaf uplinks)."""
    slots = [(h, g) for h in range(topo.num_hosts) for g in range(int(topo.host_gpus[h]))]
    taken = np.zeros(len(slots), dtype=bool)
    shuffled = rng.permutation(len(slots))
    cursor = 0  # into shuffled: everything before it is taken
    out = []
    left = len(slots)
    for _ in range(n_jobs):
        n = int(min(rng.choice(SIZES, p=size_p), left))
        if n == 0:
            break
        picked: list[int] = []
        if rng.random() < 0.5:
            i = int(rng.integers(len(slots)))
            while len(picked) < n:
                if not taken[i]:
                    picked.append(i)
                i = (i + 1) % len(slots)
        else:
            while len(picked) < n:
                if not taken[shuffled[cursor]]:
                    picked.append(int(shuffled[cursor]))
                cursor += 1
        taken[picked] = True
        left -= n
        by_host: dict[int, list[int]] = {}
        for i in picked:
            h, g = slots[i]
            by_host.setdefault(h, []).append(g)
        out.append(tuple((h, tuple(gs)) for h, gs in by_host.items()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    topo = parse_topology("vclos")
    for name, n_jobs, size_p in SCENARIOS:
        print(f"{name}:")
        run(topo, n_jobs, size_p, args.events, np.random.default_rng(args.seed))


def run(topo, n_jobs: int, size_p: np.ndarray, events: int, rng: np.random.Generator) -> None:
    t0 = time.perf_counter()
    places = place_jobs(topo, n_jobs, size_p, rng)
    models = sorted(GRADIENT_BYTES)
    collectives = [c for c in COLLECTIVES if c != "ina"]
    specs = [
        CommSpec(
            str(rng.choice(collectives)),
            GRADIENT_BYTES[str(rng.choice(models))],
            compute=float(rng.uniform(0.05, 0.5)),
            overlap=0.3,
            priority=int(rng.integers(0, 3)),
        )
        for _ in places
    ]
    t1 = time.perf_counter()
    routing = Routing("ecmp", seed=int(rng.integers(1 << 30)))
    fps = [
        footprint(s, p, topo, routing, job=j)
        for j, (s, p) in enumerate(zip(specs, places, strict=True))
    ]
    t2 = time.perf_counter()
    gpus = sum(fp.gpus for fp in fps)
    entries = sum(len(fp.links) for fp in fps)
    print(
        f"  {len(fps)} jobs on {gpus} of {topo.total_gpus} GPUs ({topo.num_links} links); "
        f"placement {t1 - t0:.2f} s, footprints {t2 - t1:.2f} s ({entries} phase×link entries)"
    )
    for rule in RULES:
        solver = SharingSolver(rule, propagate="component")
        for j, (fp, spec) in enumerate(zip(fps, specs, strict=True)):
            solver.add(j, fp, spec)
        start = time.perf_counter()
        solver.solve()
        full = time.perf_counter() - start
        full_rounds = solver.last_rounds
        solver.propagate = "affected"
        order = rng.permutation(len(fps))[:events]
        touched = rounds = 0
        start = time.perf_counter()
        for j in order.tolist():
            solver.remove(j)
            touched += len(solver.solve())
            rounds += solver.last_rounds
            solver.add(j, fps[j], specs[j])
            touched += len(solver.solve())
            rounds += solver.last_rounds
        n = 2 * len(order)
        per_event = (time.perf_counter() - start) / n
        print(
            f"    {rule:<13} full solve {full * 1000:7.1f} ms ({full_rounds:2d} rounds); "
            f"per event {per_event * 1000:6.2f} ms ({touched / n:.0f} jobs, "
            f"{rounds / n:.1f} rounds)"
        )


if __name__ == "__main__":
    main()
    print_whole_process("the solver benchmark")
