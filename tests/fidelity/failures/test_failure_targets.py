"""F1–F4 and F6 (docs/failures.md): the Llama 3 405B job under the llama3-405b preset over 54
days and 20 seeds, and the OPT-175B preset; every figure from replays of the engine."""

from __future__ import annotations

import pandas as pd
import pytest

from schedlab.experiments.failure_study import reproduce_f1_f3, reproduce_f4, reproduce_f6

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def f1_f3() -> pd.DataFrame:
    return reproduce_f1_f3(workers=2)


def _rows(table: pd.DataFrame, target: str) -> pd.DataFrame:
    return table[table.target == target]


def test_f1_interruptions_and_category_shares(f1_f3: pd.DataFrame) -> None:
    f1 = _rows(f1_f3, "F1")
    count = f1[f1.item.str.startswith("interruptions")].iloc[0]
    assert 404 <= count.ours <= 434
    failing = f1[f1.verdict != "pass"]
    assert failing.empty, failing.to_string()


def test_f2_ettr_at_youngs_interval(f1_f3: pd.DataFrame) -> None:
    f2 = _rows(f1_f3, "F2").iloc[0]
    assert abs(f2.ours - 0.9135) <= 0.003


@pytest.mark.parametrize("tau", ["408.7", "1634.8"])
def test_f3_other_intervals(f1_f3: pd.DataFrame, tau: str) -> None:
    row = _rows(f1_f3, "F3").set_index("item").loc[f"ETTR at τ = {tau} s"]
    assert row.verdict == "pass", row


@pytest.mark.xfail(
    strict=True,
    reason="seeds 1–20 draw 408.65 interruptions per run on average (−2.2 SE from 419); at "
    "τ = 3600 s, where each failure costs ~30 min, that lifts ETTR 0.0044 above Daly's value "
    "at M = 54 d/419 (against it at the runs' own M it is within 0.0006: see the next test)",
)
def test_f3_one_hour_interval_at_the_published_rate(f1_f3: pd.DataFrame) -> None:
    row = _rows(f1_f3, "F3").set_index("item").loc["ETTR at τ = 3600 s"]
    assert row.verdict == "pass", row


def test_f2_f3_match_daly_at_the_runs_own_failure_rate(f1_f3: pd.DataFrame) -> None:
    rows = _rows(f1_f3, "F2/F3 (M of the runs)")
    assert len(rows) == 4
    failing = rows[rows.verdict != "pass"]
    assert failing.empty, failing.to_string()


def test_f3_youngs_interval_is_best(f1_f3: pd.DataFrame) -> None:
    best = f1_f3[f1_f3.item == "Young's τ has the best ETTR of the four"].iloc[0]
    assert best.verdict == "pass"


def test_f4_async_between_the_sync_bounds() -> None:
    table = reproduce_f4(workers=2)
    assert (table.verdict == "pass").all(), table.to_string()


def test_f6_opt175b_node_failures() -> None:
    table = reproduce_f6(workers=2)
    assert (table.verdict == "pass").all(), table.to_string()


def test_f5_spares_beat_shrink_beat_requeue() -> None:
    from schedlab.experiments.failure_study import reproduce_f5

    table = reproduce_f5(workers=2)
    assert (table.verdict == "pass").all(), table.to_string()
