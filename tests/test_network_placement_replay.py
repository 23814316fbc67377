"""The network placements (titan, bestfit-machine, fragments-first, tiresias-skew, hived) in
replay: invariants on random small traces, and end-to-end runs of ``schedlab replay`` and
``schedlab sweep`` with a topology."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.experiments.titan_itp import observed_replay
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import DONE, Allocation
from schedlab.network.topology import cluster_for
from schedlab.policies.wiring import PolicyChoice
from schedlab.testing.conformance import small_network
from schedlab.testing.workloads import small_cluster

POLICIES = ("titan", "bestfit-machine", "fragments-first", "tiresias-skew", "hived")
MODELS = ("vgg16", "resnet50", "bert", "gpt2", "deepspeech2", "")


class Ledger:
    """Replay observer that holds every GPU's owner and checks each placement and release."""

    def __init__(self, jobs: JobTable, slots: int, nodes: int) -> None:
        self.jobs = jobs
        self.owner = np.full((nodes, slots), -1)
        self.held: dict[int, Allocation] = {}
        self.problems: list[str] = []
        self.placements = 0

    def placed(self, now: float, job: int, allocation: Allocation) -> None:
        self.placements += 1
        gpus = [(node, g) for node, slots in allocation for g in slots]
        if len(gpus) != int(self.jobs.num_gpus[job]):
            self.problems.append(f"job {job} got {len(gpus)} GPUs")
        if len(set(gpus)) != len(gpus):
            self.problems.append(f"job {job} got a GPU twice")
        for node, g in gpus:
            if self.owner[node, g] != -1:
                self.problems.append(f"job {job} on GPU {node}:{g} of {self.owner[node, g]}")
            self.owner[node, g] = job
        self.held[job] = allocation

    def released(self, now: float, job: int, allocation: Allocation) -> None:
        if self.held.pop(job, None) != allocation:
            self.problems.append(f"job {job} gave back something other than it took")
        for node, slots in allocation:
            for g in slots:
                if self.owner[node, g] != job:
                    self.problems.append(f"job {job} released GPU {node}:{g} it did not hold")
                self.owner[node, g] = -1

    def tick(self, now: float) -> None:
        pass

    def finish(self, end: float) -> None:
        if self.held or (self.owner != -1).any():
            self.problems.append("GPUs still held at the end")


@st.composite
def traces(draw: st.DrawFn) -> JobTable:
    n = draw(st.integers(1, 14))
    sizes = st.sampled_from([1, 1, 2, 3, 4, 6, 8, 12, 16, 32])
    gpus = draw(st.lists(sizes, min_size=n, max_size=n))
    gaps = draw(st.lists(st.integers(0, 400), min_size=n, max_size=n))
    runs = draw(st.lists(st.integers(30, 3000), min_size=n, max_size=n))
    models = draw(st.lists(st.sampled_from(MODELS), min_size=n, max_size=n))
    return JobTable.from_columns(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=np.cumsum(gaps).astype(float),
        num_gpus=gpus,
        duration=runs,
        model_name=models,
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=traces(),
    policy=st.sampled_from(POLICIES),
    ordering=st.sampled_from(["fifo", "tiresias"]),
    seed=st.integers(0, 3),
)
def test_every_job_gets_exactly_its_gpus_and_returns_exactly_them(
    jobs: JobTable, policy: str, ordering: str, seed: int
) -> None:
    params = {"thresholds": "300", "starvation": "2"} if ordering == "tiresias" else {}
    choice = PolicyChoice(ordering, placement=policy, params=params)
    net = small_network(jobs, seed)
    cluster = cluster_for(net.topology, small_cluster())
    ledger = Ledger(jobs.sorted_by_submit(), int(cluster.num_gpus.max()), cluster.size)
    record = observed_replay(cluster, jobs, choice, net, seed, ledger)
    assert ledger.problems == []
    assert (record.status == DONE).all()  # every job fits the 32-GPU cluster, so every job ends
    assert ledger.placements >= len(jobs)


TOPOLOGY = "leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=8,m=1,nic_gbps=100"
TRACE = (
    "job_id,submit_time,num_gpus,duration,model_name,collective\n"
    "a,0,6,300,vgg16,hd\n"
    "b,10,12,200,resnet50,hd\n"
    "c,20,3,100,bert,ring\n"
    "d,30,16,100,gpt2,hd\n"
    "e,40,1,50,,hd\n"
)


@pytest.mark.parametrize("policy", POLICIES)
def test_replay_runs_each_network_placement_end_to_end(tmp_path: Path, policy: str) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(TRACE)
    out = tmp_path / "out"
    args = ["replay", "--topology", TOPOLOGY, "--trace", str(trace), "--policy", "fifo"]
    assert main([*args, "--placement", policy, "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "jobs.csv").open()))
    assert [r["status"] for r in rows] == ["completed"] * 5
    assert {r["collective"] for r in rows} == {"hd", "ring"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["placement"] == policy
    assert summary["network"]["machines_used"] > 0


def test_network_placements_refuse_a_run_without_topology(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(TRACE)
    args = ["replay", "--cluster", "4x8", "--trace", str(trace), "--policy", "fifo"]
    assert main([*args, "--placement", "titan", "--out", str(tmp_path / "out")]) == 2
    assert "placement 'titan' needs the network under the cluster" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_sweep_accepts_the_network_placements(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(TRACE)
    out = tmp_path / "grid"
    args = ["sweep", "--cluster", "4x8", "--topology", TOPOLOGY, "--traces", str(trace)]
    args += ["--policies", "fifo", "--placements", *POLICIES, "--workers", "1", "--out", str(out)]
    assert main(args) == 0
    summaries = [json.loads(p.read_text()) for p in out.rglob("summary.json")]
    assert sorted(s["placement"] for s in summaries) == sorted(POLICIES)
