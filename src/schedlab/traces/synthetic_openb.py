"""A synthetic, openb-like GPU cluster and pod list, generated from published statistics only.

``schedlab demo`` must run without the Alibaba trace files, yet should tell the same story as the
FGD study: random placement strands the most GPU share, fgd the least. This module draws a cluster
and a pod list whose *shape* follows the statistics published for the 1,213-GPU-node "openb"
cluster and its default pod list (Alibaba cluster-trace-gpu-v2023; see
``shared/traces/alibaba-gpu-2023/README.md`` and ``shared/specs/fgd-pack.md``). No data file is
read: every number below is either one of those published figures or a documented assumption.

Published figures used (default pod list, 8,152 pods; 1,213 GPU nodes, 6,212 GPUs):

* node mix by GPU model (nodes / GPUs): G2 549/4,392 (8 per node), T4 404/842 (2 or 4 per node),
  P100 134/265, V100M16 55/195, G3 39/312, V100M32 30/204, A10 2/2;
* the GPU nodes hold 107,018 CPU cores and about 492,020 GiB of memory in all;
* 1,088 pods are CPU-only, 6,989 ask for one GPU (3,078 of them for part of one), 16/15/44 ask
  for 2/4/8 GPUs; together they request 6,086.8 GPUs, 98 % of capacity;
* partial-GPU requests take 20 sizes below 1,000 milli, and GPU-sharing pods make up 28.5 % of
  the total GPU request, which pins the mean partial size at 1,731.8 / 3,078 ≈ 563 milli
  (6,086.8 GPUs − 444 on multi-GPU pods − 3,911 whole single GPUs = 1,731.8);
* the FGD target workload of the default list has 35 typical tasks (the most common
  (CPU, share, GPU count) groups covering 95 % of pods), so pod shapes are few and repeated;
* dropping the memory check moves the published pack results by only 0.03-0.16 pp, so memory
  hardly ever binds on the real trace.

Assumptions (not published; chosen to be plausible, to land near the published totals, and so
that, as published, random placement is clearly the worst of the six policies and fgd clearly the
best):

* how the GPUs of T4, P100, V100M16 and V100M32 are split over nodes, and each node shape's CPU
  and memory (:data:`DEFAULT_NODE_SHAPES`);
* the weights of the 20 partial sizes: the maximum-entropy distribution over the published sizes
  with the published mean (:func:`partial_size_weights`), i.e. nothing assumed beyond the mean;
* CPU and memory per pod, which grow with the GPU request and come in a few sizes only (about
  40 typical tasks at full scale against the published 35); CPU is tight, memory loose.

``nodes`` sets the scale: node counts per shape and pod counts per class are scaled from the
reference numbers and rounded by largest remainder, so small clusters keep the mix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.model.cluster import GPU_MILLI, Cluster
from schedlab.model.gpu_models import ANY_MODEL_MASK, is_known_model, model_index
from schedlab.model.pods import PodTable

#: GPU nodes in the published openb cluster, and pods in its default pod list.
REFERENCE_NODES = 1213
REFERENCE_PODS = 8152

MIB_PER_GIB = 1024

#: Value/weight pairs: a discrete distribution, e.g. ``((8, 2.0), (16, 1.0))`` = 8 twice as
#: often as 16.
Weighted = tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class NodeShape:
    """``count`` identical nodes in the 1,213-node reference cluster.

    Per model, node and GPU totals are published; the split of a model's GPUs over node sizes and
    the CPU/memory of each shape are assumptions (see :data:`DEFAULT_NODE_SHAPES`).
    """

    model: str
    gpus: int
    count: int
    cpu_cores: int
    memory_gib: int


#: Node shapes of the reference cluster. Per model the node counts and GPU totals equal the
#: published ones (G2 549/4,392; G3 39/312; T4 404/842; P100 134/265; V100M16 55/195;
#: V100M32 30/204; A10 2/2). Assumed: T4 = 387 two-GPU + 17 four-GPU nodes (the only 2/4 split
#: giving 842); P100 = 131 two-GPU + 3 one-GPU; V100M16 = 45 four-GPU + 5 two-GPU + 5 one-GPU;
#: V100M32 = 24 eight-GPU + 6 two-GPU. CPU and memory are typical server sizes: 128-core
#: 8-GPU G2/G3/V100M32 servers (16 cores per GPU), 32/48-core T4 inference nodes, 64-core
#: P100/V100M16 nodes, giving 106,992 cores and 492,608 GiB in all, within 0.2 % of the
#: published 107,018 cores and 492,020 GiB. (With 96-core G2 nodes the cluster would have 17,500
#: cores fewer than published, and no plausible T4 size makes that up.)
DEFAULT_NODE_SHAPES: tuple[NodeShape, ...] = (
    NodeShape("G2", 8, 200, 128, 512),
    NodeShape("G2", 8, 349, 128, 640),
    NodeShape("G3", 8, 39, 128, 1024),
    NodeShape("T4", 2, 194, 32, 128),
    NodeShape("T4", 2, 193, 48, 192),
    NodeShape("T4", 4, 17, 64, 256),
    NodeShape("P100", 2, 131, 64, 256),
    NodeShape("P100", 1, 3, 64, 256),
    NodeShape("V100M16", 4, 45, 64, 256),
    NodeShape("V100M16", 2, 5, 32, 128),
    NodeShape("V100M16", 1, 5, 32, 128),
    NodeShape("V100M32", 8, 24, 128, 512),
    NodeShape("V100M32", 2, 6, 32, 128),
    NodeShape("A10", 1, 2, 64, 256),
)

#: The 20 published partial-GPU sizes, milli-GPU (the 21st published size is 1,000: whole GPU).
PUBLISHED_PARTIAL_SIZES: tuple[int, ...] = (
    50, 110, 140, 160, 220, 230, 270, 290, 320, 330,
    350, 370, 440, 460, 470, 480, 550, 590, 650, 810,
)  # fmt: skip

#: Mean partial size implied by the published figures: 1,731.8 GPUs over 3,078 sharing pods.
PUBLISHED_PARTIAL_MEAN_MILLI = 1_731_800 / 3078

#: Published multi-GPU pod counts in the default list (2/4/8 GPUs: 16/15/44 of 8,152 pods).
DEFAULT_MULTI_GPU_COUNTS: Weighted = ((2, 16.0), (4, 15.0), (8, 44.0))

# Pod CPU and memory: assumed, not published. The sizes are few, so pod shapes repeat as in the
# real list (about 40 typical tasks here against the published 35), and they grow with the GPU
# request. At the default 98 % GPU request the pods ask for about 79 % of the cluster's CPU, so
# CPU runs out on many nodes before their GPUs do. That CPU pressure is what separates the
# policies: fgd counts the idle GPUs of a CPU-starved node as fragmented and avoids starving
# them, the GPU-centric heuristics do not. Memory, by contrast, is kept loose (about 45 % of the
# cluster's): on the real trace dropping the memory check moves results by only 0.03-0.16 pp
# (``fgd-pack.md``), so memory must hardly ever be what stops a pod.

#: Cores of a CPU-only pod.
DEFAULT_CPU_ONLY_CORES: Weighted = ((8, 2.0), (16, 2.0), (32, 1.0), (64, 1.0))
#: Cores of a GPU-sharing pod per whole GPU: a pod with share s gets round(s/1000 × this), ≥ 1.
DEFAULT_SHARING_CORES_PER_GPU: Weighted = ((4, 1.0), (8, 2.0), (16, 1.0))
#: Cores of a pod asking for one whole GPU.
DEFAULT_WHOLE_GPU_CORES: Weighted = ((4, 2.0), (8, 3.0), (12, 2.0), (16, 2.0))
#: Cores per GPU of a multi-GPU pod (times its GPU count).
DEFAULT_MULTI_GPU_CORES_PER_GPU: Weighted = ((4, 1.0), (8, 2.0), (12, 1.0))
#: Memory per requested core, GiB (the nodes have 4-5 GiB per core).
DEFAULT_MEMORY_GIB_PER_CORE: Weighted = ((1, 1.0), (2, 2.0), (4, 2.0))


def partial_size_weights(sizes: tuple[int, ...], mean_milli: float) -> np.ndarray:
    """Maximum-entropy probabilities over ``sizes`` whose mean is ``mean_milli``.

    Only the sizes and (through the published 28.5 % sharing share of the GPU request) their
    mean are published, so we assume nothing more: the answer is p_i ∝ exp(λ · s_i), with λ
    found by bisection (the mean grows monotonically with λ).
    """
    s = np.asarray(sizes, dtype=np.float64) / GPU_MILLI
    target = mean_milli / GPU_MILLI

    def probs(lam: float) -> np.ndarray:
        z = lam * (s - s.max())  # shifted so exp never overflows
        w = np.exp(z)
        return w / w.sum()

    lo, hi = -200.0, 200.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if float(probs(mid) @ s) < target:
            lo = mid
        else:
            hi = mid
    return probs(0.5 * (lo + hi))


def _weights(pairs: Weighted, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Values and normalised weights of ``pairs``; ValueError naming ``name`` if unusable."""
    try:
        values = np.asarray([float(v) for v, _ in pairs], dtype=np.float64)
        weights = np.asarray([float(w) for _, w in pairs], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"OpenbLikeSpec.{name} must hold (value, weight) pairs (got {pairs!r})"
        ) from exc
    if len(values) == 0:
        raise ValueError(f"OpenbLikeSpec.{name} must not be empty (got {pairs!r})")
    if not (np.all(np.isfinite(weights)) and (weights >= 0).all() and weights.sum() > 0):
        raise ValueError(
            f"OpenbLikeSpec.{name} weights must be finite, >= 0 and not all 0 (got {pairs!r})"
        )
    if not (np.all(np.isfinite(values)) and (values > 0).all()):
        raise ValueError(f"OpenbLikeSpec.{name} values must be finite and > 0 (got {pairs!r})")
    return values, weights / weights.sum()


