"""How close the fast sharing model comes to a flow-level max-min oracle, per sharing rule.

Random mixes of jobs (2…32 GPUs, ring / halving-doubling / all-to-all / parameter server) on a
64-GPU leaf-spine with ECMP; for each job the relative error (model − oracle) / oracle of its
iteration time under every rule, and whether the oracle lies between the ``interleaved`` and
``worst-case`` values. Prints median and p95 of |error| per rule and the bracket violations.

    python benchmarks/network_oracle.py [--mixes 100] [--seed 1] [--fairness flow|job] [--alpha S]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import print_whole_process

from oracle.flowsim import simulate
from oracle.mixes import model_times, random_mix, study_topology
from schedlab.network.routing import Routing
from schedlab.network.sharing import DEFAULT_ALPHA

#: Relative slack allowed when checking the [interleaved, worst-case] bracket.
BRACKET_SLACK = 1e-3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mixes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--alpha", type=float, default=DEFAULT_ALPHA, help="per-step latency, s")
    parser.add_argument(
        "--fairness",
        choices=("flow", "job"),
        default="flow",
        help="max-min between flows (default) or weighted so each job gets one share",
    )
    args = parser.parse_args()
    topo = study_topology()
    routing = Routing("ecmp", seed=args.seed)
    rng = np.random.default_rng(args.seed)
    errors: dict[str, list[float]] = {}
    contended: list[bool] = []
    below = above = jobs = 0
    worst_below = worst_above = 0.0
    started = time.perf_counter()
    for _ in range(args.mixes):
        mix = random_mix(topo, rng, routing, args.alpha)
        oracle = simulate(
            topo,
            mix.jobs,
            mix.offsets,
            args.alpha,
            routing,
            iterations=args.iterations,
            fairness=args.fairness,
        )
        model = model_times(mix, args.alpha)
        for rule, t in model.items():
            errors.setdefault(rule, []).extend(((t - oracle) / oracle).tolist())
        contended.extend((model["worst-case"] > model["isolated"] * (1 + 1e-9)).tolist())
        lo = model["interleaved"] * (1 - BRACKET_SLACK)
        hi = model["worst-case"] * (1 + BRACKET_SLACK)
        below += int((oracle < lo).sum())
        above += int((oracle > hi).sum())
        worst_below = max(worst_below, float(((lo - oracle) / oracle).max()))
        worst_above = max(worst_above, float(((oracle - hi) / oracle).max()))
        jobs += len(oracle)
    wall = time.perf_counter() - started
    print(f"{args.mixes} mixes, {jobs} jobs, {args.fairness}-fair oracle + model in {wall:.1f} s")
    shared = np.asarray(contended)
    for title, sel in (("all jobs", np.ones_like(shared)), ("jobs sharing a link", shared)):
        print(f"{title} ({int(sel.sum())}):")
        print(f"  {'rule':<14}{'median |err|':>13}{'p95 |err|':>11}{'median err':>12}{'max':>9}")
        for rule, errs in errors.items():
            e = np.asarray(errs)[sel]
            a = np.abs(e)
            print(
                f"  {rule:<14}{np.median(a):>12.2%}{np.percentile(a, 95):>11.2%}"
                f"{np.median(e):>12.2%}{a.max():>9.1%}"
            )
    print(
        f"oracle below interleaved: {below} jobs (worst {worst_below:.2%}); "
        f"above worst-case: {above} jobs (worst {worst_above:.2%})"
    )


if __name__ == "__main__":
    main()
    print_whole_process("the oracle comparison")
