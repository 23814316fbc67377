"""``schedlab trace stats|validate`` on the Alibaba v2025 instance trace, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from schedlab.cli import main
from test_alibaba_2025 import HEADER, PRISM, PRISM_MISSING, ROWS


@pytest.fixture
def prism_csv(tmp_path: Path) -> Path:
    path = tmp_path / "dlrm.csv"
    path.write_text("\n".join([HEADER, *ROWS]) + "\n")
    return path


def test_stats_recognises_the_header(prism_csv, capsys):
    assert main(["trace", "stats", str(prism_csv)]) == 0
    out = capsys.readouterr().out
    for needle in (
        "(alibaba-2025)",
        "CN instances",
        "2 (2 apps)",
        "no deletion time (censored)",
        "at most 8 per node",
        "concurrent instances, peak",
        "4 at 200 s",
        "180 vCPU, 2 GPUs",
        "RDMA (% of a NIC)",
    ):
        assert needle in out, needle


def test_stats_json_by_named_format(prism_csv, capsys):
    assert main(["trace", "stats", str(prism_csv), "--format", "alibaba-2025", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "alibaba-2025" and data["rows"] == 4
    s = data["stats"]
    assert s["by_role"]["CN"]["instances"] == 2
    assert s["by_role"]["CN"]["requests"]["memory_gib"]["max"] == pytest.approx(937.5, abs=1e-3)
    assert s["anti_affinity"]["instances_without_limit"] == 1
    assert s["concurrency_peak"]["instances"] == 4


def test_validate_and_bad_row_through_the_real_command(prism_csv):
    cmd = [sys.executable, "-m", "schedlab", "trace", "validate", str(prism_csv)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok: 4 instances (alibaba-2025)"

    prism_csv.write_text(prism_csv.read_text().replace("i3,HN,app_a,12", "i3,HN,app_a,twelve"))
    for action in ("validate", "stats"):
        cmd[4] = action
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.splitlines() == [
            "schedlab: error: 'cpu_request' must be a whole number (got 'twelve') "
            f"at {prism_csv}:5, column 'cpu_request'"
        ]


def test_job_filters_are_refused(prism_csv, capsys):
    assert main(["trace", "stats", str(prism_csv), "--min-duration", "60"]) == 2
    assert "'--min-duration' filters jobs" in capsys.readouterr().err


@pytest.mark.shared
@pytest.mark.skipif(not PRISM.is_file(), reason=PRISM_MISSING)
def test_real_file_stats(capsys):
    assert main(["trace", "stats", str(PRISM), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)["stats"]
    assert s["by_role"]["CN"]["instances"] == 16_485 and s["by_role"]["HN"]["instances"] == 7_386
    assert s["apps"] == 156 and s["anti_affinity"]["instances_without_limit"] == 12_248
    assert s["without_creation_time"] == 7_280 and s["without_deletion_time"] == 8_878
    assert s["window_end_seconds"] == 2_677_541.0
    assert s["concurrency_peak"]["instances"] == 8_983
    assert s["concurrency_peak"]["at_seconds"] == 2_631_395.0
