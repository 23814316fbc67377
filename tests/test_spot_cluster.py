"""``--cluster`` takes the heterogeneous node list of the Alibaba spot-GPU trace v2026."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_DIR
from schedlab.cli import main
from schedlab.model.gpu_models import GPU_MODELS
from schedlab.traces.cluster_spec import parse_cluster_spec

SPOT = SHARED_DIR / "traces" / "alibaba-spot-2026" / "node_info_df.csv"
JOBS = "job_id,submit_time,num_gpus,duration,gpu_model\na,0,8,100,H800\nb,0,1,50,A10\nc,5,4,60,\n"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "node_info_df.csv"
    path.write_text(text)
    return path


def test_a_small_spot_node_list_replays_jobs_on_their_models(tmp_path: Path) -> None:
    nodes = _write(
        tmp_path,
        "gpu_model,gpu_capacity_num,cpu_num,node_name\n"
        "H800,8,192,7\nA10,1,128,9\nA100-SXM4-80GB,8,128,12\nGPU-series-1,4,192,20\n",
    )
    cluster = parse_cluster_spec(str(nodes))
    assert [GPU_MODELS[m] for m in cluster.model] == ["H800", "A10", "A100-80G", "GPU-series-1"]
    assert cluster.cpu_milli.tolist() == [192_000, 128_000, 128_000, 192_000]
    assert cluster.names.tolist() == ["node-7", "node-9", "node-12", "node-20"]
    trace = tmp_path / "jobs.csv"
    trace.write_text(JOBS)
    out = tmp_path / "run"
    argv = ["replay", "--cluster", str(nodes), "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["gpus"] == 21 and summary["completed"] == 3
    assert summary["cluster"] == "node_info_df.csv"


def test_an_unknown_model_in_the_spot_node_list_names_its_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes = _write(
        tmp_path, "gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,1,128,0\nB200,8,96,1\n"
    )
    trace = tmp_path / "jobs.csv"
    trace.write_text(JOBS)
    argv = ["replay", "--cluster", str(nodes), "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "unknown GPU model 'B200'" in err and "node_info_df.csv:3" in err
    assert "column 'gpu_model'" in err


@pytest.mark.shared
@pytest.mark.skipif(not SPOT.is_file(), reason=f"{SPOT} not found beside the checkout")
def test_the_published_spot_node_list_is_the_cluster_its_readme_counts(tmp_path: Path) -> None:
    cluster = parse_cluster_spec(str(SPOT))
    assert (cluster.size, cluster.total_gpus) == (4278, 10_412)
    counts = {
        GPU_MODELS[m]: (
            int((cluster.model == m).sum()),
            int(cluster.num_gpus[cluster.model == m].sum()),
        )
        for m in np.unique(cluster.model)
    }
    assert counts == {
        "A10": (2494, 2494),
        "A100-80G": (432, 3456),
        "A800": (22, 176),
        "H800": (219, 1752),
        "GPU-series-1": (989, 1558),
        "GPU-series-2": (122, 976),
    }
    trace = tmp_path / "jobs.csv"
    trace.write_text(JOBS)
    out = tmp_path / "run"
    argv = ["sweep", "--cluster", str(SPOT), "--traces", str(trace), "--policies", "fifo", "sjf"]
    assert main([*argv, "--workers", "1", "--out", str(out)]) == 0
    summary = json.loads((out / "runs" / "jobs" / "fifo-bestfit-s0" / "summary.json").read_text())
    assert summary["gpus"] == 10_412 and summary["completed"] == 3
