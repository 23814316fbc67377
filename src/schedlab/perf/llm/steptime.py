"""Seconds per training step of a plan (every formula in ``docs/llm.md``).

Compute is a roofline: the matrix multiplies run at ``η·peak`` and the memory-bound kernels move
``Q`` bytes at the HBM rate. Communication uses an α–β model per collective, hierarchical when a
group spans nodes (NVLink inside, the node's NICs across, shared by the job's concurrent groups).
1F1B pipelining costs ``(m + p − 1)`` micro-batch times on the slowest stage; the data-parallel
gradient reduction hides behind the last micro-batch's backward up to ``ω_dp``; the optimizer
update is memory bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.perf.llm.hardware import GPUSpec
from schedlab.perf.llm.memory import layers_per_stage, stage_params
from schedlab.perf.llm.model import ModelConfig
from schedlab.perf.llm.profile import Profile
from schedlab.perf.llm.space import (
    R_FULL,
    R_SELECTIVE,
    SP_RING,
    SP_ULYSSES,
    PlanGrid,
    group_span,
)


@dataclass(frozen=True)
class Links:
    """Bandwidths the collectives see: NVLink per direction per GPU, and the node's NICs
    together (bytes/s); ``q``: the job's GPUs on a node (its fewest)."""

    intra: float
    nic: float
    q: int


@dataclass(frozen=True)
class StepTime:
    """Per-plan seconds: the step and its parts (arrays aligned with the grid)."""

    total: np.ndarray
    compute: np.ndarray  # (m + p − 1) × the stage's compute, incl. recompute
    tp: np.ndarray  # tensor-parallel collectives on the critical path
    cp: np.ndarray  # Ulysses all-to-alls / exposed ring transfers
    pp: np.ndarray  # pipeline point-to-point
    bubble: np.ndarray  # the (p − 1) fill-and-drain micro-batch times (part of the above)
    dp: np.ndarray  # exposed gradient reduction
    zero: np.ndarray  # exposed parameter all-gathers (ZeRO 1/2) and ZeRO-3 gathers
    optimizer: np.ndarray
    grad_seconds: np.ndarray  # the whole gradient reduction, hidden or not
    backward_seconds: np.ndarray  # one micro-batch's backward on the slowest stage
    stage_compute: np.ndarray  # one micro-batch forward + backward (+ recompute) on that stage


def collective(
    k: float,
    n: np.ndarray,
    g_l: np.ndarray,
    n_nodes: np.ndarray,
    nbytes: np.ndarray,
    calls: np.ndarray | float,
    links: Links,
    profile: Profile,
) -> np.ndarray:
    """Seconds of a collective over ``n`` ranks, ``g_l`` per node on ``n_nodes`` nodes, ``k`` = 2
    for all-reduce, 1 for reduce-scatter or all-gather:

        k·[(g_l − 1)/g_l · M/B_intra + (n_nodes − 1)/n_nodes · M/B_inter] + k·(n − 1)·calls·α

    with ``B_inter = B_nic·g_l/q`` (the job's concurrent groups share the node's NICs) and α
    inter-node when the group spans nodes."""
    n = np.asarray(n, dtype=np.float64)
    g_l = np.asarray(g_l, dtype=np.float64)
    n_nodes = np.asarray(n_nodes, dtype=np.float64)
    inter = links.nic * g_l / links.q
    band = k * ((g_l - 1) / g_l * nbytes / links.intra + (n_nodes - 1) / n_nodes * nbytes / inter)
    alpha = np.where(n_nodes > 1, profile.alpha_inter, profile.alpha_intra)
    out = band + k * (n - 1) * calls * alpha
    return np.where(n > 1, out, 0.0)


