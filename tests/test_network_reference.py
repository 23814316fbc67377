"""Trace run times under a network: a job alone on the compact placement takes exactly its trace
duration; placement and contention only add (or remove) from there."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netcases import two_by_two
from schedlab.engines.replay import ReplayEngine
from schedlab.experiments.replay_network import network_model, topology_cluster
from schedlab.experiments.replay_run import ReplaySpec, run_replay
from schedlab.model.snapshot import Allocation, Start
from schedlab.network.collectives import CommSpec
from schedlab.network.footprint import footprint
from schedlab.network.generators import parse_topology
from schedlab.network.reference import ReferenceTimes, compact_placement, reference_fabric
from schedlab.network.routing import Routing
from schedlab.network.sharing import DEFAULT_ALPHA, iteration_time
from schedlab.perf.models import TraceDuration
from schedlab.policies.registry import make_placement
from schedlab.traces.formats import read_jobs
from test_replay_engine import Scripted

HEADER = "job_id,submit_time,num_gpus,duration,collective,gradient_bytes,compute_time,overlap\n"


def _replay(rows: str, topology: str, placement: str = "bestfit", **options: str):
    folder = Path(tempfile.mkdtemp(prefix="schedlab-ref-"))
    trace = folder / "jobs.csv"
    trace.write_text(HEADER + rows)
    spec = ReplaySpec(
        cluster="",
        trace=str(trace),
        policy="fifo",
        placement=placement,
        topology=topology,
        **options,  # type: ignore[arg-type]
    )
    return run_replay(spec)


def test_compact_placement_fills_the_lowest_hosts_one_after_the_other() -> None:
    topo = two_by_two(g=4)
    assert compact_placement(topo, 3) == ((0, (0, 1, 2)),)
    assert compact_placement(topo, 10) == ((0, (0, 1, 2, 3)), (1, (0, 1, 2, 3)), (2, (0, 1)))
    with pytest.raises(ValueError):
        compact_placement(topo, 17)


def test_reference_time_by_hand() -> None:
    """A 16-GPU ring on the 2 × 2 fabric (4 GPUs a host, one 100 Gbps NIC): 750 MB per NIC
    each way at 12.5 GB/s = 60 ms, 30 steps of α; C = 50 ms with o = 0.2 hides 10 ms."""
    topo = two_by_two(g=4)
    spec = CommSpec("ring", 400e6, compute=0.05, overlap=0.2)
    want = 0.05 + (0.060 + 30 * DEFAULT_ALPHA - 0.2 * 0.05)
    assert ReferenceTimes(topo).iteration_time(spec, 16) == pytest.approx(want)


@settings(max_examples=12, deadline=None)
@given(
    gpus=st.sampled_from([1, 2, 4, 6, 8, 12, 16]),
    collective=st.sampled_from(["ring", "hd", "a2a", "ps"]),
    megabytes=st.floats(1.0, 2000.0),
    compute=st.floats(0.01, 1.0),
    overlap=st.floats(0.0, 0.9),
    duration=st.integers(10, 100_000),
)
def test_alone_on_the_compact_placement_a_job_takes_its_trace_duration(
    gpus: int, collective: str, megabytes: float, compute: float, overlap: float, duration: int
) -> None:
    """bestfit on an empty fabric gives the compact placement (lowest hosts, filled in turn);
    with spray routing the job runs exactly its trace duration, whatever it sends."""
    row = f"j,0,{gpus},{duration},{collective},{megabytes * 1e6},{compute},{overlap}\n"
    topology = "leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=4,m=1,nic_gbps=100"
    record = run = _replay(row, topology, net_routing="spray")
    assert run.end_time[0] == pytest.approx(duration, rel=1e-9)
    assert record.network is not None
    assert record.network.net_slowdown[0] == pytest.approx(1.0)


def test_whole_machine_packing_keeps_the_traces_gpu_hours() -> None:
    """8-GPU jobs one to a machine on the titan fabric: every job runs its trace duration, so
    the replayed GPU-hours are the trace's (not the trace's plus its communication again)."""
    rows = "".join(f"j{i},{i},8,{600 + 100 * i},hd,553.6e6,0.2,0.3\n" for i in range(6))
    record = _replay(rows, "titan")
    want = np.array([600 + 100 * i for i in range(6)], dtype=float)
    np.testing.assert_allclose(record.end_time - record.jobs.submit_time, want, rtol=1e-9)


def test_a_scattered_placement_only_adds() -> None:
    """A 2-GPU ring started on hosts 0 and 2 (different leaves) instead of its compact placement
    inside host 0 runs 100 s × T/T_ref, T from that footprint; on one host it takes 100 s."""
    topo = two_by_two(g=4)
    spec = CommSpec("ring", 400e6, compute=0.05)
    ref = ReferenceTimes(topo).iteration_time(spec, 2)
    far = ((0, (0,)), (2, (0,)))
    fp = footprint(spec, far, topo, Routing("spray"))
    t_far = iteration_time(spec, fp.comm_time(DEFAULT_ALPHA))
    assert t_far > ref
    for allocation, want in ((far, 100 * t_far / ref), (((0, (0, 1)),), 100.0)):
        record = _scripted("j,0,2,100,ring,400e6,0.05,0\n", allocation)
        assert record.end_time[0] == pytest.approx(want, rel=1e-9)


def _scripted(rows: str, allocation: Allocation):
    """One job started at 0 on ``allocation`` of the 2 × 2 fabric, spray routing."""
    folder = Path(tempfile.mkdtemp(prefix="schedlab-ref-"))
    trace = folder / "jobs.csv"
    trace.write_text(HEADER + rows)
    jobs = read_jobs(trace).jobs
    topo, cluster = topology_cluster(
        "leafspine:leaves=2,spines=2,hosts_per_leaf=2,g=4,m=1,nic_gbps=100", None
    )
    perf = TraceDuration()
    net = network_model(
        topo,
        jobs,
        perf,
        rule="random-phase",
        routing="spray",
        seed=0,
        trace=str(trace),
        fmt=None,
        builtin=False,
    )
    policy = Scripted({0.0: [Start(0, allocation)]})
    return ReplayEngine(cluster, jobs, policy, make_placement("bestfit"), perf, network=net).run()


def test_on_an_optical_switch_the_reference_is_the_non_blocking_leaf_spine() -> None:
    """An OCS has no fabric until circuits are set; the reference wires every leaf's uplink port
    p to spine p mod spines, so any two leaves are two hops apart over all their ports."""
    topo = parse_topology("ocs:leaves=4,spines=2,hosts_per_leaf=2,g=4,m=4,nic_gbps=100")
    assert not topo.reachable(0, 1)
    ref = reference_fabric(topo)
    assert ref.hop_distance[np.ix_(ref.leaves, ref.leaves)].max() == 2
    assert len(ref.fabric_src) == 2 * 4 * 8  # 4 leaves × 8 ports, both directions
    plain = two_by_two(g=4)
    assert reference_fabric(plain) is plain


def test_ocs_vclos_job_over_a_leaf_pair_alone_takes_its_trace_duration() -> None:
    """A 16-GPU job on 8-GPU leaves gets a leaf pair joined by its own circuits (as many as
    each leaf's ports): alone it runs its trace duration, the OCS delay added. With fewer ports
    a leaf than spines, the wiring replay starts from leaves L0 and L1 unconnected: the
    reference is not that wiring."""
    topology = "ocs:leaves=4,spines=16,hosts_per_leaf=2,g=4,m=4,nic_gbps=100"
    record = _replay(
        "j,0,16,1000,hd,400e6,0.05,0\n", topology, placement="ocs-vclos", net_routing="spray"
    )
    delay = parse_topology(topology).ocs.delay
    assert record.end_time[0] == pytest.approx(1000 + delay, rel=1e-9)
