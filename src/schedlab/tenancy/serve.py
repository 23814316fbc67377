"""Tenancy in ``schedlab serve slurm`` and ``serve kubernetes``: the share policy around the
served ordering, put there by the serve loop every engine shares
(:class:`schedlab.serve.loop.ServeLoop`).

How it coexists with Slurm's own priority: schedlab's jobs are held from submission until
schedlab releases them onto the nodes its policy chose, so Slurm's multifactor priority (and
its fair-share factor) never orders them; the share policy does, over the queues. Slurm still
accounts their usage (``sshare`` keeps counting), its limits still apply to a released job
(a job kept back by an association limit is reported, not forced), and jobs outside
schedlab's partition are Slurm's alone. A reclaim is a requeue (``scontrol requeuehold``),
as every preemption of serve: a checkpointing job resumes, others start again.

On Kubernetes only schedlab binds the pods that name it (``spec.schedulerName``), so the share
policy decides which of them start; the queues come from the queue file and, with
``--queues-from-cluster``, from Kueue's and KAI's queue objects and namespace ResourceQuotas
(:mod:`schedlab.tenancy.kube_queues`), and a pod's queue from its labels or namespace
(:mod:`schedlab.tenancy.live`). A reclaim is an eviction (the Eviction
API, disruption budgets respected, ``--grace``), as every preemption of ``serve kubernetes``:
the pod's controller makes it again and it waits in its queue. schedlab must not act on pods a
Kueue or KAI controller manages: those name their own scheduler, never schedlab's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from schedlab.errors import InputError
from schedlab.policies.ordering.queue_scheduler import QueueScheduler
from schedlab.policies.wiring import Policies
from schedlab.serve.client import SlurmError
from schedlab.tenancy.live import (
    JOB_ATTRIBUTES,
    SACCTMGR_ARGV,
    LiveTenancy,
    association_specs,
)
from schedlab.tenancy.registry import make_share_policy
from schedlab.tenancy.replay import TenancySpec, config_of
from schedlab.tenancy.scheduler import TenantScheduler
from schedlab.tenancy.tree import QueueSpec


def read_associations(client: Any) -> str:
    """``sacctmgr``'s association list, through the client (an error names the cause)."""
    reader = getattr(client, "associations", None)
    if reader is None:
        raise InputError("'--associations' needs a Slurm client that can run sacctmgr")
    try:
        return str(reader())
    except SlurmError as exc:
        raise InputError(
            f"cannot read Slurm's associations ({' '.join(SACCTMGR_ARGV)}): {exc}; without "
            "accounting, give the queues in a file (--queues) and send jobs with --account"
        ) from None


def wrap_live(
    spec: TenancySpec,
    policies: Policies,
    engine_queues: Callable[[], Sequence[QueueSpec]] | None = None,
    attributes: Sequence[str] = JOB_ATTRIBUTES,
    default_key: Sequence[str] = ("account",),
    flag: str = "--associations",
) -> LiveTenancy | None:
    """Put the share policy around the served scheduler (None: no tenancy).

    ``engine_queues``: reads the queue tree the engine itself keeps (Slurm's associations,
    Kubernetes' queue objects), asked for by ``flag``; None: not asked for. ``attributes`` and
    ``default_key``: what the engine's jobs offer as tenant keys."""
    if not spec.enabled and engine_queues is None:
        return None
    if not spec.enabled:
        raise InputError(f"'{flag}' needs '--tenancy POLICY' or '--queues FILE'")
    inner = policies.scheduler
    if not isinstance(inner, QueueScheduler):
        raise InputError(
            "tenancy works over an ordering (fifo, sjf, srtf, tiresias, edf); "
            f"'{getattr(inner, 'name', inner)}' sizes or places its jobs itself"
        )
    if inner.backfill:
        raise InputError("'--backfill' does not combine with tenancy (queues are best-effort)")
    config = config_of(spec)
    engine = list(engine_queues()) if engine_queues is not None else []
    live = LiveTenancy(config, engine, attributes, default_key)
    share = make_share_policy(
        live.config.policy, live.config.params.get(live.config.policy), live.config.source
    )
    policies.scheduler = TenantScheduler(inner, share, live.tenancy)
    return live


def slurm_queues(client: Any) -> Callable[[], list[QueueSpec]]:
    """The queue tree from Slurm's associations (``--associations``)."""
    return lambda: association_specs(read_associations(client))


def tenancy_record(spec: TenancySpec, **engine: Any) -> dict[str, Any]:
    """What the journal's ``serve`` record says of the tenancy options (and ``engine``'s own,
    e.g. ``queues_from_cluster``)."""
    return {
        "policy": spec.policy,
        "queues": spec.queues,
        "tenant_key": list(spec.tenant_key),
        "unknown_tenant": spec.unknown_tenant,
        **engine,
    }