def _check_share(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"OpenbLikeSpec.{name} must be a number in [0, 1] (got {value!r})")


@dataclass(frozen=True)
class OpenbLikeSpec:
    """What to generate. The defaults are the published statistics of the openb cluster (1,213
    GPU nodes) and its default pod list (8,152 pods); ``nodes`` scales everything.

    * ``nodes`` — GPU nodes to generate; node shapes are scaled from the 1,213-node reference.
    * ``node_shapes`` — the reference node mix (see :data:`DEFAULT_NODE_SHAPES`).
    * ``cpu_only_share`` — share of pods without GPUs (published 1,088 / 8,152 = 13.3 %).
    * ``one_gpu_share`` — share of pods asking for one GPU, whole or partial (published
      6,989 / 8,152 = 85.7 %). The rest (published 75 / 8,152) ask for several GPUs.
    * ``sharing_share`` — share of 1-GPU pods asking for part of a GPU (3,078 / 6,989 = 44 %).
    * ``multi_gpu_counts`` — relative frequency of 2/4/8-GPU pods (published 16/15/44).
    * ``partial_sizes`` and ``partial_mean_milli`` — the published partial sizes and the mean
      implied by the published 28.5 % sharing share of the GPU request; the size weights are
      derived from them (:func:`partial_size_weights`).
    * ``gpu_request_ratio`` — total GPU request of the pod list / cluster GPUs (published 98 %).
    * ``model_constrained_share`` — share of GPU pods restricted to one GPU model. The default
      list has none (only its ``gpuspecNN`` variants do), hence 0.
    * ``*_cores*`` and ``memory_gib_per_core`` — assumed pod CPU and memory (see the
      ``DEFAULT_*`` constants).
    """

    nodes: int = REFERENCE_NODES
    node_shapes: tuple[NodeShape, ...] = DEFAULT_NODE_SHAPES
    cpu_only_share: float = 1088 / REFERENCE_PODS
    one_gpu_share: float = 6989 / REFERENCE_PODS
    sharing_share: float = 3078 / 6989
    multi_gpu_counts: Weighted = DEFAULT_MULTI_GPU_COUNTS
    partial_sizes: tuple[int, ...] = PUBLISHED_PARTIAL_SIZES
    partial_mean_milli: float = PUBLISHED_PARTIAL_MEAN_MILLI
    gpu_request_ratio: float = 0.98
    model_constrained_share: float = 0.0
    cpu_only_cores: Weighted = DEFAULT_CPU_ONLY_CORES
    sharing_cores_per_gpu: Weighted = DEFAULT_SHARING_CORES_PER_GPU
    whole_gpu_cores: Weighted = DEFAULT_WHOLE_GPU_CORES
    multi_gpu_cores_per_gpu: Weighted = DEFAULT_MULTI_GPU_CORES_PER_GPU
    memory_gib_per_core: Weighted = DEFAULT_MEMORY_GIB_PER_CORE

    def __post_init__(self) -> None:
        if isinstance(self.nodes, bool) or not isinstance(self.nodes, (int, np.integer)):
            raise ValueError(f"OpenbLikeSpec.nodes must be an integer (got {self.nodes!r})")
        if self.nodes < 1:
            raise ValueError(f"OpenbLikeSpec.nodes must be >= 1 (got {self.nodes})")
        for name in ("cpu_only_share", "one_gpu_share", "sharing_share", "model_constrained_share"):
            _check_share(name, getattr(self, name))
        if self.cpu_only_share + self.one_gpu_share > 1 + 1e-9:
            raise ValueError(
                "OpenbLikeSpec.cpu_only_share + one_gpu_share must be <= 1 "
                f"(got {self.cpu_only_share} + {self.one_gpu_share})"
            )
        ratio = self.gpu_request_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio < 1e6:
            raise ValueError(f"OpenbLikeSpec.gpu_request_ratio must be > 0 (got {ratio!r})")
        self._check_node_shapes()
        sizes = self.partial_sizes
        if (
            len(sizes) == 0
            or len(set(sizes)) != len(sizes)
            or not all(isinstance(v, (int, np.integer)) and 0 < v < GPU_MILLI for v in sizes)
        ):
            raise ValueError(
                "OpenbLikeSpec.partial_sizes must be distinct integers in (0, 1000) "
                f"(got {sizes!r})"
            )
        mean, lo, hi = self.partial_mean_milli, min(sizes), max(sizes)
        if not isinstance(mean, (int, float)) or not (lo < mean < hi or lo == mean == hi):
            raise ValueError(
                "OpenbLikeSpec.partial_mean_milli must lie strictly between the smallest and "
                f"largest partial size {lo}..{hi} (got {mean!r})"
            )
        counts, _ = _weights(self.multi_gpu_counts, "multi_gpu_counts")
        if ((counts < 2) | (counts != np.round(counts))).any():
            raise ValueError(
                "OpenbLikeSpec.multi_gpu_counts GPU counts must be integers >= 2 "
                f"(got {self.multi_gpu_counts!r})"
            )
        for name in (
            "cpu_only_cores",
            "sharing_cores_per_gpu",
            "whole_gpu_cores",
            "multi_gpu_cores_per_gpu",
            "memory_gib_per_core",
        ):
            _weights(getattr(self, name), name)

    def _check_node_shapes(self) -> None:
        if len(self.node_shapes) == 0:
            raise ValueError(
                f"OpenbLikeSpec.node_shapes must not be empty (got {self.node_shapes})"
            )
        for shape in self.node_shapes:
            if not isinstance(shape, NodeShape) or not is_known_model(shape.model):
                raise ValueError(f"OpenbLikeSpec.node_shapes: unknown GPU model in {shape!r}")
            for attr in ("gpus", "cpu_cores", "memory_gib"):
                if getattr(shape, attr) < 1:
                    raise ValueError(
                        f"OpenbLikeSpec.node_shapes: {attr} must be >= 1 (got {shape!r})"
                    )
            if shape.count < 0:
                raise ValueError(f"OpenbLikeSpec.node_shapes: count must be >= 0 (got {shape!r})")
        if sum(s.count for s in self.node_shapes) == 0:
            raise ValueError("OpenbLikeSpec.node_shapes: every count is 0")

    @property
    def multi_gpu_share(self) -> float:
        """Share of pods asking for 2+ GPUs: what CPU-only and 1-GPU pods leave over."""
        return max(0.0, 1.0 - self.cpu_only_share - self.one_gpu_share)

    def shape_counts(self) -> np.ndarray:
        """Nodes per shape at ``nodes``: the reference counts scaled and rounded by largest
        remainder, so they sum to exactly ``nodes`` and keep the published model mix."""
        ref = np.asarray([s.count for s in self.node_shapes], dtype=np.float64)
        return _largest_remainder(ref / ref.sum(), self.nodes)


