"""LLM jobs in replay: the ``llm`` trace format, work in tokens at the planner's speed, re-plans,
shrinking after a failure, and the per-job plan columns."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from schedlab.cli import main
from schedlab.errors import InputError
from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.perf.llm.hardware import NodeNet, get_gpu
from schedlab.perf.llm.model import get_model
from schedlab.perf.llm.planner import plan
from schedlab.perf.llm.profile import get_profile
from schedlab.perf.llm.space import Shape
from schedlab.traces.formats import detect_format, read_jobs

HEADER = "job_id,submit_time,num_gpus,model,batch_tokens,tokens"


def _write(tmp_path: Path, rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "llm.csv"
    path.write_text(header + "\n" + rows)
    return path


def test_reader_detects_and_reads(tmp_path: Path) -> None:
    path = tmp_path / "llm.csv"
    path.write_text(
        "job_id,submit_time,num_gpus,model,batch_tokens,tokens,steps,job_type,plan,min_gpus,"
        "max_gpus,layers,hidden,heads,vocab,seq_len\n"
        "a,0,64,llama3-8b,4194304,4e10,,pretrain,t=1;batch=flexible,8,128,,,,,\n"
        "b,5,16,mini,65536,,100,sft,,,,4,512,8,1000,1024\n"
    )
    assert detect_format(path) == "llm"
    jobs = read_jobs(path).jobs
    llm = jobs.llm
    assert llm.batch.tolist() == [512, 64]
    assert llm.tokens.tolist() == [4e10, 100 * 65536]
    assert llm.plan[0] == (("t", 1),) and bool(llm.flexible[0]) and not llm.flexible[1]
    assert llm.min_gpus.tolist() == [8, 16] and llm.max_gpus.tolist() == [128, 16]
    assert llm.model[1].layers == 4 and llm.model[1].name == "mini"
    assert jobs.model_name.tolist() == ["llama3-8b", "mini"]


@pytest.mark.parametrize(
    ("row", "message", "column"),
    [
        ("a,0,8,llama3-8c,65536,1e9", "did you mean 'llama3-8b'", "model"),
        ("a,0,8,llama3-8b,65537,1e9", "not a whole number of 8192-token sequences", "batch_tokens"),
        ("a,0,8,llama3-8b,65536,0", "needs 'tokens' or 'steps' > 0", "tokens"),
    ],
)
def test_reader_errors_name_row_and_column(tmp_path: Path, row: str, message: str, column: str):
    path = _write(tmp_path, row + "\n")
    with pytest.raises(InputError, match=message) as err:
        read_jobs(path)
    assert f"llm.csv:2, column '{column}'" in str(err.value)


def test_inline_model_with_inconsistent_heads(tmp_path: Path) -> None:
    path = tmp_path / "llm.csv"
    path.write_text(
        "job_id,submit_time,num_gpus,model,batch_tokens,tokens,layers,hidden,heads,vocab,seq_len\n"
        "a,0,8,odd,4096,1e9,4,1000,16,100,1024\n"
    )
    with pytest.raises(InputError, match=r"hidden 1000 is not a multiple of heads 16.*column"):
        read_jobs(path)


def test_inline_sizes_under_a_catalog_name_are_refused(tmp_path: Path) -> None:
    """The row would replay a tiny model labelled llama3-8b: two definitions of one name."""
    path = tmp_path / "llm.csv"
    path.write_text(
        "job_id,submit_time,num_gpus,model,batch_tokens,tokens,layers,hidden,heads,vocab,seq_len\n"
        "a,0,8,toy,512,1e9,2,256,4,1000,128\n"
        "b,0,8,llama3-8b,512,1e9,2,256,4,1000,128\n"
        "c,0,8,llama3-8b,4194304,1e9,,,,,\n"
    )
    with pytest.raises(InputError, match="model 'llama3-8b' is in the catalog") as err:
        read_jobs(path)
    assert "llm.csv:3, column 'layers'" in str(err.value)


def test_a_job_runs_at_the_planners_speed(tmp_path: Path) -> None:
    path = _write(tmp_path, "a,0,16,llama3-8b,1048576,1e9\n")
    rec = run_replay(ReplaySpec(cluster="2x8:H100", trace=str(path), policy="fifo"))
    best = plan(
        get_model("llama3-8b"), 128, get_gpu("H100"), Shape.uniform(2, 8), get_profile("generic"),
        NodeNet.default(get_gpu("H100"), 8), keep=1,
    ).best  # fmt: skip
    assert rec.end_time[0] == pytest.approx(1e9 / best.tokens_per_s)
    assert rec.llm.history[0][0][1] == best.plan.label()


def test_no_feasible_plan_means_no_progress(tmp_path: Path) -> None:
    """405B on one node fits nowhere: rate 0; the run ends with the job unfinished."""
    path = _write(tmp_path, "a,0,8,llama3-405b,65536,1e9\n")
    rec = run_replay(ReplaySpec(cluster="1x8:H100", trace=str(path), policy="fifo", until=1e5))
    assert not np.isfinite(rec.end_time[0])
    assert rec.llm.history[0][0][1] == "no feasible plan"


def test_resize_costs_a_checkpoint_and_a_restart(tmp_path: Path) -> None:
    from schedlab.perf.llm.perfmodel import LLMPlanner
    from schedlab.perf.models import TraceDuration
    from schedlab.traces.cluster_spec import parse_cluster_spec

    path = _write(tmp_path, "a,0,16,llama3-8b,1048576,1e9\n")
    jobs = read_jobs(path).jobs
    cluster = parse_cluster_spec("2x8:H100")
    perf = LLMPlanner(TraceDuration(), cluster)
    allocation = ((0, tuple(range(8))), (1, tuple(range(8))))
    nbytes = 14 * get_model("llama3-8b").params
    sync = nbytes / (2 * 5e9)  # two nodes writing at 5 GB/s each
    load = nbytes / 16 / 5e9
    assert perf.resize_seconds(jobs, 0, allocation, 0.0) == pytest.approx(sync + 60 + 120 + load)
    fixed = LLMPlanner(TraceDuration(), cluster, resize_fixed=42.0)
    assert fixed.resize_seconds(jobs, 0, allocation, 42.0) == 42.0


def test_shrink_keeps_a_feasible_plan_and_grows_back(tmp_path: Path) -> None:
    """t=8, p=2 on 4 nodes; node 0 fails for an hour: 3 survivors have no plan with p=2 (24 GPUs
    = 8·2·d has no whole d), so the job shrinks to 2 nodes, then grows back to 4."""
    path = _write(tmp_path, "a,0,32,llama3-8b,1048576,3e10,t=8;p=2;batch=flexible\n",
                  HEADER + ",plan")  # fmt: skip
    events = tmp_path / "events.csv"
    events.write_text("time,component,id,category,repair_s\n600,node,h100-00000,PSU,3600\n")
    rec = run_replay(
        ReplaySpec(
            cluster="4x8:H100", trace=str(path), policy="fifo", failures=f"trace={events}",
            failure_reaction="shrink", checkpoint="policy=fixed:300",
        )
    )  # fmt: skip
    sizes = [h[3] for h in rec.llm.history[0]]
    assert sizes == [32, 16, 32]
    assert rec.failures.failures[0] == 1 and np.isfinite(rec.end_time[0])


def test_cli_plan_columns_and_summary(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, "a,0,16,llama3-8b,1048576,1e9\nb,10,8,internlm-7b,262144,1e8\n")
    models = tmp_path / "extra.toml"
    models.write_text("[models.tiny]\nlayers = 2\nhidden = 256\nheads = 4\nvocab = 1000\n"
                      "seq_len = 1024\nsource = 'test'\n")  # fmt: skip
    with open(path, "a") as fh:
        fh.write("c,20,8,tiny,65536,1e7\n")
    out = tmp_path / "out"
    code = main(
        ["replay", "--cluster", "3x8:A100", "--trace", str(path), "--policy", "fifo",
         "--models", str(models), "--llm-profile", "internevo-a100", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    with open(out / "jobs.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["model"] for r in rows] == ["llama3-8b", "internlm-7b", "tiny"]
    assert all(r["plan_first"].startswith("t=") and float(r["mfu_mean"]) > 0 for r in rows)
    block = json.loads((out / "summary.json").read_text())["llm"]
    assert block["llm_jobs"] == 3 and block["tokens_completed"] == pytest.approx(1.11e9)
    config = (out / "config.toml").read_text()
    assert 'llm_profile = "internevo-a100"' in config


TWO_LEAVES = "leafspine:leaves=2,spines=1,hosts_per_leaf=1,g=8,m=1,nic_gbps=400"


def test_llm_job_on_a_topology_runs_at_the_planners_speed_when_the_network_keeps_up(
    tmp_path: Path,
) -> None:
    """Fat uplinks: the data-parallel ring hides behind the backward pass, as the planner's
    analytic term says, so the network changes nothing."""
    path = _write(tmp_path, "a,0,16,llama3-8b,1048576,1e9\n")
    rec = run_replay(ReplaySpec(cluster=None, trace=str(path), policy="fifo", topology=TWO_LEAVES))
    best = plan(
        get_model("llama3-8b"), 128, get_gpu("A100"), Shape.uniform(2, 8), get_profile("generic"),
        NodeNet.from_gbps(400), keep=1,
    ).best  # fmt: skip
    assert rec.end_time[0] == pytest.approx(1e9 / best.tokens_per_s, rel=1e-9)
    assert rec.network.collective[0] == "plan" and rec.network.leaves[0] == 2


def test_llm_job_on_a_thin_uplink_pays_the_exposed_ring_by_hand(tmp_path: Path) -> None:
    """Uplinks of 10 Gb/s: the ring's two cross-leaf edges each carry 2·(d−1)/d·2 B·Ψ per step
    at 1.25 GB/s; T = C + D − ω_dp·t_b with C the planner's step (its DP term is hidden)."""
    path = _write(tmp_path, "a,0,16,llama3-8b,1048576,1e9\n")
    topology = TWO_LEAVES + ",uplink_gbps=10"
    rec = run_replay(ReplaySpec(cluster=None, trace=str(path), policy="fifo", topology=topology))
    profile = get_profile("generic")
    best = plan(
        get_model("llama3-8b"), 128, get_gpu("A100"), Shape.uniform(2, 8), profile,
        NodeNet.from_gbps(400), keep=1,
    ).best  # fmt: skip
    assert best.plan.d == 16 and best.breakdown["dp"] == 0.0 and best.breakdown["pp"] == 0.0
    ring = 2 * 15 / 16 * profile.grad_comm_bytes * best.memory_parts["params_per_gpu"] / 1.25e9
    step = best.step_seconds + ring - profile.omega_dp * best.breakdown["backward_seconds"]
    assert rec.end_time[0] == pytest.approx(1e9 / 1048576 * step, rel=1e-4)


