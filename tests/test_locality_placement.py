"""``locality`` (network spec §4.1): fewest leaves, then fewest hosts, on hand-computed cases."""

from __future__ import annotations

from netplace import busy, request, started

# 3 leaves × 2 hosts × 4 GPUs: 8 GPUs a leaf.
TOPO = "leafspine:leaves=3,spines=2,hosts_per_leaf=2,g=4,m=1,nic_gbps=100"


def _state():
    """Free GPUs: leaf 0 = h0 4 + h1 1; leaf 1 = h2 4 + h3 4 (empty); leaf 2 = h4 2 + h5 0."""
    policy, state = started("locality", TOPO)
    busy(state, 1, 3)
    busy(state, 4, 2)
    busy(state, 5, 4)
    return policy, state


def test_a_small_job_takes_the_fitting_leaf_with_fewest_free_gpus() -> None:
    policy, state = _state()
    assert policy.place_job(request(2), state) == ((4, (2, 3)),)
    # 5 GPUs: leaves 0 (5 free) and 1 (8) fit; leaf 0 has fewer. No host holds 5: the fullest
    # host h1 gives its one GPU, then the best-fit host h0 the other four.
    assert policy.place_job(request(5), state) == ((1, (3,)), (0, (0, 1, 2, 3)))


def test_a_large_job_takes_whole_empty_leaves_then_the_best_fit_leaf() -> None:
    policy, state = _state()
    # 10 GPUs: the empty leaf 1 whole, the remaining 2 in leaf 2 (fewest free that hold 2).
    assert policy.place_job(request(10), state) == (
        (2, (0, 1, 2, 3)),
        (3, (0, 1, 2, 3)),
        (4, (2, 3)),
    )
    # 15 GPUs (all free): leaf 1 whole, then 7 over leaves fullest first: leaf 2, then leaf 0.
    alloc = policy.place_job(request(15), state)
    assert alloc is not None
    assert [node for node, _ in alloc] == [2, 3, 4, 1, 0]
    assert sum(len(g) for _, g in alloc) == 15
    assert policy.place_job(request(16), state) is None


def test_a_small_job_no_leaf_holds_goes_over_the_fewest_leaves() -> None:
    policy, state = started("locality", TOPO)
    for node in (0, 2, 4):
        busy(state, node, 2)  # every leaf has 6 free
    busy(state, 5, 1)  # leaf 2: 5 free
    alloc = policy.place_job(request(7), state)
    assert alloc is not None
    # Leaves with the most free first: leaf 0 (6, lowest index among 6s), then leaf 1.
    assert [node for node, _ in alloc] == [0, 1, 2]  # h0 2 (fullest), h1 4; h2 1 (best fit)
    assert [len(g) for _, g in alloc] == [2, 4, 1]