def _largest_remainder(shares: np.ndarray, total: int) -> np.ndarray:
    """Integers proportional to ``shares`` summing to ``total`` (ties go to the earlier entry).

    Deterministic, so the node and pod mix needs no randomness and small scales keep it.
    """
    exact = np.asarray(shares, dtype=np.float64) * total
    base = np.floor(exact).astype(np.int64)
    short = int(total - base.sum())
    if short > 0:
        order = np.argsort(-(exact - base), kind="stable")
        base[order[:short]] += 1
    return base


def _names(prefix: str, n: int, min_width: int) -> np.ndarray:
    """``prefix`` + zero-padded index, all of one width so name order is numeric order."""
    width = max(min_width, len(str(max(n - 1, 0))))
    return np.asarray([f"{prefix}{i:0{width}d}" for i in range(n)], dtype=object)


def generate_cluster(spec: OpenbLikeSpec, rng: np.random.Generator) -> Cluster:
    """Nodes ``syn-node-0000``… with the spec's shape mix, in a seeded random order.

    The mix itself is deterministic (largest remainder over the reference counts); ``rng`` only
    decides which name each node gets, so that names do not group nodes by model.
    """
    shapes = spec.node_shapes
    shape_of = np.repeat(np.arange(len(shapes)), spec.shape_counts())
    shape_of = shape_of[rng.permutation(len(shape_of))]

    def column(values: list[int]) -> np.ndarray:
        return np.asarray(values, dtype=np.int64)[shape_of]

    return Cluster(
        names=_names("syn-node-", spec.nodes, 4),
        cpu_milli=column([s.cpu_cores * 1000 for s in shapes]),
        memory_mib=column([s.memory_gib * MIB_PER_GIB for s in shapes]),
        num_gpus=column([s.gpus for s in shapes]),
        model=column([model_index(s.model) for s in shapes]),
        source=f"synthetic-openb(nodes={spec.nodes})",
    )


