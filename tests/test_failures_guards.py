"""Failure options that used to hang the replay, crash it or be silently ignored: each is now a
one-line error (exit 2, nothing written) or a run that ends as it should."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.failures import runtime

LLM = (
    "job_id,submit_time,num_gpus,model,batch_tokens,tokens\n"
    "1,0,16,llama3-8b,4194304,4000000000\n"
    "2,100,8,llama3-8b,2097152,1000000000\n"
    "3,200,16,llama3-8b,4194304,2000000000\n"
)


def _run(tmp_path: Path, capsys, *extra: str, trace: str = LLM, cluster: str = "4x8:H100"):
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(trace)
    out = tmp_path / "out"
    code = main(
        ["replay", "--cluster", cluster, "--trace", str(jobs), "--policy", "fifo", "--seed", "1",
         "--out", str(out), *extra]
    )  # fmt: skip
    err = capsys.readouterr().err
    return code, err, out


def _refused(tmp_path: Path, capsys, *extra: str, **kw: str) -> str:
    code, err, out = _run(tmp_path, capsys, *extra, **kw)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()  # nothing written
    return err


# -- 1: spares -------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", ["4", "1000"])
def test_spares_holding_back_every_node_are_refused(tmp_path: Path, capsys, k: str) -> None:
    err = _refused(
        tmp_path, capsys, "--failures", "llama3-405b", "--failure-reaction", f"spares:{k}"
    )
    assert f"spares:{k} would hold back every node of the 4-node cluster" in err


def test_jobs_that_never_fit_beside_the_spares_end_the_run(tmp_path: Path, capsys) -> None:
    """3 spares of 4 nodes leave 8 GPUs: the 16-GPU job at the head of the fifo queue never
    fits, so the run ends at once (it used to simulate failures of idle nodes for ever)."""
    code, err, out = _run(
        tmp_path, capsys, "--failures", "llama3-405b", "--failure-reaction", "spares:3"
    )
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["completed"] == 0 and summary["unfinished"] == 3
    assert summary["decision_points"] < 10  # not ~300,000 failure events of idle nodes


# -- 2: failures too frequent for any progress -----------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "what"),
    [
        ("gpu=exp:1e-300", "the MTBF of gpu (hours) must be ≥ 1 (got 1e-300)"),
        ("gpu=exp:0.001", "the MTBF of gpu (hours) must be ≥ 1 (got 0.001)"),
        ("node=weibull:1.5,0.5", "the Weibull scale of node (hours) must be ≥ 1 (got 0.5)"),
        ("node=weibull:0.001,100", "the Weibull shape of node must be ≥ 0.1 (got 0.001)"),
        ("node=weibull:1e9,100", "the Weibull shape of node must be ≤ 100 (got 1e9)"),
    ],
)
def test_mtbfs_below_the_floor_are_refused(tmp_path: Path, capsys, spec: str, what: str) -> None:
    err = _refused(tmp_path, capsys, "--failures", spec, "--until", "1")
    assert what in err


def test_a_job_that_can_never_progress_is_refused(tmp_path: Path, capsys) -> None:
    """A software failure every 450 s (8 GPUs × 1 h per GPU) and a 10-hour restart: the job
    never gets through a restart; it used to be restarted for ever."""
    trace = "job_id,submit_time,num_gpus,duration\na,0,8,2000\n"
    err = _refused(
        tmp_path, capsys, "--failures", "software=exp:1", "--restart-overhead", "36000",
        trace=trace, cluster="1x8:A100",
    )  # fmt: skip
    assert "job a was interrupted 1,000 times in a row without keeping any work" in err
    assert "MTBF on 8 GPUs is 450 s" in err


def test_a_cluster_failures_keep_broken_for_good_is_refused(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each node fails 8 times an hour and is out 48 h: no queued job ever runs. The guard's
    limit is lowered here to keep the test fast (the real one takes ~10 s to reach)."""
    monkeypatch.setattr(runtime, "IDLE_EVENT_LIMIT", 2000)
    err = _refused(tmp_path, capsys, "--failures", "gpu=exp:1")
    assert "2,000 failure events in a row with no job running" in err


