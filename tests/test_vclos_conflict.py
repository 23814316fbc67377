"""``vclos check_conflict=true`` (network spec §4.2): a choice whose halving-doubling rounds
cross a link twice is skipped for the next one."""

from __future__ import annotations

import pytest

from netplace import request, started
from schedlab.errors import InputError
from schedlab.policies.placement.network.hd_conflict import hd_conflict

#: 4 leaves of one 4-GPU host, 2 spines, one link a leaf and spine: 2 uplinks for 4 GPUs.
THIN = "leafspine:leaves=4,spines=2,hosts_per_leaf=1,g=4,m=4,nic_gbps=100"


def test_hd_conflict_by_hand() -> None:
    # Two whole leaves of 4 over 2 spines, 1 link each: in the round pairing r with r + 4,
    # ranks 0 and 2 (rails 0 and 0) both leave leaf 0 by its link to spine 0.
    assert hd_conflict([4, 4], spines=2, parallel=1)
    # Two links a pair: rails 0, 2, 1, 3 — every rank its own uplink.
    assert not hd_conflict([4, 4], spines=2, parallel=2)
    # 2 GPUs a leaf over 2 spines (vClos step 3): one rank per rail and leaf.
    assert not hd_conflict([2, 2, 2, 2], spines=2, parallel=1)
    # 12 ranks (not a power of two): ranks 8-11 first send to 0-3, each on its own rail.
    assert not hd_conflict([4, 4, 4], spines=4, parallel=1)
    assert not hd_conflict([4], spines=2, parallel=1)  # one leaf: no fabric traffic


def test_check_conflict_rejects_whole_leaves_and_takes_step_three() -> None:
    """8 GPUs: step 1 gives whole leaves 0 and 1 over both spines; with the check, that
    placement sends two ranks a round up one uplink, so step 3 takes over: s = 2 GPUs on each
    of 4 leaves over spines 0 and 1, every rank on a rail of its own."""
    plain, state = started("vclos", THIN)
    alloc = plain.place_job(request(8, job=1), state)
    assert alloc == ((0, (0, 1, 2, 3)), (1, (0, 1, 2, 3)))

    checked, state = started("vclos", THIN, {"check_conflict": "true"})
    alloc = checked.place_job(request(8, job=1), state)
    assert alloc == tuple((leaf, (0, 1)) for leaf in range(4))
    links = checked.plan_for(1, alloc).links
    assert links == checked.fabric.links([0, 1, 2, 3], [0, 1])
    # A job on one leaf has no fabric traffic: never a conflict.
    assert checked.place_job(request(4, job=2), state) == ((0, (0, 1, 2, 3)),)


def test_check_conflict_must_be_a_boolean() -> None:
    with pytest.raises(InputError, match="check_conflict"):
        started("vclos", THIN, {"check_conflict": "sometimes"})
