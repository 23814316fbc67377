"""The energy section of the HTML report: present with energy runs, absent without."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.report.html_report import load_runs, render_html

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
pytestmark = pytest.mark.skipif(not (DATA / "power").is_dir(), reason="no ../shared/data")
TRACE = "job_id,submit_time,num_gpus,duration\na,0,2,3600\nb,600,4,1800\nc,700,1,900\n"


def run(tmp_path: Path, name: str, *extra: str) -> Path:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE)
    out = tmp_path / name
    argv = ["replay", "--cluster", "1x4:V100", "--trace", str(trace), "--out", str(out)]
    assert main([*argv, *extra]) == 0
    return out


def test_energy_figures_appear_with_energy_runs(tmp_path: Path) -> None:
    runs = [
        run(tmp_path, "fifo", "--policy", "fifo", "--ci", "synth:gb2020"),
        run(tmp_path, "lcs", "--policy", "lcs", "--ci", "synth:gb2020"),
    ]
    page = render_html(load_runs(runs))
    for figure in ("fig-power", "fig-ci", "fig-energy", "fig-jct-carbon"):
        assert f'id="{figure}-' in page
    assert "JCT against carbon" in page
    out = tmp_path / "report.html"
    assert main(["report", *map(str, runs), "--out", str(out)]) == 0
    assert "fig-jct-carbon" in out.read_text()


def test_power_only_runs_have_no_carbon_figures(tmp_path: Path) -> None:
    page = render_html(
        load_runs([run(tmp_path, "p", "--policy", "fifo", "--power-model", "binary")])
    )
    assert 'id="fig-power-' in page and 'id="fig-ci-' not in page


def test_plain_runs_have_no_energy_section(tmp_path: Path) -> None:
    page = render_html(load_runs([run(tmp_path, "plain", "--policy", "fifo")]))
    assert "fig-power" not in page and "Power over time" not in page
