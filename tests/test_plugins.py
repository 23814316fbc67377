"""Policies from outside schedlab: ``--plugin module:Class`` in pack, replay, sweep and serve,
the ``schedlab.policies`` entry points, config files that repeat a plugin run, and the refusals
(bad references, names taken by built-ins, options a policy would ignore)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.policies import plugins as plugin_registry
from schedlab.policies.registry import make_placement, make_scheduler
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.loop import ServeConfig, Server
from schedlab.testing import assert_conforms

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plugin-package" / "src"
SPREAD = "schedlab_example.spread:Spread"
FEWEST = "schedlab_example.fewest_gpus:FewestGpusFirst"

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,4,T4\nn1,64000,262144,8,V100\n"
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n" + "".join(
    f"p{i},2000,4096,{1 + i % 2},{500 if i % 6 == 0 else 1000}\n" for i in range(20)
)
TRACE = "job_id,submit_time,num_gpus,duration\n" + "".join(
    f"j{i},{10 * i},{[8, 1, 2, 4][i % 4]},{300 + 50 * i}\n" for i in range(12)
)


@pytest.fixture(autouse=True)
def example_on_path(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield
    for name in ("spread", "fewest-gpus"):
        plugin_registry.forget(name)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    nodes, pods, trace = tmp_path / "nodes.csv", tmp_path / "pods.csv", tmp_path / "jobs.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    trace.write_text(TRACE)
    return nodes, pods, trace


def _schedlab(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed CLI in a fresh process, with the example package on PYTHONPATH only."""
    env = {**os.environ, "PYTHONPATH": str(EXAMPLE)}
    cmd = [str(Path(sys.executable).with_name("schedlab")), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


def test_pack_with_a_plugin_and_its_config_repeats_the_run(files, tmp_path):
    nodes, pods, _ = files
    first = tmp_path / "first"
    done = _schedlab(
        "pack", "--nodes", str(nodes), "--pods", str(pods), "--policy", "spread",
        "--plugin", SPREAD, "--seed", "3", "--no-figures", "--out", str(first),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    config = tomllib.loads((first / "config.toml").read_text())
    assert config["plugin"] == [SPREAD] and config["policy"] == "spread"
    again = tmp_path / "again"
    done = _schedlab(
        "pack", "--config", str(first / "config.toml"), "--no-figures", "--out", str(again)
    )
    assert done.returncode == 0, done.stderr
    assert (first / "events.csv").read_bytes() == (again / "events.csv").read_bytes()
    # spread puts the first whole-GPU pod on the 8-GPU node (most free share)
    assert "n1" in (first / "events.csv").read_text().splitlines()[1]


def test_replay_with_a_plugin_ordering_runs_small_jobs_first(files, tmp_path):
    _, _, trace = files
    out = tmp_path / "r"
    done = _schedlab(
        "replay", "--cluster", "1x8:V100", "--trace", str(trace), "--policy", "fewest-gpus",
        "--plugin", FEWEST, "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert tomllib.loads((out / "config.toml").read_text())["plugin"] == [FEWEST]
    again = tmp_path / "again"
    done = _schedlab("replay", "--config", str(out / "config.toml"), "--out", str(again))
    assert done.returncode == 0, done.stderr
    assert (again / "jobs.csv").read_bytes() == (out / "jobs.csv").read_bytes()
    rows = (out / "jobs.csv").read_text().splitlines()
    header = rows[0].split(",")
    starts = {r.split(",")[0]: float(r.split(",")[header.index("start_time")]) for r in rows[1:]}
    # j0 (8 GPUs) runs 0..300 while the rest arrive; at 300 the 1-GPU jobs (j1, j5, j9) and the
    # 2-GPU ones (j2, j6, j10) take 9 GPUs' worth minus one: j10 no longer fits, nor j3 (4 GPUs,
    # submitted before all of them) — fewest GPUs first, not first come first served.
    assert {j for j, t in starts.items() if t == 300.0} == {"j1", "j5", "j9", "j2", "j6"}
    assert starts["j3"] > 300.0 and starts["j4"] > 300.0


def test_sweep_loads_the_plugin_in_every_worker(files, tmp_path):
    _, _, trace = files
    out = tmp_path / "s"
    done = _schedlab(
        "sweep", "--cluster", "1x8:V100", "--traces", str(trace), "--policies", "fewest-gpus",
        "fifo", "--placements", "spread", "--plugin", FEWEST, "--plugin", SPREAD,
        "--workers", "2", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "fewest-gpus" in (out / "results.csv").read_text()


def test_serve_with_plugins_places_on_the_fake_cluster(tmp_path):
    fake = FakeSlurm(
        [fake_node("node1", gpus=8), fake_node("node2", gpus=4)],
        [fake_job(1, 4, 100.0), fake_job(2, 1, 101.0)],
    )
    config = ServeConfig("fewest-gpus", "spread", plugins=(FEWEST, SPREAD))
    server = Server(fake, config, Journal(tmp_path / "j.jsonl"), clock=lambda: 200.0)
    report = server.cycle()
    assert report.started == 2
    starts = [r for r in read_journal(tmp_path / "j.jsonl") if r["action"] == "start"]
    # the 1-GPU job goes first and to the node with the most free share; then the 4-GPU job
    # to the node that has most left (node1: 7 free against node2's 4)
    assert [(r["job"], r["nodes"]) for r in starts] == [(2, ["node1"]), (1, ["node1"])]


def test_the_example_plugins_meet_the_contract():
    sys.path.insert(0, str(EXAMPLE))
    from schedlab_example.fewest_gpus import FewestGpusFirst
    from schedlab_example.spread import Spread

    assert_conforms(Spread, seeds=(0,))
    assert_conforms(FewestGpusFirst, seeds=(0,))


def test_policies_lists_plugins_marked_as_such(capsys):
    assert main(["policies", "--plugin", SPREAD]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("│ spread"))
    cell = "".join(line.split("│")[4].strip() for line in lines[at : at + 3] if "│" in line)
    assert cell.startswith("plugin") and SPREAD in cell.replace("plugin", "", 1)
    fgd = next(line for line in lines if line.startswith("│ fgd"))
    assert fgd.split("│")[4].strip() == "schedlab"


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("no_such_module_xyz:Thing", "cannot import 'no_such_module_xyz'"),
        ("schedlab_example.spread:Nothing", "has no 'Nothing'"),
        ("schedlab_example.spread:np", "is not a policy class"),
        ("schedlab_example.spread", "must look like module:Class"),
    ],
)
def test_a_bad_plugin_is_one_line_and_writes_nothing(files, tmp_path, capsys, reference, message):
    nodes, pods, _ = files
    out = tmp_path / "o"
    argv = ["pack", "--nodes", str(nodes), "--pods", str(pods), "--policy", "spread"]
    assert main([*argv, "--plugin", reference, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("schedlab: error: ") and message in err and "\n" not in err
    assert not out.exists()


class _Clash(plugin_registry.PlacementPolicy):  # type: ignore[name-defined]
    name = "fgd"
    summary = "takes a built-in's name"

    def score(self, pod, state, feasible):  # type: ignore[no-untyped-def]
        return state.gpu_free_sum


def test_a_plugin_named_like_a_built_in_is_refused():
    with pytest.raises(InputError, match="the name of a built-in policy"):
        plugin_registry.register(_Clash, "tests:_Clash", "--plugin")


def test_entry_points_are_found_by_name(monkeypatch):
    eps = [
        EntryPoint("spread", SPREAD, plugin_registry.GROUP),
        EntryPoint("fewest-gpus", FEWEST, plugin_registry.GROUP),
    ]
    seen: list[str] = []

    def fake_entry_points(group: str):  # type: ignore[no-untyped-def]
        seen.append(group)
        return eps if group == plugin_registry.GROUP else []

    monkeypatch.setattr(plugin_registry.importlib.metadata, "entry_points", fake_entry_points)
    assert type(make_placement("spread")).__name__ == "Spread"
    scheduler, _ = make_scheduler("fewest-gpus", "spread")
    assert scheduler.describe() == "fewest-gpus / spread"
    assert seen and set(seen) == {"schedlab.policies"}


def test_an_entry_point_named_unlike_its_policy_is_refused(monkeypatch):
    eps = [EntryPoint("wide", SPREAD, plugin_registry.GROUP)]
    monkeypatch.setattr(plugin_registry.importlib.metadata, "entry_points", lambda group: eps)
    with pytest.raises(InputError, match="must be the policy's name"):
        make_placement("wide")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--policy", "srtf", "--backfill"], "'srtf' is preemptive"),
        (["--policy", "tiresias", "--backfill"], "'tiresias' is preemptive"),
        (["--policy", "edf", "--param", "preemptive=true", "--backfill"], "'edf' is preemptive"),
        (["--policy", "gandiva", "--placement", "fgd"], "'gandiva' places jobs itself"),
        (["--policy", "elasticflow", "--backfill"], "backfill does not apply"),
    ],
)
def test_options_a_policy_ignores_are_refused_before_any_work(
    files, tmp_path, capsys, argv, message
):
    _, _, trace = files
    out = tmp_path / "o"
    base = ["replay", "--cluster", "1x8:V100", "--trace", str(trace), "--out", str(out)]
    assert main([*base, *argv]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_sweep_and_serve_refuse_the_same_combinations(files, tmp_path, capsys):
    _, _, trace = files
    out = tmp_path / "s"
    argv = ["sweep", "--cluster", "1x8:V100", "--traces", str(trace), "--out", str(out)]
    assert main([*argv, "--policies", "fifo+backfill", "srtf+backfill"]) == 2
    assert "'srtf' is preemptive" in capsys.readouterr().err
    assert not out.exists()
    journal = tmp_path / "serve.jsonl"
    serve = ["serve", "slurm", "--policy", "tiresias", "--backfill", "--journal", str(journal)]
    assert main(serve) == 2
    assert "'tiresias' is preemptive" in capsys.readouterr().err
    assert not journal.exists()
    assert main(["serve", "slurm", "--policy", "gandiva", "--journal", str(journal)]) == 2
    assert "'gandiva' does not run in serve" in capsys.readouterr().err
