"""``schedlab report`` on ``replay --federation`` run folders, as a user runs it: the table per
dispatcher and per site with the hand cases' figures, refusals, the same bytes twice."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import _energy_data_found
from schedlab.cli import main
from test_federation_cases import site

pytestmark = pytest.mark.skipif(
    not _energy_data_found(), reason="the power tables in ../shared/data are not found"
)

TWO_SITES = site("A", 2.0, 0.09, "const:400", wan="wan = { B = { gbps = 8, rtt_ms = 0 } }") + site(
    "B", 1.0, 0.05, "const:100"
)


def federated_run(tmp_path: Path, name: str, settings: str, rows: str, *extra: str) -> Path:
    fed = tmp_path / f"{name}.toml"
    fed.write_text(f'[federation]\nwan_sharing = "none"\n{settings}\n{TWO_SITES}')
    trace = tmp_path / f"{name}.csv"
    trace.write_text(rows)
    out = tmp_path / name
    argv = ["replay", "--federation", str(fed), "--trace", str(trace), *extra, "--out", str(out)]
    assert main(argv) == 0
    return out


def cells(page: str, row: str) -> list[str]:
    """The cells' texts of the table row headed ``row``."""
    match = re.search(rf'<th scope="row">{re.escape(row)}</th>(.*?)</tr>', page)
    assert match, row
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>.*?</td>", match[1])]


@pytest.fixture()
def runs(tmp_path):
    # C1: cheapest sends the 8-GPU hour to B with its 50 GB: $8 + $4.50, 0.24 kg
    cheap = federated_run(
        tmp_path, "cheap", 'dispatcher = "cheapest"',
        "job_id,submit_time,num_gpus,duration,data_site,data_gb\nx,0,8,3600,A,50\n",
    )  # fmt: skip
    # moves: least-loaded moves x (running) to B at 200 s with its 50 GB checkpoint
    moved = federated_run(
        tmp_path, "moved",
        'dispatcher = "least-loaded"\nreconsider = "periodic:100"\nmove_running = true',
        "job_id,submit_time,num_gpus,duration,site,ckpt_gb\n"
        "x,0,8,1000,,50\nb,0,8,150,B,0\ny,50,8,500,A,0\n",
        "--restart-overhead", "30",
    )  # fmt: skip
    return cheap, moved


def test_the_page_has_a_table_per_dispatcher_and_per_site(tmp_path, runs, capsys) -> None:
    cheap, moved = runs
    page_path = tmp_path / "page.html"
    argv = ["report", str(cheap), str(moved), "--out", str(page_path), "--title", "Sites"]
    assert main(argv) == 0
    assert "2 federation runs" in capsys.readouterr().err
    page = page_path.read_text()
    assert '<h2 id="dispatchers">By dispatcher</h2>' in page and "By site" in page
    # columns of the dispatcher table, in order: Completed, Mean JCT, p99 JCT, Mean queueing,
    # p99 queueing, Data moved, Egress, Compute, Total cost, Carbon, g/kWh, Moves
    c = cells(page, "cheapest")
    assert c[0] == "1" and c[1] == "60.8 min" and 'title="3650"' in page  # 3,650 s
    assert c[5:10] == ["50.0 GB", "$4.50", "$8.00", "$12.50", "0.24 kg"]
    assert c[10] == "100.0" and c[11] == "—"  # no moves without reconsider
    m = cells(page, "least-loaded")
    assert m[0] == "3" and m[5] == "50.0 GB" and m[6] == "$4.50" and m[11] == "1"
    # the per-site table of the run with moves: x ended at B (moved in), y at A
    summary = json.loads((moved / "summary.json").read_text())["federation"]
    assert summary["sites"]["B"]["moves_in"] == 1
    assert page.count('<th scope="row">A</th>') == 2 and page.count('<th scope="row">B</th>') == 2
    assert "reconsider periodic:100 (margin 0.1, running jobs too)" in page
    assert 'id="fig-fed-jct' in page and 'id="fig-fed-shares' in page
    # the same folders give the same bytes
    again = tmp_path / "again.html"
    assert main(["report", str(cheap), str(moved), "--out", str(again), "--title", "Sites"]) == 0
    assert again.read_bytes() == page_path.read_bytes()


def test_bad_folders_are_refused_in_one_line(tmp_path, runs, capsys) -> None:
    cheap, _ = runs
    plain = tmp_path / "plain"
    trace = tmp_path / "plain.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\nx,0,1,10\n")
    argv = ["replay", "--cluster", "1x8:V100", "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, "--out", str(plain)]) == 0
    capsys.readouterr()
    out = tmp_path / "page.html"
    assert main(["report", str(cheap), str(plain), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not a replay --federation run folder" in err and len(err.splitlines()) == 1
    summary = json.loads((cheap / "summary.json").read_text())
    del summary["federation"]["sites"]["B"]["gpu_hours"]
    (cheap / "summary.json").write_text(json.dumps(summary))
    assert main(["report", str(cheap), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "no 'federation.sites.B.gpu_hours'" in err and "summary.json" in err
    assert not out.exists()


def test_a_federation_sweep_folder_is_reported_run_by_run(tmp_path) -> None:
    fed = tmp_path / "pair.toml"
    fed.write_text(TWO_SITES)
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\nx,0,4,100\ny,5,8,50\nz,9,2,70\n")
    grid = tmp_path / "grid"
    argv = ["sweep", "--federation", str(fed), "--traces", str(trace), "--seeds", "0-1"]
    argv += ["--dispatchers", "round-robin", "cheapest", "--workers", "1", "--out", str(grid)]
    assert main(argv) == 0
    out = tmp_path / "grid.html"
    assert main(["report", str(grid), "--out", str(out)]) == 0
    page = out.read_text()
    for row in ("round-robin · pair/t/seed0", "cheapest · pair/t/seed1"):
        assert cells(page, row)[0] == "3"  # every job completed
    # cheapest keeps every job at B (half the price, no data to move): A's row shows 0 jobs
    section = page.split("<h3>cheapest · pair/t/seed0</h3>")[1].split("<h3>")[0]
    assert cells(section, "A")[:2] == ["8", "0"] and cells(section, "B")[:2] == ["8", "3"]
    assert page.count('<th scope="row">B</th>') == 4
    assert main(["report", str(grid), str(grid), "--out", str(out)]) == 2
