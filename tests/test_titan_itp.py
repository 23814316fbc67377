"""The Titan-on-ITP reproduction: the merged trace, the study's measures by hand on a tiny trace,
and the quick study through ``schedlab reproduce``."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_DIR
from schedlab.cli import main
from schedlab.experiments.titan_itp import ItpRun, itp_files, measure, merged_itp
from schedlab.model.jobs import JobTable
from schedlab.network.collectives import GRADIENT_BYTES

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


def _tiny() -> JobTable:
    """a: 16 GPUs of VGG-16 at 0 for 1,000 s; b: 4 GPUs at 100 s for 500 s; c: 1 GPU at 200 s."""
    return JobTable.from_columns(
        job_id=["a", "b", "c"],
        submit_time=[0.0, 100.0, 200.0],
        num_gpus=[16, 4, 1],
        duration=[1000.0, 500.0, 10.0],
        model_name=["vgg16", "resnet50", "resnet50"],
    )


def test_measures_of_a_tiny_trace_by_hand() -> None:
    """bestfit-machine puts a on machines 0 and 1 (its compact placement: it runs its trace
    1,000 s), b and then c on machine 2. Arrival window [0, 200]: 2 machines until 100 s, then 3
    with 4 idle GPUs of 24 → machines 2.5, fragmentation rate (0 + 1/6)/2. Whole run: 2 × 100 +
    3 × 500 + 2 × 400 = 2,500 machine-seconds. a's halving-doubling crosses machines in its last
    stage only: 16 ranks send S/16 each way, twice (reduce-scatter, all-gather) = 2S sender-side,
    S in Titan's count per iteration."""
    row = measure(ItpRun("bestfit-machine", _tiny()))
    assert row["completed"] == 3
    assert row["machines_used"] == pytest.approx(2.5)
    assert row["machine_frag_rate"] == pytest.approx(1 / 12)
    assert row["machine_days"] == pytest.approx(2500 / 86400)
    assert row["multi_machine_jobs"] == 1
    assert row["cross_GB_per_multi_job"] == pytest.approx(GRADIENT_BYTES["vgg16"] / 1e9)
    assert row["cross_GB_per_job"] == pytest.approx(GRADIENT_BYTES["vgg16"] / 3e9)
    assert row["makespan_days"] == pytest.approx(1000 / 86400)


def test_titan_uses_fragments_where_bestfit_takes_idle_machines() -> None:
    """x (6 GPUs) takes machine 0 under both. y (6 GPUs of ResNet-50): bestfit-machine gives it
    idle machine 1; titan, which adds an idle machine only for what the busy ones cannot hold,
    puts its 4-rank block on machine 1 and its 2-rank block on machine 0's two free GPUs. With
    N = 6, ranks 4 and 5 fold into ranks 0 and 1 (S each) and get the result back: 4S
    sender-side, 2S in Titan's count; the rest of the all-reduce stays on machine 1. z (4 GPUs)
    then fits machine 1 under titan, but needs idle machine 2 under bestfit-machine."""
    jobs = JobTable.from_columns(
        job_id=["x", "y", "z"],
        submit_time=[0.0, 1.0, 10.0],
        num_gpus=[6, 6, 4],
        duration=[500.0, 500.0, 100.0],
        model_name=["vgg16", "resnet50", "vgg16"],
    )
    titan = measure(ItpRun("titan", jobs))
    bestfit = measure(ItpRun("bestfit-machine", jobs))
    assert bestfit["multi_machine_jobs"] == 0 and bestfit["cross_TB_total"] == 0
    assert titan["multi_machine_jobs"] == 1
    assert titan["cross_GB_per_multi_job"] == pytest.approx(2 * GRADIENT_BYTES["resnet50"] / 1e9)
    # bestfit-machine: every job on one machine runs its trace time (2 × 500 + 100 machine-s);
    # titan's split y sends its fold over the NIC and runs longer than its trace's 500 s.
    assert bestfit["machine_days"] == pytest.approx(1100 / 86400)
    assert titan["machine_days"] > 1000 / 86400 and titan["mean_jct_h"] > bestfit["mean_jct_h"]


@needs_itp
def test_quick_study_through_reproduce(tmp_path: Path) -> None:
    out = tmp_path / "repro"
    assert (
        main(
            [
                "reproduce",
                "titan",
                "--quick",
                "--out",
                str(out),
                "--workers",
                "1",
                "--shared",
                str(SHARED_DIR),
            ]
        )
        == 0
    )
    itp = out / "titan" / "itp"
    assert {p.name for p in itp.iterdir()} == {"table.csv", "table.md", "titan_itp.png"}
    rows = {r["placement"]: r for r in csv.DictReader((itp / "table.csv").open())}
    assert list(rows) == ["titan", "fragments-first", "hived", "bestfit-machine", "tiresias-skew"]
    assert float(rows["bestfit-machine"]["paper_machines_used_vs_titan"]) == pytest.approx(
        334 / 174
    )
    checks = list(csv.DictReader((out / "titan" / "checks.csv").open()))
    toy = [c for c in checks if c["what"].startswith("toy:")]
    assert len(toy) == 6 and all(c["verdict"] == "pass" for c in toy)
    assert "| fragments-first | HiveD |" in (out / "titan" / "table.md").read_text()
