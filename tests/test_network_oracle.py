"""The flow-level oracle against the fast model: the same numbers alone, the same bytes per link,
and the spec's validation on a handful of random mixes (the full study is
``benchmarks/network_oracle.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from netcases import two_by_two, whole_hosts
from schedlab.experiments.oracle.flowsim import (
    Flow,
    collective_rounds,
    job_fair_weights,
    maxmin_rates,
    simulate,
)
from schedlab.experiments.oracle.mixes import model_times, random_mix, study_topology
from schedlab.experiments.oracle_study import GATE_MEDIAN, GATE_P95, Task, run_task
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
    accounting), rarely exceeds worst-case, and random-phase's median error on the jobs that
    share a link is ≤ 10 % (on all jobs a rule ignoring contention would pass too)."""
    topo = study_topology()
    routing = Routing("ecmp", seed=1)
    rng = np.random.default_rng(1)
    errors, shared, above, jobs = [], [], 0, 0
    for _ in range(8):
        mix = random_mix(topo, rng, routing, DEFAULT_ALPHA)
        oracle = simulate(topo, mix.jobs, mix.offsets, DEFAULT_ALPHA, routing, iterations=6)
        model = model_times(mix, DEFAULT_ALPHA)
        assert np.all(oracle >= model["interleaved"] * (1 - 5e-3))
        above += int((oracle > model["worst-case"] * (1 + 1e-3)).sum())
        errors.extend(np.abs(model["random-phase"] - oracle) / oracle)
        shared.extend(model["worst-case"] > model["isolated"] * (1 + 1e-9))
        jobs += len(oracle)
    assert above <= 0.1 * jobs
    sel = np.asarray(shared)
    assert sel.sum() >= 10
    assert np.median(np.asarray(errors)[sel]) <= 0.10


@pytest.mark.parametrize(("oversub", "per_link"), [(4.0, 4), (8.0, 8)])
def test_crowded_uplinks_gate_on_the_jobs_that_share_them(oversub: float, per_link: int) -> None:
    """Four and eight jobs per oversubscribed uplink: random-phase within the study's gates on
    the jobs that share a link; the same gates fail the rule that ignores contention."""
    got = run_task(Task(oversub, per_link, mixes=3, seed=1))
    sel = got["shared"]
    assert sel.sum() == 3 * per_link  # every job shares its uplinks
    rp = np.abs(got["random-phase"][sel])
    assert np.median(rp) <= GATE_MEDIAN and np.percentile(rp, 95) <= GATE_P95
    iso = np.abs(got["isolated"][sel])
    assert np.median(iso) > GATE_MEDIAN


def test_at_saturation_random_phase_fills_the_link_exactly() -> None:
    """Four communication-only jobs on one link: each gets a quarter of it, as under
    worst-case (the spec's formula alone gives σ = 1 + 3/σ ≈ 2.30 and an over-full link)."""
    topo = two_by_two(g=1, spines=1)
    spec = CommSpec("ring", 125e6, compute=0.0)
    jobs = []
    for a, b in ((0, 2), (1, 3), (0, 3), (1, 2)):
        place = ((a, (0,)), (b, (0,)))
        jobs.append((footprint(spec, place, topo, Routing("ecmp")), spec))
    rp = iteration_times(jobs, "random-phase", 0.0)
    worst = iteration_times(jobs, "worst-case", 0.0)
    np.testing.assert_allclose(rp, worst, rtol=1e-4)