def pp_hops(grid: PlanGrid, q: int) -> tuple[np.ndarray, np.ndarray]:
    """Whether a plan's pipeline has hops inside a node and hops across nodes.

    Ranks are numbered node by node, ``q`` to a node, and a stage is ``S = t·c·d`` consecutive
    ranks, so rank ``r`` of stage ``k`` sends to rank ``r + S`` of stage ``k + 1``. That hop
    crosses nodes when ``⌊r/q⌋ ≠ ⌊(r + S)/q⌋``. With ``S ≥ q`` every hop does; with ``S < q``
    the first (``r = 0``) stays inside node 0, and some hop crosses exactly when the stages
    span more than one node, ``p·S > q`` (rank ``q − 1`` sends across when ``(p − 1)·S ≥ q``,
    else the last rank of stage ``p − 2`` does). Every micro-batch passes every boundary, so
    the slowest hop paces the pipeline: a plan with any crossing hop pays the inter-node one.
    The interleaved wrap-around hop (stage ``p − 1`` to 0) crosses under the same condition."""
    stride = grid.t * np.where((grid.sp == SP_ULYSSES) | (grid.sp == SP_RING), grid.c, 1) * grid.d
    multi = grid.p > 1
    return multi & (stride < q), multi & ((stride >= q) | (grid.p * stride > q))


def calls_for(nbytes: np.ndarray, tensors: np.ndarray | float, rule: str, bucket: float):
    """Calls a bucketed collective issues (``⌈M/bucket⌉``), or one per tensor."""
    if rule == "per-tensor":
        return np.asarray(tensors, dtype=np.float64)
    return np.maximum(np.ceil(nbytes / bucket), 1.0)


