"""Gavel's published figures (spec §5.1), reproduced by running schedlab's Gavel on Gavel's own
generated workload: G1 and G1b exactly, job for job; G2 within 3 %."""

from __future__ import annotations

import pytest

from conftest import SHARED_DIR
from schedlab.experiments.gavel_study import TARGETS, reproduce_gavel

pytestmark = [pytest.mark.slow, pytest.mark.shared]

GAVEL = SHARED_DIR / "data" / "goodput" / "gavel"


def _rows(target: str):
    if not GAVEL.is_dir():
        pytest.skip("../shared/data/goodput/gavel not found beside this checkout")
    return reproduce_gavel(SHARED_DIR, (target,)).to_dict("records")


@pytest.mark.parametrize("target", ["G1", "G1b"])
def test_fifo_perf_matches_the_artifact_exactly(target: str) -> None:
    rows = _rows(target)
    assert len(rows) == len(TARGETS[target])
    for row in rows:
        assert row["verdict"] == "match", row


def test_max_min_fairness_perf_within_three_percent() -> None:
    rows = _rows("G2")
    for row in rows:
        assert row["verdict"] == "within", row