def _draw(rng: np.random.Generator, pairs: Weighted, n: int, name: str) -> np.ndarray:
    values, p = _weights(pairs, name)
    return values[rng.choice(len(values), size=n, p=p)]


def generate_pods(spec: OpenbLikeSpec, cluster: Cluster, rng: np.random.Generator) -> PodTable:
    """A pod list shaped like openb's default list, sized for ``cluster``.

    The pod count is chosen so the total GPU request is ``gpu_request_ratio`` × the cluster's GPUs
    (published: 98 %). Pods per class (CPU-only, sharing, whole 1-GPU, 2/4/8-GPU) follow the
    published shares by largest remainder; then the number of whole 1-GPU pods is set so the
    total request lands within half a GPU of the target. Multi-GPU sizes wider than every node
    are left out (tiny clusters). Every pod's CPU and memory are clipped to fit at least one
    empty node with enough GPUs (of its model, when constrained), so no pod is impossible.
    Pods are named ``syn-pod-00000``… in a seeded random order of classes.
    """
    if cluster.total_gpus == 0:
        raise ValueError("generate_pods needs a cluster with GPUs")
    target_milli = spec.gpu_request_ratio * cluster.total_gpus * GPU_MILLI
    sizes = np.asarray(spec.partial_sizes, dtype=np.int64)
    size_p = partial_size_weights(spec.partial_sizes, spec.partial_mean_milli)

    k_values, k_p = _weights(spec.multi_gpu_counts, "multi_gpu_counts")
    usable = k_values <= cluster.max_gpus_per_node
    k_values = k_values[usable].astype(np.int64)
    k_p = k_p[usable] / k_p[usable].sum() if usable.any() else k_p[usable]
    multi_share = spec.multi_gpu_share if usable.any() else 0.0

    # Share of all pods per class: CPU-only, sharing, whole 1-GPU, then each multi-GPU count.
    one = spec.one_gpu_share
    class_share = np.concatenate(
        [
            [spec.cpu_only_share, one * spec.sharing_share, one * (1 - spec.sharing_share)],
            multi_share * k_p,
        ]
    )
    class_milli = np.concatenate(
        [[0.0, float(size_p @ sizes), float(GPU_MILLI)], k_values * float(GPU_MILLI)]
    )
    if class_share.sum() <= 0 or float(class_share @ class_milli) <= 0:
        raise ValueError("OpenbLikeSpec asks for no GPU pods, so no GPU request can be reached")
    class_share = class_share / class_share.sum()
    n_pods = max(1, round(target_milli / float(class_share @ class_milli)))
    counts = _largest_remainder(class_share, n_pods)
    n_cpu, n_share = int(counts[0]), int(counts[1])
    n_multi = counts[3:]
    multi_gpus = np.repeat(k_values, n_multi)

    partial = sizes[rng.choice(len(sizes), size=n_share, p=size_p)]
    n_whole = int(counts[2])
    if class_share[2] > 0:
        # Whole single-GPU pods absorb the randomness of the partial sizes (1 GPU each, so
        # the total lands within half a GPU of the target).
        fixed_milli = int(partial.sum()) + int(multi_gpus.sum()) * GPU_MILLI
        n_whole = max(0, round((target_milli - fixed_milli) / GPU_MILLI))

    num_gpu = np.concatenate(
        [np.zeros(n_cpu, np.int64), np.ones(n_share + n_whole, np.int64), multi_gpus]
    )
    gpu_milli = np.concatenate(
        [
            np.zeros(n_cpu, np.int64),
            partial,
            np.full(n_whole + len(multi_gpus), GPU_MILLI, np.int64),
        ]
    )
    sharing_cores = _draw(rng, spec.sharing_cores_per_gpu, n_share, "sharing_cores_per_gpu")
    multi_cores = _draw(rng, spec.multi_gpu_cores_per_gpu, len(multi_gpus), "multi_gpu_cores")
    cores = np.concatenate(
        [
            _draw(rng, spec.cpu_only_cores, n_cpu, "cpu_only_cores"),
            np.maximum(1.0, np.round(sharing_cores * partial / GPU_MILLI)),
            _draw(rng, spec.whole_gpu_cores, n_whole, "whole_gpu_cores"),
            multi_cores * multi_gpus,
        ]
    )
    gib_per_core = _draw(rng, spec.memory_gib_per_core, len(cores), "memory_gib_per_core")
    cpu_milli = np.round(cores * 1000).astype(np.int64)
    memory_mib = np.round(cores * gib_per_core * MIB_PER_GIB).astype(np.int64)
    model_mask = _fit_and_constrain(spec, cluster, rng, num_gpu, cpu_milli, memory_mib)

    order = rng.permutation(len(num_gpu))
    return PodTable.from_columns(
        source=f"synthetic-openb(nodes={cluster.size})",
        name=_names("syn-pod-", len(order), 5),
        cpu_milli=cpu_milli[order],
        memory_mib=memory_mib[order],
        num_gpu=num_gpu[order],
        gpu_milli=gpu_milli[order],
        model_mask=model_mask[order],
    )


