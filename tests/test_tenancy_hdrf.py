"""hdrf's reclaim rule: a job moved for the test changes what its queue holds, never what the
queue demands, so a reclaim is never undone at once by the queue it took from (no ping-pong).

Hand case (8 GPUs, two queues of weight 1, GPU only): ``a1`` (A, 2 GPUs) and ``b1`` (B, 6 GPUs)
run from 0; ``a2`` (A, 2 GPUs) arrives at 10. A may try to reclaim: with ``a2`` added, A's 4/8
is below B's 6/8 (the cluster over-asked, so both saturated). Moved for the test, A holds 4 of
the 4 it demands (2 running + 2 waiting): granted, so saturated; B without ``b1`` holds 0 of the
6 it demands, the cluster not exhausted (4 of 8): unsaturated, so B goes first and ``a2`` may
not take ``b1``; it waits for ``a1`` to end at 1000. DRF agrees: A's 4/8 with the job is above
B's 0/8 without. Counting the moved job twice in A's demand (4 + its own 2 waiting) and dropping
the victim from B's (0 + nothing waiting) made A unsaturated and B saturated: ``a2`` took the
6 GPUs of ``b1`` at 10. The same two errors let two queues that each wait for one job take it
from each other in turn (the property below).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from schedlab.tenancy.state import TenantState, roll_up
from schedlab.tenancy.tree import QueueSpec, build_tree
from schedlab.tenancy.volcano import Drf, Hdrf
from tenancy_cases import run

ROWS = [
    ("a1", "A", 0.0, 2, 1000.0),
    ("b1", "B", 0.0, 6, 2000.0),
    ("a2", "A", 10.0, 2, 100.0),
]


@pytest.mark.parametrize("prefix", ["", "org/"], ids=["flat", "nested"])
@pytest.mark.parametrize("policy", ["hdrf", "drf"])
def test_a_saturated_reclaimer_waits_instead_of_taking(policy, prefix):
    queues = [QueueSpec(f"{prefix}A"), QueueSpec(f"{prefix}B")]
    rows = [(j, f"{prefix}{q}", t, n, d) for j, q, t, n, d in ROWS]
    record, _, _ = run(rows, queues, policy)
    assert record.preemptions.tolist() == [0, 0, 0]
    assert record.first_start.tolist() == [0.0, 0.0, 1000.0]
    assert record.end_time.tolist() == [1000.0, 2000.0, 1100.0]


def _state(tree, running: dict[str, list[int]], waiting: dict[str, list[int]], free: int):
    """A GPU-only state: each queue's running and waiting jobs by GPU count."""
    rows = [
        (n, tree.index[name], on)
        for name in sorted(running.keys() | waiting.keys())
        for on, sizes in ((True, running.get(name, [])), (False, waiting.get(name, [])))
        for n in sizes
    ]
    sizes = [n for n, _, _ in rows]
    leaves = [leaf for _, leaf, _ in rows]
    is_running = [on for _, _, on in rows]
    demand = np.asarray(sizes, dtype=float)[:, None]
    held = np.zeros((len(tree), 1))
    asked = np.zeros((len(tree), 1))
    by_leaf: dict[int, list[int]] = {}
    for j, (leaf, on) in enumerate(zip(leaves, is_running, strict=True)):
        (held if on else asked)[leaf] += demand[j]
        if on:
            by_leaf.setdefault(leaf, []).append(j)
    capacity = np.array([held.sum() + free])
    st = TenantState(
        tree=tree,
        now=0.0,
        capacity=capacity,
        alloc=roll_up(tree, held),
        pending=roll_up(tree, asked),
        alloc_np=np.zeros((len(tree), 1)),
        demand=demand,
        leaf_of=np.asarray(leaves, dtype=np.int64),
        running=by_leaf,
        run_began=np.where(is_running, 0.0, -1.0),  # -1: waiting
    )
    return st, is_running


