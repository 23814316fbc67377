"""``tiresias-skew``: Tiresias' consolidation rule (NSDI '19) as the Titan paper compares with it.

Tiresias consolidates a job only when its model is skewed, i.e. one tensor dominates the
gradient: spread over machines, that tensor's all-reduce is slow. Skew is the largest tensor's
share of the gradient (:data:`~schedlab.network.collectives.LARGEST_TENSOR_SHARE`). A skew of at
least :data:`SKEW_THRESHOLD` (or an unknown model: consolidating is the safe choice) gets the
``consolidate`` rule; a balanced model is spread fragments-first.
"""

from __future__ import annotations

from schedlab.network.collectives import LARGEST_TENSOR_SHARE, model_key
from schedlab.policies.placement.job_placement import JobRequest
from schedlab.policies.placement.network.machines import (
    BlockPlacement,
    Blocks,
    Machines,
    consolidate_blocks,
    fragments_first_blocks,
)

#: Skew at or above which a job is consolidated (ours; the paper gives no number).
SKEW_THRESHOLD = 0.5


def skew_of(model: str) -> float | None:
    """Largest-tensor share of a model's gradient, or None for a model without one."""
    return LARGEST_TENSOR_SHARE.get(model_key(model))


class TiresiasSkew(BlockPlacement):
    name = "tiresias-skew"
    summary = (
        "consolidate models whose largest tensor is ≥ 50 % of the gradient, else fragments-first "
        "(Tiresias, NSDI '19, as compared in Titan, ICNP '24)"
    )

    def model_of(self, job: int) -> str:
        """The model the run gives ``job``: the network's (which draws one for jobs the trace
        names none for) when replay has one, else the trace's; "" when unknown."""
        if job < 0:
            return ""
        net = self.ctx.network
        if net is not None:
            return str(net.m.comm.model[job])
        jobs = self.ctx.jobs
        return str(jobs.model_name[job]) if jobs is not None and job < len(jobs) else ""

    def blocks(self, m: Machines, request: JobRequest) -> Blocks | None:
        skew = skew_of(self.model_of(request.job))
        if skew is None or skew >= SKEW_THRESHOLD:
            return consolidate_blocks(m, request.num_gpus)
        return fragments_first_blocks(m, request.num_gpus)
