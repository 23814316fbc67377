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
