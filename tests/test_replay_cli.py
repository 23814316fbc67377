"""End-to-end runs of ``schedlab replay`` (and ``schedlab report`` over its folders)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from schedlab.cli import main
from schedlab.engines.replay import ReplayConfig, ReplayEngine
from schedlab.model.snapshot import DONE
from schedlab.perf.models import TraceDuration
from schedlab.policies.registry import make_scheduler
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

ORDERS = ["fifo", "sjf", "srtf", "tiresias", "edf"]
SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"
PHILLY = SHARED_DIR / "traces" / "philly-adaptdl" / "philly.csv"

# FIFO on one node of 4 GPUs: a 0 → 100; b (4 GPUs) is the blocked head until 100: 100 → 150;
# c and d wait behind it and then both fit: c 150 → 160, d 150 → 170.
TRACE = """job_id,submit_time,num_gpus,duration,user
a,0,2,100,alice
b,1,4,50,bob
c,2,1,10,alice
d,3,2,20,carol
"""
FIFO_TIMES = {"a": (0, 100), "b": (100, 150), "c": (150, 160), "d": (150, 170)}

# The same jobs with deadlines (blank: none).
TRACE_DEADLINES = """job_id,submit_time,num_gpus,duration,deadline
a,0,2,100,
b,1,4,50,1000
c,2,1,10,120
d,3,2,20,
"""

SUMMARY_KEYS = {
    "jobs",
    "completed",
    "avg_jct",
    "p50_jct",
    "p99_jct",
    "avg_queue_delay",
    "makespan",
    "gpu_utilization",
    "wall_seconds",
}
JOB_COLUMNS = ["job_id", "submit_time", "start_time", "end_time", "num_gpus"]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text(TRACE)
    return path


def replay(
    trace: Path, out: Path, policy: str = "fifo", cluster: str = "1x4:V100", *extra: str
) -> int:
    argv = ["replay", "--cluster", cluster, "--trace", str(trace), "--policy", policy]
    return main([*argv, "--out", str(out), *extra])


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def times(rows: list[dict[str, str]]) -> dict[str, tuple[float, float]]:
    return {r["job_id"]: (float(r["start_time"]), float(r["end_time"])) for r in rows}


# -- every ordering --------------------------------------------------------------------------------
@pytest.mark.parametrize("order", ORDERS)
def test_replay_writes_the_four_outputs(order: str, trace: Path, tmp_path: Path) -> None:
    out = tmp_path / order
    assert replay(trace, out, order) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "config.toml",
        "jobs.csv",
        "summary.json",
        "timeseries.csv",
    ]
    columns, rows = read_rows(out / "jobs.csv")
    assert set(JOB_COLUMNS) <= set(columns)
    assert "deadline" not in columns and "met_deadline" not in columns
    assert [r["job_id"] for r in rows] == ["a", "b", "c", "d"]
    assert all(r["status"] == "completed" for r in rows)
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) >= SUMMARY_KEYS
    assert "dsr" not in summary
    assert summary["jobs"] == summary["completed"] == 4
    assert summary["gpus"] == 4
    series_columns, series = read_rows(out / "timeseries.csv")
    assert series_columns == [
        "time",
        "queue_length",
        "running_jobs",
        "busy_gpus",
        "efficiency",
        "total_gpus",
    ]
    assert all(0 <= int(r["busy_gpus"]) <= 4 for r in series)
    # Trace durations scale linearly: efficiency is the busy share.
    assert all(float(r["efficiency"]) == pytest.approx(int(r["busy_gpus"]) / 4) for r in series)
    assert summary["cluster_efficiency"] == pytest.approx(summary["gpu_utilization"])
    config = tomllib.loads((out / "config.toml").read_text())
    assert config["policy"] == order
    assert config["placement"] == "bestfit"
    if order == "fifo":
        assert times(rows) == FIFO_TIMES
        # JCTs 100, 149, 158, 167; the last job ends at 170.
        assert summary["avg_jct"] == pytest.approx((100 + 149 + 158 + 167) / 4)
        assert summary["makespan"] == pytest.approx(170.0)
        assert summary["avg_queue_delay"] == pytest.approx((0 + 99 + 148 + 147) / 4)


def test_deadline_columns_and_dsr_only_with_deadlines(tmp_path: Path) -> None:
    trace = tmp_path / "dl.csv"
    trace.write_text(TRACE_DEADLINES)
    out = tmp_path / "edf"
    assert replay(trace, out, "edf") == 0
    columns, rows = read_rows(out / "jobs.csv")
    assert "deadline" in columns and "met_deadline" in columns
    # EDF on 4 GPUs: a (no deadline) 0 → 100. b (deadline 1000) arrives at 1 and is blocked.
    # c (deadline 120) arrives at 2 and goes ahead of b: it fits in the 2 free GPUs, 2 → 12
    # (met). d (none) queues behind b. b 100 → 150 (met), d 150 → 170.
    assert times(rows) == {"a": (0, 100), "b": (100, 150), "c": (2, 12), "d": (150, 170)}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dsr"] == pytest.approx(1.0)
    assert summary["deadline_jobs"] == 2
    # FIFO misses c's deadline (c ends at 160 > 120): DSR 1/2.
    out = tmp_path / "fifo"
    assert replay(trace, out, "fifo") == 0
    assert json.loads((out / "summary.json").read_text())["dsr"] == pytest.approx(0.5)


# -- cluster specs ---------------------------------------------------------------------------------
NODE_LIST = """sn,cpu_milli,memory_mib,gpu,model
n0,64000,262144,4,V100
n1,32000,131072,2,T4
"""
CLUSTER_TOML = """nodes_per_rack = 2
[[nodes]]
count = 1
gpus = 4
model = "V100"

