"""The ``ina`` placement: the locality rule it builds on, and a parameter-server job that it puts
on the aggregation-capable leaf where locality would not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.policies.placement.network.ina import _locality_placement
from test_replay_network import _rows

LEAF_OF = np.array([0, 0, 1, 1])
LEAF_GPUS = np.array([8, 8])
BOTH = np.array([0, 1])


@pytest.mark.parametrize(
    ("free", "count", "expected"),
    [
        # Both leaves empty: the tie goes to leaf 0, and inside it to node 0.
        ([4, 4, 4, 4], 4, [(0, 4)]),
        # Leaf 0 has 6 free, leaf 1 8: the fuller leaf that fits; node 0 fits the 4 exactly.
        ([4, 2, 4, 4], 4, [(0, 4)]),
        # 6 GPUs in leaf 0 (6 free): no node fits 6, so the fullest node first, then node 0.
        ([4, 2, 4, 4], 6, [(1, 2), (0, 4)]),
        # 12 GPUs: one whole empty leaf (leaf 1), the other 4 as a job of its own in leaf 0.
        ([4, 2, 4, 4], 12, [(2, 4), (3, 4), (0, 4)]),
        # 12 GPUs and no empty leaf: wait.
        ([4, 2, 3, 4], 12, None),
        # 7 GPUs: leaf 0 has 6 free, leaf 1 has 7: leaf 1, hosts by best fit.
        ([4, 2, 3, 4], 7, [(2, 3), (3, 4)]),
        # 8 GPUs fit no single leaf now: span leaves, most free first.
        ([4, 2, 3, 4], 8, [(2, 3), (3, 4), (1, 1)]),
    ],
)
def test_locality_rule_by_hand(free, count, expected) -> None:
    got = _locality_placement(np.array(free), LEAF_OF, LEAF_GPUS, count, BOTH)
    assert got == expected


def test_locality_rule_restricted_to_some_leaves() -> None:
    free = np.array([4, 4, 4, 4])
    assert _locality_placement(free, LEAF_OF, LEAF_GPUS, 8, np.array([1])) == [(2, 4), (3, 4)]
    assert _locality_placement(free, LEAF_OF, LEAF_GPUS, 12, np.array([1])) is None


@settings(max_examples=200, deadline=None)
@given(
    free=st.lists(st.integers(0, 4), min_size=6, max_size=6),
    count=st.integers(1, 24),
)
def test_locality_never_over_allocates(free, count) -> None:
    leaf_of = np.array([0, 0, 1, 1, 2, 2])
    free_a = np.array(free)
    got = _locality_placement(free_a, leaf_of, np.array([8, 8, 8]), count, np.arange(3))
    if got is None:
        return
    nodes = [n for n, _ in got]
    assert len(nodes) == len(set(nodes))
    assert sum(c for _, c in got) == count
    assert all(0 < c <= free_a[n] for n, c in got)


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
    predicts both and takes L1: 1,000 iterations end at 120.02 s."""
    free = np.array([4, 4, 4, 4])
    assert _locality_placement(free, LEAF_OF, LEAF_GPUS, 8, BOTH) == [(0, 4), (1, 4)]
    row = _run(tmp_path, "ina")
    assert float(row["end_time"]) == pytest.approx(1000 * 0.12002)
    # A ring job is placed by locality alone: L0 (both leaves would give the same time).
    ring = _run(tmp_path, "ring")
    assert ring["leaves"] == "1" and ring["hosts"] == "2"


def test_ps_job_without_aggregation_stays_with_locality(tmp_path: Path) -> None:
    """A ``ps`` job gains nothing from aggregation: both candidates predict 80 ms, the tie keeps
    the locality placement, and it runs at T = 180.02 ms."""
    row = _run(tmp_path, "ps")
    assert float(row["end_time"]) == pytest.approx(1000 * 0.18002)


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
