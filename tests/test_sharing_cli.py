"""End-to-end runs of ``schedlab replay --sharing`` and its refusals."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from schedlab.cli import main

NODES = """sn,cpu_milli,memory_mib,gpu,model
n0,16000,65536,1,V100M16
n1,16000,65536,2,T4
"""
# be1 runs on a GPU from 0; ls1 and ls2 fill the rest; ls3 at 30 evicts BE work; p0 never ran.
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
PODS = (
    HEADER
    + """creation_time,deletion_time,scheduled_time
be1,1000,1024,1,700,,BE,Running,0,100,0
ls1,1000,1024,1,1000,,LS,Running,10,60,10
ls2,1000,1024,1,1000,,LS,Running,20,80,20
ls3,1000,1024,1,600,,LS,Running,30,50,30
p0,1000,1024,1,500,,BE,Pending,5,9,
cpu,2000,1024,0,0,,Burstable,Running,0,40,0
"""
)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    return nodes, pods


def sharing(files: tuple[Path, Path], out: Path, *extra: str) -> int:
    nodes, pods = files
    argv = ["replay", "--sharing", "--cluster", str(nodes), "--trace", str(pods)]
    return main([*argv, "--placement", "bestfit", "--out", str(out), *extra])


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_trace_mode_writes_every_output(files, tmp_path, capsys):
    out = tmp_path / "run"
    assert sharing(files, out) == 0
    assert "5 pods" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pods_dropped"] == {"unscheduled": 1}
    pods = {r["pod"]: r for r in rows(out / "pods.csv")}
    assert set(pods) == {"be1", "ls1", "ls2", "ls3", "cpu"}
    # 3 GPUs: be1, ls1, ls2 take one each; ls3 (600) at 30 evicts be1 (700), which returns at
    # 50 when ls3 leaves and finishes its 70 s left at 120.
    assert pods["be1"]["evictions"] == "1"
    assert float(pods["be1"]["end"]) == 120
    assert float(pods["ls3"]["first_start"]) == 30
    assert summary["classes"]["BE"]["evictions"] == 1
    assert summary["classes"]["LS"]["queueing_delay_s"]["mean"] == 0
    assert summary["classes"]["Burstable"]["gpu_hours"] == 0
    assert (summary["cluster"]["peak_allocated_gpus"], summary["cluster"]["peak_time"]) == (2.7, 20)
    ts = rows(out / "timeseries.csv")
    assert [float(r["time"]) for r in ts][:4] == [0, 10, 20, 30]
    assert float(ts[2]["allocation_pct"]) == pytest.approx(100 * 2.7 / 3)
    assert float(ts[3]["pending_BE"]) == 1
    config = (out / "config.toml").read_text()
    assert 'placement = "bestfit"' in config


def test_keep_unscheduled_and_compressed_mode(files, tmp_path):
    out = tmp_path / "run"
    assert sharing(files, out, "--keep-unscheduled", "--mode", "compressed:10") == 0
    pods = {r["pod"]: r for r in rows(out / "pods.csv")}
    assert float(pods["p0"]["arrival"]) == 0.5 and float(pods["p0"]["work"]) == 4
    assert float(pods["ls3"]["arrival"]) == 3
    assert json.loads((out / "summary.json").read_text())["compression"] == 10


def test_pack_mode_matches_schedlab_pack(files, tmp_path):
    nodes, pods = files
    pack = f"pack --policy fgd --seed 7 --no-figures --out {tmp_path / 'pack'}".split()
    assert main([*pack, "--nodes", str(nodes), "--pods", str(pods)]) == 0
    assert sharing(files, tmp_path / "sh", "--mode", "pack", "--seed", "7") == 0
    packed = rows(tmp_path / "pack" / "events.csv")
    shared = rows(tmp_path / "sh" / "timeseries.csv")
    assert [r["unallocated_gpu_pct"] for r in packed] == [r["unallocated_gpu_pct"] for r in shared]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--mode", "sideways"], "'--mode' must be trace, compressed:K or pack"),
        (["--mode", "compressed:0.5"], "compression factor must be a number ≥ 1"),
        (["--overcommit", "0.9"], "'--overcommit' must be a number ≥ 1"),
        (["--inflate", "1.2"], "'--inflate' applies to --mode pack only"),
        (["--window", "50:10"], "'--window' START must be before END"),
        (["--window", "1000:"], "no pod is created in the window"),
        (["--param", "ls_protect=maybe"], "'--param' with --sharing takes"),
        (["--placement", "nowhere"], "nowhere"),
        (["--scale-gpus", "99"], "'--scale-gpus' must be between 1 and 3"),
    ],
)
def test_bad_options_one_line_nothing_written(files, tmp_path, capsys, extra, message):
    out = tmp_path / "out"
    assert sharing(files, out, *extra) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("schedlab: error: ")
    assert message in lines[0]
    assert not out.exists()


def test_bad_qos_names_file_line_and_column(files, tmp_path, capsys):
    pods = files[1]
    pods.write_text(PODS.replace("be1,1000,1024,1,700,,BE", "be1,1000,1024,1,700,,XX"))
    out = tmp_path / "out"
    assert sharing(files, out) == 2
    err = capsys.readouterr().err.strip()
    assert f"{pods}:2" in err and "column 'qos'" in err and "'XX'" in err
    assert not out.exists()


def test_report_of_sharing_runs(files, tmp_path):
    assert sharing(files, tmp_path / "a") == 0
    assert sharing(files, tmp_path / "b", "--overcommit", "2") == 0
    page = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(page)]) == 0
    text = page.read_text()
    assert "Sharing report: 2 runs" in text
    assert '<h2 id="class-LS">LS</h2>' in text and '<h2 id="class-BE">BE</h2>' in text
    # Under κ = 2 ls3 fits beside be1 (g + 600 ≤ 1000, t + 600 ≤ 2000): no eviction, and the
    # peak is 3.30 GPUs instead of 2.70.
    assert "<th>peak allocated GPUs</th><td>2.70</td><td>3.30</td>" in text
    assert "<th>evictions</th><td>1</td><td>0</td>" in text


def test_report_refuses_a_broken_sharing_summary(files, tmp_path, capsys):
    assert sharing(files, tmp_path / "a") == 0
    summary = tmp_path / "a" / "summary.json"
    data = json.loads(summary.read_text())
    del data["cluster"]
    summary.write_text(json.dumps(data))
    assert main(["report", str(tmp_path / "a"), "--out", str(tmp_path / "r.html")]) == 2
    assert "lacks the field 'cluster'" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()
