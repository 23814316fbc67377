"""Tenancy on a live cluster: the queue tree, and every cycle each job's queue from its attributes.

Slurm: queues from the accounting tree, jobs by their account (or user, partition). Kubernetes:
queues from the queue file, a pod's queue from its ``kueue.x-k8s.io/queue-name``,
``kai.scheduler/queue`` or ``schedlab.io/queue`` label, else its namespace (attributes ``queue``
and ``namespace``).

A queue is a Slurm association ``(account, user)``: ``sacctmgr -nP show assoc format=
Cluster,Account,User,Partition,ParentName,Fairshare,GrpTRES,QOS`` gives the account tree
(``ParentName``), each association's shares (``Fairshare``: the queue's weight and Slurm shares)
and its GPU limit (``GrpTRES`` ``gres/gpu=N``). Deserved quotas, which Slurm does not have, come
from a queue file when one is given (its queues are matched by account, or by account and
user). Without accounting (``AccountingStorageType=accounting_storage/none``) the queue file
alone defines the queues, and a job's queue is its ``--account``.

Every cycle the jobs in Slurm's queue are mapped afresh to the tree (a new account or user gets
a queue under the ``unknown_tenant`` rule), so the share policy decides on the live tree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from schedlab.errors import InputError
from schedlab.serve.slurm_state import JobInfo
from schedlab.tenancy.config import TenancyConfig
from schedlab.tenancy.tenants import Tenancy, assign, job_paths, misfits
from schedlab.tenancy.tree import QueueSpec

SACCTMGR_ARGV = [
    "sacctmgr",
    "-nP",
    "show",
    "assoc",
    "format=Cluster,Account,User,Partition,ParentName,Fairshare,GrpTRES,QOS",
]
#: The attributes a live Slurm job offers for ``tenant_key`` and ``match``.
JOB_ATTRIBUTES = ("account", "user", "partition")
#: The attributes a Kubernetes job (a pod or a gang) offers, and the default key.
KUBE_ATTRIBUTES = ("queue", "namespace")


def _gpu_limit(tres: str, where: str) -> float | None:
    """``gres/gpu=8`` (or ``gres/gpu:a100=8``) in a GrpTRES list, summed; None if absent."""
    total = None
    for part in filter(None, tres.split(",")):
        key, _, value = part.partition("=")
        if key == "gres/gpu" or key.startswith("gres/gpu:"):
            try:
                total = (total or 0.0) + float(value)
            except ValueError:
                raise InputError(f"{where}: GrpTRES {part!r} is not a number") from None
    return total


def association_specs(text: str) -> list[QueueSpec]:
    """Queue specs from ``sacctmgr -nP show assoc format=...`` (see the module docstring):
    accounts as inner queues under their parents, each user association a leaf queue that
    matches its account and user."""
    accounts: dict[str, tuple[str, float, float | None]] = {}
    users: list[tuple[str, str, float, float | None]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cols = line.split("|")
        if len(cols) < 7:
            raise InputError(f"sacctmgr output line {n}: {len(cols)} fields, not 8 ({line!r})")
        _, account, user, _, parent, fairshare, grptres = cols[:7]
        where = f"sacctmgr output line {n}"
        try:
            shares = 1.0 if fairshare in ("", "parent") else float(fairshare)
        except ValueError:
            raise InputError(f"{where}: Fairshare {fairshare!r} is not a number") from None
        limit = _gpu_limit(grptres, where)
        if user:
            users.append((account, user, shares, limit))
        elif account != "root":
            accounts[account] = (parent, shares, limit)

    def path(account: str) -> str:
        chain, seen = [], set()
        while account in accounts and account not in seen:
            seen.add(account)
            chain.append(account)
            account = accounts[account][0]
        return "/".join(reversed(chain))

    specs = [
        QueueSpec(path(a), weight=s, shares=s, limit={"gpu": lim} if lim is not None else {})
        for a, (_, s, lim) in accounts.items()
    ]
    for account, user, shares, limit in users:
        base = path(account) if account in accounts else account
        specs.append(
            QueueSpec(
                f"{base}/{user}",
                weight=shares,
                shares=shares,
                limit={"gpu": limit} if limit is not None else {},
                match=({"account": account, "user": user},),
            )
        )
    return specs


def merge(associations: Sequence[QueueSpec], config: TenancyConfig) -> TenancyConfig:
    """The association tree with the queue file's quotas laid over it: a file queue whose
    name equals an association's path (or its last part) sets that queue's fields."""
    by_path = {q.path: q for q in associations}
    by_last = {q.path.rsplit("/", 1)[-1]: q.path for q in associations}
    out = dict(by_path)
    for q in config.queues:
        target = q.path if q.path in by_path else by_last.get(q.path, q.path)
        base = by_path.get(target)
        out[target] = replace(q, path=target, match=q.match or (base.match if base else ()))
    return replace(config, queues=tuple(out.values()))


def slurm_attributes(infos: Sequence[JobInfo]) -> dict[str, list[str]]:
    """What Slurm jobs offer as tenant keys (:data:`JOB_ATTRIBUTES`)."""
    return {
        "account": [i.account for i in infos],
        "user": [i.user for i in infos],
        "partition": [i.partition for i in infos],
    }


class LiveTenancy:
    """The tenancy of a live cluster, refreshed from the jobs every cycle.

    ``attributes``: what the engine's jobs offer for ``tenant_key`` and ``match``;
    ``default_key``: the key when the queue file gives none."""

    def __init__(
        self,
        config: TenancyConfig,
        associations: Sequence[QueueSpec] = (),
        attributes: Sequence[str] = JOB_ATTRIBUTES,
        default_key: Sequence[str] = ("account",),
    ) -> None:
        if associations:
            config = merge(associations, config)
            key = config.tenant_key or ("account", "user")
        else:
            key = config.tenant_key or tuple(default_key)
        bad = [k for k in key if k not in attributes]
        if bad:
            raise InputError(
                f"{config.source}: tenant_key {bad[0]!r} is not a live job attribute "
                f"({', '.join(attributes)})"
            )
        self.config = replace(config, tenant_key=tuple(key))
        self.attributes = tuple(attributes)
        tree, _ = assign(self.config, {k: np.zeros(0, dtype=object) for k in key}, np.zeros(0))
        self.tenancy = Tenancy(self.config, tree, np.zeros(0, dtype=np.int64))

    def refusals(self, attrs: Mapping[str, Sequence[str]]) -> dict[int, str]:
        """Which jobs (by position in ``attrs``' columns) no queue takes, each with a one-line
        reason: a live engine turns those away one by one (as it does jobs that can never fit)
        where a replay would stop."""
        columns = {k: np.asarray(list(v), dtype=object) for k, v in attrs.items()}
        n = len(next(iter(columns.values()))) if columns else 0
        bad = misfits(self.config, job_paths(self.config, columns, n))
        return {i: f"belongs to {what}, {why}" for i, (what, why) in bad.items()}

    def refused_slurm(self, infos: Sequence[JobInfo]) -> dict[int, str]:
        """:meth:`refusals` of Slurm jobs, by job id."""
        bad = self.refusals(slurm_attributes(infos))
        return {infos[i].job_id: why for i, why in bad.items()}

    def refresh(self, infos: Sequence[JobInfo]) -> Tenancy:
        """Map a Slurm snapshot's jobs (``infos``, in snapshot order) to queues, in place."""
        return self.refresh_jobs([str(i.job_id) for i in infos], slurm_attributes(infos))

    def refresh_jobs(self, ids: Sequence[str], attrs: Mapping[str, Sequence[str]]) -> Tenancy:
        """Map jobs (``ids``, in snapshot order, with their ``attrs``) to queues, in place."""
        columns = {k: np.asarray(list(v), dtype=object) for k, v in attrs.items()}
        id_arr = np.asarray(list(ids), dtype=object)
        tree, leaf_of = assign(self.config, columns, id_arr, where="live jobs")
        self.tenancy.tree = tree
        self.tenancy.leaf_of = leaf_of
        self.tenancy.by_id = dict(zip(id_arr.tolist(), leaf_of.tolist(), strict=True))
        return self.tenancy
