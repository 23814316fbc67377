"""Plans attached to starts: the scheduler puts a network placement's reserved links on the
Start, later placements of the same decision round see them, the engine holds them while the job
runs and refuses a plan that takes links another job holds, and policies that cannot carry plans
are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from netplace import busy
from schedlab.cli import main
from schedlab.engines.replay import PolicyError, ReplayConfig, ReplayEngine
from schedlab.errors import InputError
from schedlab.experiments.replay_network import network_model, topology_cluster
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import PENDING, JobRuntime, Snapshot, Start
from schedlab.network.plan import NetLedger, NetPlan
from schedlab.perf.models import TraceDuration
from schedlab.policies.api import REPLAY
from schedlab.policies.registry import make_scheduler
from schedlab.policies.scheduler import SchedulingPolicy
from schedlab.policies.wiring import PolicyChoice, build

TOPO = "leafspine:leaves=3,spines=2,hosts_per_leaf=1,g=4,m=1,nic_gbps=100"


def _jobs(sizes: list[int]) -> JobTable:
    n = len(sizes)
    return JobTable.from_columns(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=[0.0] * n,
        num_gpus=sizes,
        duration=[100.0] * n,
    )


def test_two_starts_of_one_round_get_disjoint_reservations() -> None:
    """Every leaf has 2 free GPUs: a 3-GPU job needs one GPU on each of the three leaves and one
    spine free to all of them. The first takes spine 0; the second, planned in the same round on
    the scheduler's scratch copy, must see that and take spine 1."""
    topo, cluster = topology_cluster(TOPO, None)
    jobs = _jobs([3, 3])
    policies = build(REPLAY, PolicyChoice("fifo", placement="vclos"))
    policies.start(cluster, np.random.default_rng(0), jobs=jobs, topology=topo)
    state = cluster.new_state()
    state.net = NetLedger()
    for node in range(3):
        busy(state, node, 2)
    runtime = JobRuntime.new(2, np.array([100.0, 100.0]))
    runtime.status[:] = PENDING
    snap = Snapshot(
        now=0.0,
        jobs=jobs,
        cluster=cluster,
        state=state,
        runtime=runtime,
        work=np.array([100.0, 100.0]),
        reference_rate=np.ones(2),
        pending_set={0: None, 1: None},
        running_set={},
        new_pending=[0, 1],
        free_gpus=6,
    )
    assert policies.scheduler is not None
    first, second = policies.scheduler.decide(snap)
    assert isinstance(first, Start) and isinstance(second, Start)
    assert first.net is not None and second.net is not None
    assert len(first.net.links) == len(second.net.links) == 6  # 3 leaves × 1 spine × 2 ways
    assert not first.net.links & second.net.links
    assert state.net.link_owner == {}  # the live state is left alone


def _engine(policy: SchedulingPolicy, placement, sizes: list[int]) -> ReplayEngine:
    topo, cluster = topology_cluster(TOPO, None)
    jobs = _jobs(sizes)
    net = network_model(
        topo, jobs, TraceDuration(), rule="worst-case", routing="ecmp", seed=0, trace=None,
        fmt=None, builtin=False,
    )  # fmt: skip
    return ReplayEngine(cluster, jobs, policy, placement, TraceDuration(), ReplayConfig(), net)


class _Clash(SchedulingPolicy):
    """Starts two jobs at once claiming the same link."""

    name = "test-clash"
    summary = "test policy"

    def reset(self, ctx) -> None:  # type: ignore[no-untyped-def]
        self.ctx = ctx

    def decide(self, snap: Snapshot) -> list:
        if not snap.pending_set:
            return []
        link = self.ctx.topology.fabric_base
        plan = NetPlan(links=frozenset({link}))
        return [Start(0, ((0, (0,)),), plan), Start(1, ((1, (0,)),), plan)]


def test_the_engine_refuses_a_link_another_job_holds() -> None:
    _, placement = make_scheduler("fifo", "vclos")
    engine = _engine(_Clash(), placement, [1, 1])
    with pytest.raises(PolicyError, match=r"link \d+ is reserved by job 0"):
        engine.run()


def test_a_reserving_job_runs_isolated_and_gives_its_links_back() -> None:
    """Two 3-GPU jobs on one GPU per leaf each: under worst-case sharing without reservations
    they would share links; with vclos each runs alone on its spine, both finish at 100 s."""
    scheduler, placement = make_scheduler("fifo", "vclos")
    engine = _engine(scheduler, placement, [1, 1, 1, 3, 3])
    record = engine.run()
    assert (record.status == 3).all()
    assert record.network is not None
    assert np.allclose(record.network.net_slowdown[3:], 1.0)


def test_policies_that_cannot_carry_plans_are_refused() -> None:
    with pytest.raises(InputError, match="reserves links or circuits with each start"):
        make_scheduler("elasticflow", "vclos")


def test_replay_cli_runs_vclos_with_orderings_backfill_and_preemption(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    rows = ["job_id,submit_time,num_gpus,duration"]
    sizes = [3, 2, 4, 8, 1, 3, 6, 2, 12, 1, 3, 4]
    rows += [f"j{i},{i * 20},{g},{300 + 37 * i}" for i, g in enumerate(sizes)]
    trace.write_text("\n".join(rows) + "\n")
    for i, extra in enumerate(
        (
            ["--policy", "fifo"],
            ["--policy", "fifo", "--backfill"],
            ["--policy", "tiresias", "--param", "thresholds=100"],
            ["--policy", "sjf", "--param", "solver=greedy"],
        )
    ):
        out = tmp_path / f"out{i}"
        args = ["replay", "--trace", str(trace), "--topology", TOPO, "--placement", "vclos"]
        assert main([*args, *extra, "--out", str(out)]) == 0
        lines = (out / "jobs.csv").read_text().splitlines()
        assert len(lines) == len(sizes) + 1
        assert all(",completed," in line for line in lines[1:])


def test_sweep_runs_network_placements_with_their_own_parameters(tmp_path: Path) -> None:
    """``--param solver=…`` reaches vclos only: locality runs once, vclos once per solver."""
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,8,100\nb,10,4,100\nc,20,6,50\n")
    out = tmp_path / "grid"
    args = ["sweep", "--cluster", "3x4:V100", "--traces", str(trace), "--policies", "fifo"]
    args += [
        "--placements",
        "locality",
        "vclos",
        "--topology",
        TOPO.replace("g=4", "g=4,model=V100"),
    ]
    args += ["--param", "solver=milp", "--param", "solver=greedy", "--out", str(out)]
    assert main([*args, "--workers", "1"]) == 0
    rows = (out / "results.csv").read_text().splitlines()
    header = rows[0].split(",")
    cells = {
        (r.split(",")[header.index("placement")], r.split(",")[header.index("variant")])
        for r in rows[1:]
    }
    assert cells == {("locality", ""), ("vclos", "solver=milp"), ("vclos", "solver=greedy")}