def test_llm_jobs_sharing_an_uplink_slow_each_other(tmp_path: Path) -> None:
    path = _write(tmp_path, "a,0,24,llama3-8b,1048576,1e9\nb,0,24,llama3-8b,1048576,1e9\n")
    topology = "leafspine:leaves=3,spines=1,hosts_per_leaf=2,g=8,m=1,nic_gbps=400,uplink_gbps=10"
    both = run_replay(ReplaySpec(cluster=None, trace=str(path), policy="fifo", topology=topology))
    alone = run_replay(
        ReplaySpec(cluster=None, trace=str(_write(tmp_path, "a,0,24,llama3-8b,1048576,1e9\n")),
                   policy="fifo", topology=topology)
    )  # fmt: skip
    assert (both.network.net_slowdown > 1.0).all()
    assert both.end_time.max() > alone.end_time[0]


def test_cli_llm_with_topology(tmp_path: Path) -> None:
    path = _write(tmp_path, "a,0,16,llama3-8b,1048576,1e9\n")
    out = tmp_path / "o"
    code = main(["replay", "--trace", str(path), "--policy", "fifo", "--out", str(out),
                 "--topology", TWO_LEAVES])  # fmt: skip
    assert code == 0
    with open(out / "jobs.csv") as fh:
        row = next(csv.DictReader(fh))
    assert row["collective"] == "plan" and row["plan_first"].startswith("t=1,p=1")