[[nodes]]
count = 2
gpus = 2
model = "T4"
cpu_cores = 16
"""


@pytest.mark.parametrize(
    ("kind", "gpus"),
    [("csv", 6), ("toml", 8), ("1x4:V100+2x2:T4", 8), ("2x4", 8)],
)
def test_cluster_spec_forms(kind: str, gpus: int, trace: Path, tmp_path: Path) -> None:
    if kind == "csv":
        cluster = tmp_path / "nodes.csv"
        cluster.write_text(NODE_LIST)
        spec = str(cluster)
    elif kind == "toml":
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(CLUSTER_TOML)
        spec = str(cluster)
    else:
        spec = kind
    out = tmp_path / "out"
    assert replay(trace, out, "fifo", spec) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["gpus"] == gpus
    assert summary["completed"] == 4
    _, series = read_rows(out / "timeseries.csv")
    assert {int(r["total_gpus"]) for r in series} == {gpus}


# -- parameters ------------------------------------------------------------------------------------
def test_param_sets_tiresias_thresholds(tmp_path: Path) -> None:
    # One GPU. a (300 s) from 0; b (50 s) at 150. With a 100 GPU-s threshold a is demoted at 100
    # and b preempts it: b 150 → 200, a ends at 350. With the default (3600) nothing is preempted:
    # a 0 → 300, b 300 → 350.
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,300\nb,150,1,50\n")
    low = tmp_path / "low"
    rc = replay(trace, low, "tiresias", "1x1:V100", "--param", "thresholds=100")
    assert rc == 0
    _, rows = read_rows(low / "jobs.csv")
    assert times(rows) == {"a": (0, 350), "b": (150, 200)}
    assert [int(r["preemptions"]) for r in rows] == [1, 0]
    assert tomllib.loads((low / "config.toml").read_text())["params"] == ["thresholds=100"]
    default = tmp_path / "default"
    assert replay(trace, default, "tiresias", "1x1:V100") == 0
    _, rows = read_rows(default / "jobs.csv")
    assert times(rows) == {"a": (0, 300), "b": (300, 350)}
    assert [int(r["preemptions"]) for r in rows] == [0, 0]


def test_restart_overhead_on_the_command_line(tmp_path: Path) -> None:
    # srtf on one GPU: long (100 s) is preempted at 10 by short (20 s), resumes at 30 and needs
    # 4 s to restore: it ends at 30 + 4 + 90 = 124.
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\nlong,0,1,100\nshort,10,1,20\n")
    out = tmp_path / "o"
    assert replay(trace, out, "srtf", "1x1:V100", "--restart-overhead", "4") == 0
    _, rows = read_rows(out / "jobs.csv")
    assert times(rows) == {"long": (0, 124), "short": (10, 30)}


def test_backfill_and_placement_flags(trace: Path, tmp_path: Path) -> None:
    # With backfill, c (1 GPU, 10 s) runs beside a while b waits for its reservation at 100:
    # c 2 → 12; d (2 GPUs, 20 s) arrives at 3 and would end at 23 ≤ 100, but only 1 GPU is free
    # (c holds one) until 12, when it backfills: 12 → 32.
    out = tmp_path / "bf"
    assert replay(trace, out, "fifo", "1x4:V100", "--backfill", "--placement", "consolidate") == 0
    _, rows = read_rows(out / "jobs.csv")
    assert times(rows) == {"a": (0, 100), "b": (100, 150), "c": (2, 12), "d": (12, 32)}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"] == "fifo+backfill"
    assert summary["placement"] == "consolidate"


def test_backfill_on_slower_gpus_does_not_delay_the_head(tmp_path: Path) -> None:
    # 4 V100 + 2 T4 at half speed. a (4 GPUs, 100 s) takes the V100s 0 → 100; b (6 GPUs) is the
    # blocked head, reserved at 100 when a frees its 4 GPUs. c (2 GPUs, 80 s) would end at 82 on
    # the reference GPU, but the only free GPUs are the T4s, where it needs 160 s: 2 → 162, past
    # b's reservation, so it must wait. b runs 100 → 120 (10 s at half speed on the mixed gang),
    # then c starts where bestfit puts it, the T4s again: 120 → 280.
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,4,100\nb,1,6,10\nc,2,2,80\n")
    spec = "1x4:V100+1x2:T4"
    plain, backfill = tmp_path / "plain", tmp_path / "bf"
    assert replay(trace, plain, "fifo", spec, "--speed", "T4=0.5") == 0
    assert replay(trace, backfill, "fifo", spec, "--speed", "T4=0.5", "--backfill") == 0
    expected = {"a": (0, 100), "b": (100, 120), "c": (120, 280)}
    assert times(read_rows(backfill / "jobs.csv")[1]) == expected
    assert times(read_rows(plain / "jobs.csv")[1]) == expected


# -- bad inputs ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--policy", "fifoo"], "unknown ordering policy 'fifoo'; did you mean 'fifo'?"),
        (["--policy", "tiresais"], "did you mean 'tiresias'?"),
        (["--policy", "fifo", "--placement", "bestfti"], "did you mean 'bestfit'?"),
        (["--policy", "tiresias", "--param", "bogus=1"], "'tiresias' has no parameter 'bogus'"),
        (["--policy", "tiresias", "--param", "thresholds=abc"], "bad value for 'tiresias'"),
        (["--policy", "tiresias", "--param", "thresholds=200,100"], "must be increasing"),
        (["--policy", "fifo", "--param", "x"], "'--param' must look like KEY=VALUE"),
        (["--policy", "fifo", "--cluster", "4y8"], "'--cluster' must be"),
        (["--policy", "fifo", "--cluster", "4x8:Z99"], "unknown GPU model 'Z99'"),
        (["--policy", "fifo", "--restart-overhead=-1"], "'--restart-overhead' must be ≥ 0"),
        (["--policy", "fifo", "--resize-overhead=-0.5"], "'--resize-overhead' must be ≥ 0"),
        (["--policy", "fifo", "--seed=-3"], "'--seed' must be ≥ 0"),
        (["--policy", "fifo", "--speed", "Z99=1"], "unknown GPU model 'Z99'"),
    ],
)
def test_bad_inputs_exit_2_with_one_line_and_write_nothing(
    extra: list[str], message: str, trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["replay", "--cluster", "1x4:V100", "--trace", str(trace), "--out", str(out)]
    # later options win, so --cluster given again in `extra` replaces the good one
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("schedlab: error: ")
    assert message in lines[0]
    assert not out.exists()


def test_bad_trace_value_names_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,10\nb,5,two,10\n")
    out = tmp_path / "out"
    assert replay(trace, out) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert f"{trace}:3" in lines[0]
    assert "column 'num_gpus'" in lines[0]
    assert "'two'" in lines[0]
    assert not out.exists()


def test_missing_trace_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert replay(tmp_path / "nope.csv", out) == 2
    err = capsys.readouterr().err.strip()
    assert "file not found" in err and "nope.csv" in err
    assert not out.exists()


# -- reproducibility, the module entry point, the report -------------------------------------------
def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    # Random placement on a cluster with many equal choices: the seed drives every tie.
    rows = ["job_id,submit_time,num_gpus,duration"]
    rng = np.random.default_rng(5)
    for i in range(60):
        rows.append(f"j{i},{i * 7},{rng.choice([1, 2, 4, 8])},{rng.integers(10, 500)}")
    trace = tmp_path / "t.csv"
    trace.write_text("\n".join(rows) + "\n")
    outs = [tmp_path / f"run{k}" for k in range(2)]
    for out in outs:
        rc = replay(trace, out, "srtf", "4x8:V100", "--placement", "random", "--seed", "11")
        assert rc == 0
    for name in ("jobs.csv", "timeseries.csv"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()


def test_python_dash_m_and_report(trace: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    cmd = [sys.executable, "-m", "schedlab", "replay", "--cluster", "1x4:V100"]
    cmd += ["--trace", str(trace), "--policy", "fifo", "--out", str(fifo)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "fifo/bestfit: 4/4 jobs completed" in done.stdout
    assert (fifo / "summary.json").is_file()
    sjf = tmp_path / "sjf"
    assert replay(trace, sjf, "sjf") == 0
    page = tmp_path / "report.html"
    assert main(["report", str(fifo), str(sjf), "--out", str(page), "--title", "FIFO vs SJF"]) == 0
    html = page.read_text()
    assert html.lstrip().lower().startswith("<!doctype html")
    assert "FIFO vs SJF" in html


# -- the real trace --------------------------------------------------------------------------------
@pytest.mark.shared
def test_philly_first_3000_jobs_complete_under_fifo() -> None:
    if not PHILLY.is_file():
        pytest.skip(f"{PHILLY} not found: the public traces are not beside this checkout")
    jobs = read_jobs(PHILLY).jobs.take(np.arange(3000))
    policy, placement = make_scheduler("fifo", "bestfit", False)
    cluster = parse_cluster_spec("16x8:V100")
    record = ReplayEngine(
        cluster, jobs, policy, placement, TraceDuration(), ReplayConfig(seed=0)
    ).run()
    assert len(record.jobs) == 3000
    assert (record.status == DONE).all()
    assert record.ts_busy.max() <= 128
    run_time = record.end_time - record.first_start
    np.testing.assert_allclose(run_time, record.jobs.duration, rtol=1e-9, atol=1e-6)
    assert np.all(record.first_start >= record.jobs.submit_time)


@pytest.mark.parametrize(
    "policy",
    ["edf-greedy", "edf-ac", "edf-elastic", "elasticflow", "gandiva", "themis", "chronus"],
)
def test_every_deadline_policy_runs_from_the_command_line(policy: str, tmp_path: Path) -> None:
    # Trace durations (no throughput tables), a 10 s slot, best-effort jobs mixed in.
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE_DEADLINES)
    out = tmp_path / policy
    argv = ["replay", "--cluster", "1x4:A100", "--trace", str(trace), "--policy", policy]
    assert main([*argv, "--slot", "10", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["deadline_jobs"] == 2 and 0.0 <= summary["dsr"] <= 1.0
    assert summary["completed"] + summary["rejected"] == 4
    # Best-effort jobs a and d are never rejected.
    rows = {r["job_id"]: r for r in csv.DictReader((out / "jobs.csv").open())}
    assert rows["a"]["status"] == "completed" and rows["d"]["status"] == "completed"


def test_config_file_repeats_the_run_with_its_options(trace: Path, tmp_path: Path) -> None:
    first = tmp_path / "first"
    options = ["--param", "thresholds=100", "--slot", "30", "--speed", "V100=2", "--seed", "3"]
    assert replay(trace, first, "tiresias", "2x2:V100", *options) == 0
    config = first / "config.toml"
    again = tmp_path / "again"
    assert main(["replay", "--config", str(config), "--out", str(again)]) == 0
    assert (again / "jobs.csv").read_bytes() == (first / "jobs.csv").read_bytes()
    # an option on the command line wins over the file
    other = tmp_path / "other"
    assert main(["replay", "--config", str(config), "--slot", "600", "--out", str(other)]) == 0
    assert (other / "jobs.csv").read_bytes() != (first / "jobs.csv").read_bytes()


def test_config_file_with_an_unknown_key_is_one_line(tmp_path: Path, capsys) -> None:
    config = tmp_path / "config.toml"
    config.write_text('cluster = "1x4:V100"\ntrace = "x.csv"\npolicy = "fifo"\nbogus = 1\n')
    assert main(["replay", "--config", str(config), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'bogus'" in err and str(config) in err
    assert not (tmp_path / "o").exists()


def test_missing_cluster_without_config_names_the_option(tmp_path: Path, capsys) -> None:
    assert main(["replay", "--trace", "x.csv", "--policy", "fifo", "--out", str(tmp_path)]) == 2
    assert "missing --cluster" in capsys.readouterr().err
