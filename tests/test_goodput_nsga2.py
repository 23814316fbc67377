"""Pareto fronts of Pollux's NSGA-II on a hand case and against their definition."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.policies.goodput.nsga2 import non_dominated_fronts


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
