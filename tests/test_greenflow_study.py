"""The GreenFlow study's comparison at equal carbon, by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from schedlab.experiments.greenflow_study import jct_at_same_carbon


def test_greenflow_jct_is_interpolated_at_each_baselines_carbon() -> None:
    table = pd.DataFrame(
        [
            # workload, policy, budget, jobs, completed, avg_jct_h, job_carbon_kg
            ("w", "carbon-agnostic", None, 10, 10, 4.0, 100.0),
            ("w", "lcs", None, 10, 10, 6.0, 70.0),
            ("w", "carbon-scaler", None, 10, 10, 9.0, 20.0),
            ("w", "greenflow", 0.6, 10, 10, 3.0, 60.0),
            ("w", "greenflow", 0.8, 10, 10, 2.0, 80.0),
            ("w", "greenflow", 1.0, 10, 10, 1.5, 100.0),
            ("w", "greenflow", 0.4, 10, 7, 1.0, 40.0),  # unfinished jobs: not on the curve
        ],
        columns=["workload", "policy", "budget", "jobs", "completed", "avg_jct_h", "job_carbon_kg"],
    )
    same = jct_at_same_carbon(table).set_index("policy")
    assert same.loc["lcs", "greenflow_avg_jct_h"] == pytest.approx(2.5)  # halfway 60 → 80
    assert same.loc["lcs", "jct_ratio"] == pytest.approx(6.0 / 2.5)
    assert same.loc["carbon-agnostic", "jct_ratio"] == pytest.approx(4.0 / 1.5)
    assert math.isnan(same.loc["carbon-scaler", "greenflow_avg_jct_h"])  # below the curve
    assert same.loc["lcs", "greenflow_job_carbon_kg"] == pytest.approx(70.0)


def test_a_baseline_above_the_curve_meets_its_last_point() -> None:
    """Greenflow under a budget of the baseline's carbon spends a little less (98 of 100 kg):
    the baseline lies past the curve's end and meets greenflow with no more carbon."""
    table = pd.DataFrame(
        [
            ("w", "carbon-agnostic", None, 10, 10, 4.0, 100.0),
            ("w", "greenflow", 0.6, 10, 10, 3.0, 60.0),
            ("w", "greenflow", 1.0, 10, 10, 2.0, 98.0),
            ("w", "greenflow", 1.2, 10, 9, 1.0, 110.0),  # one unfinished: not on the curve
        ],
        columns=["workload", "policy", "budget", "jobs", "completed", "avg_jct_h", "job_carbon_kg"],
    )
    row = jct_at_same_carbon(table).set_index("policy").loc["carbon-agnostic"]
    assert row["greenflow_avg_jct_h"] == pytest.approx(2.0)
    assert row["greenflow_job_carbon_kg"] == pytest.approx(98.0)
    assert row["jct_ratio"] == pytest.approx(2.0)