def test_allow_victim_hand_values():
    """Three states on 8 busy GPUs, judged directly. (1) The hand case at 10: A may try to
    reclaim, but not take ``b1``. (2) A holds 4 + 2, B holds 2 and waits for 4: moved, B holds
    6 of the 6 it demands and A 4 of 6, the cluster over-asked (10 > 8): both saturated, B's
    6/8 is not below A's 4/8, refused. (3) A holds 4 + 2 + 2, B waits for 2: moved, both
    saturated (8 of 8 held), B's 2/8 below A's 6/8, taken."""
    tree = build_tree([QueueSpec("A"), QueueSpec("B")])
    a, b = tree.index["A"], tree.index["B"]
    hd = Hdrf()
    hd.reset(tree, np.array([8.0]))
    st, _ = _state(tree, {"A": [2], "B": [6]}, {"A": [2]}, free=0)
    a2 = next(j for j in range(3) if st.leaf_of[j] == a and st.run_began[j] < 0)
    b1 = next(j for j in range(3) if st.leaf_of[j] == b)
    assert not hd.allow_victim(st, st.alloc, a, a2, b1)
    assert hd.reclaimer(st, st.alloc, a, a2)
    st, _ = _state(tree, {"A": [4, 2], "B": [2]}, {"B": [4]}, free=0)
    b2 = next(j for j in range(4) if st.leaf_of[j] == b and st.demand[j, 0] == 4)
    small = next(j for j in range(4) if st.leaf_of[j] == a and st.demand[j, 0] == 2)
    assert not hd.allow_victim(st, st.alloc, b, b2, small)
    st, _ = _state(tree, {"A": [4, 2, 2]}, {"B": [2]}, free=0)
    b3 = next(j for j in range(4) if st.leaf_of[j] == b)
    small = next(j for j in range(4) if st.leaf_of[j] == a and st.demand[j, 0] == 2)
    assert hd.allow_victim(st, st.alloc, b, b3, small)


QUEUE_SETS = {
    "flat": ["q0", "q1", "q2"],
    "nested": ["org/q0", "org/q1", "org/q2"],
}


@settings(max_examples=150, deadline=None)
@given(
    shape=hs.sampled_from(sorted(QUEUE_SETS)),
    running=hs.lists(hs.lists(hs.integers(1, 8), max_size=3), min_size=3, max_size=3),
    waiting=hs.lists(hs.lists(hs.integers(1, 8), max_size=2), min_size=3, max_size=3),
    free=hs.integers(0, 6),
    policy=hs.sampled_from(["hdrf", "drf"]),
    weights=hs.lists(hs.sampled_from([1.0, 2.0]), min_size=3, max_size=3),
)
def test_a_reclaim_is_never_undone_at_once(shape, running, waiting, free, policy, weights):
    """Whenever a waiting job may take a running job of another queue, once the two have
    swapped the victim may not take the reclaimer's job straight back."""
    names = QUEUE_SETS[shape]
    tree = build_tree([QueueSpec(n, weight=w) for n, w in zip(names, weights, strict=True)])
    st, is_running = _state(
        tree,
        {n: r for n, r in zip(names, running, strict=True)},
        {n: w for n, w in zip(names, waiting, strict=True)},
        free,
    )
    if st.capacity[0] <= 0:
        return
    share = Hdrf() if policy == "hdrf" else Drf()
    share.reset(tree, st.capacity)
    jobs = range(len(is_running))
    for job in (j for j in jobs if not is_running[j]):
        for victim in (v for v in jobs if is_running[v]):
            leaf, vleaf = int(st.leaf_of[job]), int(st.leaf_of[victim])
            if leaf == vleaf or not share.allow_victim(st, st.alloc, leaf, job, victim):
                continue
            st.serial += 1  # a new decision: no figures kept from the last
            st.give_back(victim)
            st.take(job)
            try:
                assert not share.allow_victim(st, st.alloc, vleaf, victim, job)
            finally:
                st.serial += 1
                st.give_back(job)
                st.take(victim)