def test_cli_refusals(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, "a,0,16,llama3-8b,1048576,1e9\n")
    code = main(["replay", "--cluster", "2x8:A100", "--trace", str(path), "--policy", "fifo",
                 "--llm-profile", "nope", "--out", str(tmp_path / "o2")])  # fmt: skip
    assert code == 2 and "unknown profile" in capsys.readouterr().err


def test_synthetic_llm_trace(tmp_path: Path, capsys) -> None:
    from schedlab.traces.synthetic_llm import ACME_SEREN_SHARES, generate_llm_jobs

    frame = generate_llm_jobs(4000, seed=5)
    assert frame.equals(generate_llm_jobs(4000, seed=5))
    shares = frame.job_type.value_counts(normalize=True)
    total = sum(ACME_SEREN_SHARES.values())
    for kind, pct in ACME_SEREN_SHARES.items():
        assert shares.get(kind, 0.0) == pytest.approx(pct / total, abs=0.02)
    out = tmp_path / "syn.csv"
    assert main(["trace", "synthetic-llm", "--jobs", "30", "--seed", "1", "--out", str(out)]) == 0
    jobs = read_jobs(out).jobs
    assert len(jobs) == 30 and jobs.llm is not None and (jobs.llm.tokens > 0).all()
    assert main(["trace", "synthetic-llm", "--jobs", "0", "--out", str(out)]) == 2
    assert "'--jobs' must be ≥ 1" in capsys.readouterr().err


def test_cli_binary_models_file_is_one_line(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, "a,0,16,llama3-8b,1048576,1e9\n")
    blob = tmp_path / "models.toml"
    blob.write_bytes(b"\xff\xfe\x00\x01[models]\n")
    out = tmp_path / "o3"
    code = main(["replay", "--cluster", "2x8:A100", "--trace", str(path), "--policy", "fifo",
                 "--models", str(blob), "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err == f"schedlab: error: not a UTF-8 text file at {blob}\n"
    assert not out.exists()
