"""Crux's two worked examples through the public API, and the network metrics on hand-made
timelines."""

from __future__ import annotations

import numpy as np
import pytest

from netcases import two_by_two, whole_hosts
from schedlab.network.collectives import CommSpec
from schedlab.network.crux import LinkJob, priority_factors, simulate_link
from schedlab.network.footprint import footprint
from schedlab.network.metrics import (
    compute_utilisation,
    job_metrics,
    machine_fragmentation,
    machines_used,
    network_summary,
    titan_pair_traffic,
    utilisation_by_tier,
)
from schedlab.network.routing import Routing

EXAMPLE_1 = [LinkJob(compute=2.0, send=2.0, gpus=10), LinkJob(compute=1.0, send=1.0, gpus=10)]
EXAMPLE_2 = [
    LinkJob(compute=4.0, send=1.0, overlap=0.5, gpus=2),
    LinkJob(compute=2.0, send=3.0, overlap=0.5, gpus=12),
]


@pytest.mark.parametrize(
    ("order", "iterations", "link_s", "idle_s", "utilisation"),
    [
        ([0, 1], (3, 3), [6, 3], [6, 9], 0.375),
        ([1, 0], (2, 6), [4, 6], [8, 6], 100 / 240),
    ],
)
def test_crux_example_1(order, iterations, link_s, idle_s, utilisation) -> None:
    run = simulate_link(EXAMPLE_1, order, horizon=12.0)
    assert run.iterations == iterations
    assert run.link_seconds(EXAMPLE_1) == pytest.approx(link_s)
    assert run.idle_seconds(EXAMPLE_1) == pytest.approx(idle_s)
    assert run.utilisation(EXAMPLE_1) == pytest.approx(utilisation)


def test_crux_example_1_factor_puts_job_2_higher() -> None:
    assert priority_factors(EXAMPLE_1, reference=0) == pytest.approx([1.0, 1.5])


def test_crux_example_2_idle_time_of_the_big_job() -> None:
    job1_high = simulate_link(EXAMPLE_2, [0, 1], horizon=13.0)
    job2_high = simulate_link(EXAMPLE_2, [1, 0], horizon=13.0)
    assert job1_high.not_computing(1, 13.0) == pytest.approx(7.0)
    assert job2_high.not_computing(1, 13.0) == pytest.approx(6.0)
    # Over [0, 12 s] both orders leave job 2 idle 6 s.
    assert simulate_link(EXAMPLE_2, [0, 1], 12.0).not_computing(1, 12.0) == pytest.approx(6.0)
    assert simulate_link(EXAMPLE_2, [0, 1], 12.0).iterations == (3, 2)
    assert simulate_link(EXAMPLE_2, [1, 0], 12.0).iterations == (2, 3)


def test_crux_example_2_factor_puts_job_2_higher() -> None:
    k = priority_factors(EXAMPLE_2, reference=1)
    assert k == pytest.approx([1 / 3, 1.0])
    # GPU intensity ∝ FLOPs / link time: 10/1 and 30/3 are equal, so k decides.
    assert 10 / 1 * k[0] < 30 / 3 * k[1]


def test_factor_clamp_when_the_reference_never_gains() -> None:
    # Neither job ever waits for the other: both gain nothing, k = 1.
    idle_link = [LinkJob(compute=1.0, send=0.0), LinkJob(compute=1.0, send=0.5)]
    assert priority_factors(idle_link, reference=0) == [1.0, 1.0]
    # The reference hides its sends behind 10 s of compute, job 1 loses iterations when low:
    # Δ_r = 0 < Δ_1, so job 1 gets the ceiling.
    hidden = [LinkJob(compute=10.0, send=2.0, overlap=1.0), LinkJob(compute=1.0, send=1.0)]
    assert priority_factors(hidden, reference=0) == [1.0, 10.0]


def test_job_metrics_from_a_timeline() -> None:
    topo = two_by_two()
    fp = footprint(CommSpec("hd", 400e6), whole_hosts([0, 1, 2, 3], 4), topo, Routing("spray"))
    # 100 s at T = 0.25 (C = 0.2), then 100 s at T = 0.4.
    m = job_metrics(fp, 0.2, [0.25, 0.4], 0.25, [100, 100], iterations=650)
    assert (m.hosts, m.leaves, m.collective) == (4, 2, "hd")
    assert m.comm_share == pytest.approx((0.05 / 0.25 + 0.2 / 0.4) / 2)
    assert m.net_slowdown == pytest.approx((1 + 1.6) / 2)
    assert m.cross_host_bytes == pytest.approx(2400e6 * 650)
    assert m.cross_leaf_bytes == pytest.approx(800e6 * 650)
    assert titan_pair_traffic(fp) == pytest.approx(1200e6)


def test_titan_toy_case_cross_traffic() -> None:
    """Titan's toy case: HD on 4 ranks, stage 0 K/2, stage 1 K/4, pairs counted once per stage.
    fragments-first (ranks 0–2 on M2, 3 on M4): 1.5K; titan ({0,1} on M3, {2,3} on M2): K."""
    topo = two_by_two(g=4)
    k = 1e9
    spec = CommSpec("hd", k)
    frag = footprint(spec, ((1, (0, 1, 2)), (3, (0,))), topo, Routing())
    titan = footprint(spec, ((2, (0, 1)), (1, (0, 1))), topo, Routing())
    assert titan_pair_traffic(frag) == pytest.approx(1.5 * k)
    assert titan_pair_traffic(titan) == pytest.approx(k)
    assert titan_pair_traffic(footprint(spec, whole_hosts([0], 4), topo, Routing())) == 0


def test_machines_and_fragmentation() -> None:
    host_gpus = np.array([4, 4, 4])
    busy = np.array([[4, 1, 0], [0, 0, 0], [2, 2, 2]])
    durations = [10.0, 10.0, 20.0]
    assert machines_used(busy, durations) == pytest.approx((2 * 10 + 0 + 3 * 20) / 40)
    rate, share = machine_fragmentation(busy, host_gpus, durations)
    assert rate == pytest.approx((3 / 8 * 10 + 0 + 6 / 12 * 20) / 40)
    assert share == pytest.approx((3 / 12 * 10 + 0 + 6 / 12 * 20) / 40)


def test_compute_utilisation_and_tiers() -> None:
    assert compute_utilisation([8, 4], [0.2, 0.1], [0.4, 0.1], 16) == pytest.approx((4 + 4) / 16)
    topo = two_by_two()
    util = np.zeros((2, topo.num_links))
    util[0, 0] = 0.5  # a NIC uplink
    util[1, topo.fabric_base] = 1.0  # a leaf uplink
    tiers = utilisation_by_tier(topo, util, [3.0, 1.0])
    assert tiers["host-leaf"]["max"] == pytest.approx(0.375)
    assert tiers["leaf-spine"]["max"] == pytest.approx(0.25)
    assert tiers["leaf-spine"]["mean"] == pytest.approx(0.25 / 8)
    assert "agg" not in tiers
    summary = network_summary(
        np.array([[4, 0, 0, 0], [4, 4, 0, 0]]), topo.host_gpus, [3.0, 1.0], topo, util
    )
    assert summary["machines_used"] == pytest.approx(1.25)
    assert summary["machine_frag_rate"] == 0.0
