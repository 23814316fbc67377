"""The verdicts of reproduction tables."""

from __future__ import annotations

from schedlab.experiments.reproduction import EXACT, TOLERANCE, Target, table, trend_row


def test_exact_targets_compare_at_the_printed_precision() -> None:
    t = Target("G1", "avg JCT", 57868.546240, EXACT, 6)
    assert t.judge(57868.5462404) == "match"
    assert t.judge(57868.5462406) == "differs"
    assert t.judge(None) == "not run"
    assert Target("x", "count", 1000, EXACT, 0).judge(999.0) == "differs"


def test_tolerance_targets_are_relative() -> None:
    t = Target("G2", "avg JCT", 100.0, TOLERANCE, rel=0.03)
    assert t.judge(103.0) == "within"
    assert t.judge(96.9) == "outside"
    assert t.tolerance_text() == "±3 %"


def test_table_has_the_columns_in_order() -> None:
    rows = [
        Target("G1", "avg JCT", 1.0, EXACT, 1).row("gavel", 1.04),
        trend_row("sia", "S2", "Sia below Gavel", "yes", "1.2 h < 2.5 h", True),
    ]
    frame = table(rows)
    assert list(frame.columns) == [
        "study",
        "target",
        "metric",
        "published",
        "ours",
        "tolerance",
        "verdict",
    ]
    assert frame["verdict"].tolist() == ["match", "holds"]
