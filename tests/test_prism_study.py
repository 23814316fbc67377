"""The Prism study: merge rule, node shapes (servers and the trace's demand mix), fragmentation
measure, nodes-needed search, and the quick study end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.experiments.prism_cluster import (
    CPU_NODE,
    GPU_NODE,
    NodeShape,
    monolithic_shape,
    nodes_for,
    pool_cluster,
    trace_shapes,
)
from schedlab.experiments.prism_study import (
    PrismTask,
    StudyConfig,
    comparison,
    nodes_needed,
    place_pool,
    run_prism_task,
    run_study,
)
from schedlab.experiments.prism_workload import PoolWorkload, merged_pool, role_pool
from schedlab.metrics.serving_fragmentation import ServingShapes, serving_fragmentation
from schedlab.model.instances import ROLE_CN, ROLE_HN
from schedlab.model.pods import PodTable
from schedlab.traces.alibaba_2025 import read_alibaba_2025
from test_alibaba_2025 import HEADER, PRISM, PRISM_MISSING

# app_a: 2 HN + 3 CN; app_b: 1 CN only; app_c: 1 HN only. All running from 0 to the end.
SMALL = [
    "h0,HN,app_a,8,8,1,1,25,25,40.0,40.0,85.0,100.0,4,,,",
    "h1,HN,app_a,12,12,1,1,50,50,40.0,40.0,85.0,100.0,4,,,",
    "c0,CN,app_a,64,64,0,0,100,100,320.0,320.0,255.0,300.0,2,,,",
    "c1,CN,app_a,64,64,0,0,1,1,320.0,320.0,255.0,300.0,2,,,",
    "c2,CN,app_a,65,65,0,0,1,1,321.0,321.0,255.0,300.0,2,,,",
    "c3,CN,app_b,48,48,0,0,1,1,200.0,200.0,255.0,300.0,-1,10.0,12.0,",
    "h2,HN,app_c,2,2,1,1,10,10,16.0,16.0,85.0,100.0,-1,,,50.0",
]


def small_csv(tmp_path: Path) -> Path:
    path = tmp_path / "small.csv"
    path.write_text("\n".join([HEADER, *SMALL]) + "\n")
    return path


def test_merge_rule_by_hand(tmp_path):
    x = read_alibaba_2025(small_csv(tmp_path))
    merged = merged_pool(x)
    p = merged.pods
    # Placement order: by start time (h0, h1, c0.. at 0; c3 at 12), row order among ties.
    assert p.name.tolist() == ["h0", "h1", "h2", "c3"]
    # app_a's CN demand (193 vCPU, 961 GiB) split over its two HN instances, rounded up.
    assert p.cpu_milli.tolist() == [8000 + 96500, 12000 + 96500, 2000, 48000]
    assert p.memory_mib.tolist() == [
        40 * 1024 + 492_032,
        40 * 1024 + 492_032,
        16 * 1024,
        200 * 1024,
    ]
    assert p.num_gpu.tolist() == [1, 1, 1, 0]
    assert merged.rdma.tolist() == [25, 50, 10, 1]  # the HN share only; c3 stays as it is
    assert merged.max_per_node.tolist() == [4, 4, -1, -1]
    # No demand is lost: CPU and memory totals are those of all instances (up to rounding).
    assert p.cpu_milli.sum() == x.cpu_milli.sum()
    assert 0 <= p.memory_mib.sum() - x.memory_mib.sum() < 2
    cn, hn = role_pool(x, ROLE_CN), role_pool(x, ROLE_HN)
    assert cn.pods.name.tolist() == ["c0", "c1", "c2", "c3"] and hn.pods.num_gpu.sum() == 3


def test_node_counts_and_monolithic_shape():
    demand = {"cpu_milli": 512_000.0, "memory_mib": 1024.0, "gpus": 0.0, "rdma": 300.0}
    assert nodes_for(demand, CPU_NODE) == 2  # CPU: 2 nodes; RDMA: 1.5 nodes
    assert nodes_for(demand, CPU_NODE, load=0.9) == 3
    assert nodes_for({"gpus": 17.0}, GPU_NODE) == 3
    mono = monolithic_shape(7, 3)
    assert mono.gpus == 8
    assert mono.cpu_milli == (7 * 256_000 + 3 * 128_000) // 3
    assert mono.rdma == (7 * 200 + 3 * 400) // 3


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 800))
def test_monolithic_cluster_has_the_same_capacity(cpu_nodes, gpu_nodes):
    mono = monolithic_shape(cpu_nodes, gpu_nodes)
    for attr in ("cpu_milli", "memory_mib", "rdma"):
        total = cpu_nodes * getattr(CPU_NODE, attr) + gpu_nodes * getattr(GPU_NODE, attr)
        assert 0 <= total - gpu_nodes * getattr(mono, attr) < gpu_nodes  # rounded down per node
    assert mono.gpus * gpu_nodes == GPU_NODE.gpus * gpu_nodes


def test_serving_fragmentation_by_hand():
    shape_big = NodeShape("a", 16_000, 1 << 20, 2, 100)
    cluster = pool_cluster(shape_big, 2)
    cluster.cpu_milli[1] = 4_000  # a smaller second node (capacity and free CPU)
    state = cluster.new_state()
    # Typical instances: A (8 vCPU, 1 GPU, 50 % NIC) ×3, B (2 vCPU, CPU only) ×1.
    shapes = ServingShapes.of(
        np.array([8000, 8000, 8000, 2000]),
        np.zeros(4, dtype=np.int64),
        np.array([1, 1, 1, 0]),
        np.array([50, 50, 50, 0]),
    )
    f = serving_fragmentation(state, shapes)
    # Node 0: both fit, its 2 idle GPUs are fragmented for B only: 0.5. Node 1: A does not fit
    # (CPU): 4000 × 0.75 CPU and both GPUs fragmented.
    assert f.cpu_frag_milli == pytest.approx(3000.0) and f.gpu_frag == pytest.approx(2.5)
    assert f.cpu_frag_pct == pytest.approx(15.0) and f.gpu_frag_pct == pytest.approx(62.5)
    state.allocate(0, [], 0, 0, 0, 0, rdma=60)  # now A lacks NIC share on node 0 too
    f = serving_fragmentation(state, shapes)
    assert f.cpu_frag_pct == pytest.approx(75.0) and f.gpu_frag_pct == pytest.approx(100.0)


def test_serving_fragmentation_counts_memory():
    """One node of 16 vCPU, 32 GiB and 2 GPUs; typical instances A (8 vCPU, 64 GiB, 1 GPU) and
    B (2 vCPU, no memory): A never fits (memory), so half of the idle CPU and both GPUs are
    fragmented; a node with the memory for A strands neither."""
    shapes = ServingShapes.of(
        np.array([8000, 2000]), np.array([64 << 10, 0]), np.array([1, 0]), np.array([0, 0])
    )
    small = serving_fragmentation(
        pool_cluster(NodeShape("m", 16_000, 32 << 10, 2, 100), 1).new_state(), shapes
    )
    assert small.cpu_frag_pct == pytest.approx(50.0) and small.gpu_frag_pct == pytest.approx(100.0)
    large = serving_fragmentation(
        pool_cluster(NodeShape("m", 16_000, 64 << 10, 2, 100), 1).new_state(), shapes
    )
    assert large.cpu_frag_pct == pytest.approx(0.0) and large.gpu_frag_pct == pytest.approx(50.0)


def _cpu_pods(cpus: list[int], app: int = -1, limit: int = -1) -> PoolWorkload:
    n = len(cpus)
    pods = PodTable.from_columns(
        name=[f"p{k}" for k in range(n)],
        cpu_milli=cpus,
        memory_mib=[0] * n,
        num_gpu=[0] * n,
        gpu_milli=[0] * n,
    )
    return PoolWorkload(
        pods, np.zeros(n, dtype=np.int64), np.full(n, app), np.full(n, limit, dtype=np.int64)
    )


def test_nodes_needed_by_hand():
    shape = NodeShape("n", 256_000, 1 << 20, 0, 200)
    pods = _cpu_pods([150_000, 150_000, 100_000, 100_000])
    assert nodes_needed(shape, pods, "bestfit", 0) == 2  # 150+100 twice
    assert nodes_needed(shape, _cpu_pods([150_000] * 4, app=0, limit=1), "bestfit", 0) == 4
    assert nodes_needed(shape, _cpu_pods([300_000]), "bestfit", 0) is None  # fits no node


@settings(max_examples=20, deadline=None)
@given(st.lists(st.sampled_from([24, 48, 64, 96, 192]), min_size=1, max_size=25))
def test_nodes_needed_is_the_smallest_size_that_holds_everything(cpus):
    shape = NodeShape("n", 256_000, 1 << 20, 0, 200)
    pods = _cpu_pods([c * 1000 for c in cpus])
    n = nodes_needed(shape, pods, "bestfit", 1)
    assert n is not None and n >= -(-sum(cpus) // 256)
    assert place_pool(shape, n, pods, "bestfit", 1).failed == 0
    if n > 1:
        assert place_pool(shape, n - 1, pods, "bestfit", 1).failed > 0


def _small_study(tmp_path: Path, shapes: str) -> tuple[list[dict], dict]:
    config = StudyConfig(seeds=(42,), app_stride=8, shapes=shapes)
    table, setup = run_study(read_alibaba_2025(small_csv(tmp_path)), config)
    return table.to_dict("records"), setup


def test_quick_study_on_a_small_file(tmp_path):
    rows, setup = _small_study(tmp_path, "servers")
    assert len(rows) == 6  # 3 policies × 2 architectures, one load, one seed
    assert {r["architecture"] for r in rows} == {"disaggregated", "monolithic"}
    expected = {"disaggregated": 5, "monolithic": 2}  # app_a only (one app in eight)
    for r in rows:
        assert r["placed"] + r["failed"] == expected[r["architecture"]]
        assert r["shapes"] == "servers"
    assert setup["instances"] == 5 and setup["merged_instances"] == 2


def test_trace_shapes_carry_each_pools_demand_mix(tmp_path):
    """All apps of the small file. GPU pool (h0, h1, h2): 22 vCPU, 96 GiB, 85 % of a NIC over
    3 GPUs → per 8 GPUs 58.7 → 59 vCPU, 256 GiB, 2.27 → 3 NICs. CPU pool (c0–c3): 241 vCPU,
    1,161 GiB, 103 % → per 256 vCPU 1,233.3 → 1,234 GiB and 1.09 → 2 NICs."""
    running = read_alibaba_2025(small_csv(tmp_path))
    cpu_node, gpu_node = trace_shapes(role_pool(running, ROLE_CN), role_pool(running, ROLE_HN))
    assert (gpu_node.cpu_milli, gpu_node.memory_mib, gpu_node.gpus, gpu_node.rdma) == (
        59_000,
        256 * 1024,
        8,
        300,
    )
    assert (cpu_node.cpu_milli, cpu_node.memory_mib, cpu_node.gpus, cpu_node.rdma) == (
        256_000,
        1234 * 1024,
        0,
        200,
    )
    rows, setup = _small_study(tmp_path, "trace")
    assert {r["shapes"] for r in rows} == {"trace"}
    assert "gpu-node (trace)" in setup["clusters"]["0.9"]["node_shapes"][1]


@pytest.mark.shared
@pytest.mark.skipif(not PRISM.is_file(), reason=PRISM_MISSING)
@pytest.mark.parametrize("shapes", ["servers", "trace"])
def test_quick_on_the_real_trace(shapes: str):
    rows, setup = run_prism_task(PrismTask(str(PRISM), shapes, 0.9, quick=True))
    assert setup["instances"] == 2_205  # apps 0, 8, 16, ... at their peak
    compare = comparison(pd.DataFrame(rows))
    assert set(compare["policy"]) == {"fgd", "bestfit", "random"}
    assert (compare["cpu_frag_mono_pct"] > 0).all() and (compare["gpus_needed_disagg"] > 0).all()
