"""Sia's trend (spec §5.3, S2) on the documented substitute inputs: Sia's average JCT below
Gavel's and below heterogeneity-unaware Pollux's, on Pollux's workload-6 over 24 T4 + 24 RTX
2080 Ti + 16 A100 GPUs with synthetic speeds (docs/goodput.md, "Sia's targets")."""

from __future__ import annotations

import pytest

from conftest import SHARED_DIR
from schedlab.experiments.pollux_study import pollux_dir
from schedlab.experiments.sia_study import POLICIES, QUICK_JOBS, run_policy, trend_checks

pytestmark = [pytest.mark.slow, pytest.mark.shared]


def _runs(jobs_kept: int | None):
    if not pollux_dir(SHARED_DIR).is_dir():
        pytest.skip("../shared/data/goodput/pollux not found beside this checkout")
    return {p: run_policy(p, SHARED_DIR, jobs_kept) for p in POLICIES}


def test_gavel_baseline_runs_every_job_at_its_capped_count() -> None:
    """Sia's Gavel keeps each job's GPU count (at most 16, as Sia's workloads ask): every one of
    the 160 jobs completes, on the cluster's types only."""
    if not pollux_dir(SHARED_DIR).is_dir():
        pytest.skip("../shared/data/goodput/pollux not found beside this checkout")
    run = run_policy("gavel", SHARED_DIR)
    assert len(run.jct) == run.jobs == 160
    assert run.restarts > 0  # re-solved every round: some jobs move


def test_sia_below_gavel_and_pollux_on_the_first_arrivals() -> None:
    checks = trend_checks(_runs(QUICK_JOBS))
    assert [c.verdict for c in checks] == ["pass", "pass"], [(c.what, c.ours) for c in checks]


# Pollux's genetic search over 160 jobs: about 4 minutes on two cores.
def test_sia_below_gavel_and_pollux_on_workload_6() -> None:
    checks = trend_checks(_runs(None))
    assert [c.verdict for c in checks] == ["pass", "pass"], [(c.what, c.ours) for c in checks]
