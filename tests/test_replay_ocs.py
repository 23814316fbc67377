"""OCS reconfiguration in replay: a policy re-wires the circuits, jobs are re-rated and paused."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.replay import PolicyError, ReplayEngine, ReplayRecord
from schedlab.experiments.replay_network import network_model, topology_cluster
from schedlab.model.snapshot import Decision, Reconfigure, Start
from schedlab.perf.models import TraceDuration
from schedlab.policies.registry import make_placement
from schedlab.traces.formats import read_jobs
from test_replay_engine import Scripted

# Three leaves of two 1-GPU hosts each (h0 h1 | h2 h3 | h4 h5), one spine, 100 Gbps circuits.
# Switch ids: L0 = 0, L1 = 1, L2 = 2, S0 = 3.
OCS = "ocs:leaves=3,spines=1,hosts_per_leaf=2,g=1,m=1,nic_gbps=100"
L0, L1, L2, S0 = 0, 1, 2, 3
SPINE_ONLY = ((L0, S0), (L1, S0), (L2, S0))
# The same plus a direct L0–L2 circuit: job b (L0 ↔ L2) gets it to itself.
WITH_DIRECT = (*SPINE_ONLY, (L0, L2))

# Ring on 2 ranks: 125 MB each way per iteration, 10 ms on a 12.5 GB/s link, α = 10 µs × 2 steps;
# C = 30 ms, no overlap. Under worst-case the two jobs share L0 ↔ S0 (σ = 2).
JOBS = """job_id,submit_time,num_gpus,duration,collective,gradient_bytes,compute_time,overlap
a,0,2,300,ring,125e6,0.03,0
b,0,2,150,ring,125e6,0.03,0
"""
C = 0.03
T_ISO = C + 0.010 + 2 * 10e-6  # 40.02 ms
T_SHARED = C + 2 * 0.010 + 2 * 10e-6  # 50.02 ms
# Trace durations are run times alone on the compact placement (h0 + h1, both on L0): the same
# ring through L0, 40.02 ms per iteration. A job runs at T_REF/T of its trace speed.
T_REF = T_ISO
A_HOSTS = ((0, (0,)), (2, (0,)))  # h0 (L0) + h2 (L1)
B_HOSTS = ((1, (0,)), (4, (0,)))  # h1 (L0) + h4 (L2)


def _run(tmp_path: Path, policy: Scripted, topology: str = OCS) -> ReplayRecord:
    trace = tmp_path / "jobs.csv"
    trace.write_text(JOBS)
    jobs = read_jobs(trace).jobs
    topo, cluster = topology_cluster(topology, None)
    perf = TraceDuration()
    net = network_model(
        topo,
        jobs.sorted_by_submit(),
        perf,
        rule="worst-case",
        routing="ecmp",
        seed=0,
        trace=str(trace),
        fmt=None,
        builtin=False,
    )
    engine = ReplayEngine(cluster, jobs, policy, make_placement("bestfit"), perf, network=net)
    return engine.run()


def _start(t1: float, change: Sequence[Decision]) -> Scripted:
    first: list[Decision] = [Reconfigure(SPINE_ONLY), Start(0, A_HOSTS), Start(1, B_HOSTS)]
    return Scripted({0.0: first, t1: change})


def test_a_dedicated_circuit_hand_computed(tmp_path: Path) -> None:
    """Both jobs share L0 ↔ S0 until t1 = 60 s; then b gets the direct L0–L2 circuit and pauses
    for the 2 s delay, while a (its ports untouched) runs on alone without pausing."""
    t1, delay = 60.0, 2.0
    rec = _run(tmp_path, _start(t1, [Reconfigure(WITH_DIRECT, delay)]))
    done = t1 * T_REF / T_SHARED  # trace seconds of work both have done by t1
    end_a = t1 + (300 - done) * T_ISO / T_REF
    end_b = t1 + delay + (150 - done) * T_ISO / T_REF
    assert rec.end_time[0] == pytest.approx(end_a, rel=1e-9)
    assert rec.end_time[1] == pytest.approx(end_b, rel=1e-9)
    # By hand: done = 60 × 40.02 / 50.02 = 48.0048 s of work; b ends at 62 + 101.9952 = 163.9952
    # s (alone again, at its trace speed), a at 60 + 251.9952 = 311.9952 s.
    assert end_b == pytest.approx(163.9952, abs=1e-4)
    assert end_a == pytest.approx(311.9952, abs=1e-4)
    # Decision points: 0, t1, b's end, a's end — the completions issued before t1 are stale.
    assert rec.decision_points == 4
    assert rec.network is not None
    assert rec.network.net_slowdown[0] < T_SHARED / T_ISO
    # The new circuit appears in the record's topology and carried b's traffic.
    topo = rec.network.topology
    assert len(topo.fabric_src) == 2 * len(WITH_DIRECT)
    assert len(rec.network.link_util_avg) == topo.num_links
    direct = [
        topo.fabric_base + i
        for i, (src, dst) in enumerate(zip(topo.fabric_src, topo.fabric_dst, strict=True))
        if {int(src), int(dst)} == {L0, L2}
    ]
    assert len(direct) == 2 and (rec.network.link_util_avg[direct] > 0).all()


def test_the_topology_delay_is_the_default(tmp_path: Path) -> None:
    """Without an explicit delay the topology's (``delay=0.5`` here) is charged."""
    rec = _run(tmp_path, _start(60.0, [Reconfigure(WITH_DIRECT)]), OCS + ",delay=0.5")
    done = 60.0 * T_REF / T_SHARED
    assert rec.end_time[1] == pytest.approx(60.5 + (150 - done) * T_ISO / T_REF, rel=1e-9)


