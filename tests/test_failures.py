"""Failures, checkpointing and recovery in replay: the pieces on hand-computed cases, the engine
on small traces whose every time can be worked out, properties, and the CLI."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.failures.checkpoint import Cycle, costs, cycle, daly, daly_ettr, young
from schedlab.failures.presets import llama3_mtbf_hours
from schedlab.failures.spec import parse_checkpoint, parse_failures, parse_reaction
from schedlab.failures.streams import ClassStream

M = 54 * 86400 / 419


# -- the numbers ---------------------------------------------------------------------------------
def test_llama3_preset_mtbfs() -> None:
    assert llama3_mtbf_hours("gpu") == pytest.approx(79_230, abs=1)
    assert llama3_mtbf_hours("node") == pytest.approx(50_079, abs=1)
    assert llama3_mtbf_hours("link") == pytest.approx(75_835, abs=1)
    assert llama3_mtbf_hours("software") == pytest.approx(337_042, abs=1)
    spec = parse_failures("llama3-405b")
    rate = 16384 * (spec.processes["gpu"].rate_per_s + spec.processes["software"].rate_per_s)
    rate += 2048 * (spec.processes["node"].rate_per_s + spec.processes["link"].rate_per_s)
    assert 1 / rate / 3600 == pytest.approx(3.093, abs=0.001)  # one interruption per 3.093 h


def test_young_daly_and_ettr() -> None:
    assert young(30, M) == pytest.approx(817.38, abs=0.01)
    assert daly_ettr(young(30, M), 30, 180, M) == pytest.approx(0.9135, abs=1e-4)
    assert daly_ettr(408.7, 30, 180, M) == pytest.approx(0.8987, abs=1e-4)
    assert daly_ettr(3600, 30, 180, M) == pytest.approx(0.8254, abs=1e-4)
    assert daly(60, M) > young(60, M) - 60  # the correction terms are positive
    assert daly(3 * M, M) == M
    # with C = 60 s, R = 300 s the best ETTR is 0.876
    best = max(daly_ettr(t, 60, 300, M) for t in np.linspace(200, 3000, 2000))
    assert best == pytest.approx(0.876, abs=0.001)


def test_cycle_by_hand() -> None:
    c = Cycle(40.0, 10.0)  # 40 s work, 10 s checkpoint
    assert c.length == 50 and c.rate_factor == pytest.approx(0.8)
    assert [c.completed(e) for e in (0, 49, 50, 99, 100, 140)] == [0, 0, 1, 1, 2, 2]
    assert c.blocked(45) == 5 and c.blocked(100) == 20 and c.blocked(140) == 20
    a = Cycle(40.0, 5.0, persist=20.0, delta=0.5)  # async: counts 20 s after its blocking copy
    assert [a.completed(e) for e in (44, 45, 64, 65, 109, 110)] == [0, 0, 0, 1, 1, 2]
    assert a.rate_factor == pytest.approx((40 - 10) / 45)


def test_checkpoint_costs_from_bytes() -> None:
    spec = parse_checkpoint("w_node=5e9")
    c = costs(spec, 1.4e12, gpus=128, nodes=16)
    assert c.sync == pytest.approx(1.4e12 / (16 * 5e9))
    assert c.block == pytest.approx(1.4e12 / 128 / 20e9)
    assert c.load == pytest.approx(1.4e12 / 128 / 5e9)
    assert costs(parse_checkpoint(None), None, 8, 1) is None  # nothing known: free checkpoints


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpu=exp:0", "must be > 0"),
        ("gpu=exp:-5", "must be > 0"),
        ("gpu=exp:abc", "must be a number"),
        ("gpu=poisson:5", "exp:MTBF_HOURS or weibull"),
        ("llama4", "unknown preset"),
        ("cpu=exp:5", "unknown item"),
        ("gpu_scope=rack", "gpu_scope must be node or gpu"),
        ("repair.node=soon:3", "exp:HOURS or fixed:HOURS"),
    ],
)
def test_bad_failure_specs(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_failures(text)


def test_interval_shorter_than_the_checkpoint_is_refused() -> None:
    spec = parse_checkpoint("policy=fixed:20,cost=30")
    with pytest.raises(InputError, match="interval 20 s is shorter than the checkpoint"):
        cycle(spec, costs(spec, None, 8, 1), M)
    spec = parse_checkpoint("policy=fixed:100,mode=async,block=5,persist=120")
    with pytest.raises(InputError, match="shorter than the blocking copy and the persist"):
        cycle(spec, costs(spec, None, 8, 1), M)
    with pytest.raises(InputError, match="needs failure rates"):
        cycle(parse_checkpoint("cost=30"), costs(parse_checkpoint("cost=30"), None, 8, 1), math.inf)


def test_reactions() -> None:
    assert parse_reaction("spares:32").spares == 32
    assert parse_reaction("shrink,spares:4").label == "shrink,spares:4"
    assert parse_reaction("exclude-lemons:3,168").lemon_failures == 3
    with pytest.raises(InputError, match="spares:K needs K ≥ 1"):
        parse_reaction("spares:0")
    with pytest.raises(InputError, match="unknown reaction"):
        parse_reaction("pray")


def test_streams_do_not_depend_on_other_instances() -> None:
    """Adding components (or jobs) changes no component's failure times."""
    from schedlab.failures.spec import Process

    p = Process("exp", mtbf_h=100.0)
    small, large = ClassStream("gpu", p, 10, 7), ClassStream("gpu", p, 50, 7)
    t_s, i_s, _ = small.until(5e6)
    t_l, i_l, _ = large.until(5e6)
    mine = np.isin(i_l, np.arange(10))
    assert sorted(zip(t_s.tolist(), i_s.tolist(), strict=True)) == sorted(
        zip(t_l[mine].tolist(), i_l[mine].tolist(), strict=True)
    )
    other = ClassStream("gpu", p, 10, 8).until(5e6)[0]
    assert not np.array_equal(np.sort(t_s), np.sort(other))


