"""The Gavel study as ``schedlab reproduce`` lists and judges it (the runs themselves are the
slow fidelity tests)."""

from __future__ import annotations

from schedlab.experiments.gavel_study import TARGETS, checks_of
from schedlab.experiments.reproduction import table
from schedlab.reproduce.catalog import BY_NAME, load


def test_the_study_is_in_the_catalog() -> None:
    assert callable(load(BY_NAME["gavel"]))
    assert BY_NAME["gavel"].needs == ("data/goodput/gavel",)


def rows(values: dict[str, list[float]]):
    return table(
        [
            t.row("gavel", v)
            for target, vs in values.items()
            for t, v in zip(TARGETS[target], vs, strict=True)
        ]
    )


def test_exact_targets_pass_at_their_digits_and_fail_one_digit_off() -> None:
    good = [57868.546240, 0.414668, 99.85, 6366175.392, 1000]
    checks = checks_of(rows({"G1": good}))
    assert [c.verdict for c in checks] == ["pass"] * 5 and all(c.gated for c in checks)
    off = [57868.546241, 0.414668, 99.85, 6366175.392, 999]
    verdicts = [c.verdict for c in checks_of(rows({"G1": off}))]
    assert verdicts == ["FAIL", "pass", "pass", "pass", "FAIL"]


def test_g2_is_judged_within_three_percent() -> None:
    inside = checks_of(rows({"G2": [58703.873803 * 0.971, 0.422344 * 1.029]}))
    assert [c.verdict for c in inside] == ["pass", "pass"]
    outside = checks_of(rows({"G2": [58703.873803 * 0.969, 0.422344]}))
    assert [c.verdict for c in outside] == ["FAIL", "pass"]
