"""The AcmeTrace reader and statistics on files written here in its format (the real traces are
not shipped; see shared/data/acme/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import SHARED_DIR
from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.experiments.acme_study import SUMMARY_COLUMNS, compare, reproduce_acme_stats
from schedlab.traces.acme import acme_stats
from schedlab.traces.formats import detect_format, read_jobs

ACME = SHARED_DIR / "data" / "acme"
SEREN_HEADER = (
    "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,"
    "queue,gpu_time"
)
# Seren times are +08:00: 08:00:00+08:00 is 00:00:00 UTC.
SEREN_ROWS = [
    "1,u1,1,8,64,Pretrain,COMPLETED,2023-03-01 08:00:00+08:00,2023-03-01 08:00:10+08:00,"
    "2023-03-01 09:00:10+08:00,3600,10,28800",
    "2,u2,0,0,4,Other,COMPLETED,2023-03-01 08:01:00+08:00,2023-03-01 08:01:00+08:00,"
    "2023-03-01 08:02:00+08:00,60,0,0",
    "3,u1,1,1,8,Eval,FAILED,2023-03-01 08:02:00+08:00,2023-03-01 08:02:30+08:00,"
    "2023-03-01 08:04:30+08:00,120,30,120",
    "4,u3,2,16,128,Pretrain,NODE_FAIL,2023-03-01 08:03:00+08:00,2023-03-01 08:03:01+08:00,"
    "2023-03-01 10:03:01+08:00,7200,1,115200",
    "5,u2,1,2,16,SFT,CANCELLED,2023-03-01 08:04:00+08:00,2023-03-01 08:04:05+08:00,"
    "2023-03-01 08:14:05+08:00,600,5,1200",
    "6,u3,1,1,8,Eval,TIMEOUT,2023-03-01 08:05:00+08:00,2023-03-01 08:05:00+08:00,"
    "2023-03-01 08:05:00+08:00,0,0,0",
]


def seren_file(tmp_path: Path, name: str = "trace_seren.csv") -> Path:
    path = tmp_path / name
    path.write_text(SEREN_HEADER + "\n" + "\n".join(SEREN_ROWS) + "\n")
    return path


def test_reader(tmp_path: Path) -> None:
    path = seren_file(tmp_path)
    assert detect_format(path) == "acme"
    result = read_jobs(path)
    jobs = result.jobs
    assert result.dropped == {"zero_gpus": 1, "zero_duration": 1}
    assert jobs.job_id.tolist() == ["1", "3", "4", "5"]
    assert jobs.submit_time.tolist() == [0.0, 120.0, 180.0, 240.0]
    assert jobs.gpus_per_node.tolist() == [8, 1, 8, 2] and jobs.num_nodes.tolist() == [1, 1, 2, 1]
    assert jobs.cpu_milli.tolist() == [64000, 8000, 128000, 16000]
    assert jobs.extra["job_type"].tolist() == ["Pretrain", "Eval", "Pretrain", "SFT"]
    assert jobs.extra["final_state"].tolist() == ["COMPLETED", "FAILED", "NODE_FAIL", "CANCELLED"]


def test_kalos_offsets_and_fail_after(tmp_path: Path) -> None:
    path = tmp_path / "trace_kalos.csv"
    path.write_text(
        SEREN_HEADER + ",mem_per_pod_GB,shared_mem_per_pod,fail_time,stop_time\n"
        "a,u,1,8,8,Pretrain,FAILED,2023-05-01 00:00:00+00:00,2023-05-01 00:01:00+00:00,"
        "2023-05-01 00:11:00+00:00,600,60,4800,100.5,0,2023-05-01 00:06:00+00:00,\n"
        "b,u,1,8,8,Eval,COMPLETED,2023-04-30 23:00:00-01:00,2023-05-01 00:00:10+00:00,"
        "2023-05-01 00:01:10+00:00,60,10,480,1,0,,\n"
    )
    jobs = read_jobs(path).jobs
    assert jobs.submit_time.tolist() == [0.0, 0.0]  # 23:00 at −01:00 is midnight UTC
    assert jobs.memory_mib.tolist() == [round(100.5 * 1024), 1024]
    fail = jobs.extra["fail_after"]
    assert fail[0] == 300.0 and np.isnan(fail[1])


def test_bad_rows_name_the_place(tmp_path: Path) -> None:
    path = seren_file(tmp_path)
    path.write_text(path.read_text().replace("NODE_FAIL", "EXPLODED"))
    with pytest.raises(
        InputError, match=r"state must be one of .*trace_seren.csv:5, column 'state'"
    ):
        read_jobs(path)
    path = seren_file(tmp_path)
    path.write_text(path.read_text().replace("2023-03-01 08:02:00+08:00,2023", "yesterday,2023"))
    with pytest.raises(InputError, match=r"'submit_time' is not a date-time .*:4"):
        read_jobs(path)


def test_statistics_by_hand(tmp_path: Path) -> None:
    stats = acme_stats(seren_file(tmp_path))
    # GPU jobs: 1, 3, 4, 5, 6 (job 2 is CPU-only; job 6 ran 0 s but is a GPU job of the trace)
    assert (stats["jobs"], stats["cpu_jobs"], stats["gpu_jobs"]) == (6, 1, 5)
    assert stats["mean_run_time"] == pytest.approx((3600 + 120 + 7200 + 600 + 0) / 5)
    assert stats["median_run_time"] == 600
    assert stats["mean_queue"] == pytest.approx((10 + 30 + 1 + 5 + 0) / 5)
    assert stats["mean_gpus"] == pytest.approx((8 + 1 + 16 + 2 + 1) / 5)
    assert stats["max_gpus"] == 16 and stats["max_run_time"] == 7200
    assert stats["completed_rate"] == pytest.approx(1 / 5)
    assert stats["cancelled_rate"] == pytest.approx(1 / 5)
    assert stats["failed_rate"] == pytest.approx(3 / 5)  # FAILED, NODE_FAIL, TIMEOUT
    total = 28800 + 120 + 115200 + 1200
    assert stats["failed_gpu_time"] == 115320
    assert stats["completed_gpu_time_rate"] == pytest.approx(28800 / total)
    assert stats["job_types"]["Pretrain"]["job_pct"] == pytest.approx(40.0)
    assert stats["job_types"]["Pretrain"]["gpu_time_pct"] == pytest.approx(100 * 144000 / total)


def _published_as_stats(cluster: str) -> dict:
    summary = pd.read_csv(ACME / "cluster_summary.csv").set_index("id").loc[cluster]
    shares = pd.read_csv(ACME / "job_type_shares.csv")
    stats = {key: float(summary[col]) for col, (key, _, _) in SUMMARY_COLUMNS.items()}
    stats["job_types"] = {
        r["type"]: {"job_pct": r["job_count_pct"], "gpu_time_pct": r["gpu_time_pct"]}
        for _, r in shares[shares.cluster == cluster].iterrows()
    }
    return stats


@pytest.mark.shared
def test_comparison_passes_on_the_published_values_and_fails_off_them() -> None:
    if not ACME.is_dir():
        pytest.skip(
            "../shared/data/acme not found: the AcmeTrace summaries are not beside this checkout"
        )
    stats = _published_as_stats("Kalos")
    table = compare("Kalos", stats)
    assert len(table) == len(SUMMARY_COLUMNS) + 8 and (table.verdict == "pass").all()
    stats["gpu_jobs"] += 1
    stats["fail_rate"] = stats["failed_rate"] = stats["failed_rate"] + 0.002
    stats["job_types"]["Eval"]["job_pct"] += 0.2
    table = compare("Kalos", stats).set_index("item")
    assert table.verdict["gpu_job_num"] == "fail"
    assert table.verdict["fail_rate_gpu"] == "fail"
    assert table.verdict["Eval % of GPU jobs"] == "fail"
    assert table.verdict["cancel_rate_gpu"] == "pass"


@pytest.mark.shared
def test_reproduction_skips_absent_traces_by_name() -> None:
    if not ACME.is_dir():
        pytest.skip("../shared/data/acme not found")
    table = reproduce_acme_stats()
    for cluster in ("seren", "kalos"):
        trace = ACME / f"trace_{cluster}.csv"
        rows = table[table.target == f"Acme {cluster.capitalize()}"]
        if trace.is_file():
            assert (rows.verdict != "skipped").all()
        else:
            assert rows.verdict.tolist() == ["skipped"] and str(trace) in rows.ours.iloc[0]


def test_trace_stats_cli(tmp_path: Path, capsys) -> None:
    path = seren_file(tmp_path, "my_acme_sample.csv")
    assert main(["trace", "stats", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "acme" and data["acme"]["gpu_jobs"] == 5
    assert main(["trace", "stats", str(path)]) == 0
    assert "AcmeTrace statistics" in capsys.readouterr().out
    if ACME.is_dir():  # a file named like Seren's is compared with Seren's published row
        assert main(["trace", "stats", str(seren_file(tmp_path))]) == 0
        out = capsys.readouterr().out
        assert "AcmeTrace Seren: published" in out and "fail" in out


def test_replay_runs_an_acme_trace(tmp_path: Path, capsys) -> None:
    path = seren_file(tmp_path)
    out = tmp_path / "out"
    assert main(["replay", "--cluster", "4x8:A100", "--trace", str(path), "--policy", "fifo",
                 "--out", str(out)]) == 0  # fmt: skip
    jobs = pd.read_csv(out / "jobs.csv")
    assert jobs.job_id.astype(str).tolist() == ["1", "3", "4", "5"]
    assert jobs.duration.tolist() == [3600, 120, 7200, 600]
