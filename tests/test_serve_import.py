"""trace import-slurm: a serve journal plus completion records → a workload the replay reads
(hand-made journal and records, hand-computed rows)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.policies.plugins import forget
from schedlab.serve.compare import replay_starts
from schedlab.serve.import_slurm import import_slurm, parse_sacct
from schedlab.traces.formats import read_jobs

T = 1_700_000_000.0  # journal clock (Unix seconds)


def stamp(t: float) -> str:
    return datetime.fromtimestamp(t).strftime("%Y-%m-%dT%H:%M:%S")


def write_journal(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


SERVE = {
    "time": T,
    "cycle": 0,
    "job": None,
    "action": "serve",
    "policy": "fifo",
    "placement": "bestfit",
    "params": {},
    "nodes": ["node1", "node2"],
    "node_gpus": [8, 8],
    "node_models": ["GPU", "GPU"],
    "node_cpus": [16, 16],
    "node_memory_mib": [64000, 64000],
    "cluster": "2x8:GPU",
}


def journal_records() -> list[dict]:
    """Jobs 1 (8 GPUs) and 2 (4 GPUs) arrive together; 1 → node1, 2 → node2 at once; job 3
    (8 GPUs) waits for job 1; job 4 is rejected; job 5 never starts."""
    rec = [SERVE]
    for job, gpus, submit in ((1, 8, T - 10), (2, 4, T - 9), (3, 8, T - 8), (5, 2, T - 7)):
        rec.append(
            {
                "time": T + 0.25,
                "cycle": 1,
                "job": job,
                "action": "arrive",
                "gpus": gpus,
                "submit_time": submit,
                "user": "alice",
                "gpu_type": "",
            }
        )
    rec += [
        {"time": T + 0.25, "cycle": 1, "job": 4, "action": "reject", "reason": "too big"},
        {"time": T + 0.25, "cycle": 1, "job": 1, "action": "start", "nodes": ["node1"], "gpus": 8},
        {"time": T + 0.25, "cycle": 1, "job": 2, "action": "start", "nodes": ["node2"], "gpus": 4},
        {"time": T + 5.5, "cycle": 9, "job": 1, "action": "finish", "nodes": ["node1"]},
        {"time": T + 5.5, "cycle": 9, "job": 3, "action": "start", "nodes": ["node1"], "gpus": 8},
        {"time": T + 9.75, "cycle": 20, "job": 2, "action": "finish", "nodes": ["node2"]},
    ]
    return rec


def sacct_text() -> str:
    rows = [
        "JobID|State|Start|End|NodeList|Submit",
        f"1|COMPLETED|{stamp(T + 1)}|{stamp(T + 5)}|node1|{stamp(T - 10)}",
        f"2|COMPLETED|{stamp(T + 1)}|{stamp(T + 9)}|node2|{stamp(T - 9)}",
        f"3|COMPLETED|{stamp(T + 6)}|{stamp(T + 8)}|node1|{stamp(T - 8)}",
        f"4|CANCELLED|{stamp(T + 30)}|{stamp(T + 30)}|(null)|{stamp(T + 30)}",
        f"7|COMPLETED|{stamp(T - 900)}|{stamp(T - 800)}|node2|{stamp(T - 900)}",  # older run
    ]
    return "\n".join(rows) + "\n"


def test_sacct_parsable_and_filetxt_forms_read_the_same() -> None:
    a = parse_sacct(sacct_text())
    assert [(r.job_id, r.state, r.end - r.start, r.nodes) for r in a[:3]] == [
        (1, "COMPLETED", 4.0, ("node1",)),
        (2, "COMPLETED", 8.0, ("node2",)),
        (3, "COMPLETED", 2.0, ("node1",)),
    ]
    line = (
        f"JobId=1 UserId=root(0) JobState=COMPLETED Partition=gpu TimeLimit=2 "
        f"StartTime={stamp(T + 1)} EndTime={stamp(T + 5)} NodeList=node1 NodeCnt=1"
    )
    b = parse_sacct(line + "\n")
    assert (b[0].job_id, b[0].end - b[0].start, b[0].nodes) == (1, 4.0, ("node1",))
    with pytest.raises(InputError, match="lack NodeList"):
        parse_sacct("JobID|State|Start|End\n1|COMPLETED|x|y\n")


def test_slurm_timing_uses_submit_times_and_recorded_run_times(tmp_path: Path) -> None:
    journal = write_journal(tmp_path / "j.jsonl", journal_records())
    result = import_slurm(journal, sacct_text(), "slurm")
    f = result.frame
    assert f["job_id"].tolist() == ["1", "2", "3"]
    assert f["submit_time"].tolist() == [0.0, 1.0, 2.0]
    assert f["num_gpus"].tolist() == [8, 4, 8]
    assert f["duration"].tolist() == [4.0, 8.0, 2.0]
    assert f["nodes"].tolist() == ["node1", "node2", "node1"]
    assert result.left_out == {"rejected": 1, "never started": 1}
    assert result.cluster == "2x8:GPU"


def test_observed_timing_uses_the_scheduler_cycles(tmp_path: Path) -> None:
    """Arrivals at the first cycle; job 1 ran from cycle 1 (T+0.25) to cycle 9 (T+5.5): 5.25 s;
    job 2 to T+9.75: 9.5 s; job 3's finish no cycle saw: its record's 2 s."""
    journal = write_journal(tmp_path / "j.jsonl", journal_records())
    f = import_slurm(journal, sacct_text(), "observed").frame
    assert f["submit_time"].tolist() == [0.0, 0.0, 0.0]
    assert f["duration"].tolist() == [5.25, 9.5, 2.0]


def test_the_command_writes_a_workload_the_replay_reads_and_places_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = write_journal(tmp_path / "j.jsonl", journal_records())
    (tmp_path / "runs.txt").write_text(sacct_text())
    out = tmp_path / "w.csv"
    argv = [
        "trace",
        "import-slurm",
        "--journal",
        str(journal),
        "--sacct",
        str(tmp_path / "runs.txt"),
        "--timing",
        "observed",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "3 jobs (left out: 1 rejected, 1 never started)" in err
    assert "--cluster 2x8:GPU" in err and "--policy fifo" in err
    jobs = read_jobs(out).jobs
    assert len(jobs) == 3
    # fifo + bestfit on two empty 8-GPU nodes: job 1 → node1 (tie order of seed 0), job 2 →
    # node2, job 3 waits for job 1 and takes node1.
    assert replay_starts(out, SERVE) == {
        "1": [("node1",)],
        "2": [("node2",)],
        "3": [("node1",)],
    }


def test_a_journal_of_another_cluster_is_a_clear_error(tmp_path: Path, capsys) -> None:
    journal = write_journal(tmp_path / "j.jsonl", journal_records())
    (tmp_path / "runs.txt").write_text("JobID|State|Start|End|NodeList\n")
    argv = [
        "trace",
        "import-slurm",
        "--journal",
        str(journal),
        "--sacct",
        str(tmp_path / "runs.txt"),
        "--out",
        str(tmp_path / "w.csv"),
    ]
    assert main(argv) == 2
    assert "no job in the journal has a completion record" in capsys.readouterr().err


def test_a_live_run_with_a_plugin_replays_with_it(tmp_path: Path, monkeypatch) -> None:
    """The serve record names the plugins; the suggested replay command and the comparison
    replay load them."""
    example = Path(__file__).resolve().parents[1] / "examples" / "plugin-package" / "src"
    monkeypatch.syspath_prepend(str(example))
    plugin = "schedlab_example.spread:Spread"
    serve = {**SERVE, "placement": "spread", "plugins": [plugin]}
    journal = write_journal(tmp_path / "j.jsonl", [serve, *journal_records()[1:]])
    result = import_slurm(journal, sacct_text(), "slurm")
    assert result.plugins == (plugin,)
    out = tmp_path / "w.csv"
    result.frame.to_csv(out, index=False)
    # spread: job 1 (8 GPUs) takes an empty node, job 2 (4) the other one (most free share), job
    # 3 waits for job 1 and takes its node
    try:
        starts = replay_starts(out, serve)
    finally:
        forget("spread")
    assert starts["1"] != starts["2"] and starts["3"] == starts["1"]


def test_the_replay_command_carries_the_live_runs_parameters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serve = {**SERVE, "policy": "tiresias", "params": {"thresholds": "60,3600"}}
    err = import_with(tmp_path, serve, capsys)
    assert "--policy tiresias --param thresholds=60,3600 --placement bestfit" in err
    assert "--min-runtime" not in err  # a journal without one (or from before the field)
    err = import_with(tmp_path, {**serve, "min_runtime": 30.0}, capsys)
    assert "--param thresholds=60,3600 --min-runtime 30 --placement bestfit" in err
    err = import_with(tmp_path, {**serve, "min_runtime": 30.0, "grace": 20.0}, capsys)
    assert "--param thresholds=60,3600 --min-runtime 30 --grace 20 --placement bestfit" in err


def import_with(tmp_path: Path, serve: dict, capsys: pytest.CaptureFixture[str]) -> str:
    """``trace import-slurm`` of the hand journal under ``serve`` into ``w.csv``; its stderr."""
    journal = write_journal(tmp_path / "j.jsonl", [serve, *journal_records()[1:]])
    (tmp_path / "runs.txt").write_text(sacct_text())
    out = tmp_path / "w.csv"
    argv = ["trace", "import-slurm", "--journal", str(journal), "--sacct"]
    assert main([*argv, str(tmp_path / "runs.txt"), "--out", str(out)]) == 0
    return capsys.readouterr().err


def test_a_job_cancelled_while_running_is_left_out_not_imported_as_completed(
    tmp_path: Path,
) -> None:
    """Job 2's only run ended CANCELLED: its 8 s are not a workload's run time."""
    journal = write_journal(tmp_path / "j.jsonl", journal_records())
    text = sacct_text().replace(f"2|COMPLETED|{stamp(T + 1)}", f"2|CANCELLED by 0|{stamp(T + 1)}")
    result = import_slurm(journal, text, "slurm")
    assert sorted(result.frame["job_id"]) == ["1", "3"]
    assert result.left_out == {"rejected": 1, "never started": 1, "cancelled": 1}