# -- 3: the failure trace ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"time,component,id\n\xe9\xff\x00binary", "not a UTF-8 text file at"),
        (b"time,component,id\n" + b"x" * 200_000 + b"\n", "failure trace is not a CSV file"),
    ],
)
def test_a_binary_failure_trace_is_one_line(
    tmp_path: Path, capsys, data: bytes, message: str
) -> None:
    events = tmp_path / "events.bin"
    events.write_bytes(data)
    err = _refused(tmp_path, capsys, "--failures", f"trace={events}")
    assert message in err and str(events) in err


def test_a_bad_xid_code_names_its_cell(tmp_path: Path, capsys) -> None:
    xid = tmp_path / "XID_ERRORS.csv"
    xid.write_text("Time,10.0.0.1-0\n2023-07-01 00:00:00,0\n2023-07-01 00:00:15,oops\n")
    err = _refused(tmp_path, capsys, "--failures", f"trace={xid}")
    assert "XID code must be a whole number" in err and ":3, column '10.0.0.1-0'" in err


# -- 4 and 5: --checkpoint, repeated keys, empty values ------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--checkpoint", "block=5"], "'--checkpoint': block= applies to mode=async only"),
        (["--checkpoint", "cost=10,persist=5"], "persist= applies to mode=async only"),
        (["--checkpoint", "delta=0.1"], "delta= applies to mode=async only"),
        (["--checkpoint", "cost=0"], "'--checkpoint': cost must be a finite number > 0 (got 0)"),
        (["--checkpoint", "cost=-1"], "'--checkpoint': cost must be a finite number > 0 (got -1)"),
        (["--checkpoint", "block=-1,mode=async"], "block must be a finite number ≥ 0"),
        (["--checkpoint", "mode=async,delta=-1"], "delta must be a number in [0, 1) (got '-1')"),
        (["--checkpoint", "mode=async,delta=2"], "delta must be a number in [0, 1) (got '2')"),
        (["--checkpoint", "policy=young,policy=daly"], "'policy' given twice"),
        (["--failure-reaction", "requeue,requeue"], "requeue given twice"),
        (["--failure-reaction", "spares:1,spares:2"], "spares given twice"),
        (["--failure-reaction", "requeue,shrink"], "requeue and shrink are two reactions"),
        (["--checkpoint", ""], "'--checkpoint' needs a value"),
        (["--checkpoint", ","], "'--checkpoint' needs a value"),
        (["--failure-reaction", ""], "'--failure-reaction' needs a value"),
    ],
)
def test_checkpoint_and_reaction_options(
    tmp_path: Path, capsys, args: list[str], message: str
) -> None:
    err = _refused(tmp_path, capsys, "--failures", "gpu=exp:100", *args)
    assert message in err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpu=exp:100;gpu=exp:200", "'gpu' given twice ('gpu=exp:100' and 'gpu=exp:200')"),
        ("llama3-405b;opt-175b", "a preset given twice"),
        ("llama3-405b;preset=opt-175b", "a preset given twice"),
        ("gpu_scope=gpu;node=exp:9;gpu_scope=node", "'gpu_scope' given twice"),
        ("", "'--failures' needs a value"),
        (" ; ", "'--failures' needs a value"),
    ],
)
def test_failures_repeated_or_empty(tmp_path: Path, capsys, spec: str, message: str) -> None:
    err = _refused(tmp_path, capsys, "--failures", spec)
    assert message in err


def test_an_empty_failures_option_in_a_config_is_refused(tmp_path: Path, capsys) -> None:
    config = tmp_path / "config.toml"
    config.write_text('failures = ""\n')
    err = _refused(tmp_path, capsys, "--config", str(config))
    assert "'--failures' needs a value" in err


def test_a_preset_with_items_after_it_still_overrides(tmp_path: Path, capsys) -> None:
    code, err, _ = _run(
        tmp_path, capsys, "--failures", "llama3-405b;gpu=exp:5000",
        "--checkpoint", "mode=async,block=2,persist=30,delta=0.1", "--until", "3600",
    )  # fmt: skip
    assert code == 0, err
