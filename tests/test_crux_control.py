"""Crux as replay's network controller: the max K-cut against brute force, the topological
orders, path selection and priorities on hand cases, seeded reproducibility, and the CLI."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.network.crux import LinkJob, priority_factors
from schedlab.network.crux_control import (
    CruxController,
    CruxJob,
    compress,
    leaf_paths,
    max_k_cut,
    priorities,
    priority_dag,
    select_paths,
    sharing_pairs,
    topological_orders,
)
from schedlab.network.generators import leafspine
from test_replay_net_routing import TWO_SPINES
from test_replay_network import HAND_JOBS, T_ISO, T_WORST


def cut_value(w: np.ndarray, blocks: np.ndarray) -> float:
    """Weight of the edges p → q (p < q) whose block of p comes before the block of q."""
    n = len(blocks)
    return sum(w[p, q] for p in range(n) for q in range(p + 1, n) if blocks[p] < blocks[q])


def brute_force_cut(w: np.ndarray, levels: int) -> float:
    """Every split of the sequence into at most ``levels`` consecutive blocks."""
    n = len(w)
    best = 0.0
    for k in range(min(levels, n)):
        for cuts in itertools.combinations(range(1, n), k):
            blocks = np.zeros(n, dtype=np.int64)
            for c in cuts:
                blocks[c:] += 1
            best = max(best, cut_value(w, blocks))
    return best


@st.composite
def weighted_sequences(draw):
    n = draw(st.integers(1, 7))
    cells = draw(st.lists(st.integers(0, 5), min_size=n * n, max_size=n * n))
    w = np.triu(np.array(cells, dtype=np.float64).reshape(n, n), 1)
    return w, draw(st.integers(1, 5))


@settings(max_examples=150, deadline=None)
@given(weighted_sequences())
def test_max_k_cut_matches_brute_force(case) -> None:
    w, levels = case
    value, blocks = max_k_cut(w, levels)
    assert value == pytest.approx(brute_force_cut(w, levels))
    # The blocks returned achieve it, are consecutive, and are at most ``levels``.
    assert cut_value(w, blocks) == pytest.approx(value)
    assert (np.diff(blocks) >= 0).all() and (np.diff(blocks) <= 1).all()
    assert blocks[0] == 0 and blocks.max() < levels


def test_max_k_cut_by_hand() -> None:
    # Chain 0 → 1 → 2 (weights 3, 2) plus 0 → 2 (weight 1). Two levels: cut after 0 keeps 3 + 1,
    # cut after 1 keeps 2 + 1: the first wins. Three levels keep everything.
    w = np.array([[0, 3, 1], [0, 0, 2], [0, 0, 0]], dtype=float)
    assert max_k_cut(w, 1) == (0.0, pytest.approx(np.zeros(3)))
    value, blocks = max_k_cut(w, 2)
    assert value == 4.0 and blocks.tolist() == [0, 1, 1]
    value, blocks = max_k_cut(w, 3)
    assert value == 6.0 and blocks.tolist() == [0, 1, 2]


@st.composite
def priority_cases(draw):
    n = draw(st.integers(1, 7))
    prio = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=float)
    intensity = np.array(draw(st.lists(st.integers(1, 9), min_size=n, max_size=n)), dtype=float)
    share = np.array(draw(st.lists(st.booleans(), min_size=n * n, max_size=n * n))).reshape(n, n)
    share = share | share.T
    np.fill_diagonal(share, False)
    return prio, intensity, share


@settings(max_examples=100, deadline=None)
@given(priority_cases(), st.integers(0, 2**32 - 1))
def test_orders_are_topological_and_seeded(case, seed) -> None:
    prio, intensity, share = case
    w = priority_dag(prio, intensity, share)
    orders = topological_orders(w, prio, 5, np.random.default_rng(seed))
    assert orders[0].tolist() == sorted(range(len(prio)), key=lambda i: (-prio[i], i))
    for order in orders:
        assert sorted(order.tolist()) == list(range(len(prio)))
        pos = np.empty(len(order), dtype=np.int64)
        pos[order] = np.arange(len(order))
        a, b = np.nonzero(w > 0)
        assert (pos[a] < pos[b]).all()
    again = topological_orders(w, prio, 5, np.random.default_rng(seed))
    assert all((x == y).all() for x, y in zip(orders, again, strict=True))


@settings(max_examples=100, deadline=None)
@given(priority_cases(), st.integers(0, 2**32 - 1))
def test_enough_levels_respect_every_edge(case, seed) -> None:
    """With K ≥ n the order by decreasing P cut after every job keeps every edge, so every
    higher-priority job that shares a link is served strictly first."""
    prio, intensity, share = case
    levels = compress(prio, intensity, share, len(prio), 3, np.random.default_rng(seed))
    a, b = np.nonzero(priority_dag(prio, intensity, share) > 0)
    assert (levels[a] > levels[b]).all()
    assert (levels >= 0).all()


def test_one_level_puts_everyone_together() -> None:
    prio = np.array([3.0, 2.0, 1.0])
    share = ~np.eye(3, dtype=bool)
    levels = compress(prio, np.ones(3), share, 1, 10, np.random.default_rng(0))
    assert levels.tolist() == [0, 0, 0]


def two_leaves():
    # Leaves L0, L1 (switches 0, 1), spines S0, S1 (2, 3); hosts 0, 1 on L0 and 2, 3 on L1.
    return leafspine(2, 2, 2, 4, 1, 100.0)


def test_leaf_paths_in_spine_order() -> None:
    topo = two_leaves()
    paths = leaf_paths(topo, 0, 1)
    assert len(paths) == 2
    assert [topo.link_far_end(p[0]) for p in paths] == [2, 3]  # via S0, then S1
    assert all(topo.link_far_end(p[-1]) == 1 for p in paths)


def _job(key, gpus, compute, link_time, flows, nbytes, t=1.0, links=()) -> CruxJob:
    nbytes = tuple(nbytes)
    links = np.asarray(links, dtype=np.int64)
    return CruxJob(key, gpus, compute, 0.0, t, link_time, sum(nbytes), links, tuple(flows), nbytes)


def test_path_selection_by_hand() -> None:
    """Job 1 is more intense (8 GPUs × 1 s over 0.5 s vs 4 × 1 s over 0.5 s): it routes first and
    both its flows h0 → h2 take spine S0 (a tie on an empty fabric goes to the lowest spine,
    then S0 is the lightest after the first). The flows of job 0 then find S0 loaded and take
    S1; its second, smaller flow goes back to S0's less loaded up-link."""
    topo = two_leaves()
    gb = 1e9
    heavy = _job(1, 8, 1.0, 0.5, [(0, 2, 0), (1, 3, 0)], [2 * gb, 2 * gb])
    light = _job(0, 4, 1.0, 0.5, [(0, 2, 0), (1, 2, 0)], [3 * gb, 0.5 * gb])
    paths = select_paths(topo, [light, heavy])
    via = {
        job: {flow: topo.link_far_end(path[0]) for flow, path in chosen.items()}
        for job, chosen in paths.items()
    }
    # Job 1: first flow ties → S0; second flow: S0's up-link L0→S0 has 2 GB/s on 12.5 GB/s,
    # S1 nothing → S1.
    assert via[1] == {(0, 2, 0): 2, (1, 3, 0): 3}
    # Job 0: 3 GB/s on S0 gives max(5, 5)/12.5, on S1 max(5, 5)/12.5 too → tie → S0;
    # then 0.5 GB/s: S0 carries 5, S1 2 → S1.
    assert via[0] == {(0, 2, 0): 2, (1, 2, 0): 3}