def step_time(
    model: ModelConfig,
    grid: PlanGrid,
    gpu: GPUSpec,
    links: Links,
    profile: Profile,
) -> StepTime:
    """Seconds per step of every plan in ``grid`` on GPUs ``gpu`` linked by ``links``."""
    s, h, a, vocab = (
        float(model.seq_len),
        float(model.hidden),
        float(model.heads),
        float(model.vocab),
    )
    t = grid.t.astype(np.float64)
    p = grid.p.astype(np.float64)
    b = grid.b.astype(np.float64)
    m = grid.m.astype(np.float64)
    v = grid.v.astype(np.float64)
    ulysses = grid.sp == SP_ULYSSES
    ring = grid.sp == SP_RING
    c = np.where(ulysses | ring, grid.c, 1).astype(np.float64)
    tc = t * c
    lp = layers_per_stage(model, grid).astype(np.float64)
    rate = gpu.peak_flops * profile.eta
    hbm = gpu.hbm_bytes_per_s
    full = grid.r == R_FULL
    selective = grid.r == R_SELECTIVE

    # -- compute of one micro-batch on the slowest (last) stage ------------------------------
    f_layer = 2.0 * b * s * model.matmul_params_per_layer + 4.0 * b * s * s * h
    f_core = 4.0 * b * s * s * h
    f_logits = 2.0 * b * s * h * vocab
    softmax = 0.0 if profile.flash else profile.k_s * a * b * s * s
    q_layer = profile.k_e * b * s * h + softmax  # forward + backward bytes
    fb = 3.0 * (lp * f_layer + f_logits) / (tc * rate) + lp * q_layer / (tc * hbm)
    redo = np.where(
        full,
        lp * f_layer / (tc * rate) + lp * q_layer / 3.0 / (tc * hbm),
        np.where(selective, lp * f_core / (tc * rate) + lp * softmax / 3.0 / (tc * hbm), 0.0),
    )
    stage = fb + redo
    backward = 2.0 * fb / 3.0

    # -- tensor parallel: 2 all-reduces forward, 2 backward, 2 more with full recompute --------
    n_tp = lp * (4.0 + 2.0 * full)
    one_tp = collective(2.0, t, t, np.ones_like(t), 2.0 * b * s * h / c, 1.0, links, profile)
    tp = n_tp * one_tp * (1.0 - profile.omega_tp)

    # -- context parallel ----------------------------------------------------------------------
    passes = 2.0 + full  # forward, backward, recompute
    g_cp, nodes_cp = group_span(grid.t, grid.c, links.q)
    g_cp = g_cp.astype(np.float64)
    share_intra = (g_cp - 1) / c
    share_inter = (c - g_cp) / c
    per_rank_nic = links.nic / links.q
    kv = model.kv_ratio
    a2a_bytes = 2.0 * b * (s / c) * h / t * (2.0 + 2.0 * kv)  # Q, K, V in, output back
    a2a = a2a_bytes * (share_intra / links.intra + share_inter / per_rank_nic)
    alpha_cp = np.where(nodes_cp > 1, profile.alpha_inter, profile.alpha_intra)
    ulysses_t = lp * passes * (a2a + 4.0 * (c - 1) * alpha_cp)
    kv_block = 2.0 * b * (s / c) * h / t * kv * 2.0
    ring_bw = np.where(nodes_cp > 1, per_rank_nic, links.intra)
    ring_fwd = (c - 1) * (kv_block / ring_bw + alpha_cp)
    core_fwd = f_core / (tc * rate)
    ring_exposed = np.maximum(0.0, ring_fwd - core_fwd) * (1.0 + full) + np.maximum(
        0.0, 2.0 * ring_fwd - 2.0 * core_fwd
    )
    cp = np.where(ulysses & (c > 1), ulysses_t, np.where(ring & (c > 1), lp * ring_exposed, 0.0))

    # -- pipeline point-to-point: activation forward, gradient backward -----------------------
    pp_msg = 2.0 * b * s * h / tc
    hop_intra, hop_inter = pp_hops(grid, links.q)
    pp_hop = np.maximum(
        np.where(hop_intra, pp_msg / links.intra + profile.alpha_intra, 0.0),
        np.where(hop_inter, pp_msg / per_rank_nic + profile.alpha_inter, 0.0),
    )
    pp = np.where(grid.p > 1, v * 2.0 * pp_hop, 0.0)

    # -- ZeRO-3 gathers per layer and micro-batch, overlapped with that layer's compute ---------
    psi_first, psi_last = stage_params(model, grid, lp.astype(np.int64))
    psi = np.maximum(psi_first, psi_last)
    zg = grid.zg
    g_z, nodes_z = group_span(grid.t * np.where(ulysses | ring, grid.c, 1), zg, links.q)
    layer_bytes = 2.0 * model.params_per_layer / t
    z3_comm = 2.0 * collective(1.0, zg, g_z, nodes_z, layer_bytes, 1.0, links, profile)
    z3_comm += collective(
        1.0,
        zg,
        g_z,
        nodes_z,
        profile.grad_comm_bytes * model.params_per_layer / t,
        1.0,
        links,
        profile,
    )
    z3_layer = stage / np.maximum(lp, 1.0)
    z3 = np.where(grid.z == 3, lp * np.maximum(0.0, z3_comm - profile.omega_3 * z3_layer), 0.0)

    micro = stage + tp + cp + pp + z3
    fill = (p - 1.0) / v
    pipe = (m + fill) * micro

    # -- data parallel and ZeRO 1/2 ---------------------------------------------------------
    d = grid.d
    g_d, nodes_d = group_span(grid.t * np.where(ulysses | ring, grid.c, 1), d, links.q)
    grad = profile.grad_comm_bytes * psi
    grad_calls = calls_for(grad, 0.0, "bucket", profile.bucket_bytes)
    tensors = lp * model.tensors_per_layer + model.extra_tensors
    params_bytes = 2.0 * psi
    gather_calls = calls_for(params_bytes, tensors, profile.allgather, profile.bucket_bytes)
    sharded = (grid.z == 1) | (grid.z == 2)
    whole_group = zg >= d
    allreduce = collective(2.0, d, g_d, nodes_d, grad, grad_calls, links, profile)
    scatter = collective(1.0, d, g_d, nodes_d, grad, grad_calls, links, profile)
    t_grad = np.where(sharded & whole_group, scatter, np.where(grid.z == 3, 0.0, allreduce))
    gather_all = collective(1.0, d, g_d, nodes_d, params_bytes, gather_calls, links, profile)
    gather_group = collective(1.0, zg, g_z, nodes_z, params_bytes, gather_calls, links, profile)
    t_gather = np.where(sharded, np.where(whole_group, gather_all, gather_group), 0.0)
    exposed_dp = np.maximum(0.0, t_grad - profile.omega_dp * backward)
    exposed_gather = 0.0 * t_gather if profile.overlap_param_gather else t_gather
    n_z = np.where(grid.z >= 1, np.maximum(zg, 1), 1).astype(np.float64)
    optimizer = 16.0 * psi / n_z / hbm

    total = pipe + exposed_dp + exposed_gather + optimizer
    return StepTime(
        total=total,
        compute=(m + fill) * stage,
        tp=(m + fill) * tp,
        cp=(m + fill) * cp,
        pp=(m + fill) * pp,
        bubble=fill * micro,
        dp=exposed_dp,
        zero=exposed_gather + (m + fill) * z3,
        optimizer=optimizer,
        grad_seconds=t_grad,
        backward_seconds=backward,
        stage_compute=stage,
    )
