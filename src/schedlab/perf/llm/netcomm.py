"""A plan's traffic on the network model's paths (``--topology``).

The planner chooses with the analytic α–β terms; the network model of :mod:`schedlab.network`
then carries the job's inter-node traffic over real links: the data-parallel gradient
reduction as one ring per DP group (ranks in node order, the bytes of a ring all-reduce on each
edge) in one phase, and the pipeline's point-to-point pairs (activations forward, gradients
backward, every micro-batch) in a second phase. Tensor and Ulysses traffic stays inside nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from schedlab.errors import InputError
from schedlab.network.collectives import Transfers
from schedlab.perf.llm.hardware import NodeNet
from schedlab.perf.llm.model import ModelConfig
from schedlab.perf.llm.profile import Profile
from schedlab.perf.llm.space import Plan, Shape

if TYPE_CHECKING:
    from schedlab.model.snapshot import Allocation
    from schedlab.network.topology import Topology
    from schedlab.perf.llm.planner import Result


def topology_shape(spec: str) -> tuple[Topology, Shape, NodeNet]:
    """The topology of ``--topology``, its hosts as one allocation, and the narrowest host's
    NICs (all of them together)."""
    from schedlab.network.generators import parse_topology

    topo = parse_topology(spec)
    if topo.num_hosts == 0:
        raise InputError(f"topology {spec!r} has no hosts")
    gpus = tuple(int(g) for g in topo.host_gpus)
    nic = float((topo.host_nics * topo.host_nic_gbps).min()) * 1e9 / 8
    return topo, Shape(gpus, max(gpus)), NodeNet(nic)


def whole_allocation(shape: Shape) -> Allocation:
    """Hosts ``0…n−1`` with their first GPUs, in the order of ``shape``."""
    return tuple((i, tuple(range(g))) for i, g in enumerate(shape.gpus_per_node))


def step_transfers(
    model: ModelConfig, plan: Plan, profile: Profile, grad_params: float
) -> Transfers:
    """Rank-level transfers of one step: phase 0 the DP rings, phase 1 the pipeline pairs."""
    t, c, d, p = plan.t, (plan.c if plan.sp in ("ulysses", "ring") else 1), plan.d, plan.p
    n = t * c * d * p
    ranks = np.arange(n, dtype=np.int64)
    src, dst, nbytes, phase = [], [], [], []
    if d > 1:
        stride = t * c
        k = (ranks // stride) % d
        nxt = ranks + np.where(k == d - 1, -(d - 1) * stride, stride)
        per = 2.0 * (d - 1) / d * profile.grad_comm_bytes * grad_params
        src.append(ranks)
        dst.append(nxt)
        nbytes.append(np.full(n, per))
        phase.append(np.zeros(n, dtype=np.int64))
    if p > 1:
        stride = t * c * d
        lo = ranks[ranks < n - stride]
        msg = plan.m * 2.0 * plan.b * model.seq_len * model.hidden / (t * c)
        for a, b in ((lo, lo + stride), (lo + stride, lo)):
            src.append(a)
            dst.append(b)
            nbytes.append(np.full(len(a), msg))
            phase.append(np.ones(len(a), dtype=np.int64))
    if not src:
        empty = np.zeros(0, np.int64)
        return Transfers(empty, empty, empty, np.zeros(0), empty, 0, 0)
    phases = np.concatenate(phase)
    return Transfers(
        phase=phases,
        src=np.concatenate(src),
        dst=np.concatenate(dst),
        nbytes=np.concatenate(nbytes),
        channel=np.full(len(phases), -1, dtype=np.int64),
        num_phases=2 if p > 1 else 1,
        steps=2 * (d - 1) + (2 * plan.m if p > 1 else 0),
    )


def isolated_comm(
    result: Result, model: ModelConfig, shape: Shape, topo: Topology, profile: Profile
) -> dict[str, float]:
    """The best plan's inter-node traffic on the topology, alone on it: the gradient
    reduction's time beside the analytic one, its exposed part, and the pipeline's transfers."""
    from schedlab.network.footprint import transfers_footprint
    from schedlab.network.routing import Routing

    psi = result.memory_parts["params_per_gpu"]
    tr = step_transfers(model, result.plan, profile, psi)
    fp = transfers_footprint(tr, whole_allocation(shape), topo, Routing("ecmp"))
    times = fp.phase_times()
    dp = float(times[0]) if len(times) else 0.0
    dp += 2 * (result.plan.d - 1) * profile.alpha_inter if result.plan.d > 1 else 0.0
    pp = float(times[1]) if len(times) > 1 else 0.0
    exposed = max(0.0, dp - profile.omega_dp * result.breakdown["backward_seconds"])
    return {
        "dp_seconds": dp,
        "analytic_dp_seconds": result.breakdown["grad_seconds"],
        "dp_exposed": exposed,
        "pp_seconds": pp,
        "cross_host_bytes": fp.cross_host_bytes,
        "cross_leaf_bytes": fp.cross_leaf_bytes,
    }