def test_priorities_follow_crux_example_1() -> None:
    """Example 1 (equal intensity): job 1 of C = 2 s, t = 2 s sends more and is the reference;
    job 2 (C = t = 1 s) gets k = 1.5 and so the higher priority."""
    j1 = _job(1, 10, 2.0, 2.0, [], [], links=[7])
    j2 = _job(2, 10, 1.0, 1.0, [], [], links=[7])
    j1 = CruxJob(**{**j1.__dict__, "link_bytes": 2.0})
    j2 = CruxJob(**{**j2.__dict__, "link_bytes": 1.0})
    p = priorities([j1, j2])
    assert p[1] == pytest.approx(10.0)  # I = 10 GPUs × 2 s / 2 s
    assert p[2] == pytest.approx(1.5 * 10.0)
    assert priority_factors([LinkJob(2, 2, 0, 10), LinkJob(1, 1, 0, 10)], 0)[1] == 1.5
    assert sharing_pairs([j1, j2]).tolist() == [[False, True], [True, False]]
    plan = CruxController(two_leaves(), np.random.default_rng(0)).plan([j1, j2])
    assert plan.levels[2] > plan.levels[1]


def test_same_seed_same_plan() -> None:
    rng = np.random.default_rng(7)
    jobs = [
        _job(
            k,
            int(rng.integers(1, 9)),
            float(rng.uniform(0.1, 1)),
            float(rng.uniform(0.1, 1)),
            [(0, 2, 0)],
            [1e9],
            links=rng.choice(20, 3, replace=False),
        )
        for k in range(12)
    ]

    def plan(seed):
        return CruxController(two_leaves(), np.random.default_rng(seed), levels=3).plan(jobs)

    a, b = plan(5), plan(5)
    assert a.levels == b.levels and a.paths == b.paths
    assert max(a.levels.values()) <= 2


