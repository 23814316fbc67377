"""The GPU models schedlab knows, and the bitmask encoding of "which models may this pod use".

A pod's model constraint is a set of models; encoding it as a bit per model lets a policy test it
against every node at once (``(pod_mask >> node_model) & 1``). The list is append-only so the
indices (and thus masks saved anywhere) keep their meaning.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Known models. G1–G3 are code names in the Alibaba GPU-2023 trace for undisclosed models.
GPU_MODELS: tuple[str, ...] = (
    "G1",
    "G2",
    "G3",
    "T4",
    "P100",
    "V100M16",
    "V100M32",
    "A10",
    "V100",
    "A100",
    "A100-80G",
    "H100",
    "K80",
    "L4",
    "RTX3090",
    "RTX2080Ti",
    "GPU",  # an unnamed model, for cluster specs that do not say
    # The Alibaba spot-GPU trace v2026 (GFS, ASPLOS '26): A800 and H800 (export variants of
    # A100 and H100), and two undisclosed models.
    "A800",
    "H800",
    "GPU-series-1",
    "GPU-series-2",
)

_INDEX = {name.upper(): i for i, name in enumerate(GPU_MODELS)}

#: Mask meaning "any model".
ANY_MODEL_MASK: int = (1 << len(GPU_MODELS)) - 1


def model_index(name: str) -> int:
    """Index of a model name (case-insensitive); raises KeyError for an unknown one."""
    return _INDEX[name.strip().upper()]


def is_known_model(name: str) -> bool:
    return name.strip().upper() in _INDEX


def spec_mask(models: Iterable[str]) -> int:
    """Bitmask of the named models; an empty iterable means any model."""
    mask = 0
    for name in models:
        mask |= 1 << model_index(name)
    return mask or ANY_MODEL_MASK


def parse_gpu_spec(text: str) -> list[str]:
    """Split a ``|``-separated model list (blank means any) into names."""
    return [part.strip() for part in text.split("|") if part.strip()]


def mask_to_models(mask: int) -> list[str]:
    """Inverse of :func:`spec_mask` (empty list for "any")."""
    if mask == ANY_MODEL_MASK:
        return []
    return [name for i, name in enumerate(GPU_MODELS) if mask >> i & 1]
