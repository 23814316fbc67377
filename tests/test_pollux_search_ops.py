"""Pollux's GA mutation and repair against the long way: the mutation element by element, the
repair as first written (np.diff with prepend, take_along_axis, an argsort for the inverse
shuffle, a mask by multiplication); same states out and the same random draws consumed, on
random populations. The draws: zeroing draws only for the picked rows, a new count only for
each raised entry, a node order only for a row that a replica or node cut applies to."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.policies.goodput.pollux import (
    MAX_NODES_PER_JOB,
    count_per_node,
    count_per_row,
    from_second_mark,
    mutate_states,
    repair_states,
    running_total,
    sum_per_node,
    sum_per_row,
)


def mutate_long(states, rng, base, cap, allowed, per_node):
    """Element by element, from the same draws in the same order."""
    n_pop, n_jobs, n_nodes = states.shape
    reset_u, pick_u = rng.random((n_pop, n_jobs)), rng.random((n_pop, n_jobs))
    out = states.copy()
    for p in range(n_pop):
        for j in range(n_jobs):
            if reset_u[p, j] < 0.1:
                out[p, j] = base[j]
    for p in range(n_pop):
        for j in range(n_jobs):
            if pick_u[p, j] < 0.1:  # a picked row draws one number per node
                zero_u = rng.random(n_nodes)
                for n in range(n_nodes):
                    if zero_u[n] < 0.1:
                        out[p, j, n] = 0
    hit_u = rng.random(states.shape, dtype=np.float32)
    hits = []
    one = np.float32(1)
    for p in range(n_pop):
        free = cap - out[p].sum(axis=0)
        for j in range(n_jobs):
            room = [bool(free[n] >= 1 and allowed[j, n]) for n in range(n_nodes)]
            held = [room[n] and out[p, j, n] > 0 for n in range(n_nodes)]
            # p1 + p2 - p1 p2 with p2 = 0 off the held entries, in single precision
            p1 = np.float32(1.0 / max(sum(room), 1))
            p2 = np.float32(1.0 / max(sum(held), 1))
            for n in range(n_nodes):
                prob = (p2 * (one - p1) if held[n] else np.float32(0)) + (
                    p1 if room[n] else np.float32(0)
                )
                if hit_u[p, j, n] < prob:
                    hits.append((p, j, n))
    # one new count per raised entry, drawn in the entries' order
    low = np.array([out[h] for h in hits], dtype=np.int64)
    high = np.array([per_node[h[1:]] + 1 for h in hits], dtype=np.int64)
    final = out.copy()
    for h, value in zip(hits, rng.integers(low, high), strict=True):
        final[h] = value
    return final


def repair_long(states, rng, allowed, max_rep, cap, avoidance, max_nodes=MAX_NODES_PER_JOB):
    states = np.where(allowed[None], states, 0)
    if avoidance:
        spread = np.count_nonzero(states, axis=2) > 1
        mark = (states * spread[:, :, None]) > 0
        states = np.where(np.cumsum(mark, axis=1) > 1, 0, states)
    states = states.copy()
    for p in range(states.shape[0]):
        for j in range(states.shape[1]):
            row = states[p, j]
            if row.sum() <= max_rep[j] and np.count_nonzero(row) <= max_nodes:
                continue
            # a random node order, drawn only for a row that some cut applies to
            shuffle = np.argsort(rng.random(len(row)))
            cut = np.diff(np.minimum(np.cumsum(row[shuffle]), max_rep[j]), prepend=0)
            keep = np.diff(np.minimum(np.cumsum(cut > 0), max_nodes), prepend=0)
            cut = np.where(keep > 0, cut, 0)
            states[p, j] = cut[np.argsort(shuffle)]
    return np.diff(np.minimum(np.cumsum(states, axis=1), cap[None, None, :]), axis=1, prepend=0)


@st.composite
def populations(draw):
    pop = draw(st.integers(1, 6))
    jobs = draw(st.integers(1, 5))
    nodes = draw(st.integers(1, 20))  # past MAX_NODES_PER_JOB = 16
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    cap = rng.integers(1, 9, nodes)
    states = rng.integers(0, 9, (pop, jobs, nodes)) * (rng.random((pop, jobs, nodes)) < 0.6)
    base = rng.integers(0, 3, (jobs, nodes))
    allowed = rng.random((jobs, nodes)) < draw(st.sampled_from([1.0, 0.7]))
    max_rep = rng.integers(1, 40, jobs)
    return states.astype(np.int64), base, cap, allowed, max_rep, seed


@settings(max_examples=200, deadline=None)
@given(populations(), st.booleans())
def test_repair_equals_the_long_way(case, avoidance) -> None:
    states, _, cap, allowed, max_rep, seed = case
    before = states.copy()
    fast, slow = np.random.default_rng(seed), np.random.default_rng(seed)
    got = repair_states(states, fast, allowed, max_rep, cap, avoidance)
    want = repair_long(states, slow, allowed, max_rep, cap, avoidance)
    np.testing.assert_array_equal(got, want)
    assert fast.random() == slow.random()  # the same draws consumed
    np.testing.assert_array_equal(states, before)  # input untouched
    # and the result is feasible
    assert (got.sum(axis=1) <= cap[None, :]).all()
    assert (got.sum(axis=2) <= max_rep[None, :]).all()
    assert (np.count_nonzero(got, axis=2) <= MAX_NODES_PER_JOB).all()
    assert not got[:, ~allowed].any()


@settings(max_examples=200, deadline=None)
@given(populations())
def test_mutate_equals_the_long_way(case) -> None:
    states, base, cap, allowed, _, seed = case
    per_node = np.where(allowed, cap[None, :], 0)
    states = np.minimum(states, per_node[None])  # as the search's populations are (repaired)
    base = np.minimum(base, per_node)
    before = states.copy()
    fast, slow = np.random.default_rng(seed), np.random.default_rng(seed)
    got = mutate_states(states, fast, base, cap, allowed, per_node)
    want = mutate_long(states, slow, base, cap, allowed, per_node)
    np.testing.assert_array_equal(got, want)
    assert fast.random() == slow.random()
    np.testing.assert_array_equal(states, before)


def test_repair_cuts_a_job_to_sixteen_nodes_within_its_replica_limit() -> None:
    # one job on 20 nodes, one replica each, far below its limit of 64: only the node cut
    # applies, and it keeps 16 of the 20 nodes (which ones: the seeded shuffle's first 16)
    states = np.ones((3, 1, 20), dtype=np.int64)
    args = (np.ones((1, 20), dtype=bool), np.array([64]), np.full(20, 4))
    got = repair_states(states, np.random.default_rng(5), *args, avoidance=False)
    want = repair_long(states, np.random.default_rng(5), *args, avoidance=False)
    np.testing.assert_array_equal(got, want)
    assert (np.count_nonzero(got, axis=2) == MAX_NODES_PER_JOB).all()
    assert got.sum() == 3 * MAX_NODES_PER_JOB


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 5), st.integers(1, 6), st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_population_sums_are_numpys(pop, jobs, nodes, seed) -> None:
    rng = np.random.default_rng(seed)
    states = rng.integers(0, 9, (pop, jobs, nodes)) * (rng.random((pop, jobs, nodes)) < 0.5)
    mask = states > 2
    np.testing.assert_array_equal(sum_per_row(states), states.sum(axis=2))
    np.testing.assert_array_equal(sum_per_node(states), states.sum(axis=1))
    np.testing.assert_array_equal(count_per_row(mask), mask.sum(axis=2))
    np.testing.assert_array_equal(count_per_node(mask), mask.sum(axis=1))
    np.testing.assert_array_equal(running_total(states), np.cumsum(states, axis=1))
    np.testing.assert_array_equal(from_second_mark(mask), np.cumsum(mask, axis=1) > 1)


def test_counts_past_a_byte_are_exact() -> None:
    # 300 nodes (jobs) held: more than a byte counts, so the count falls back to numpy's
    mask = np.ones((2, 3, 300), dtype=bool)
    assert (count_per_row(mask) == 300).all()
    assert (count_per_node(np.ones((2, 300, 3), dtype=bool)) == 300).all()
