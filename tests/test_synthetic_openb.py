"""The synthetic openb-like generator: determinism, published proportions, feasibility, checks."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from schedlab.model.cluster import GPU_MILLI, Cluster
from schedlab.model.gpu_models import ANY_MODEL_MASK, GPU_MODELS, model_index
from schedlab.model.pods import PodTable
from schedlab.traces.synthetic_openb import (
    PUBLISHED_PARTIAL_MEAN_MILLI,
    PUBLISHED_PARTIAL_SIZES,
    NodeShape,
    OpenbLikeSpec,
    generate_cluster,
    generate_openb_like,
    generate_pods,
    partial_size_weights,
)

#: Published openb GPU-node mix: model -> (nodes, GPUs).
PUBLISHED_MIX = {
    "G2": (549, 4392),
    "T4": (404, 842),
    "P100": (134, 265),
    "V100M16": (55, 195),
    "G3": (39, 312),
    "V100M32": (30, 204),
    "A10": (2, 2),
}


def _make(nodes: int, seed: int, **overrides: object) -> tuple[Cluster, PodTable]:
    spec = OpenbLikeSpec(nodes=nodes, **overrides)  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    cluster = generate_cluster(spec, rng)
    return cluster, generate_pods(spec, cluster, rng)


@pytest.fixture(scope="module")
def demo() -> tuple[Cluster, PodTable]:
    return generate_openb_like(nodes=300, seed=0)


def _columns(cluster: Cluster, pods: PodTable) -> list[np.ndarray]:
    return [
        cluster.names, cluster.cpu_milli, cluster.memory_mib, cluster.num_gpus, cluster.model,
        pods.name, pods.cpu_milli, pods.memory_mib, pods.num_gpu, pods.gpu_milli, pods.model_mask,
    ]  # fmt: skip


def test_same_seed_gives_identical_output() -> None:
    a = _columns(*generate_openb_like(nodes=120, seed=7))
    b = _columns(*generate_openb_like(nodes=120, seed=7))
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)


def test_different_seed_gives_different_output() -> None:
    c1, p1 = generate_openb_like(nodes=120, seed=1)
    c2, p2 = generate_openb_like(nodes=120, seed=2)
    assert not np.array_equal(c1.model, c2.model)
    assert len(p1) != len(p2) or not np.array_equal(p1.cpu_milli, p2.cpu_milli)


def test_uses_only_the_passed_generator() -> None:
    np.random.seed(123)
    random.seed(123)
    np_state, py_state = np.random.get_state()[1].copy(), random.getstate()
    generate_openb_like(nodes=50, seed=3)
    assert np.array_equal(np.random.get_state()[1], np_state)
    assert random.getstate() == py_state


def test_node_model_mix_follows_published_shares(demo: tuple[Cluster, PodTable]) -> None:
    cluster, _ = demo
    assert cluster.size == 300
    ref_nodes = sum(n for n, _ in PUBLISHED_MIX.values())
    ref_gpus = sum(g for _, g in PUBLISHED_MIX.values())
    for name, (nodes, gpus) in PUBLISHED_MIX.items():
        sel = cluster.model == model_index(name)
        assert sel.sum() / cluster.size == pytest.approx(nodes / ref_nodes, abs=0.01), name
        share = cluster.num_gpus[sel].sum() / cluster.total_gpus
        assert share == pytest.approx(gpus / ref_gpus, abs=0.01), name
    assert set(cluster.model.tolist()) <= {model_index(m) for m in PUBLISHED_MIX}


def test_full_scale_reproduces_published_counts() -> None:
    cluster, pods = _make(1213, seed=0)
    by_model = cluster.summary()["by_model"]
    assert by_model == {m: {"nodes": n, "gpus": g} for m, (n, g) in PUBLISHED_MIX.items()}
    # Within 0.1 % of the published 107,018 cores and 492,020 GiB.
    assert cluster.cpu_milli.sum() / 1000 == pytest.approx(107_018, rel=0.01)
    assert cluster.memory_mib.sum() / 1024 == pytest.approx(492_020, rel=0.03)
    stats = pods.stats()
    assert stats["cpu_only"] == 1088
    assert stats["gpu_sharing"] == 3078
    by_count = stats["by_num_gpu"]
    assert (by_count["2"], by_count["4"], by_count["8"]) == (16, 15, 44)
    assert stats["pods"] == pytest.approx(8152, rel=0.01)


def test_pod_class_shares(demo: tuple[Cluster, PodTable]) -> None:
    _, pods = demo
    n = len(pods)
    cpu_only = pods.num_gpu == 0
    one = pods.num_gpu == 1
    sharing = one & (pods.gpu_milli < GPU_MILLI)
    multi = pods.num_gpu >= 2
    assert cpu_only.sum() / n == pytest.approx(1088 / 8152, abs=0.01)
    assert one.sum() / n == pytest.approx(6989 / 8152, abs=0.01)
    assert sharing.sum() / one.sum() == pytest.approx(3078 / 6989, abs=0.02)
    assert multi.sum() / n == pytest.approx(75 / 8152, abs=0.004)
    request = pods.gpu_request_milli
    # Published: sharing pods make up 28.5 % of the GPU request, multi-GPU pods 7.3 %.
    assert request[sharing].sum() / request.sum() == pytest.approx(0.285, abs=0.02)
    assert request[multi].sum() / request.sum() == pytest.approx(0.073, abs=0.03)


@pytest.mark.parametrize(("nodes", "ratio"), [(300, 0.98), (40, 0.98), (200, 0.6), (7, 1.3)])
def test_total_gpu_request_ratio(nodes: int, ratio: float) -> None:
    cluster, pods = _make(nodes, seed=5, gpu_request_ratio=ratio)
    got = pods.gpu_request_milli.sum() / (cluster.total_gpus * GPU_MILLI)
    assert got == pytest.approx(ratio, rel=0.03)


def _fits_some_empty_node(cluster: Cluster, pods: PodTable) -> np.ndarray:
    ok = (
        (cluster.cpu_milli[None, :] >= pods.cpu_milli[:, None])
        & (cluster.memory_mib[None, :] >= pods.memory_mib[:, None])
        & (cluster.num_gpus[None, :] >= pods.num_gpu[:, None])
        & (((pods.model_mask[:, None] >> cluster.model[None, :]) & 1) == 1)
    )
    return ok.any(axis=1)


@pytest.mark.parametrize("nodes", [1, 3, 25, 300])
def test_every_pod_fits_an_empty_node(nodes: int) -> None:
    cluster, pods = _make(nodes, seed=11)
    assert len(pods) > 0
    assert _fits_some_empty_node(cluster, pods).all()


def test_model_constrained_pods_still_fit() -> None:
    cluster, pods = _make(150, seed=4, model_constrained_share=0.5)
    gpu = pods.num_gpu > 0
    constrained = pods.stats()["with_model_constraint"]
    assert constrained == pytest.approx(0.5 * gpu.sum(), rel=0.15)
    assert (pods.model_mask[~gpu] == ANY_MODEL_MASK).all()
    masks = pods.model_mask[pods.model_mask != ANY_MODEL_MASK]
    assert ((masks & (masks - 1)) == 0).all()  # exactly one model each
    assert _fits_some_empty_node(cluster, pods).all()


def test_gpu_milli_takes_only_published_sizes(demo: tuple[Cluster, PodTable]) -> None:
    _, pods = demo
    allowed = {0, GPU_MILLI, *PUBLISHED_PARTIAL_SIZES}
    assert set(pods.gpu_milli.tolist()) <= allowed
    assert (pods.gpu_milli[pods.num_gpu == 0] == 0).all()
    assert (pods.gpu_milli[pods.num_gpu >= 2] == GPU_MILLI).all()
    assert set(pods.num_gpu.tolist()) <= {0, 1, 2, 4, 8}
    # Many of the sizes actually occur, not just one or two.
    assert len(set(pods.gpu_milli.tolist()) & set(PUBLISHED_PARTIAL_SIZES)) >= 15


def test_cpu_grows_with_gpu_request(demo: tuple[Cluster, PodTable]) -> None:
    _, pods = demo
    sharing = (pods.num_gpu == 1) & (pods.gpu_milli < GPU_MILLI)
    whole = (pods.num_gpu == 1) & (pods.gpu_milli == GPU_MILLI)
    multi = pods.num_gpu >= 2
    assert pods.cpu_milli[sharing].mean() < pods.cpu_milli[whole].mean()
    assert pods.cpu_milli[whole].mean() < pods.cpu_milli[multi].mean()
    assert (pods.cpu_milli > 0).all() and (pods.memory_mib > 0).all()


def test_names_are_zero_padded_in_numeric_order(demo: tuple[Cluster, PodTable]) -> None:
    cluster, pods = demo
    assert cluster.names[0] == "syn-node-0000"
    assert pods.name[0] == "syn-pod-00000"
    for names in (cluster.names.astype(str), pods.name.astype(str)):
        assert list(names) == sorted(names)
        assert len(set(names)) == len(names)
        assert len({len(x) for x in names}) == 1


def test_partial_weights_have_published_mean() -> None:
    p = partial_size_weights(PUBLISHED_PARTIAL_SIZES, PUBLISHED_PARTIAL_MEAN_MILLI)
    assert p.sum() == pytest.approx(1.0)
    assert (p > 0).all()
    assert p @ np.asarray(PUBLISHED_PARTIAL_SIZES) == pytest.approx(562.6, abs=0.5)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("nodes", 0),
        ("nodes", 2.5),
        ("cpu_only_share", -0.1),
        ("one_gpu_share", 1.5),
        ("sharing_share", float("nan")),
        ("model_constrained_share", 2),
        ("gpu_request_ratio", 0.0),
        ("gpu_request_ratio", -1.0),
        ("partial_sizes", (50, 1000)),
        ("partial_sizes", ()),
        ("partial_mean_milli", 900.0),
        ("multi_gpu_counts", ((1, 1.0),)),
        ("multi_gpu_counts", ((2, -1.0),)),
        ("whole_gpu_cores", ()),
        ("sharing_cores_per_gpu", ((0, 1.0),)),
        ("memory_gib_per_core", ((4, 0.0),)),
        ("node_shapes", ()),
        ("node_shapes", (NodeShape("NoSuchGPU", 8, 10, 96, 512),)),
        ("node_shapes", (NodeShape("G2", 0, 10, 96, 512),)),
    ],
)
def test_bad_spec_values_raise(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        OpenbLikeSpec(**{field: value})  # type: ignore[arg-type]


def test_shares_must_leave_room() -> None:
    with pytest.raises(ValueError, match="cpu_only_share"):
        OpenbLikeSpec(cpu_only_share=0.5, one_gpu_share=0.6)


def test_multi_gpu_pods_wider_than_every_node_are_left_out() -> None:
    only_t4 = (NodeShape("T4", 2, 10, 64, 256),)
    cluster, pods = _make(10, seed=0, node_shapes=only_t4)
    assert cluster.max_gpus_per_node == 2
    assert pods.num_gpu.max() <= 2
    assert set(GPU_MODELS[m] for m in cluster.model) == {"T4"}


def test_spec_is_replaceable() -> None:
    spec = replace(OpenbLikeSpec(), nodes=10)
    assert spec.shape_counts().sum() == 10
