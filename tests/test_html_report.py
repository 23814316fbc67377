"""The HTML report: built from tiny run folders written here, checked as text and in Chromium."""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.commands import report as report_cmd
from schedlab.errors import InputError
from schedlab.metrics.replay_metrics import step_integral, summarize
from schedlab.report.html_report import MAX_POINTS, build_report, downsample_step

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
FIGURE_IDS = ("fig-jct-cdf", "fig-queue", "fig-util", "fig-users")


def write_run(
    folder: Path,
    policy: str,
    *,
    slow: float = 1.0,
    deadlines: bool = True,
    rows: int = 40,
    series_rows: int | None = None,
) -> Path:
    """A replay folder as the engine writes it: jobs.csv, timeseries.csv, summary.json."""
    rng = np.random.default_rng(len(policy) + rows)
    submit = np.sort(rng.uniform(0, 3600, rows)).round(3)
    duration = rng.uniform(5, 600, rows).round(3)
    start = submit + rng.uniform(0, 900, rows).round(3) * slow
    end = start + duration
    status = np.array(["completed"] * rows, dtype=object)
    status[::7], status[3::11] = "rejected", "unfinished"
    start[status == "rejected"] = np.nan
    end[status != "completed"] = np.nan
    deadline = np.where(np.arange(rows) % 3 == 0, submit + 2 * duration, np.nan)
    jobs = pd.DataFrame(
        {
            "job_id": [f"job-{i}" for i in range(rows)],
            "user": [f"user{i % 5}" for i in range(rows)],
            "submit_time": submit,
            "start_time": start,
            "end_time": end,
            "num_gpus": 1,
            "duration": duration,
            "deadline": deadline if deadlines else np.nan,
            "preemptions": np.arange(rows) % 2,
            "resizes": 0,
            "gpu_seconds": duration,
            "status": status,
        }
    )
    n = series_rows or 2 * rows
    times = np.sort(rng.uniform(0, 5000, n)).round(3)
    ts = pd.DataFrame(
        {
            "time": times,
            "queue_length": rng.integers(0, 10, n),
            "running_jobs": rng.integers(0, 8, n),
            "busy_gpus": rng.integers(0, 9, n),
            "total_gpus": 8,
        }
    )
    folder.mkdir(parents=True, exist_ok=True)
    jobs.to_csv(folder / "jobs.csv", index=False)
    ts.to_csv(folder / "timeseries.csv", index=False)
    summary = summarize(jobs, ts)
    summary.update(policy=policy, placement="bestfit", trace="tiny", seed=7, wall_seconds=0.5)
    (folder / "summary.json").write_text(json.dumps(summary, allow_nan=False), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path]:
    root = tmp_path_factory.mktemp("runs")
    dirs = [write_run(root / "fifo", "fifo"), write_run(root / "srtf", "srtf", slow=0.3)]
    out = build_report(dirs, root / "report.html", title="FIFO <vs> SRTF")
    return dirs, out


def test_report_has_table_and_every_figure(two_runs):
    _, out = two_runs
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "<title>FIFO &lt;vs&gt; SRTF</title>" in text  # the title is escaped
    assert '<table class="summary">' in text
    for label in ("fifo/bestfit", "srtf/bestfit"):
        assert f'<th scope="col">{label}</th>' in text
    for row in ("Mean JCT", "p99 JCT", "GPU utilisation", "Jain fairness", "Deadline satisfactory"):
        assert row in text
    for fig in FIGURE_IDS:  # each figure is an inline SVG with its own id prefix
        assert f'id="{fig}-' in text
    assert text.count("<figure") == 4 and text.count("<svg") == 4
    assert "schedlab " in text.split("<footer>")[1]  # footer names the version


def test_report_is_self_contained(two_runs):
    _, out = two_runs
    text = out.read_text(encoding="utf-8")
    # nothing fetched: no external src/href, no script, no CSS import or remote url()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.I)
    assert not re.search(r"url\(\s*['\"]?\s*(https?:)?//", text, re.I)
    assert "<script" not in text.lower() and "@import" not in text
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids))  # inline SVGs must not share ids


def test_report_is_reproducible_and_readable_by_others(two_runs, tmp_path):
    dirs, out = two_runs
    again = build_report(dirs, tmp_path / "again.html", title="FIFO <vs> SRTF")
    assert again.read_bytes() == out.read_bytes()
    old = os.umask(0o022)
    try:
        mode = stat.S_IMODE(build_report(dirs, tmp_path / "shared.html").stat().st_mode)
    finally:
        os.umask(old)
    assert mode == 0o644  # not the 0600 of the temporary file


def test_labels_get_folder_name_only_when_ambiguous_and_dsr_only_with_deadlines(tmp_path):
    a = write_run(tmp_path / "a" / "run1", "fifo", deadlines=False)
    b = write_run(tmp_path / "b" / "run2", "fifo", deadlines=False)
    text = build_report([a, b], tmp_path / "r.html").read_text(encoding="utf-8")
    assert "fifo/bestfit · run1" in text and "fifo/bestfit · run2" in text
    assert "Deadline satisfactory" not in text
    assert "<title>Replay report: 2 runs</title>" in text


def test_long_series_are_downsampled(tmp_path):
    run = write_run(tmp_path / "long", "fifo", series_rows=5 * MAX_POINTS)
    out = build_report([run], tmp_path / "r.html")
    assert "time-weighted means" in out.read_text(encoding="utf-8")
    assert out.stat().st_size < 1_500_000


