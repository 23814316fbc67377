"""Bytes per GPU of a plan, on its worst pipeline stage (every formula in ``docs/llm.md``).

Model states follow the ZeRO paper (mixed-precision Adam: 2-byte weights, ``grad_bytes``
gradients, ``K`` = 12 optimizer bytes per parameter), sharded over ``z_group`` ranks from stage 1
on. Activations follow Korthikanti et al. (Table 2), generalised to any FFN width, grouped-query
attention and no dropout; FlashAttention keeps no ``s²`` term. The first stage holds
``min(p, m)`` micro-batches in flight under 1F1B; the last stage holds one, plus the output
layer's inputs and the loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.perf.llm.model import ModelConfig
from schedlab.perf.llm.profile import Profile
from schedlab.perf.llm.space import (
    R_FULL,
    R_SELECTIVE,
    SP_MEGATRON,
    SP_RING,
    SP_ULYSSES,
    Plan,
    PlanGrid,
)


@dataclass(frozen=True)
class Memory:
    """Per-plan bytes: the worst stage's total and its parts (arrays aligned with the grid)."""

    total: np.ndarray
    states: np.ndarray  # weights, gradients, optimizer states
    activations: np.ndarray  # layers' activations in flight, embedding and output extras
    buffers: np.ndarray  # ZeRO-3 gather buffer
    params: np.ndarray  # Ψ_g: parameters held before ZeRO sharding, worst stage
    first_stage: np.ndarray  # the first stage's total (what Megatron's estimator reports)


