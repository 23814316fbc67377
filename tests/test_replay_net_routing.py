"""Replay's ``--net-routing source`` (reserved paths) and ``--net-sharing priority`` classes,
end to end through the CLI, plus the reservation invariants."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.network.generators import leafspine
from schedlab.network.reservation import Reservations
from test_replay_network import HAND_JOBS, HAND_TOPOLOGY, T_ISO, T_WORST, C, _rows

# The hand topology (L0, L1, one spine S0; hosts h0 h2 on L0, h1 h3 on L1) with a second spine.
TWO_SPINES = (
    HAND_TOPOLOGY.replace(
        '[[switches]]\nname = "S0"',
        '[[switches]]\nname = "S0"\ntier = "spine"\n[[switches]]\nname = "S1"',
    )
    + '[[links]]\na = "L0"\nb = "S1"\ngbps = 100\n[[links]]\na = "L1"\nb = "S1"\ngbps = 100\n'
)


def _replay(tmp_path: Path, topology: str, jobs: str, *options: str) -> tuple[dict, dict]:
    topo = tmp_path / "topo.toml"
    topo.write_text(topology)
    trace = tmp_path / "jobs.csv"
    trace.write_text(jobs)
    out = tmp_path / "out"
    argv = ["replay", "--topology", str(topo), "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, *options, "--out", str(out)]) == 0
    rows = {r["job_id"]: r for r in _rows(out / "jobs.csv")}
    return rows, json.loads((out / "summary.json").read_text())["network"]


def test_source_routing_gives_each_job_its_own_spine(tmp_path: Path) -> None:
    """a reserves L0 → S0 → L1 and back (free links, lowest id first); b finds those held and
    reserves the S1 paths: neither shares, so both run at T_iso even under worst-case."""
    rows, net = _replay(
        tmp_path, TWO_SPINES, HAND_JOBS, "--net-sharing", "worst-case", "--net-routing", "source"
    )
    assert float(rows["a"]["end_time"]) == pytest.approx(300.0)  # the trace's run times
    assert float(rows["b"]["end_time"]) == pytest.approx(150.0)
    assert net["routing"] == "source" and net["source_shared_hops"] == 0


def test_source_routing_without_a_free_path_shares(tmp_path: Path) -> None:
    """One spine: b finds every hop of both its paths held by a, so it shares them (4 hops) and
    both jobs run as under worst-case ECMP."""
    rows, net = _replay(
        tmp_path, HAND_TOPOLOGY, HAND_JOBS, "--net-sharing", "worst-case", "--net-routing", "source"
    )
    assert float(rows["b"]["end_time"]) == pytest.approx(150 * T_WORST / T_ISO)  # 187.48 s
    assert float(rows["a"]["end_time"]) == pytest.approx(150 * T_WORST / T_ISO + 150)
    assert net["source_shared_hops"] == 4


def test_priority_classes_end_to_end(tmp_path: Path) -> None:
    """a (class 1) runs as if alone; b (class 0) gets what a leaves of the shared links:
    σ_b = 1 / (1 − φ_a) with φ_a = 10 ms / T_iso, so T_b = C + 10 ms · σ_b + 2α."""
    a, b = HAND_JOBS.splitlines()[1:]
    jobs = HAND_JOBS.splitlines()[0] + f",net_priority\n{a},1\n{b},0\n"
    rows, net = _replay(tmp_path, HAND_TOPOLOGY, jobs, "--net-sharing", "priority")
    t_b = C + 0.010 / (1 - 0.010 / T_ISO) + 2 * 10e-6  # 43.35 ms
    assert float(rows["a"]["end_time"]) == pytest.approx(300.0)  # its trace run time
    assert float(rows["b"]["end_time"]) == pytest.approx(150 * t_b / T_ISO, rel=1e-6)
    assert float(rows["b"]["net_slowdown"]) == pytest.approx(t_b / T_ISO, rel=1e-6)
    assert net["sharing"] == "priority"
    # Swapping the classes swaps who waits.
    swapped = HAND_JOBS.splitlines()[0] + f",net_priority\n{a},0\n{b},1\n"
    (tmp_path / "swap").mkdir()
    rows2, _ = _replay(tmp_path / "swap", HAND_TOPOLOGY, swapped, "--net-sharing", "priority")
    assert float(rows2["b"]["end_time"]) == pytest.approx(150.0)
    assert float(rows2["a"]["net_slowdown"]) > 1.0 + 1e-3


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sets(st.integers(0, 3), min_size=1, max_size=4), min_size=1, max_size=6),
    st.integers(1, 3),
)
def test_reservations_are_shortest_paths_and_exclusive_when_free(
    jobs: list[set[int]], spines: int
) -> None:
    """Every reserved path is a shortest path between its leaves; when no hop had to be shared,
    no fabric link is held by two jobs; releasing every job frees every link."""
    topo = leafspine(leaves=4, spines=spines, hosts_per_leaf=1, g=1, m=1, nic_gbps=100)
    res = Reservations()
    util = np.zeros(topo.num_links)
    held: dict[int, set[int]] = {}
    for job, leaf_ranks in enumerate(jobs):
        leaves = [int(topo.leaves[r]) for r in sorted(leaf_ranks)]
        paths = res.reserve(topo, job, leaves, util)
        assert set(paths) == {(a, b) for a in leaves for b in leaves if a != b}
        for (a, b), path in paths.items():
            assert len(path) == topo.hop_distance[a, b]
            x = a
            for link in path:
                assert link in topo.next_hops(x, b).tolist()
                x = topo.link_far_end(link)
            assert x == b
        held[job] = {link for path in paths.values() for link in path}
    if res.shared_hops == 0:
        for i in held:
            for k in held:
                assert i == k or not held[i] & held[k]
    for job in held:
        res.release(job)
    assert res.holders == {} and res.held == {}
