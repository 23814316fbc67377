"""The ``ina`` placement: the locality rule it builds on, and a parameter-server job that it puts
on the aggregation-capable leaf where locality would not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.policies.placement.network.ina import restricted_leaf_counts
from test_replay_network import _rows

CAPACITY = np.array([8, 8])


@pytest.mark.parametrize(
    ("leaf_free", "need", "allowed", "expected"),
    [
        # Both leaves allowed: the plain locality rule (the fuller leaf that fits).
        ([6, 8], 4, [True, True], [(0, 4)]),
        # Only leaf 1 aggregates: the same job goes there although leaf 0 is fuller.
        ([6, 8], 4, [False, True], [(1, 4)]),
        # 8 GPUs on leaf 1 alone when it is empty; a whole leaf is what it needs.
        ([8, 8], 8, [False, True], [(1, 8)]),
        # 12 GPUs cannot come from one 8-GPU leaf: no candidate.
        ([8, 8], 12, [False, True], None),
        # 12 GPUs over both: one whole empty leaf, the rest where it fits best.
        ([6, 8], 12, [True, True], [(1, 8), (0, 4)]),
        # Nothing aggregates anywhere: no candidate, whatever is free.
        ([8, 8], 2, [False, False], None),
    ],
)
def test_locality_rule_restricted_to_some_leaves(leaf_free, need, allowed, expected) -> None:
    got = restricted_leaf_counts(need, np.array(leaf_free), CAPACITY, np.array(allowed))
    assert got == expected


@settings(max_examples=200, deadline=None)
@given(
    free=st.lists(st.integers(0, 8), min_size=3, max_size=3),
    allowed=st.lists(st.booleans(), min_size=3, max_size=3),
    need=st.integers(1, 24),
)
def test_restricted_rule_takes_only_allowed_free_gpus(free, allowed, need) -> None:
    got = restricted_leaf_counts(need, np.array(free), np.array([8, 8, 8]), np.array(allowed))
    if got is None:
        return
    leaves = [leaf for leaf, _ in got]
    assert len(leaves) == len(set(leaves))
    assert sum(c for _, c in got) == need
    assert all(allowed[leaf] and 0 < c <= free[leaf] for leaf, c in got)


# Two leaves of two hosts (4 GPUs, 4 NICs of 100 Gbps each); only L1 aggregates (400 Gbps).
INA_TOPOLOGY = (
    'model = "V100"\n'
    + "".join(
        f'[[switches]]\nname = "{name}"\ntier = "{tier}"\nina_gbps = {ina}\n'
        for name, tier, ina in (("L0", "leaf", 0), ("L1", "leaf", 400), ("S0", "spine", 0))
    )
    + "".join(f'[[links]]\na = "{leaf}"\nb = "S0"\ngbps = 400\n' for leaf in ("L0", "L1"))
    + "".join(
        f'[[hosts]]\nleaf = "{leaf}"\ncount = 2\ngpus = 4\nnics = 4\nnic_gbps = 100\n'
        for leaf in ("L0", "L1")
    )
)
HEADER = "job_id,submit_time,num_gpus,duration,collective,gradient_bytes,compute_time,overlap"


def _run(tmp_path: Path, collective: str, placement: str = "ina") -> dict[str, str]:
    (tmp_path / "topo.toml").write_text(INA_TOPOLOGY)
    (tmp_path / "jobs.csv").write_text(f"{HEADER}\nj,0,8,100,{collective},125e6,0.1,0\n")
    out = tmp_path / f"out-{collective}-{placement}"
    argv = ["replay", "--topology", str(tmp_path / "topo.toml"), "--trace"]
    argv += [str(tmp_path / "jobs.csv"), "--policy", "fifo", "--placement", placement]
    assert main([*argv, "--out", str(out)]) == 0
    return _rows(out / "jobs.csv")[0]


def test_ina_job_goes_to_the_aggregating_leaf(tmp_path: Path) -> None:
    """An 8-GPU ``ina`` job; both leaves are empty, so locality takes L0 (the tie) — shown above.
    On L0 nothing aggregates: the PS's NIC receives 4 workers' 125 MB (40 ms) and sends them
    back (40 ms): T = 100 + 80 + 0.02 ms. On L1 the 4 remote workers aggregate at the ToR: 10 ms
    on each NIC and on agg(L1) (4 × 125 MB at 400 Gbps), each way: T = 100 + 20 + 0.02 ms. ina
    predicts both and takes L1. The trace's 100 s is the run alone on the compact placement
    (hosts 0 and 1, on L0: 180.02 ms an iteration), so on L1 the job ends at
    100 × 120.02 / 180.02 = 66.67 s: a placement with less to send removes time."""
    assert restricted_leaf_counts(8, np.array([8, 8]), CAPACITY, np.array([True, True])) == [(0, 8)]
    row = _run(tmp_path, "ina")
    assert float(row["end_time"]) == pytest.approx(100 * 0.12002 / 0.18002)
    # A ring job is placed by locality alone: L0 (both leaves would give the same time).
    ring = _run(tmp_path, "ring")
    assert ring["leaves"] == "1" and ring["hosts"] == "2"


def test_ps_job_without_aggregation_stays_with_locality(tmp_path: Path) -> None:
    """A ``ps`` job gains nothing from aggregation: both candidates predict 80 ms, the tie keeps
    the locality placement, and it runs at T = 180.02 ms: the compact placement's, so in the
    trace's 100 s."""
    row = _run(tmp_path, "ps")
    assert float(row["end_time"]) == pytest.approx(100.0)


def test_ina_needs_a_topology_and_replay(tmp_path: Path, capsys) -> None:
    (tmp_path / "jobs.csv").write_text(f"{HEADER}\nj,0,8,100,ina,125e6,0.1,0\n")
    argv = ["replay", "--cluster", "4x4", "--trace", str(tmp_path / "jobs.csv"), "--policy"]
    assert main([*argv, "fifo", "--placement", "ina", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err == (
        "schedlab: error: placement 'ina' needs the network under the cluster: give --topology\n"
    )
    assert main(["serve", "slurm", "--policy", "fifo", "--placement", "ina"]) == 2
    assert capsys.readouterr().err.startswith("schedlab: error: ")