def layers_per_stage(model: ModelConfig, grid: PlanGrid) -> np.ndarray:
    """``⌈L/p⌉`` (the fullest stage; interleaving holds ``v`` chunks of ``⌈L/(p·v)⌉``)."""
    chunks = grid.p * grid.v
    return -(-model.layers // chunks) * grid.v


def stage_params(model: ModelConfig, grid: PlanGrid, lp: np.ndarray) -> tuple[np.ndarray, ...]:
    """Ψ_g of the first and the last stage: ``(⌈L/p⌉·P_layer + E_stage)/t``, norms not divided by
    ``t``; ``E_stage`` = ``V·h`` (plus learned positions) on the first stage, ``V·h`` again on the
    last if the output layer is untied (both on the one stage when ``p = 1``); the final norm on
    the last."""
    t = grid.t.astype(np.float64)
    norms = model.norm_params_per_layer
    split = model.params_per_layer - norms
    layers = lp * (split / t + norms)
    emb = model.embedding_params + (
        model.seq_len * model.hidden if model.position == "learned" else 0
    )
    out = 0 if model.tied else model.embedding_params
    single = grid.p == 1
    final = model.hidden * (2 if model.norm == "layernorm" else 1)
    first = layers + (emb + np.where(single, out, 0)) / t + np.where(single, final, 0)
    last = layers + np.where(single, emb + out, out) / t + final
    return first, last


def model_states(psi: np.ndarray, grid: PlanGrid, profile: Profile) -> np.ndarray:
    """The ZeRO table: stage 0 ``(2+g+K)Ψ``; 1 ``(2+g)Ψ + KΨ/n``; 2 ``2Ψ + (g+K)Ψ/n``;
    3 ``(2+g+K)Ψ/n`` (``g`` gradient bytes, ``K`` optimizer bytes, ``n`` the ZeRO group)."""
    g, k = float(profile.grad_bytes), float(profile.optimizer_bytes)
    n = np.maximum(grid.zg, 1).astype(np.float64)
    z = grid.z
    return np.select(
        [z == 0, z == 1, z == 2],
        [(2 + g + k) * psi, (2 + g) * psi + k * psi / n, 2 * psi + (g + k) * psi / n],
        (2 + g + k) * psi / n,
    )


def activation_per_layer(model: ModelConfig, grid: PlanGrid, profile: Profile) -> np.ndarray:
    """16-bit activation bytes of one layer for one micro-batch on one GPU.

    Linear part ``s·b·h·(R + D)``: ``R`` = 10 (8 without dropout) stays whole under TP, ``D`` =
    4 + 4·a_kv/a + 4f/h is divided by ``t``; sequence parallelism divides both. The attention
    core is ``5·a·s²·b`` (``2·a·s²·b`` without dropout) ÷ ``t``, none with FlashAttention or
    selective recompute. Full recompute keeps only each layer's input, ``2·s·b·h`` (÷ ``t`` with
    SP). Ulysses and ring divide everything by ``c``."""
    s, h, a = float(model.seq_len), float(model.hidden), float(model.heads)
    dropout = model.dropout if profile.dropout is None else profile.dropout
    t = grid.t.astype(np.float64)
    c = grid.c.astype(np.float64)
    sbh = s * grid.b * h
    replicated = 10.0 if dropout else 8.0
    divided = 4.0 + 4.0 * model.kv_ratio + 4.0 * model.ffn / h
    sp = grid.sp == SP_MEGATRON
    linear = np.where(sp, (replicated + divided) / t, replicated + divided / t)
    core = 0.0 if profile.flash else (5.0 if dropout else 2.0) * a * s * s * grid.b / t
    core = np.where(grid.r == R_SELECTIVE, 0.0, core)
    layer = sbh * linear + core
    layer = np.where(grid.r == R_FULL, 2.0 * sbh / np.where(sp, t, 1.0), layer)
    cp = (grid.sp == SP_ULYSSES) | (grid.sp == SP_RING)
    return layer / np.where(cp, c, 1.0)


def memory(model: ModelConfig, grid: PlanGrid, profile: Profile) -> Memory:
    """Bytes per GPU of every plan in ``grid`` (worst of the first and last stage)."""
    lp = layers_per_stage(model, grid)
    s, h, v = float(model.seq_len), float(model.hidden), float(model.vocab)
    dropout = model.dropout if profile.dropout is None else profile.dropout
    t = grid.t.astype(np.float64)
    cp = (grid.sp == SP_ULYSSES) | (grid.sp == SP_RING)
    tc = t * np.where(cp, grid.c, 1)
    per_layer = activation_per_layer(model, grid, profile)
    inflight = np.minimum(grid.p, grid.m).astype(np.float64)
    inflight *= np.where(grid.v > 1, 1.0 + (grid.p - 1) / (grid.p * grid.v), 1.0)
    sb = s * grid.b
    embed = (8.0 * sb + (sb * h if dropout else 0.0)) / tc  # token ids and embedding dropout
    output = 4.0 * sb * h * (1.0 + v / h) / tc  # output layer's input and the loss
    single = grid.p == 1
    acts_first = (per_layer * lp + embed) * inflight + np.where(single, output, 0.0)
    acts_last = per_layer * lp + output
    psi_first, psi_last = stage_params(model, grid, lp)
    buffers = np.where(grid.z == 3, 2.0 * 2.0 * model.params_per_layer / t, 0.0)
    first = model_states(psi_first, grid, profile) + acts_first + buffers
    last = model_states(psi_last, grid, profile) + acts_last + buffers
    use_last = (last > first) & ~single
    return Memory(
        total=np.where(use_last, last, first),
        states=np.where(
            use_last, model_states(psi_last, grid, profile), model_states(psi_first, grid, profile)
        ),
        activations=np.where(use_last, acts_last, acts_first),
        buffers=buffers,
        params=np.maximum(psi_first, psi_last),
        first_stage=first,
    )


def zero_states_gb(params: float, stage: int, ranks: int, optimizer_bytes: int = 12) -> float:
    """The ZeRO paper's Figure 1 arithmetic for one model: GB (10⁹ B) per GPU of model states
    at ``stage`` over ``ranks`` data-parallel GPUs (2-byte weights and gradients)."""
    grid = PlanGrid.of([Plan(d=ranks, z=stage, zg=ranks)])
    prof = Profile("zero", optimizer_bytes=optimizer_bytes)
    return float(model_states(np.array([float(params)]), grid, prof)[0]) / 1e9