def test_exponential_streams_have_the_right_rate() -> None:
    from schedlab.failures.spec import Process

    stream = ClassStream("node", Process("exp", mtbf_h=10.0), 2000, 3)
    times, _, _ = stream.until(100 * 3600.0)
    assert len(times) == pytest.approx(2000 * 10, rel=0.03)


# -- the engine on hand-computed traces ------------------------------------------------------------
def _replay(
    tmp_path: Path,
    trace_rows: str,
    failures: str,
    checkpoint: str | None = None,
    reaction: str | None = None,
    cluster: str = "1x8:A100",
    restart: float = 20.0,
    jobs: str = "job_id,submit_time,num_gpus,duration\na,0,8,200\n",
):
    events = tmp_path / "events.csv"
    events.write_text("time,component,id,category,repair_s\n" + trace_rows)
    trace = tmp_path / "jobs.csv"
    trace.write_text(jobs)
    spec = ReplaySpec(
        cluster=cluster,
        trace=str(trace),
        policy="fifo",
        restart_overhead=restart,
        failures=failures.replace("EVENTS", str(events)),
        checkpoint=checkpoint,
        failure_reaction=reaction,
    )
    return run_replay(spec)


def test_rollback_to_the_last_checkpoint_by_hand(tmp_path: Path) -> None:
    """200 s of work, checkpoints every 40 s of work costing 10 s: the job makes 0.8 s of work
    per second. A software failure at 90 s: one checkpoint done (at 50 s, 40 s of work), 72 s of
    work done → 32 s lost; restart 20 s; 160 s left at 0.8 → ends at 110 + 200 = 310."""
    rec = _replay(
        tmp_path, "90,software,a,bug,\n", "trace=EVENTS", checkpoint="policy=fixed:40,cost=10"
    )
    assert rec.end_time[0] == pytest.approx(310.0)
    f = rec.failures
    assert f.failures[0] == 1 and f.restarts[0] == 1
    assert f.lost_units[0] == pytest.approx(32.0)
    assert f.restart_seconds[0] == 20.0
    # 90 s: 1 checkpoint + 0 s of the second (which would start at 90); 200 s after: 4 × 10
    assert f.ckpt_seconds[0] == pytest.approx(10.0 + 40.0)
    assert f.ettr[0] == pytest.approx(200.0 / 310.0)
    assert f.by_category[0] == {"bug": 1}


def test_no_checkpoint_flag_means_back_to_zero(tmp_path: Path) -> None:
    jobs = "job_id,submit_time,num_gpus,duration,checkpoint\na,0,8,200,0\n"
    rec = _replay(tmp_path, "90,software,a,bug,\n", "trace=EVENTS", jobs=jobs)
    assert rec.end_time[0] == pytest.approx(90 + 20 + 200)
    assert rec.failures.lost_units[0] == pytest.approx(90.0)


def test_free_checkpoints_when_no_cost_is_known(tmp_path: Path) -> None:
    rec = _replay(tmp_path, "90,software,a,bug,\n", "trace=EVENTS")
    assert rec.end_time[0] == pytest.approx(90 + 20 + 110)
    assert rec.failures.lost_units[0] == 0.0