# -- replay ---------------------------------------------------------------------------------------


def _replay(tmp_path: Path, *options: str, topology: str = TWO_SPINES) -> tuple[int, Path]:
    (tmp_path / "topo.toml").write_text(topology)
    (tmp_path / "jobs.csv").write_text(HAND_JOBS)
    out = tmp_path / "out"
    argv = ["replay", "--topology", str(tmp_path / "topo.toml"), "--trace"]
    argv += [str(tmp_path / "jobs.csv"), "--policy", "fifo", *options, "--out", str(out)]
    return main(argv), out


def _ends(out: Path) -> dict[str, float]:
    lines = (out / "jobs.csv").read_text().splitlines()
    head = lines[0].split(",")
    return {r.split(",")[0]: float(r.split(",")[head.index("end_time")]) for r in lines[1:]}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_crux_puts_the_two_jobs_on_different_spines(tmp_path: Path, seed: int) -> None:
    """Two 2-GPU rings across the leaves, two spines. ECMP with seed 1 hashes both onto one spine
    (under worst-case sharing: T_worst while both run); Crux routes a first, then b onto the
    free spine, whatever the seed: both run as if alone."""
    rc, out = _replay(tmp_path, "--net-control", "crux", "--seed", str(seed))
    assert rc == 0
    assert _ends(out) == pytest.approx({"a": 300.0, "b": 150.0})  # the trace's run times
    net = json.loads((out / "summary.json").read_text())["network"]
    assert net["control"] == "crux" and net["sharing"] == "priority"
    assert net["crux_plans"] == 3  # both start, b ends, a ends
    if seed == 1:
        (tmp_path / "ecmp").mkdir()
        rc, out = _replay(tmp_path / "ecmp", "--net-sharing", "worst-case", "--seed", "1")
        assert _ends(out)["b"] == pytest.approx(150 * T_WORST / T_ISO)


def test_crux_run_repeats_from_its_config(tmp_path: Path) -> None:
    rc, out = _replay(tmp_path, "--net-control", "crux", "--seed", "3")
    assert rc == 0
    again = tmp_path / "again"
    assert main(["replay", "--config", str(out / "config.toml"), "--out", str(again)]) == 0
    assert (again / "jobs.csv").read_text() == (out / "jobs.csv").read_text()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--net-control", "crux", "--net-routing", "spray"], "drop '--net-routing spray'"),
        (["--net-control", "crux", "--net-sharing", "maxmin"], "--net-sharing priority"),
        (["--net-control", "spray", "--net-routing", "ecmp"], "contradicts '--net-routing ecmp'"),
    ],
)
def test_contradictions_are_refused(tmp_path: Path, capsys, options, message) -> None:
    rc, out = _replay(tmp_path, *options)
    assert rc == 2 and not out.exists()
    err = capsys.readouterr().err
    assert err.startswith("schedlab: error: ") and message in err and err.count("\n") == 1


def test_agreeing_control_and_routing(tmp_path: Path) -> None:
    rc, out = _replay(tmp_path, "--net-control", "spray", "--net-routing", "spray")
    assert rc == 0
    assert json.loads((out / "summary.json").read_text())["network"]["routing"] == "spray"


def test_bad_control_value_and_missing_topology(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        _replay(tmp_path, "--net-control", "sincronia")
    assert exit_.value.code == 2
    assert "invalid choice: 'sincronia'" in capsys.readouterr().err
    (tmp_path / "jobs.csv").write_text(HAND_JOBS)
    argv = ["replay", "--cluster", "4x1", "--trace", str(tmp_path / "jobs.csv"), "--policy"]
    assert main([*argv, "fifo", "--net-control", "crux", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == "schedlab: error: '--net-control' needs '--topology'\n"


def test_serve_refuses_crux(capsys) -> None:
    assert main(["serve", "slurm", "--policy", "fifo", "--net-control", "crux"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("schedlab: error: '--net-control crux' needs control of NICs and")
    assert err.count("\n") == 1
