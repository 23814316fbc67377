"""The Titan-on-ITP reproduction: the merged trace, and the --quick run end to end."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT, SHARED_DIR
from schedlab.experiments.titan_itp import ItpRun, itp_files, measure, merged_itp

ITP = SHARED_DIR / "traces" / "elasticflow-itp" / "simulation"
needs_itp = pytest.mark.skipif(not ITP.is_dir(), reason=f"needs the ITP traces at {ITP}")


@needs_itp
def test_the_ten_clusters_merge_by_submission_time() -> None:
    files = itp_files(SHARED_DIR)
    assert [f.stem for f in files] == [f"cluster{i:02d}" for i in range(1, 11)]
    jobs = merged_itp(files)
    assert len(jobs) == 69_351  # every job of the ten files (the README's count)
    assert (np.diff(jobs.submit_time) >= 0).all()
    gpu_hours = float((jobs.duration * jobs.num_gpus).sum()) / 3600
    assert gpu_hours == pytest.approx(1_632_719.74, abs=0.01)
    assert jobs.job_id[0].startswith("cluster") and len(set(jobs.job_id)) == len(jobs)
    assert set(jobs.model_name) <= {
        "resnet50",
        "vgg16",
        "inception3",
        "bert",
        "gpt2",
        "deepspeech2",
    }


@needs_itp
def test_one_placement_on_the_first_jobs_measures_what_the_table_needs() -> None:
    jobs = merged_itp(itp_files(SHARED_DIR), 200)
    row = measure(ItpRun("bestfit-machine", jobs))
    assert row["completed"] == 200
    assert 0 < row["machines_used"] <= 512
    assert 0 <= row["machine_frag_rate"] < 1
    assert row["cpu_s"] > 0  # the replay's own CPU time, reported
    # bestfit-machine splits a job only when no machine holds it: only jobs above 8 GPUs
    multi = int((jobs.num_gpus > 8).sum())
    assert row["multi_machine_jobs"] == multi


@needs_itp
def test_quick_study_writes_the_table_and_figure(tmp_path: Path) -> None:
    out = tmp_path / "itp"
    script = REPO_ROOT / "experiments" / "titan_itp.py"
    done = subprocess.run(
        [sys.executable, str(script), "--out", str(out), "--quick", "--workers", "1"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert {p.name for p in out.iterdir()} == {"table.csv", "table.md", "titan_itp.png"}
    rows = {r["placement"]: r for r in csv.DictReader((out / "table.csv").open())}
    assert list(rows) == ["titan", "fragments-first", "hived", "bestfit-machine", "tiresias-skew"]
    assert float(rows["titan"]["machines_used_vs_titan"]) == 1.0
    assert float(rows["bestfit-machine"]["paper_machines_used_vs_titan"]) == pytest.approx(
        334 / 174
    )
    assert "| titan | Titan |" in (out / "table.md").read_text()
