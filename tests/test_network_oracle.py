"""The flow-level oracle against the fast model: the same numbers alone, the same bytes per link,
and the spec's validation on a handful of random mixes (the full study is
``benchmarks/network_oracle.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from netcases import two_by_two, whole_hosts
from oracle.flowsim import Flow, collective_rounds, job_fair_weights, maxmin_rates, simulate
from oracle.mixes import model_times, random_mix, study_topology
from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import footprint
from schedlab.network.routing import Routing
from schedlab.network.sharing import DEFAULT_ALPHA, iteration_times


def test_water_filling_by_hand() -> None:
    """Links of capacity 1 and 3; flows a (link 0), b (links 0, 1), c (link 1), d (link 1):
    link 0 fills at 1/2 for a and b; c and d share the 2.5 left on link 1."""
    cap = np.array([1.0, 3.0])
    paths = [np.array([0]), np.array([0, 1]), np.array([1]), np.array([1])]
    assert maxmin_rates(paths, cap) == pytest.approx([0.5, 0.5, 1.25, 1.25])


def test_weighted_water_filling_gives_each_job_one_share() -> None:
    """Job 0 has two flows on link 0, job 1 one: per flow 2/3 vs 1/3, per job 1/2 vs 1/2."""
    cap = np.array([1.0])
    flows = [Flow(0, np.array([0]), 1.0, 1.0), Flow(0, np.array([0]), 1.0, 1.0)]
    flows.append(Flow(1, np.array([0]), 1.0, 1.0))
    paths = [f.links for f in flows]
    assert maxmin_rates(paths, cap) == pytest.approx([1 / 3] * 3)
    weights = job_fair_weights(flows)
    assert weights.tolist() == [0.5, 0.5, 1.0]
    assert maxmin_rates(paths, cap, weights) == pytest.approx([0.25, 0.25, 0.5])


@pytest.mark.parametrize("collective", ["ring", "hd", "ps", "a2a"])
def test_alone_the_oracle_equals_the_model(collective: str) -> None:
    topo = two_by_two()
    spec = CommSpec(collective, 400e6, compute=0.1, overlap=0.3)
    place = whole_hosts([0, 1, 2, 3], 4)
    fp = footprint(spec, place, topo, Routing("ecmp"))
    model = iteration_times([(fp, spec)], "isolated", DEFAULT_ALPHA)[0]
    oracle = simulate(topo, [(spec, place)], [0.0], DEFAULT_ALPHA, Routing("ecmp"), iterations=3)
    # The model charges α per a2a pair step (N − 1), the oracle once per round.
    slack = 15 * DEFAULT_ALPHA if collective == "a2a" else 1e-9
    assert oracle[0] == pytest.approx(model, abs=slack)


@pytest.mark.parametrize("collective", ["ring", "hd", "ps", "a2a"])
def test_oracle_rounds_move_the_footprints_bytes(collective: str) -> None:
    """Summing the oracle's independently generated rounds per rank pair gives the same
    cross-host bytes as the footprint, on a scattered 6-rank placement."""
    topo = two_by_two()
    place = ((0, (1,)), (2, (0, 3)), (1, (2,)), (3, (0, 1)))
    spec = CommSpec(collective, 300e6)
    fp = footprint(spec, place, topo, Routing("ecmp"))
    hosts = [h for h, gs in place for _ in gs]
    cross = sum(
        b for rnd in collective_rounds(spec, 6) for s, d, b, _ in rnd if hosts[s] != hosts[d]
    )
    assert cross == pytest.approx(fp.cross_host_bytes)


def test_validation_on_random_mixes() -> None:
    """Spec §3.5 on 8 mixes: the oracle never beats the interleaved ideal (beyond α
    accounting), rarely exceeds worst-case, and random-phase's median error is ≤ 10 %."""
    topo = study_topology()
    routing = Routing("ecmp", seed=1)
    rng = np.random.default_rng(1)
    errors, above, jobs = [], 0, 0
    for _ in range(8):
        mix = random_mix(topo, rng, routing, DEFAULT_ALPHA)
        oracle = simulate(topo, mix.jobs, mix.offsets, DEFAULT_ALPHA, routing, iterations=6)
        model = model_times(mix, DEFAULT_ALPHA)
        assert np.all(oracle >= model["interleaved"] * (1 - 5e-3))
        above += int((oracle > model["worst-case"] * (1 + 1e-3)).sum())
        errors.extend(np.abs(model["random-phase"] - oracle) / oracle)
        jobs += len(oracle)
    assert above <= 0.1 * jobs
    assert np.median(errors) <= 0.10
