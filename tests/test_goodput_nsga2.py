"""Pareto fronts of Pollux's NSGA-II on a hand case and against their definition."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.policies.goodput.nsga2 import (
    crowding_distance,
    non_dominated_fronts,
    nsga2,
    rank_and_crowding,
    ranked_survivors,
    select_survivors,
)


def test_fronts_hand_case() -> None:
    # (1, 1) dominates every other point; (1, 2) and (2, 1) are incomparable; (2, 2) is last;
    # the duplicate (2, 2) points do not dominate each other.
    f = np.array([[2.0, 2.0], [1.0, 2.0], [1.0, 1.0], [2.0, 1.0], [2.0, 2.0]])
    fronts = [front.tolist() for front in non_dominated_fronts(f)]
    assert fronts == [[2], [1, 3], [0, 4]]


def dominates(a: np.ndarray, b: np.ndarray) -> bool:
    return bool((a <= b).all() and (a < b).any())


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 3).flatmap(
        lambda m: st.lists(
            st.lists(st.integers(0, 4), min_size=m, max_size=m), min_size=1, max_size=25
        )
    )
)
def test_fronts_follow_the_definition(rows: list[list[int]]) -> None:
    """Every point is in exactly one front; nothing in a front is dominated by a point of the
    same or a later front, and each point after the first front is dominated by one of the
    front just before it."""
    f = np.array(rows, dtype=np.float64)
    fronts = non_dominated_fronts(f)
    assert sorted(np.concatenate(fronts).tolist()) == list(range(len(f)))
    for r, front in enumerate(fronts):
        later = np.concatenate(fronts[r:])
        for i in front:
            assert not any(dominates(f[j], f[i]) for j in later)
            if r:
                assert any(dominates(f[j], f[i]) for j in fronts[r - 1])


def select_long(f: np.ndarray, size: int) -> list[int]:
    """Whole fronts while they fit, then the most crowded of the next one."""
    chosen: list[int] = []
    for front in non_dominated_fronts(f):
        if len(chosen) + len(front) <= size:
            chosen.extend(front.tolist())
            continue
        order = np.argsort(-crowding_distance(f[front]), kind="stable")
        chosen.extend(front[order[: size - len(chosen)]].tolist())
        break
    return chosen


#: Random points (small fronts), or a wide front — points on x + y = 30 — over a few others,
#: so that a front is cut with three or more of it kept.
POINTS = st.one_of(
    st.integers(1, 3).flatmap(
        lambda m: st.lists(
            st.lists(st.integers(0, 5), min_size=m, max_size=m), min_size=1, max_size=40
        )
    ),
    st.tuples(
        st.lists(st.integers(0, 30), min_size=1, max_size=25, unique=True),
        st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=15),
    ).map(lambda c: [[x, 30 - x] for x in c[0]] + [list(p) for p in c[1]]),
)


@settings(max_examples=300, deadline=None)
@given(POINTS, st.integers(1, 45))
def test_survivors_carry_the_rank_and_crowding_a_fresh_sort_gives(rows, size) -> None:
    """The search reuses the selection's ranks and crowding distances for the next generation's
    tournaments: they must be bit-equal to sorting the survivors again."""
    f = np.array(rows, dtype=np.float64)
    keep, rank, crowd = ranked_survivors(f, size)
    assert keep.tolist() == select_long(f, size) == select_survivors(f, size).tolist()
    assert len(keep) == min(size, len(f)) and len(set(keep.tolist())) == len(keep)
    want_rank, want_crowd = rank_and_crowding(f[keep])
    np.testing.assert_array_equal(rank, want_rank)
    np.testing.assert_array_equal(crowd, want_crowd)


def test_survivors_recompute_the_crowding_of_a_cut_front() -> None:
    # one front of six; four survive: the extremes, then (4, 3) and (6, 2) (0.9 each; (1, 8)
    # and (2, 7) have 0.5 and 0.8). Among the four, (4, 3) lies between (0, 10) and (6, 2):
    # (6 + 8) / 10 = 1.4, (6, 2) between (4, 3) and (10, 0): (6 + 3) / 10 = 0.9.
    f = np.array([[0, 10], [1, 8], [2, 7], [4, 3], [6, 2], [10, 0]], dtype=np.float64)
    keep, rank, crowd = ranked_survivors(f, 4)
    assert keep.tolist() == [0, 5, 3, 4]
    assert rank.tolist() == [0, 0, 0, 0]
    np.testing.assert_allclose(crowd, [np.inf, np.inf, 1.4, 0.9])


@settings(max_examples=200, deadline=None)
@given(POINTS, st.integers(1, 45))
def test_limited_fronts_are_the_first_fronts_that_hold_the_limit(rows, limit) -> None:
    f = np.array(rows, dtype=np.float64)
    full = non_dominated_fronts(f)
    got = non_dominated_fronts(f, limit=limit)
    sizes = np.cumsum([len(front) for front in full])
    want = int(np.searchsorted(sizes, limit)) + 1  # fronts until the limit is reached
    assert len(got) == min(want, len(full))
    for a, b in zip(got, full, strict=False):
        np.testing.assert_array_equal(a, b)


def _toy_search(values: int, pop_size: int, generations: int):
    """NSGA-II on states (jobs=2, nodes=2) with entries 0..values-1; returns every batch of
    states it evaluated and its answer."""
    rng = np.random.default_rng(3)
    batches: list[np.ndarray] = []

    def evaluate(states: np.ndarray) -> np.ndarray:
        batches.append(states.copy())
        total = states.sum(axis=(1, 2)).astype(float)
        return np.column_stack([-total, total])  # two conflicting objectives

    def mutate(states: np.ndarray) -> np.ndarray:
        return states + rng.integers(-1, 2, states.shape)

    def repair(states: np.ndarray) -> np.ndarray:
        return np.clip(states, 0, values - 1)

    initial = np.zeros((1, 2, 2), dtype=np.int64)
    answer = nsga2(initial, evaluate, mutate, repair, rng, pop_size, generations)
    return batches, answer


def test_each_generation_evaluates_a_population_of_new_states() -> None:
    # 10**4 states: every generation finds pop_size children, none twice, none a member
    batches, (front, values) = _toy_search(10, pop_size=12, generations=6)
    assert [len(b) for b in batches] == [1] + [12] * 6
    members = {batches[0][0].tobytes()}
    for batch in batches[1:]:
        keys = {s.tobytes() for s in batch}
        assert len(keys) == len(batch)
        members |= keys
    assert {s.tobytes() for s in front} <= members
    assert len(front) == len(values) > 0


def test_a_search_that_runs_out_of_new_states_ends_with_what_it_has() -> None:
    # 2**4 = 16 states in all, a population of 12: the children run out and a generation
    # brings fewer than 12 (or none, which ends the search)
    batches, (front, _) = _toy_search(2, pop_size=12, generations=30)
    assert all(len({s.tobytes() for s in b}) == len(b) for b in batches)
    assert min(len(b) for b in batches[1:]) < 12
    assert ((front >= 0) & (front <= 1)).all()
    assert len(front) > 0


def test_unique_keeps_the_first_of_equal_states_and_skips_seen_ones() -> None:
    from schedlab.policies.goodput.nsga2 import _unique

    rng = np.random.default_rng(0)
    for case in range(100):
        states = rng.integers(0, 2, (8, 2, 3))
        if case % 2:
            states = states[:, ::-1]  # not contiguous
        seen = {states[0].tobytes()}
        want, want_keys, mirror = [], [], set(seen)
        for s in states:
            if s.tobytes() not in mirror:
                mirror.add(s.tobytes())
                want.append(s)
                want_keys.append(s.tobytes())
        got, keys = _unique(states, seen)
        assert keys == want_keys and seen == mirror
        np.testing.assert_array_equal(got, np.array(want).reshape(got.shape))
