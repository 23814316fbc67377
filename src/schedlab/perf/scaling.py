"""A scaling model of our own: iterations/s of data-parallel training on n GPUs.

Lets elastic and throughput-aware policies run with no measured tables. One iteration processes the
global batch ``b`` split over ``n`` GPUs, then all-reduces the gradients:

    t(n) = t_fixed + (b / n) · t_sample + (1 − overlap) · t_allreduce(n)
    t_allreduce(n) = 2 (n − 1) / n · gradient_bytes / bandwidth(n) + 2 (n − 1) · latency(n)

a ring all-reduce (2(n − 1) steps) over NVLink-class links inside a node and the slower, higher-
latency network across nodes. Compute shrinks with n while the per-step latency of the ring grows
with it, so throughput rises, flattens and eventually falls: the concave curves measured tables
show (ElasticFlow's A100 tables peak between 8 and 32 GPUs depending on model and batch). The
per-model constants are round figures of the right order for a V100/A100-class GPU, not
measurements; they matter for the shape, not for absolute speed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: GPU counts a table is built for (those of the ElasticFlow tables).
DEFAULT_COUNTS = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class ModelProfile:
    """What the scaling model needs to know about one DNN."""

    params_millions: float  # gradient size = 4 bytes × parameters
    ms_per_sample: float  # forward + backward on one reference GPU
    overlap: float = 0.3  # share of the all-reduce hidden behind the backward pass
    fixed_ms: float = (
        5.0  # per-iteration cost that does not shrink with n (data loading, optimizer)
    )


#: Round-figure profiles for the models of the public elastic-training traces.
PROFILES: dict[str, ModelProfile] = {
    "resnet50": ModelProfile(params_millions=25.6, ms_per_sample=3.0),
    "vgg16": ModelProfile(params_millions=138.0, ms_per_sample=4.5),
    "inception3": ModelProfile(params_millions=23.8, ms_per_sample=3.5),
    "bert": ModelProfile(params_millions=110.0, ms_per_sample=8.0),
    "gpt2": ModelProfile(params_millions=124.0, ms_per_sample=14.0),
    "deepspeech2": ModelProfile(params_millions=38.0, ms_per_sample=20.0),
}

#: Batch sizes of each model in the ElasticFlow traces.
TRACE_BATCHES: dict[str, tuple[int, ...]] = {
    "resnet50": (64, 128, 256),
    "vgg16": (64, 128, 256),
    "inception3": (64, 128),
    "bert": (64, 128),
    "gpt2": (128, 256),
    "deepspeech2": (32, 64),
}


@dataclass(frozen=True)
class Interconnect:
    gpus_per_node: int = 8
    intra_node_gb_per_s: float = 100.0  # NVLink-class, per GPU
    inter_node_gb_per_s: float = 12.5  # 100 Gb/s network per GPU
    intra_node_latency_ms: float = 0.02  # per ring step
    inter_node_latency_ms: float = 0.4  # per ring step once the ring leaves the node


def iteration_seconds(
    profile: ModelProfile, batch: int, gpus: int, net: Interconnect = Interconnect()
) -> float:
    """Seconds per training iteration of the whole job on ``gpus`` GPUs."""
    if gpus < 1 or batch < 1:
        raise ValueError(f"gpus and batch must be ≥ 1 (got gpus={gpus}, batch={batch})")
    compute = (batch / gpus) * profile.ms_per_sample / 1000.0
    comm = 0.0
    if gpus > 1:
        one_node = gpus <= net.gpus_per_node
        bandwidth = net.intra_node_gb_per_s if one_node else net.inter_node_gb_per_s
        latency_ms = net.intra_node_latency_ms if one_node else net.inter_node_latency_ms
        gradient_gb = 4.0 * profile.params_millions / 1000.0
        ring = 2.0 * (gpus - 1) / gpus * gradient_gb / bandwidth
        comm = ring + 2.0 * (gpus - 1) * latency_ms / 1000.0
    return profile.fixed_ms / 1000.0 + compute + (1.0 - profile.overlap) * comm


def throughput_table(
    profiles: Mapping[str, ModelProfile] = PROFILES,
    batches: Mapping[str, Iterable[int]] = TRACE_BATCHES,
    counts: Iterable[int] = DEFAULT_COUNTS,
    net: Interconnect = Interconnect(),
) -> dict[tuple[str, int], dict[int, float]]:
    """Iterations/s by GPU count for every (model, batch): the shape ``ThroughputTable`` takes.

    A GPU count above the batch size is left out (a GPU needs at least one sample)."""
    table: dict[tuple[str, int], dict[int, float]] = {}
    for model, profile in profiles.items():
        for batch in batches.get(model, ()):
            table[(model, batch)] = {
                n: 1.0 / iteration_seconds(profile, batch, n, net) for n in counts if n <= batch
            }
    return table
