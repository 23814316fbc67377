"""Tenancy in ``schedlab replay`` end to end: outputs, --tenancy none unchanged, config
repeat, bad input, the report section, and the metrics on a hand-computed timeline."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.cli import main
from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.model.snapshot import DONE
from schedlab.tenancy.metrics import entitlement, fairness
from schedlab.tenancy.recorder import TenancyRecorder
from schedlab.tenancy.registry import share_policy_names
from schedlab.tenancy.replay import TenancySpec
from schedlab.tenancy.tree import QueueSpec, build_tree

# Queue a fills the 8 GPUs at 0 with four 2-GPU jobs of 100 s; b's two jobs come at 10.
TRACE = """job_id,submit_time,num_gpus,duration,queue
a0,0,2,100,a
a1,0,2,100,a
a2,0,2,100,a
a3,0,2,100,a
b0,10,2,100,b
b1,10,2,100,b
"""
QUEUES = """[tenancy]
policy = "kai"
tenant_key = ["queue"]

[[queue]]
name = "a"
deserved = { gpu = 4 }

[[queue]]
name = "b"
deserved = { gpu = 4 }
"""


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.csv"
    path.write_text(TRACE)
    return path


def replay(trace: Path, out: Path, *extra: str) -> int:
    argv = ["replay", "--cluster", "1x8:V100", "--trace", str(trace), "--policy", "fifo"]
    return main([*argv, "--out", str(out), *extra])


def test_a_queue_over_its_share_loses_jobs_and_every_job_completes(trace, tmp_path):
    queues = tmp_path / "queues.toml"
    queues.write_text(QUEUES)
    out = tmp_path / "run"
    assert replay(trace, out, "--queues", str(queues)) == 0
    names = {p.name for p in out.iterdir()}
    assert {
        "tenancy_timeline.parquet",
        "tenancy_queues.csv",
        "tenancy_reclaims.csv",
        "tenancy_summary.json",
        "figures",
    } <= names
    jobs = pd.read_csv(out / "jobs.csv")
    assert (jobs["status"] == "completed").all() and len(jobs) == 6
    assert int(jobs["preemptions"].sum()) == 2
    table = pd.read_csv(out / "tenancy_queues.csv")
    assert list(table["queue"]) == ["a", "b"]
    assert table.set_index("queue").loc["a", "reclaimed_from"] == 2
    assert table.set_index("queue").loc["b", "reclaimed_for"] == 2
    summary = json.loads((out / "tenancy_summary.json").read_text())
    assert summary["policy"] == "kai" and summary["reclaims"] == 2
    assert json.loads((out / "summary.json").read_text())["tenancy"]["reclaims"] == 2
    timeline = pd.read_parquet(out / "tenancy_timeline.parquet")
    assert set(timeline.columns) == {
        "t",
        "queue",
        "resource",
        "alloc",
        "fair_share",
        "entitled",
        "demand",
        "deserved",
        "usage",
    }
    at10 = timeline[timeline["t"] == 10].set_index("queue")
    assert at10.loc["a", "alloc"] == 4 and at10.loc["b", "alloc"] == 4
    assert at10.loc["b", "entitled"] == 4
    reclaims = pd.read_csv(out / "tenancy_reclaims.csv")
    assert reclaims.to_dict("records")[0] | {"lost_gpu_hours": 0} == {
        "preemptor": "b",
        "victim": "a",
        "reason": "deserved",
        "count": 2,
        "gpus": 4,
        "lost_gpu_hours": 0,
    }
    assert (out / "figures" / "tenancy.png").is_file()


def test_tenancy_none_changes_nothing(trace, tmp_path):
    plain, none = tmp_path / "plain", tmp_path / "none"
    assert replay(trace, plain) == 0
    assert replay(trace, none, "--tenancy", "none") == 0
    assert sorted(p.name for p in none.iterdir()) == sorted(p.name for p in plain.iterdir())
    for name in ("jobs.csv", "timeseries.csv", "config.toml"):
        assert (none / name).read_bytes() == (plain / name).read_bytes()


def test_config_repeats_the_tenancy_run(trace, tmp_path):
    first = tmp_path / "first"
    assert replay(trace, first, "--tenancy", "kueue-fair", "--tenant-column", "queue") == 0
    config = tomllib.loads((first / "config.toml").read_text())
    assert config["tenancy"] == "kueue-fair" and config["tenant_column"] == ["queue"]
    again = tmp_path / "again"
    assert main(["replay", "--config", str(first / "config.toml"), "--out", str(again)]) == 0
    for name in ("jobs.csv", "tenancy_queues.csv", "tenancy_reclaims.csv"):
        assert (again / name).read_bytes() == (first / name).read_bytes()


def test_derived_deserved_is_marked_synthetic(trace, tmp_path):
    out = tmp_path / "run"
    assert replay(trace, out, "--tenancy", "kai", "--derive-deserved", "demand-share") == 0
    summary = json.loads((out / "tenancy_summary.json").read_text())
    assert summary["deserved_synthetic"] is True
    table = pd.read_csv(out / "tenancy_queues.csv").set_index("queue")
    # a: 800 of 1,200 GPU-seconds of work → ⌊8 × 2/3⌋ = 5; b: ⌊8 × 1/3⌋ = 2.
    assert table.loc["a", "deserved_gpu"] == 5 and table.loc["b", "deserved_gpu"] == 2


def test_derived_deserved_over_a_queue_file_says_what_it_replaces(trace, tmp_path, capsys):
    queues = tmp_path / "q.toml"
    queues.write_text(QUEUES)  # a and b deserve 4 each; derived: 5 and 2
    out = tmp_path / "run"
    assert replay(trace, out, "--queues", str(queues), "--derive-deserved", "demand-share") == 0
    err = capsys.readouterr().err
    assert "replaces the deserved GPUs the queue file gives 'a' (4 → 5)" in err
    assert "gives 'b' (4 → 2)" in err


BAD_FILES = {
    "cycle": (
        '[[queue]]\nname = "a"\nparent = "b"\n[[queue]]\nname = "b"\nparent = "a"\n',
        "the queue tree has a cycle (a → b → a)",
    ),
    "negative": ('[[queue]]\nname = "a"\ndeserved = { gpu = -3 }\n', "must be ≥ 0 or -1"),
    "text": ('[[queue]]\nname = "a"\nlimit = { gpu = "lots" }\n', "must be a number"),
    "resource": ('[[queue]]\nname = "a"\ndeserved = { tpu = 4 }\n', "unknown resource 'tpu'"),
    "field": ('[[queue]]\nname = "a"\nquota = 4\n', "unknown field 'quota'"),
    "unknown-queue": (
        '[tenancy]\ntenant_key = ["queue"]\nunknown_tenant = "error"\n[[queue]]\nname = "a"\n',
        "job 'b0' belongs to tenant 'b', which the queue file does not define",
    ),
    "inner": (
        '[tenancy]\ntenant_key = ["queue"]\n[[queue]]\nname = "a/x"\n[[queue]]\nname = "b"\n',
        "which is an inner queue",
    ),
    "setting": ('[tenancy.kai]\nk_val = 2\n[[queue]]\nname = "a"\n', "unknown setting 'k_val'"),
    "k-inf": ("[tenancy.kai]\nk_value = inf\n", "'k_value' must be a finite number (got inf)"),
    "multiplier-nan": (
        "[tenancy.kai]\nreclaimer_saturation_multiplier = nan\n",
        "'reclaimer_saturation_multiplier' must be a number ≥ 1 (got nan)",
    ),
    "misspelt-table": ("[tenancy.kia]\nk_value = 2\n", "did you mean [tenancy.kai]?"),
    "other-policy-table": ("[tenancy.drf]\nfoo = 1\n", "[tenancy.drf] has an unknown setting"),
    "setting-too-high": (
        '[tenancy]\nusage = { window = "7d" }\n',
        "[tenancy.usage] is not a share policy's settings table",
    ),
    "duration-nan": (
        "[tenancy.kai]\nusage = { window = nan }\n",
        "usage.window must be ≥ 0 and finite (got nan)",
    ),
    "priority-nan": (
        '[[queue]]\nname = "a"\npriority = nan\n',
        "field 'priority' must be a finite number (got nan)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_queue_files_stop_before_the_run(case, trace, tmp_path, capsys):
    text, message = BAD_FILES[case]
    queues = tmp_path / "q.toml"
    queues.write_text(text)
    out = tmp_path / "run"
    assert replay(trace, out, "--queues", str(queues), "--tenancy", "kai") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err
    assert str(queues) in err or "jobs.csv" in err
    assert not out.exists()


def test_a_queue_file_not_in_utf8_is_one_line(trace, tmp_path, capsys):
    queues = tmp_path / "q.toml"
    queues.write_bytes(b'[[queue]]\nname = "pr\xff\xfeod"\n')
    assert replay(trace, tmp_path / "run", "--queues", str(queues), "--tenancy", "kai") == 2
    err = capsys.readouterr().err.strip()
    assert err == f"schedlab: error: not a UTF-8 text file at {queues}"
    assert not (tmp_path / "run").exists()


def test_explicit_choices_that_cannot_hold_are_refused(trace, tmp_path, capsys):
    queues = tmp_path / "q.toml"
    queues.write_text(QUEUES)
    # 'none' is the run without tenancy: the queue file's kai must not run in its place.
    assert replay(trace, tmp_path / "a", "--queues", str(queues), "--tenancy", "none") == 2
    assert "'--queues' does not apply with it" in capsys.readouterr().err
    assert replay(trace, tmp_path / "b", "--tenancy", "") == 2
    assert "'--tenancy' needs a policy name" in capsys.readouterr().err
    twice = ["--tenancy", "kai", "--tenant-column", "queue", "--tenant-column", "queue"]
    assert replay(trace, tmp_path / "b", *twice) == 2
    assert "'--tenant-column' names 'queue' twice" in capsys.readouterr().err
    # Sending unknown tenants to the default queue needs one.
    assert (
        replay(trace, tmp_path / "c", "--tenancy", "kai", "--unknown-tenant", "default-queue") == 2
    )
    err = capsys.readouterr().err
    assert "field 'default_queue' names one of its queues" in err and "Traceback" not in err
    assert not any((tmp_path / d).exists() for d in "abc")


def test_empty_segments_of_a_trace_queue_path_are_dropped(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time,num_gpus,duration,queue\nx,0,2,100,a//b/\ny,5,2,100,c\n")
    out = tmp_path / "run"
    assert replay(path, out, "--tenancy", "kai") == 0
    queues = pd.read_csv(out / "tenancy_queues.csv")["queue"].tolist()
    assert "a/b" in queues and "c" in queues and not any("//" in q for q in queues)


def test_bad_options(trace, tmp_path, capsys):
    assert replay(trace, tmp_path / "x", "--tenancy", "kia") == 2
    assert "did you mean 'kai'" in capsys.readouterr().err
    assert replay(trace, tmp_path / "y", "--tenant-column", "queue") == 2
    assert "need '--tenancy POLICY'" in capsys.readouterr().err
    assert (
        main(
            [
                "replay",
                "--cluster",
                "1x8:V100",
                "--trace",
                str(trace),
                "--policy",
                "themis",
                "--tenancy",
                "kai",
                "--out",
                str(tmp_path / "z"),
            ]
        )
        == 2
    )
    assert "tenancy works over an ordering" in capsys.readouterr().err
    assert replay(trace, tmp_path / "w", "--tenancy", "kai", "--backfill") == 2
    assert "--backfill" in capsys.readouterr().err


def test_oversubscribed_children_warn_and_run(trace, tmp_path, capsys):
    queues = tmp_path / "q.toml"
    queues.write_text(
        '[tenancy]\npolicy = "kai"\ntenant_key = ["queue"]\n'
        '[[queue]]\nname = "p"\ndeserved = { gpu = 4 }\n'
        '[[queue]]\nname = "p/a"\ndeserved = { gpu = 4 }\n'
        '[[queue]]\nname = "p/b"\ndeserved = { gpu = 4 }\n'
        '[[queue]]\nname = "a"\n[[queue]]\nname = "b"\n'
    )
    assert replay(trace, tmp_path / "run", "--queues", str(queues)) == 0
    assert "oversubscribed" in capsys.readouterr().err


def test_deserved_above_the_limit_warns_and_runs(trace, tmp_path, capsys):
    queues = tmp_path / "q.toml"
    queues.write_text(
        QUEUES.replace("deserved = { gpu = 4 }", "deserved = { gpu = 4 }\nlimit = { gpu = 2 }", 1)
    )
    out = tmp_path / "run"
    assert replay(trace, out, "--queues", str(queues)) == 0
    assert "queue 'a': deserved gpu 4 is above its limit 2" in capsys.readouterr().err
    jobs = pd.read_csv(out / "jobs.csv")
    assert (jobs["status"] == "completed").all()


def test_yaml_queue_file(trace, tmp_path):
    queues = tmp_path / "q.yaml"
    queues.write_text(
        "tenancy:\n  policy: kai\n  tenant_key: [queue]\n"
        "queue:\n  - name: a\n    deserved: {gpu: 4}\n  - name: b\n    deserved: {gpu: 4}\n"
    )
    out = tmp_path / "run"
    assert replay(trace, out, "--queues", str(queues)) == 0
    assert json.loads((out / "tenancy_summary.json").read_text())["reclaims"] == 2


def test_report_has_one_line_per_queue(trace, tmp_path):
    queues = tmp_path / "queues.toml"
    queues.write_text(QUEUES)
    run = tmp_path / "run"
    assert replay(trace, run, "--queues", str(queues)) == 0
    page = tmp_path / "report.html"
    assert main(["report", str(run), "--out", str(page)]) == 0
    text = page.read_text()
    assert 'id="tenancy"' in text
    section = text[text.index('id="tenancy"') :]
    assert section.count("<tr><td>") == 2


@pytest.mark.parametrize("policy", share_policy_names())
def test_every_share_policy_runs_a_replay_to_the_end(policy, trace):
    spec = ReplaySpec(
        cluster="1x8:V100", trace=str(trace), policy="fifo", tenancy=TenancySpec(policy)
    )
    record = run_replay(spec)
    assert (record.status == DONE).all()
    assert record.tenancy.recorder.times  # decisions were recorded


def _recorder(alloc_rows, demand_rows, times, deserved=(0, 0)):
    tree = build_tree(
        [
            QueueSpec("a", deserved={"gpu": deserved[0]}),
            QueueSpec("b", deserved={"gpu": deserved[1]}),
        ]
    )
    rec = TenancyRecorder()
    rec.start(tree, np.array([8.0]), None, np.zeros(0, dtype=np.int64))
    for t, a, d in zip(times, alloc_rows, demand_rows, strict=True):
        rec.times.append(t)
        rec.alloc.append(np.array([[sum(a)], [a[0]], [a[1]]], dtype=float))
        rec.demand.append(np.array([[sum(d)], [d[0]], [d[1]]], dtype=float))
        rec.fair.append(np.zeros((3, 1)))
    return rec, tree


def test_entitlement_deviation_jain_and_starvation_by_hand():
    # 0–10 s: a holds 8 and wants 8; b wants nothing → e = (8, 0).
    # 10–30 s: both want 8; b's deserved 4 comes first, the 4 left split evenly → e = (2, 6);
    # a holds 6, b holds 2: |6 − 2| + |2 − 6| = 8.
    rec, tree = _recorder([(8, 0), (6, 2)], [(8, 0), (8, 8)], [0.0, 10.0], deserved=(0, 4))
    ent = entitlement(tree, np.stack(rec.demand), 8.0)
    assert ent[:, 1].tolist() == [8, 2] and ent[:, 2].tolist() == [0, 6]
    m = fairness(rec, 30.0, tree.leaves)
    assert m["twd"]["a"] == pytest.approx(4 * 20 / 30)
    assert m["twd"]["b"] == pytest.approx(4 * 20 / 30)
    assert m["unfairness"] == pytest.approx((8 / 16) * 20 / 30)
    # Jain only where two queues are entitled (10–30 s): x = (3, 1/3).
    x = np.array([3.0, 1 / 3])
    assert m["jain"] == pytest.approx(x.sum() ** 2 / (2 * (x**2).sum()))
    # b waits 10–30 s below its deserved 4 the whole time; a has no deserved quota.
    assert m["starved_share"]["b"] == 1.0 and m["starved_share"]["a"] is None
    assert m["starved_share_entitled"]["b"] == 1.0  # 2 < 6 − 1
    assert m["mean_alloc"]["a"] == pytest.approx((8 * 10 + 6 * 20) / 30)


def test_entitlement_respects_deserved_floors_and_limits():
    tree = build_tree(
        [
            QueueSpec("a", deserved={"gpu": 6}),
            QueueSpec("b", limit={"gpu": 1}),
            QueueSpec("c", weight=3),
        ]
    )
    demand = np.zeros((1, 4, 1))
    demand[0, 1:, 0] = [10, 10, 10]
    demand[0, 0, 0] = 30
    ent = entitlement(tree, demand, 12.0)
    # a keeps its 6; b is capped at 1; the 5 left go by weight 1:3 between a and c.
    assert ent[0, 1:].tolist() == pytest.approx([6 + 5 / 4, 1, 5 * 3 / 4], abs=1e-6)


def test_sweep_crosses_share_policies_with_the_orderings(trace, tmp_path):
    out = tmp_path / "grid"
    argv = [
        "sweep",
        "--cluster",
        "1x8:V100",
        "--traces",
        str(trace),
        "--policies",
        "fifo",
        "--tenancy",
        "none",
        "kai",
        "--workers",
        "1",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    table = pd.read_csv(out / "results.csv", dtype={"variant": str}).fillna({"variant": ""})
    assert sorted(table["variant"]) == ["", "tenancy=kai"]
    kai = table[table["variant"] == "tenancy=kai"].iloc[0]
    assert kai["tenancy_reclaims"] == 2 and kai["completed"] == 6
    assert np.isnan(table[table["variant"] == ""].iloc[0]["tenancy_reclaims"])
    config = tomllib.loads((out / "config.toml").read_text())
    assert config["tenancy"] == ["none", "kai"]
    assert (Path(kai["run_dir"]) / "tenancy_queues.csv").is_file()


def test_sweep_without_tenancy_has_no_tenancy_columns(trace, tmp_path):
    out = tmp_path / "grid"
    argv = [
        "sweep",
        "--cluster",
        "1x8:V100",
        "--traces",
        str(trace),
        "--policies",
        "fifo",
        "--workers",
        "1",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    header = (out / "results.csv").read_text().splitlines()[0]
    assert "tenancy" not in header
    assert "tenancy" not in tomllib.loads((out / "config.toml").read_text())
