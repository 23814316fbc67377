"""Job geometry (-N, --gpus-per-node, --ntasks-per-node, --exclusive) in the job model: gang
placement always honours it, the generic trace reads it, and serve proposes only starts Slurm
can carry out (hand-computed cases and a hypothesis property)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.errors import InputError
from schedlab.model.cluster import GPU_MILLI, Cluster
from schedlab.model.gpu_models import ANY_MODEL_MASK
from schedlab.policies.placement.base import Placer, RunContext
from schedlab.policies.placement.gang import GangPlacer
from schedlab.policies.registry import make_placement
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal, read_journal
from schedlab.serve.loop import ServeConfig, Server
from schedlab.serve.slurm_state import parse_job
from schedlab.traces.formats import read_jobs

T0 = 1_000_000.0


def cluster(n: int, gpus: int = 8) -> Cluster:
    return Cluster(
        names=np.asarray([f"node{i + 1}" for i in range(n)], dtype=object),
        cpu_milli=np.full(n, 64_000, dtype=np.int64),
        memory_mib=np.full(n, 512_000, dtype=np.int64),
        num_gpus=np.full(n, gpus, dtype=np.int64),
        model=np.zeros(n, dtype=np.int64),
        source="test",
    )


def gang(c: Cluster) -> GangPlacer:
    ctx = RunContext(c, None, np.random.default_rng(0))  # type: ignore[arg-type]
    return GangPlacer(Placer(make_placement("bestfit"), ctx, np.arange(c.size)))


def with_used(c: Cluster, used: list[int]):
    state = c.new_state()
    for node, k in enumerate(used):
        row = np.full(state.gpu_free.shape[1], GPU_MILLI, dtype=np.int64)
        row[:k] = 0
        state.set_gpu_free(node, row)
    return state


def test_two_nodes_of_eight_never_become_a_split_over_three() -> None:
    """Free GPUs [6, 2, 8, 8]: 16 GPUs as -N2 × 8 go to node3 and node4, whole; without the
    geometry the gang placer may split them (the proposals serve used to skip)."""
    c = cluster(4)
    state = with_used(c, [2, 6, 0, 0])
    alloc = gang(c).place(16, 0, 0, ANY_MODEL_MASK, state, per_node=8, nodes=2)
    assert alloc is not None
    assert sorted(n for n, _ in alloc) == [2, 3] and all(len(g) == 8 for _, g in alloc)
    # Two nodes of 4 each: node2 (2 free) cannot hold 4, so two of the others, 4 GPUs each.
    alloc = gang(c).place(8, 0, 0, ANY_MODEL_MASK, state, per_node=4, nodes=2)
    assert alloc is not None and len({n for n, _ in alloc}) == 2
    assert all(len(g) == 4 for _, g in alloc) and 1 not in {n for n, _ in alloc}


def test_an_exclusive_job_takes_only_fully_free_nodes() -> None:
    c = cluster(3)
    state = with_used(c, [1, 0, 7])
    alloc = gang(c).place(2, 0, 0, ANY_MODEL_MASK, state, exclusive=True)
    assert alloc == ((1, (0, 1)),)
    assert gang(c).place(2, 0, 0, ANY_MODEL_MASK, with_used(c, [1, 1, 1]), exclusive=True) is None


@settings(max_examples=150, deadline=None)
@given(
    used=st.lists(st.integers(0, 8), min_size=1, max_size=6),
    per_node=st.integers(1, 8),
    nodes=st.integers(1, 4),
    exclusive=st.booleans(),
)
def test_shaped_placements_always_have_the_asked_geometry(
    used: list[int], per_node: int, nodes: int, exclusive: bool
) -> None:
    """Whatever the cluster's state: a placement is exactly ``nodes`` distinct nodes with
    ``per_node`` free GPUs each (fully free ones for an exclusive job), and there is one
    whenever enough such nodes exist."""
    c = cluster(len(used))
    state = with_used(c, used)
    alloc = gang(c).place(per_node * nodes, 0, 0, ANY_MODEL_MASK, state, per_node, nodes, exclusive)
    fits = [8 - u >= per_node and (u == 0 or not exclusive) for u in used]
    if sum(fits) < nodes:
        assert alloc is None
        return
    assert alloc is not None
    assert len(alloc) == nodes and len({n for n, _ in alloc}) == nodes
    for node, gpus in alloc:
        assert fits[node] and len(gpus) == per_node
        assert (state.gpu_free[node, list(gpus)] == GPU_MILLI).all()


def test_the_generic_trace_reads_geometry_and_checks_it(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "job_id,submit_time,num_gpus,duration,gpus_per_node,num_nodes,exclusive\n"
        "a,0,16,60,8,2,0\nb,1,4,60,,,1\nc,2,2,60,,,\n"
    )
    jobs = read_jobs(path).jobs
    assert jobs.gpus_per_node.tolist() == [8, 0, 0]
    assert jobs.num_nodes.tolist() == [2, 0, 0]
    assert jobs.exclusive.tolist() == [False, True, False]
    path.write_text("job_id,submit_time,num_gpus,duration,gpus_per_node,num_nodes\na,0,8,60,8,2\n")
    with pytest.raises(InputError, match=r"'gpus_per_node' × 'num_nodes' must equal") as err:
        read_jobs(path)
    assert "line 2" in str(err.value) or ":2" in str(err.value)


def test_slurm_geometry_is_read_from_squeue() -> None:
    """-N2 --ntasks-per-node=2 --gpus-per-task=2 asks 4 GPUs on each of 2 nodes;
    --exclusive shows as shared=none."""
    raw = {
        **fake_job(1, 0, T0, node_count=2),
        "tres_per_task": "gres:gpu:2",
        "tasks_per_node": 2,
        "tasks": 4,
        "shared": "none",
    }
    job = parse_job(raw)
    assert (job.gpus_per_node, job.num_gpus, job.shaped, job.exclusive) == (4, 8, True, True)


def test_serve_starts_a_two_node_job_on_two_whole_nodes(tmp_path: Path) -> None:
    """Free GPUs [6, 2, 8, 8] and a -N2 --gres=gpu:8 job ahead of a 1-GPU job: it starts at
    once on node3 and node4 (no skip), and the small job goes to node2's 2 free GPUs."""
    running = [
        fake_job(1, 2, T0, state="RUNNING", held=False, nodes="node1", gpu_idx=["gpu:2(IDX:0-1)"]),
        fake_job(2, 6, T0, state="RUNNING", held=False, nodes="node2", gpu_idx=["gpu:6(IDX:0-5)"]),
    ]
    fake = FakeSlurm(
        [fake_node(f"node{i}") for i in range(1, 5)],
        [*running, fake_job(3, 8, T0 + 1, node_count=2), fake_job(4, 1, T0 + 2)],
    )
    Server(
        fake, ServeConfig(policy="fifo"), Journal(tmp_path / "j.jsonl"), clock=lambda: T0
    ).cycle()
    assert ["update", "JobId=3", "ReqNodeList=node3,node4"] in fake.calls
    assert ["update", "JobId=4", "ReqNodeList=node2"] in fake.calls
    assert not [r for r in read_journal(tmp_path / "j.jsonl") if r["action"] == "skip"]


def test_the_generic_trace_reads_checkpoint_with_resuming_as_the_default(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,num_gpus,duration,checkpoint\na,0,1,60,0\nb,1,1,60,\n")
    assert read_jobs(path).jobs.checkpoint.tolist() == [False, True]
    path.write_text("job_id,submit_time,num_gpus,duration\na,0,1,60\n")
    assert read_jobs(path).jobs.checkpoint.tolist() == [True]
