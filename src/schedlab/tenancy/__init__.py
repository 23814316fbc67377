"""Tenancy: queues with quotas, fair shares, borrowing and reclaim, as one layer over the
existing orderings, placements and preemption (see ``docs/tenancy.md``).

A share policy (:mod:`schedlab.tenancy.policy`) computes per-queue fair shares and picks the
queue; the existing ordering picks the job in it; the policy's admission gate and the existing
placement decide; its reclaim rule picks victims, preempted through the existing preemption
model. :class:`TenantScheduler` wraps an ordering's scheduler into one scheduling policy, so
replay, sweeps and serve run it like any other.
"""

from schedlab.tenancy.config import TenancyConfig, read_queue_file
from schedlab.tenancy.policy import SharePolicy
from schedlab.tenancy.registry import NONE, make_share_policy, share_policy_names
from schedlab.tenancy.scheduler import TenantScheduler
from schedlab.tenancy.tenants import Tenancy, resolve
from schedlab.tenancy.tree import QueueSpec, QueueTree, build_tree

__all__ = [
    "NONE",
    "QueueSpec",
    "QueueTree",
    "SharePolicy",
    "Tenancy",
    "TenancyConfig",
    "TenantScheduler",
    "build_tree",
    "make_share_policy",
    "read_queue_file",
    "resolve",
    "share_policy_names",
]