def test_requeue_waits_for_the_repair(tmp_path: Path) -> None:
    """One node: it fails at 50 s for 100 s; the job waits, restarts at 150 s, pays 20 s."""
    rec = _replay(tmp_path, "50,node,a100-00000,PSU,100\n", "trace=EVENTS")
    assert rec.end_time[0] == pytest.approx(150 + 20 + 150)
    f = rec.failures
    assert f.wait_seconds[0] == pytest.approx(100.0)
    assert f.gpu_seconds_lost["repair_wait"] == pytest.approx(800.0)
    assert int(rec.ts_busy.max()) == 8  # a node under repair is not counted busy


def test_requeue_moves_to_a_healthy_node(tmp_path: Path) -> None:
    rec = _replay(tmp_path, "50,gpu,a100-00000:3,HBM3,1000\n", "trace=EVENTS", cluster="2x8:A100")
    assert rec.end_time[0] == pytest.approx(50 + 20 + 150)
    assert rec.failures.wait_seconds[0] == 0.0


def test_gpu_scope_gpu_keeps_the_other_gpus(tmp_path: Path) -> None:
    jobs = "job_id,submit_time,num_gpus,duration\na,0,4,200\nb,0,4,200\n"
    rec = _replay(
        tmp_path, "50,gpu,a100-00000:0,HBM3,1000\n", "trace=EVENTS;gpu_scope=gpu", jobs=jobs
    )
    f = rec.failures
    assert sorted(f.failures.tolist()) == [0, 1]  # only the job on GPU 0 stops
    hit = int(np.flatnonzero(f.failures)[0])
    # 7 healthy GPUs, 4 taken by the other job: 3 free, the job needs 4 → it waits for the other
    assert rec.end_time[hit] == pytest.approx(200 + 20 + 150)


def test_spares_replace_the_failed_node(tmp_path: Path) -> None:
    jobs = "job_id,submit_time,num_gpus,duration\na,0,16,200\n"
    rec = _replay(
        tmp_path, "50,node,a100-00000,PSU,1000\n", "trace=EVENTS", reaction="spares:1",
        cluster="3x8:A100", jobs=jobs,
    )  # fmt: skip
    assert rec.end_time[0] == pytest.approx(50 + 20 + 150)
    f = rec.failures
    assert f.restarts[0] == 1 and f.wait_seconds[0] == 0.0
    assert f.gpu_seconds_lost["spares_idle"] == pytest.approx(8 * 50)  # idle 0 → 50 s


def test_shrink_runs_on_the_survivors_then_grows_back(tmp_path: Path) -> None:
    """16 GPUs on 2 nodes, linear scaling; node 0 fails at 50 s for 100 s. Shrink: on 8 GPUs
    (half speed) from 70 s; at 150 s the node is back: a re-plan (restart 20 s, no cost known
    for the checkpoint) and full speed again from 170 s."""
    jobs = "job_id,submit_time,num_gpus,duration\na,0,16,200\n"
    rec = _replay(
        tmp_path, "50,node,a100-00000,PSU,100\n", "trace=EVENTS", reaction="shrink",
        cluster="2x8:A100", jobs=jobs,
    )  # fmt: skip
    # work done: 50 (full) + 80 × 0.5 = 90 by 150 s; 110 left from 170 s → ends at 280
    assert rec.end_time[0] == pytest.approx(280.0)
    assert rec.failures.restarts[0] == 1


def test_trace_errors_name_the_row(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"unknown node 'nope' at .*events.csv:2, column 'id'"):
        _replay(tmp_path, "10,node,nope,x,\n", "trace=EVENTS")
    with pytest.raises(InputError, match=r"unknown job 'zz'"):
        _replay(tmp_path, "10,software,zz,x,\n", "trace=EVENTS")
    with pytest.raises(InputError, match=r"component must be one of"):
        _replay(tmp_path, "10,rack,a100-00000,x,\n", "trace=EVENTS")
    with pytest.raises(InputError, match=r"GPU 'a100-00000:9'"):
        _replay(tmp_path, "10,gpu,a100-00000:9,x,\n", "trace=EVENTS")


def test_acme_xid_import(tmp_path: Path) -> None:
    xid = tmp_path / "XID_ERRORS.csv"
    xid.write_text(
        "Time,10.0.0.1-0,10.0.0.1-1,10.0.0.2-0\n"
        "2023-07-01 00:00:00,0,0,0\n"
        "2023-07-01 00:00:15,79,0,13\n"
        "2023-07-01 00:00:30,79,0,0\n"  # the same code again: the same event
        "2023-07-01 00:00:45,0,94,0\n"
    )
    from schedlab.failures.trace import read_failure_trace

    events = read_failure_trace(xid)
    assert [(e.time, e.component, e.ident) for e in events] == [
        (15.0, "gpu", "#0:0"),
        (45.0, "node", "#0"),
    ]


# -- properties ----------------------------------------------------------------------------------
JOBS = "\n".join(
    ["job_id,submit_time,num_gpus,duration"]
    + [f"j{i},{i * 37 % 500},{[1, 2, 4, 8, 16][i % 5]},{300 + i * 91 % 4000}" for i in range(40)]
)


