"""Tenancy: queues with quotas, fair shares, borrowing and reclaim, as one layer over the
existing orderings, placements and preemption (see ``docs/tenancy.md``).

A share policy (:mod:`schedlab.tenancy.policy`) computes per-queue fair shares and picks the
queue; the existing ordering picks the job in it; the policy's admission gate and the existing
placement decide; its reclaim rule picks victims, preempted through the existing preemption
model. :class:`TenantScheduler` wraps an ordering's scheduler into one scheduling policy, so
replay, sweeps and serve run it like any other.
"""

from schedlab.lazy import lazy_exports

# Imported on first use: a replay without tenancy reads only the option names (config, registry).
lazy_exports(
    __name__,
    {
        "TenancyConfig": "schedlab.tenancy.config",
        "read_queue_file": "schedlab.tenancy.config",
        "SharePolicy": "schedlab.tenancy.policy",
        "NONE": "schedlab.tenancy.registry",
        "make_share_policy": "schedlab.tenancy.registry",
        "share_policy_names": "schedlab.tenancy.registry",
        "TenantScheduler": "schedlab.tenancy.scheduler",
        "Tenancy": "schedlab.tenancy.tenants",
        "resolve": "schedlab.tenancy.tenants",
        "QueueSpec": "schedlab.tenancy.tree",
        "QueueTree": "schedlab.tenancy.tree",
        "build_tree": "schedlab.tenancy.tree",
    },
)

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