def test_downsample_keeps_the_time_weighted_mean():
    rng = np.random.default_rng(1)
    times = np.cumsum(rng.uniform(0.1, 10, 10_000))
    values = rng.integers(0, 50, 10_000).astype(float)
    x, y, step = downsample_step(times, values)
    assert not step and len(x) == len(y) == MAX_POINTS
    exact = step_integral(times, values, np.array([times[-1]]))[0] / (times[-1] - times[0])
    assert y.mean() == pytest.approx(exact)  # equal bins: mean of bin means = overall mean
    short = downsample_step(times[:10], values[:10])
    assert short[2] and len(short[0]) == 10


def test_empty_run_and_run_without_series_still_render(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "jobs.csv").write_text(
        "job_id,user,submit_time,start_time,end_time,num_gpus,duration,deadline,preemptions,"
        "resizes,gpu_seconds,status\n"
    )
    (empty / "summary.json").write_text('{"policy": "fifo"}')
    text = build_report([empty], tmp_path / "r.html").read_text(encoding="utf-8")
    assert "no completed jobs" in text and "no time series recorded" in text
    assert text.count("<svg") == 4


@pytest.mark.parametrize(
    ("remove", "message"),
    [
        (None, "run folder not found"),
        ("jobs.csv", "no jobs.csv"),
        ("summary.json", "no summary.json"),
    ],
)
def test_bad_folder_is_an_input_error_and_writes_nothing(tmp_path, remove, message):
    good = write_run(tmp_path / "good", "fifo")
    bad = tmp_path / "bad"
    if remove is not None:
        write_run(bad, "srtf")
        (bad / remove).unlink()
    out = tmp_path / "report.html"
    with pytest.raises(InputError, match=message) as exc:
        build_report([good, bad], out)
    assert str(bad) in str(exc.value)
    assert not out.exists()
    assert list(tmp_path.glob(".report.html*")) == []  # no temporary file left either


def test_bad_contents_name_the_file_and_keep_the_old_report(tmp_path):
    run = write_run(tmp_path / "run", "fifo")
    out = tmp_path / "report.html"
    out.write_text("old")
    jobs = pd.read_csv(run / "jobs.csv")
    jobs.loc[2, "status"] = "exploded"
    jobs.to_csv(run / "jobs.csv", index=False)
    with pytest.raises(InputError, match="exploded") as exc:
        build_report([run], out)
    assert str(run / "jobs.csv") in str(exc.value)
    (run / "summary.json").write_text("[1, 2")
    with pytest.raises(InputError, match="not valid JSON"):
        build_report([run], out)
    assert out.read_text() == "old"


def test_report_command(two_runs, tmp_path):
    dirs, _ = two_runs
    parser = argparse.ArgumentParser(prog="schedlab")
    report_cmd.add_parser(parser.add_subparsers())
    out = tmp_path / "cli.html"
    args = parser.parse_args(["report", *map(str, dirs), "--out", str(out), "--title", "T"])
    assert args.run(args) == 0
    assert "<title>T</title>" in out.read_text(encoding="utf-8")
    with pytest.raises(SystemExit):  # --out is required
        parser.parse_args(["report", str(dirs[0])])
    args = parser.parse_args(["report", str(tmp_path / "nope"), "--out", str(out)])
    with pytest.raises(InputError, match="not found"):
        args.run(args)


def open_in_chromium(
    page_path: Path, width: int = 1280, screenshot: Path | None = None
) -> dict[str, object]:
    """Load a report in headless Chromium, offline; what a test checks of it: console problems,
    URLs fetched, each figure's size and text count, image widths, summary rows, widest table."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not found (Debian package 'chromium')")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:  # missing, or installed without its driver
        pytest.skip(f"Python package 'playwright' not usable ({exc})")
    problems: list[str] = []
    fetched: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.on(
                "console",
                lambda m: (
                    problems.append(f"console {m.type}: {m.text}")
                    if m.type in ("error", "warning")
                    else None
                ),
            )
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("request", lambda r: fetched.append(r.url))
            page.goto(page_path.as_uri(), wait_until="load")
            seen = {
                "svgs": page.evaluate(
                    """() => [...document.querySelectorAll('figure svg')].map(s => {
                       const r = s.getBoundingClientRect();
                       return {w: r.width, h: r.height, texts: s.querySelectorAll('text').length};
                   })"""
                ),
                "images": page.evaluate(
                    "() => [...document.images].map(i => i.complete ? i.naturalWidth : 0)"
                ),
                "rows": page.locator("table.summary tbody tr").count(),
                "widest_table": page.evaluate(
                    "() => Math.max(0, ...[...document.querySelectorAll('table')]"
                    ".map(t => t.scrollWidth))"
                ),
            }
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return {**seen, "problems": problems, "fetched": fetched}


def test_renders_in_headless_chromium(two_runs):
    """A real browser loads the page offline: no console error, every figure has a size."""
    _, out = two_runs
    seen = open_in_chromium(out)
    problems, fetched, svgs = seen["problems"], seen["fetched"], seen["svgs"]
    images, rows = seen["images"], seen["rows"]
    assert problems == []
    assert fetched == [out.as_uri()]  # the page itself, nothing else
    assert len(svgs) == 4
    for svg in svgs:
        assert svg["w"] > 100 and svg["h"] > 50 and svg["texts"] > 0
    assert all(w > 0 for w in images)
    assert rows > 10