def test_re_wiring_to_the_same_circuits_changes_nothing(tmp_path: Path) -> None:
    """No port moves: nobody pauses and every speed stays what it was."""
    plain = _run(tmp_path, _start(60.0, []))
    same = _run(tmp_path, _start(60.0, [Reconfigure(SPINE_ONLY, 5.0)]))
    assert same.end_time.tolist() == pytest.approx(plain.end_time.tolist(), rel=1e-12)
    assert plain.end_time[1] == pytest.approx(150 * T_SHARED / T_REF, rel=1e-9)


def test_tearing_down_a_jobs_circuit_pauses_it(tmp_path: Path) -> None:
    """Back from the direct circuit to the spine: b's ports move again, so it pauses twice, and
    from then on both share L0 ↔ S0 again."""
    t1, t2, delay = 60.0, 100.0, 1.0
    script = {
        0.0: [Reconfigure(SPINE_ONLY), Start(0, A_HOSTS), Start(1, B_HOSTS)],
        t1: [Reconfigure(WITH_DIRECT, delay)],
        t2: [Reconfigure(SPINE_ONLY, delay)],
    }
    rec = _run(tmp_path, Scripted(script))
    done_a = t1 * T_REF / T_SHARED + (t2 - t1) * T_REF / T_ISO
    done_b = t1 * T_REF / T_SHARED + (t2 - t1 - delay) * T_REF / T_ISO
    end_b = t2 + delay + (150 - done_b) * T_SHARED / T_REF
    assert rec.end_time[1] == pytest.approx(end_b, rel=1e-9)
    # a shares with b from t2 to end_b (b's pause included: its rate is still counted) ...
    done_a += (end_b - t2) * T_REF / T_SHARED
    assert rec.end_time[0] == pytest.approx(end_b + (300 - done_a) * T_ISO / T_REF, rel=1e-9)


@pytest.mark.parametrize(
    ("circuits", "match"),
    [(((L0, S0), (L0, S0), (L0, S0)), "uplink ports of leaf L0"), (((S0, L0),), "not a leaf")],
)
def test_impossible_circuits_are_a_policy_error(
    tmp_path: Path, circuits: tuple[tuple[int, int], ...], match: str
) -> None:
    with pytest.raises(PolicyError, match=match):
        _run(tmp_path, Scripted({0.0: [Reconfigure(circuits)]}))


def test_reconfigure_without_an_ocs_is_a_policy_error(tmp_path: Path) -> None:
    leafspine = "leafspine:leaves=3,spines=1,hosts_per_leaf=2,g=1,m=1,nic_gbps=100"
    with pytest.raises(PolicyError, match="has none"):
        _run(tmp_path, Scripted({0.0: [Reconfigure(SPINE_ONLY)]}), leafspine)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.integers(1, 400), st.sampled_from([SPINE_ONLY, WITH_DIRECT])),
        min_size=1,
        max_size=4,
        unique_by=lambda change: change[0],
    ),
    st.floats(0.0, 5.0),
)
def test_pauses_only_delay_and_every_job_finishes(
    tmp_path: Path, changes: list[tuple[int, tuple[tuple[int, int], ...]]], delay: float
) -> None:
    """Any sequence of re-wirings: both jobs finish, never faster than alone, and a longer delay
    never makes a job finish earlier (a paused job's traffic still counts, so the other's speed
    does not depend on the delay)."""
    script: dict[float, list[Decision]] = {
        0.0: [Reconfigure(SPINE_ONLY), Start(0, A_HOSTS), Start(1, B_HOSTS)]
    }

    def run(d: float) -> ReplayRecord:
        for t, circuits in changes:
            script[float(t)] = [Reconfigure(circuits, d)]
        return _run(tmp_path, Scripted(script))

    free, paused = run(0.0), run(delay)
    for rec in (free, paused):
        assert rec.network is not None
        assert (rec.end_time >= np.array([300, 150]) * T_ISO / T_REF - 1e-6).all()
        assert rec.end_time[1] <= 150 * T_SHARED / T_REF + len(changes) * 5.0 + 1e-6
    assert (paused.end_time >= free.end_time - 1e-9).all()