def _random_run(tmp_path: Path, seed: int, policy: str, reaction: str | None):
    trace = tmp_path / "jobs.csv"
    trace.write_text(JOBS + "\n")
    spec = ReplaySpec(
        cluster="6x8:A100",
        trace=str(trace),
        policy=policy,
        seed=seed,
        restart_overhead=30.0,
        failures="gpu=exp:30;node=exp:50;software=exp:200;repair.node=exp:0.2;repair.gpu=fixed:0.1",
        checkpoint="policy=young,cost=5",
        failure_reaction=reaction,
    )
    return run_replay(spec)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 1000),
    policy=st.sampled_from(["fifo", "sjf", "tiresias", "srtf"]),
    reaction=st.sampled_from([None, "spares:1", "shrink", "shrink,spares:1"]),
)
def test_every_job_accounted_for_and_same_seed_same_result(
    tmp_path_factory, seed, policy, reaction
):
    tmp = tmp_path_factory.mktemp("f")
    a = _random_run(tmp, seed, policy, reaction)
    b = _random_run(tmp, seed, policy, reaction)
    assert np.array_equal(a.end_time, b.end_time, equal_nan=True)
    assert np.array_equal(a.failures.failures, b.failures.failures)
    assert (a.status == 3).all()  # every job completes despite the failures
    assert (a.ts_busy <= 48).all() and (a.ts_busy >= 0).all()
    assert int(a.failures.failures.sum()) == sum(a.failures.interruptions.values())
    ok = np.isfinite(a.failures.ettr)
    assert ((a.failures.ettr[ok] > 0) & (a.failures.ettr[ok] <= 1 + 1e-9)).all()


# -- the CLI -------------------------------------------------------------------------------------
def _cli(tmp_path: Path, *extra: str, capsys=None) -> tuple[int, str]:
    trace = tmp_path / "jobs.csv"
    trace.write_text(JOBS + "\n")
    code = main(
        ["replay", "--cluster", "6x8:A100", "--trace", str(trace), "--policy", "fifo",
         "--out", str(tmp_path / "out"), *extra]
    )  # fmt: skip
    err = capsys.readouterr().err if capsys is not None else ""
    return code, err


def test_cli_writes_failure_columns_and_summary(tmp_path: Path, capsys) -> None:
    code, _ = _cli(
        tmp_path, "--failures", "gpu=exp:40;software=exp:300", "--checkpoint", "cost=5",
        "--failure-reaction", "spares:1", "--seed", "3", capsys=capsys,
    )  # fmt: skip
    assert code == 0
    out = tmp_path / "out"
    with open(out / "jobs.csv") as fh:
        header = next(csv.reader(fh))
    for col in ("failures", "failure_causes", "restarts", "lost_gpu_seconds", "ckpt_time_s",
                "restart_time_s", "repair_wait_s", "ettr"):  # fmt: skip
        assert col in header
    summary = json.loads((out / "summary.json").read_text())
    block = summary["failures"]
    assert block["reaction"] == "spares:1" and block["interruptions"] >= 1
    assert set(block["gpu_hours_lost"]) == {
        "rollback", "checkpoint", "restart", "repair_wait", "spares_idle"
    }  # fmt: skip
    config = (out / "config.toml").read_text()
    assert 'failures = "gpu=exp:40;software=exp:300"' in config
    # the config repeats the run
    code = main(["replay", "--config", str(out / "config.toml"), "--out", str(tmp_path / "again")])
    assert code == 0
    assert (tmp_path / "again" / "jobs.csv").read_bytes() == (out / "jobs.csv").read_bytes()


def test_cli_without_failures_has_no_failure_columns(tmp_path: Path, capsys) -> None:
    code, _ = _cli(tmp_path, capsys=capsys)
    assert code == 0
    header = (tmp_path / "out" / "jobs.csv").read_text().splitlines()[0]
    assert "failures" not in header and "ettr" not in header
    assert "failures" not in json.loads((tmp_path / "out" / "summary.json").read_text())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--checkpoint", "cost=5"], "'--checkpoint' needs '--failures'"),
        (["--failures", "gpu=exp:0"], "must be > 0"),
        (["--failures", "gpu=exp:10", "--checkpoint", "policy=fixed:2,cost=5"], "shorter than"),
        (["--failures", "gpu=exp:10", "--failure-reaction", "pray"], "unknown reaction"),
        (["--failures", "trace=/nonexistent/events.csv"], "failure trace not found"),
    ],
)
def test_cli_bad_failure_input(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    code, err = _cli(tmp_path, *args, capsys=capsys)
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # no half-written output
