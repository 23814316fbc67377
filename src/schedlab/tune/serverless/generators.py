"""Profiles of public model shapes, computed from their layer shapes (no measurement).

Transformer encoders use the counting of :mod:`schedlab.perf.llm.model` (Megatron's conventions):
a layer's forward FLOPs per sample ``2·s·P_matmul + 4·s²·h``, backward twice that, activations
kept per sample ``s·h·(34 + 5·a·s/h)`` bytes at 16 bits (Korthikanti et al.), doubled here for
fp32 training on CPUs; the embedding unit holds the token and position tables, the head unit the
MLM transform and an untied decoder. ResNets are counted conv by conv (bottleneck blocks, the
torchvision v1.5 layout: stride on the 3×3 conv); each block keeps every conv's, BN's and ReLU's
output for the backward pass (fp32).

Seconds come from FLOPs at ``gflops`` per unit of function speed (default
:data:`GFLOPS_PER_VCPU`, one vCPU's fp32 rate as PyTorch reaches it on a Lambda vCPU — an
assumption, not a measurement) plus a fixed ``overhead_s`` per unit and pass.
"""

from __future__ import annotations

from schedlab.errors import InputError
from schedlab.tune.serverless.profile import MAX_UNITS, Layer, ModelProfile

#: Assumed sustained fp32 GFLOP/s of one vCPU (speed 1) in PyTorch's CPU kernels.
GFLOPS_PER_VCPU = 25.0
#: Assumed fixed seconds per unit and forward pass (kernel launches, framework overhead);
#: backward pays twice this.
OVERHEAD_S = 0.002
MB = 1024.0 * 1024.0
FP32 = 4


def _layer(name: str, params: float, act_bytes: float, out_bytes: float, flops: float,
           gflops: float, overhead: float) -> Layer:  # fmt: skip
    """A unit from counts per sample: parameters, kept activation bytes, output bytes and
    forward FLOPs (backward = 2 × forward)."""
    per_sample = flops / (gflops * 1e9)
    return Layer(
        name,
        params * FP32 / MB,
        act_bytes / MB,
        out_bytes / MB,
        (overhead, per_sample),
        (2 * overhead, 2 * per_sample),
    )


def transformer_encoder(
    name: str,
    layers: int,
    hidden: int,
    heads: int,
    seq: int,
    vocab: int,
    gflops: float = GFLOPS_PER_VCPU,
    overhead: float = OVERHEAD_S,
) -> ModelProfile:
    """A BERT-style encoder: embedding unit, ``layers`` encoder units, MLM head unit."""
    h, s = hidden, seq
    matmul = 12 * h * h  # QKV, output projection, FFN (4h) — gelu, f = 4h
    layer_params = matmul + 13 * h  # biases (9h) and two LayerNorms (4h)
    flops = 2 * s * matmul + 4 * s * s * h
    act = 2 * s * h * (34 + 5 * heads * s / h)  # fp32: twice the 16-bit bytes
    out = s * h * FP32
    units = [_layer("embed", vocab * h + s * h + 2 * h, out, out, 0.0, gflops, overhead)]
    units += [
        _layer(f"enc{i}", layer_params, act, out, flops, gflops, overhead) for i in range(layers)
    ]
    head_params = h * h + h + 2 * h + vocab * h + vocab
    head_flops = 2 * s * (h * h + h * vocab)
    head_act = 2 * s * h * FP32 + s * vocab * FP32
    units.append(_layer("head", head_params, head_act, 0.0, head_flops, gflops, overhead))
    return ModelProfile(name, tuple(units)).merged(MAX_UNITS)


RESNET_BLOCKS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}


def resnet(
    depth: int,
    image: int = 224,
    classes: int = 1000,
    gflops: float = GFLOPS_PER_VCPU,
    overhead: float = OVERHEAD_S,
) -> ModelProfile:
    """A bottleneck ResNet (50, 101 or 152): stem, one unit per block, pooled classifier."""
    if depth not in RESNET_BLOCKS:
        raise InputError(f"ResNet depth must be one of {', '.join(map(str, RESNET_BLOCKS))}")
    side = image // 2  # 7×7 stride-2 stem
    stem_macs = 7 * 7 * 3 * 64 * side * side
    stem_act = 3 * 64 * side * side * FP32  # conv, BN, ReLU outputs
    side //= 2  # 3×3 stride-2 max pool
    units = [
        _layer(
            "stem",
            7 * 7 * 3 * 64 + 2 * 64,
            stem_act + 64 * side * side * FP32,
            64 * side * side * FP32,
            2 * stem_macs,
            gflops,
            overhead,
        )
    ]
    channels = 64
    for stage, count in enumerate(RESNET_BLOCKS[depth]):
        width = 64 * 2**stage
        for b in range(count):
            stride = 2 if (b == 0 and stage > 0) else 1
            out_side = side // stride
            convs = [  # (in, out, kernel, output side)
                (channels, width, 1, side),
                (width, width, 3, out_side),
                (width, 4 * width, 1, out_side),
            ]
            if b == 0:
                convs.append((channels, 4 * width, 1, out_side))  # downsample branch
            macs = sum(i * o * k * k * sd * sd for i, o, k, sd in convs)
            params = sum(i * o * k * k + 2 * o for i, o, k, _ in convs)
            kept = sum(3 * o * sd * sd for _, o, _, sd in convs) + 2 * 4 * width * out_side**2
            units.append(
                _layer(
                    f"layer{stage + 1}.{b}",
                    params,
                    kept * FP32,
                    4 * width * out_side * out_side * FP32,
                    2 * macs,
                    gflops,
                    overhead,
                )
            )
            channels, side = 4 * width, out_side
    units.append(
        _layer(
            "head",
            channels * classes + classes,
            (channels + classes) * FP32,
            0.0,
            2 * channels * classes + channels * side * side,
            gflops,
            overhead,
        )
    )
    return ModelProfile(f"resnet-{depth}", tuple(units)).merged(MAX_UNITS)


BUILTIN = {
    "bert-large": lambda: transformer_encoder("bert-large", 24, 1024, 16, 128, 30522),
    "bert-base": lambda: transformer_encoder("bert-base", 12, 768, 12, 128, 30522),
    "resnet-50": lambda: resnet(50),
    "resnet-101": lambda: resnet(101),
    "resnet-152": lambda: resnet(152),
}


def get_profile(spec: str) -> ModelProfile:
    """A built-in model name or a profile JSON file."""
    if spec in BUILTIN:
        return BUILTIN[spec]()
    from pathlib import Path

    from schedlab.tune.serverless.profile import read_profile

    if not Path(spec).exists():
        raise InputError(
            f"'--model' must be a built-in model ({', '.join(BUILTIN)}) or a profile JSON file "
            f"(got {spec!r})"
        )
    return read_profile(spec).merged(MAX_UNITS)