def _fit_and_constrain(
    spec: OpenbLikeSpec,
    cluster: Cluster,
    rng: np.random.Generator,
    num_gpu: np.ndarray,
    cpu_milli: np.ndarray,
    memory_mib: np.ndarray,
) -> np.ndarray:
    """Clip CPU and memory in place so each pod fits some empty node; return the model masks.

    A pod that fits no node with enough GPUs is cut down to the largest such node (most CPU,
    then most memory), keeping its shape as far as the hardware allows. Then a
    ``model_constrained_share`` of GPU pods is restricted to the model of a node kind it fits,
    so a constraint never makes a pod impossible.
    """
    # Node kinds are few; compare pods against kinds, not against every node.
    kinds = np.unique(
        np.stack([cluster.cpu_milli, cluster.memory_mib, cluster.num_gpus, cluster.model], 1),
        axis=0,
    )
    k_cpu, k_mem, k_gpu, k_model = kinds.T
    enough_gpus = k_gpu[None, :] >= num_gpu[:, None]  # (pods, kinds)

    def fits() -> np.ndarray:
        return (
            enough_gpus
            & (k_cpu[None, :] >= cpu_milli[:, None])
            & (k_mem[None, :] >= memory_mib[:, None])
        )

    for i in np.flatnonzero(~fits().any(axis=1)):
        cand = np.flatnonzero(enough_gpus[i])
        best = cand[np.lexsort((-k_mem[cand], -k_cpu[cand]))[0]]
        cpu_milli[i] = min(cpu_milli[i], k_cpu[best])
        memory_mib[i] = min(memory_mib[i], k_mem[best])

    model_mask = np.full(len(num_gpu), ANY_MODEL_MASK, dtype=np.int64)
    if spec.model_constrained_share > 0:
        ok = fits()
        gpu_pods = np.flatnonzero(num_gpu > 0)
        chosen = gpu_pods[rng.random(len(gpu_pods)) < spec.model_constrained_share]
        for i in chosen:
            models = np.unique(k_model[ok[i]])
            model_mask[i] = 1 << int(models[rng.integers(len(models))])
    return model_mask


def generate_openb_like(nodes: int = 300, seed: int = 0) -> tuple[Cluster, PodTable]:
    """Cluster and pod list for the embedded demo: ``nodes`` GPU nodes in openb proportions.

    One generator seeded by ``seed`` draws the cluster first, then the pods, so a seed fixes both.
    """
    spec = OpenbLikeSpec(nodes=nodes)
    rng = np.random.default_rng(seed)
    cluster = generate_cluster(spec, rng)
    return cluster, generate_pods(spec, cluster, rng)
