"""``pwr`` and ``pwr+fgd``: node scores and GPU choice by hand, in pack and in replay."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.cli import main
from schedlab.engines.pack import PackConfig, run_pack
from schedlab.metrics.fragmentation import TargetWorkload
from schedlab.model.cluster import GPU_MILLI
from schedlab.policies.api import PACK
from schedlab.policies.placement.base import PodRequest
from schedlab.policies.placement.pwr import normalise, sockets_power
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.testing.workloads import small_cluster, small_pods
from schedlab.traces.cluster_spec import parse_cluster_spec

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
pytestmark = pytest.mark.skipif(not (DATA / "power").is_dir(), reason="no ../shared/data")


def placer(policy: str, spec: str = "1x4:V100+1x4:T4"):  # type: ignore[no-untyped-def]
    cluster = parse_cluster_spec(spec)
    pods = small_pods(0)
    policies = build(PACK, PolicyChoice(policy))
    policies.start(cluster, np.random.default_rng(0), target=TargetWorkload.from_pods(pods))
    return cluster, policies.placer


def test_normalise_by_hand() -> None:
    feasible = np.array([True, True, False, True])
    assert normalise(np.array([-270, -60, -999, -165]), feasible).tolist() == [0, 100, 0, 50]
    assert normalise(np.array([-5, -5, 0, -5]), feasible).tolist() == [100, 100, 0, 100]


def test_socket_power_vectorised_matches_the_hand_rule() -> None:
    # 32 vCPU (16 cores, one 16-core socket): 4 vCPU busy → 2 working cores → the socket is on
    watts = sockets_power(
        np.array([32_000, 32_000, 96_000]),
        np.array([28_000, 32_000, 40_000]),
        np.array([20.0, 20.0, 20.0]),
        np.array([185.0, 185.0, 185.0]),
        np.array([16, 16, 16]),
    )
    assert watts.tolist() == [185.0, 20.0, 2 * 185 + 20]


def test_a_whole_gpu_pod_goes_where_it_adds_least_power() -> None:
    cluster, p = placer("pwr")
    state = cluster.new_state()
    # V100 adds 300 − 30 = 270 W, T4 70 − 10 = 60 W: the T4 node scores 100, the V100 node 0
    pod = PodRequest(0, 0, 1, GPU_MILLI)
    scores = p.policy.score(pod, state, np.array([True, True]))
    assert scores.tolist() == [0, 100]
    assert p.place(pod, state).node == 1
    # with CPU: 4 vCPU wake the V100 node's idle socket (+165 W) and a T4 node's (+145 W)
    cpu_pod = PodRequest(4000, 0, 1, GPU_MILLI)
    raw = p.policy.raw_scores(cpu_pod, state, np.array([0, 1]))
    assert raw.tolist() == [-(270 + 165), -(60 + 145)]


def test_a_sharing_pod_takes_a_gpu_that_is_already_powered() -> None:
    cluster, p = placer("pwr", "1x4:V100")
    state = cluster.new_state()
    state.allocate(0, [2], 0, 0, 500, 1)  # GPU 2 half used
    pod = PodRequest(0, 0, 1, 300)
    placed = p.place(pod, state)
    assert placed.gpus == (2,)
    assert p.policy.raw_scores(pod, state, np.array([0])).tolist() == [0]
    # a share that does not fit there goes to the first free GPU and pays its 270 W
    big = PodRequest(0, 0, 1, 600)
    assert p.place(big, state).gpus == (0,)


def test_pwr_fgd_mixes_the_two_scores() -> None:
    cluster, p = placer("pwr+fgd")
    state = cluster.new_state()
    pod = PodRequest(0, 0, 1, GPU_MILLI)
    feasible = np.array([True, True])
    mixed = p.policy.score(pod, state, feasible)
    fgd = p.policy.fgd.score(pod, state, feasible)
    assert mixed.tolist() == pytest.approx((0.5 * fgd + 0.5 * np.array([0, 100])).tolist())


@pytest.mark.parametrize("policy", ["pwr", "pwr+fgd"])
def test_pack_run_never_over_allocates(policy: str) -> None:
    result = run_pack(small_cluster(), small_pods(1), PackConfig(policy, 1, 1.2))
    assert len(result.node) == len(result.pods)
    assert (result.node >= 0).any()


@pytest.mark.parametrize("placement", ["pwr", "pwr+fgd"])
def test_replay_with_power_aware_placement(placement: str, tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,100\nb,0,2,50\n")
    argv = ["replay", "--cluster", "1x4:V100+1x4:T4", "--trace", str(trace), "--policy", "fifo"]
    out = tmp_path / "o"
    assert main([*argv, "--placement", placement, "--out", str(out), "--ci", "const:1"]) == 0
    # both jobs fit on the T4 node, which adds the least power
    power = [float(line.split(",")[6]) for line in (out / "timeseries.csv").read_text().split()[1:]]
    assert power[0] == pytest.approx(3 * 70 + 10 + 4 * 30 + 20 + 20)
