"""The shared pieces of the policy contract: the never-fits check, the tie order, and the
wiring point every engine starts its policies with."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.model.gpu_models import ANY_MODEL_MASK, model_index
from schedlab.model.jobs import JobTable
from schedlab.policies.api import PACK, REPLAY, never_fits, tie_order
from schedlab.policies.wiring import PolicyChoice, build
from schedlab.traces.cluster_spec import parse_cluster_spec

V100, T4, A100 = (1 << model_index(m) for m in ("V100", "T4", "A100"))
CLUSTER = parse_cluster_spec("2x8:V100+1x4:T4")  # 20 GPUs: 16 V100 in two nodes, 4 T4
NO_JOBS = JobTable.from_columns(job_id=[], submit_time=[], num_gpus=[], duration=[])


def test_never_fits_gives_the_reason() -> None:
    assert never_fits(CLUSTER, 20) is None
    assert never_fits(CLUSTER, 21) == "needs 21 GPUs; the cluster has 20"
    assert never_fits(CLUSTER, 5, T4) == "needs 5 GPUs; the cluster has 4 of the allowed models"
    assert never_fits(CLUSTER, 16, V100) is None
    assert never_fits(CLUSTER, 1, A100) == (
        "asks for a GPU model the cluster does not have (it has: T4, V100)"
    )
    assert never_fits(CLUSTER, 9, per_node=9) == (
        "asks for 9 GPUs per node; the largest node has 8"
    )
    assert never_fits(CLUSTER, 24, per_node=8, nodes=3) == "asks for 3 nodes with 8 GPUs each"
    assert never_fits(CLUSTER, 8, per_node=4, nodes=3) is None  # two V100 nodes and the T4 one
    assert never_fits(CLUSTER, 0) is None  # a CPU-only job fits anywhere


@settings(max_examples=60, deadline=None)
@given(
    spec=st.lists(
        st.tuples(
            st.integers(1, 3), st.sampled_from([1, 2, 4, 8]), st.sampled_from(["V100", "T4"])
        ),
        min_size=1,
        max_size=3,
    ),
    gpus=st.integers(1, 40),
    mask=st.sampled_from([ANY_MODEL_MASK, V100, T4, A100, V100 | T4]),
)
def test_never_fits_agrees_with_gang_placement_on_an_empty_cluster(spec, gpus, mask) -> None:
    """None exactly when the gang placer finds room for the job on the empty cluster."""
    cluster = parse_cluster_spec("+".join(f"{n}x{g}:{m}" for n, g, m in spec))
    policies = build(REPLAY, PolicyChoice("fifo"))
    ctx = policies.start(cluster, np.random.default_rng(0), jobs=NO_JOBS)
    assert ctx.placer is not None
    placed = ctx.placer.place(gpus, 0, 0, mask, cluster.new_state())
    assert (never_fits(cluster, gpus, mask) is None) == (placed is not None)


def test_tie_order_does_not_depend_on_the_row_order_of_the_node_file() -> None:
    cluster = parse_cluster_spec("3x8:V100+2x4:T4")
    backwards = parse_cluster_spec("2x4:T4+3x8:V100")
    rank = dict(
        zip(cluster.names.tolist(), tie_order(cluster, np.random.default_rng(7)), strict=True)
    )
    again = dict(
        zip(backwards.names.tolist(), tie_order(backwards, np.random.default_rng(7)), strict=True)
    )
    assert rank == again
    assert sorted(rank.values()) == list(range(5))


def test_every_engine_starts_policies_with_the_same_draws() -> None:
    """Pack and replay (and serve, which starts as replay does) draw the tie order first from
    the run's generator, then reset the placement and the scheduler on one context."""
    cluster = parse_cluster_spec("4x8:V100")
    pack = build(PACK, PolicyChoice("fgd"))
    replay = build(REPLAY, PolicyChoice("fifo", "fgd"))
    a = pack.start(cluster, np.random.default_rng(3))
    b = replay.start(cluster, np.random.default_rng(3), jobs=NO_JOBS)
    assert np.array_equal(a.tie_rank, b.tie_rank)
    assert (a.engine, b.engine) == ("pack", "replay")
    assert b.placer is not None and replay.placer is b.placer.placer
    assert replay.scheduler is not None and replay.scheduler.ctx is b  # type: ignore[attr-defined]


def test_a_job_larger_than_every_node_of_its_model_spans_nodes() -> None:
    """Two V100s asked on one 2×T4 node and two 1×V100 nodes: no V100 node holds both, so the
    job takes one GPU on each V100 node (a T4 node large enough must not keep it single-node)."""
    cluster = parse_cluster_spec("1x2:T4+2x1:V100")
    policies = build(REPLAY, PolicyChoice("fifo"))
    ctx = policies.start(cluster, np.random.default_rng(0), jobs=NO_JOBS)
    assert ctx.placer is not None
    placed = ctx.placer.place(2, 0, 0, V100, cluster.new_state())
    assert placed is not None and sorted(node for node, _ in placed) == [1, 2]
    assert never_fits(cluster, 2, V100) is None
