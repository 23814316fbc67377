"""The HTML report of pack runs and pack grids: written by ``pack`` and the pack ``sweep``, made
again by ``schedlab report``, self-contained and the same bytes for the same runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.report.colours import policy_look
from test_cli import NODES, _pods_csv


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(_pods_csv(60))
    return nodes, pods


def _columns(page: str) -> list[str]:
    head = re.search(r"<thead><tr><th>metric</th>(.*?)</tr></thead>", page, re.S)
    assert head is not None
    return re.findall(r"</span>([^<]+)</th>", head.group(1))


def test_a_pack_run_writes_its_report(files: tuple[Path, Path], tmp_path: Path) -> None:
    nodes, pods = files
    pages = []
    for name in ("a", "b"):
        out = tmp_path / name
        argv = ["pack", "--nodes", str(nodes), "--pods", str(pods), "--policy", "fgd"]
        assert main([*argv, "--seed", "3", "--out", str(out)]) == 0
        pages.append((out / "report.html").read_text())
    page = pages[0]
    assert _columns(page) == ["fgd"]
    assert page.count("<svg") >= 2  # unallocated, fragmentation (bars once 100 % arrived)
    assert "Content-Security-Policy" in page and "http" not in page.split("<body>")[1].replace(
        "http://www.w3.org", ""
    )
    assert policy_look("fgd", "placement").colour in page
    assert pages[0].replace(str(tmp_path / "a"), "") == pages[1].replace(str(tmp_path / "b"), "")


def test_a_pack_grid_report_has_a_column_per_policy_and_report_remakes_it(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    nodes, pods = files
    grid = tmp_path / "grid"
    argv = ["sweep", "--nodes", str(nodes), "--pods", str(pods), "--policies", "bestfit", "fgd"]
    assert main([*argv, "--seeds", "1-3", "--workers", "1", "--out", str(grid)]) == 0
    page = (grid / "report.html").read_text()
    assert _columns(page) == ["bestfit", "fgd"]
    assert re.search(r"<td[^>]*>\d+\.\d+( ± \d+\.\d+| \(\d+\.\d+–\d+\.\d+\))?</td>", page)
    again = tmp_path / "again.html"
    assert main(["report", str(grid), "--out", str(again)]) == 0
    assert _columns(again.read_text()) == ["bestfit", "fgd"]
    assert again.read_text().count("<svg") == page.count("<svg")


def test_report_compares_pack_run_folders(files: tuple[Path, Path], tmp_path: Path) -> None:
    nodes, pods = files
    runs = []
    for policy in ("random", "bestfit"):
        out = tmp_path / policy
        argv = ["pack", "--nodes", str(nodes), "--pods", str(pods), "--policy", policy]
        assert main([*argv, "--no-figures", "--out", str(out)]) == 0
        assert not (out / "report.html").exists()  # no figures: no report either
        runs.append(str(out))
    page = tmp_path / "p.html"
    assert main(["report", *runs, "--out", str(page)]) == 0
    assert _columns(page.read_text()) == ["random", "bestfit"]
