"""Report figures that do not mislead: one look per policy in every figure and report, a shared
carbon series drawn once, best-in-bold on the values as shown (ties all bold), intervals
clipped to what the quantity can be, durations in units that suit them, a per-policy JCT
distribution on grid pages, and no matplotlib warning."""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.cli import main
from schedlab.experiments.seed_stats import add_clipped_intervals, mean_ci, seed_stats, time_unit
from schedlab.report.colours import figure_looks, policy_look
from schedlab.report.pack_figures import write_pack_figures
from schedlab.report.page import best_cells

#: t(0.975, 3), from tables.
T_975_DF3 = 3.182446305284

JOBS = "job_id,submit_time,num_gpus,duration\n" + "".join(
    f"j{i},{20 * i},{1 + i % 3},{300 + 170 * (i % 5)}\n" for i in range(30)
)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text(JOBS)
    return path


def _replay(trace: Path, out: Path, policy: str, *extra: str) -> Path:
    argv = ["replay", "--cluster", "2x4:V100", "--trace", str(trace), "--policy", policy]
    assert main([*argv, "--out", str(out), *extra]) == 0
    return out


def _colours_in(svg: str) -> set[str]:
    return {c.lower() for c in re.findall(r"stroke: (#[0-9a-fA-F]{6})", svg)}


def _figure(page: str, anchor: str) -> str:
    match = re.search(rf'<figure id="{anchor}">(.*?)</figure>', page, re.S)
    assert match is not None, anchor
    return match.group(1)


def test_a_policy_keeps_its_look_whatever_the_order_and_figure(trace: Path, tmp_path: Path) -> None:
    energy = ("--power-model", "binary", "--ci", "synth:gb2020")
    runs = {p: _replay(trace, tmp_path / p, p, *energy) for p in ("sjf", "fifo", "tiresias")}
    pages = []
    for order in (("sjf", "fifo", "tiresias"), ("tiresias", "fifo", "sjf")):
        page = tmp_path / f"{order[0]}.html"
        assert main(["report", *(str(runs[p]) for p in order), "--out", str(page)]) == 0
        pages.append(page.read_text())
    expected = {policy_look(p).colour.lower() for p in ("sjf", "fifo", "tiresias")}
    for page in pages:
        for anchor in ("jct-distribution", "queue-length-over-time", "jct-against-carbon"):
            assert _colours_in(_figure(page, anchor)) & expected == expected, anchor
    # The same figure from either order draws each policy in the same colour.
    fifo = policy_look("fifo").colour.lower()
    for page in pages:
        carbon = _figure(page, "jct-against-carbon")
        assert fifo in _colours_in(carbon)
    # The carbon intensity the three runs share is one line, rebuilt from its preset.
    ci = _figure(pages[0], "carbon-intensity-over-time")
    assert ci.count("synth:gb2020 (every run; exact)") == 1
    assert not _colours_in(ci) & expected  # a grid's series is drawn in a neutral look


def test_looks_are_fixed_by_name_and_distinct_within_a_figure() -> None:
    assert policy_look("fifo") == figure_looks(["sjf", "fifo"])["fifo"]
    looks = figure_looks(["fifo/bestfit", "fifo/fgd", "sjf/bestfit"])
    assert looks["fifo/bestfit"].colour == looks["fifo/fgd"].colour == policy_look("fifo").colour
    assert looks["fifo/bestfit"].dash != looks["fifo/fgd"].dash  # told apart by the dash
    assert len(set(figure_looks([f"plugin-{i}" for i in range(30)]).values())) == 30
    placements = figure_looks(["fgd", "bestfit", "random"], "placement")
    assert len({lk.colour for lk in placements.values()}) == 3


def test_best_in_bold_is_judged_on_the_values_as_shown() -> None:
    # 1.231 and 1.229 both show as 1.23: a tie, both bold; 2.0 is worse.
    assert best_cells(["1.23", "1.23", "2.00"], [1.231, 1.229, 2.0], False) == [True, True, False]
    # All the same as shown: nothing is best.
    assert best_cells(["0", "0", "0"], [0.0, 0.0, 0.0], False) == [False, False, False]
    assert best_cells(["0.9", "—", "0.8"], [0.9, None, 0.8], True) == [True, False, False]  # type: ignore[list-item]


def test_intervals_are_clipped_to_the_range_of_the_quantity() -> None:
    table = pd.DataFrame(
        {
            "p": ["a"] * 4,
            "preemptions": [0.0, 0.0, 0.0, 16.0],
            "jain_fairness": [0.99, 0.98, 0.40, 0.97],
        }
    )
    agg = add_clipped_intervals(
        seed_stats(table, ["p"], list(table.columns[1:])), ["preemptions", "jain_fairness"]
    )
    row = agg.iloc[0]
    half = T_975_DF3 * 8.0 / 2  # sd of (0, 0, 0, 16) is 8
    assert row["preemptions_ci95"] == pytest.approx(half)
    assert row["preemptions_ci_low"] == 0.0  # 4 − 12.7 clipped at 0
    assert row["preemptions_ci_high"] == pytest.approx(4 + half)
    assert row["jain_fairness_ci_high"] == 1.0
    assert mean_ci(4.0, half, 1, 1, "preemptions") == f"4.0 (0.0–{4 + half:.1f})"
    assert mean_ci(4.0, 1.0, 1, 1, "preemptions") == "4.0 ± 1.0"  # inside: unchanged
    assert mean_ci(4.0, half, 1, 1) == f"4.0 ± {half:.1f}"  # a quantity of no known range


def test_durations_take_the_unit_that_suits_them() -> None:
    assert time_unit([12.0, 80.0]) == (1.0, "s")
    assert time_unit([300.0, 4000.0]) == (60.0, "min")
    assert time_unit([9000.0, math.nan]) == (3600.0, "h")


def test_grid_page_draws_a_line_per_policy_with_short_waits_in_seconds(
    trace: Path, tmp_path: Path
) -> None:
    grid = tmp_path / "grid"
    argv = ["sweep", "--cluster", "2x4:V100", "--traces", str(trace), "--policies", "fifo"]
    argv += ["sjf", "--load", "0.5,0.7", "--seeds", "0-2", "--workers", "1", "--out", str(grid)]
    assert main(argv) == 0
    page = (grid / "report-jobs.html").read_text()
    cdf = _figure(page, "jct-distribution")
    assert cdf.count("(3 seeds)") == 2  # a legend entry per policy, not per seed
    assert "Mean queue delay (s)" in page or "Mean queue delay (min)" in page
    assert "Mean queue delay (h)" not in page
    agg = pd.read_csv(grid / "aggregate.csv")
    assert (agg["avg_queue_delay_ci_low"].dropna() >= 0).all()


def test_pack_figures_raise_no_warning_when_the_first_policy_has_no_published_value(
    tmp_path: Path,
) -> None:
    rows = [
        {"policy": p, "seed": s, "bin": b, "unallocated_gpu_pct": v, "frag_amount_pct": 1.0,
         "frag_ratio_pct": 2.0}
        for p, base in (("random", 9.0), ("fgd", 5.0))
        for s in (1, 2)
        for b, v in ((90, base + s), (100, base + s))
    ]  # fmt: skip
    curves = pd.DataFrame(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paths = write_pack_figures(curves, ["random", "fgd"], tmp_path, reference={"fgd": 4.77})
    assert all(p.stat().st_size > 0 for p in paths)
    svg = (tmp_path / "unallocated_at_100.svg").read_text()
    assert "published" in svg
    assert np.isfinite(curves["unallocated_gpu_pct"]).all()
