"""The grid report: a page built around policies (a colour each, seeds as dots or a band,
mean ± CI cells), checked in headless Chromium on a 40-run grid with a screenshot kept."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.report.colours import COLOURS, REPLAY_POLICIES, policy_colour
from test_html_report import open_in_chromium

POLICIES = ("fifo", "sjf", "tiresias", "gandiva")


@pytest.fixture(scope="module")
def grid_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 seeds × 4 policies on a generated workload, at two loads (80 runs, 40 per load)."""
    out = tmp_path_factory.mktemp("grid") / "g"
    argv = ["sweep", "--cluster", "2x8:V100", "--synthetic", "80", "--policies", *POLICIES]
    argv += ["--seeds", "1-10", "--load", "0.6,0.9", "--workers", "2", "--out", str(out)]
    assert main(argv) == 0
    return out / "report-synthetic-80.html"


def test_colours_are_fixed_by_name_not_by_order() -> None:
    assert [policy_colour(p) for p in REPLAY_POLICIES[:12]] == list(COLOURS)
    assert policy_colour("tiresias thresholds=1800") == policy_colour("tiresias thresholds=1800")
    assert policy_colour("fifo") != policy_colour("sjf")


def test_the_table_has_a_column_per_policy_and_no_legend_per_seed(grid_page: Path) -> None:
    page = grid_page.read_text()
    header = re.search(r"<thead><tr><th>metric</th>(.*?)</tr></thead>", page, re.S)
    assert header is not None
    assert header.group(1).count("<th>") == len(POLICIES)
    assert "Offered load 0.6" in page and "Offered load 0.9" in page
    assert re.search(r"<td[^>]*>\d+\.\d+ ± \d+\.\d+</td>", page)
    assert 'id="against-offered-load"' in page
    assert "Deadlines met" not in page  # the generated trace has no deadlines
    for p in POLICIES:  # each policy's colour is on the page, in its figures
        assert policy_colour(p).lower() in page.lower()


def test_grid_report_renders_in_headless_chromium(grid_page: Path) -> None:
    """No console error, nothing fetched, every figure drawn, tables within 1,400 px; the
    screenshot is kept beside the grid for a person to look at."""
    shot = grid_page.parent.parent / "grid-report.png"
    seen = open_in_chromium(grid_page, width=1400, screenshot=shot)
    assert seen["problems"] == []
    assert seen["fetched"] == [grid_page.as_uri()]
    assert len(seen["svgs"]) == 3  # seeds, load curves, JCT CDF
    for svg in seen["svgs"]:
        assert svg["w"] > 100 and svg["h"] > 50 and svg["texts"] > 0
    assert seen["rows"] == 2 * 11  # two loads × (10 defined metrics + seeds)
    assert seen["widest_table"] <= 1400
    assert shot.stat().st_size > 10_000
