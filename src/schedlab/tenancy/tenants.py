"""Which queue each job belongs to: from the queue file's ``match`` rules, else from the job's
tenant attributes (``tenant_key``: trace columns joined into a path, ``vc/user``), else by the
``unknown_tenant`` rule (create the queue, send the job to a default queue, or refuse the run).

Tenant attributes come from the trace: ``user`` from the job table, other columns read again
from the trace file by job id (as the network columns are). Philly's condensed trace names the
virtual cluster ``cluster``, which the job table already holds as ``user``: ``vc`` reads it.
Without a queue file, every tenant gets a queue with deserved 0, or with
``derive_deserved = "demand-share"`` a top-level deserved of ⌊GPU-time share × cluster GPUs⌋
(marked synthetic in the run's summary).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from schedlab.errors import InputError
from schedlab.model.jobs import JobTable
from schedlab.tenancy.config import TenancyConfig
from schedlab.tenancy.tree import QueueSpec, QueueTree, build_tree
from schedlab.traces.columns import read_text_table

#: The tenant columns each trace format offers by default (first: what a queue is).
DEFAULT_KEYS = {
    "philly": ("vc",),
    "helios": ("vc",),
    "alibaba": ("user",),
    "generic": ("queue",),
}
#: Tenants whose attribute is blank go here.
UNASSIGNED = "unassigned"


@dataclass
class Tenancy:
    """The tree and each job's leaf, for one run."""

    config: TenancyConfig
    tree: QueueTree
    leaf_of: np.ndarray
    #: Job id → leaf path, for engines that renumber jobs (serve, sorted replays).
    by_id: dict[str, int] = field(default_factory=dict)
    synthetic_deserved: bool = False

    def leaves_for(self, job_ids: np.ndarray) -> np.ndarray:
        """Leaf of each job id (all must be known)."""
        return np.fromiter(
            (self.by_id[str(j)] for j in job_ids), dtype=np.int64, count=len(job_ids)
        )


def trace_attributes(
    jobs: JobTable, keys: tuple[str, ...], trace: str | None, fmt: str | None
) -> dict[str, np.ndarray]:
    """Each attribute in ``keys`` for every job: ``user`` from the table, the rest from the
    trace file's columns of those names, matched by job id."""
    out: dict[str, np.ndarray] = {}
    wanted = []
    for key in keys:
        if key == "user" or (fmt == "philly" and key in ("vc", "cluster")):
            out[key] = np.asarray([str(u) for u in jobs.user], dtype=object)
        else:
            wanted.append(key)
    if not wanted:
        return out
    if trace is None:
        raise InputError(f"tenant_key {wanted[0]!r} needs a trace file to read it from")
    if fmt == "philly":
        raise InputError(
            f"tenant_key {wanted[0]!r}: the philly trace offers only vc (its 'cluster') and user",
            path=trace,
        )
    frame = read_text_table(trace, ["job_id"], wanted)
    missing = [k for k in wanted if k not in frame.columns]
    if missing:
        raise InputError(
            f"tenant_key names column {missing[0]!r}, which the trace does not have",
            path=trace,
        )
    row_of = {str(v).strip(): i for i, v in enumerate(frame["job_id"].tolist())}
    index = np.array([row_of.get(str(j), -1) for j in jobs.job_id], dtype=np.int64)
    for key in wanted:
        values = frame.stripped(key)
        out[key] = np.where(index >= 0, values[np.maximum(index, 0)], "")
    return out


def _matched(config: TenancyConfig, attrs: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    """Path of the first queue whose ``match`` fits each job ("" where none does)."""
    out = np.full(n, "", dtype=object)
    for spec in config.queues:
        for rule in spec.match:
            hit = np.ones(n, dtype=bool)
            for key, value in rule.items():
                if key not in attrs:
                    raise InputError(
                        f"{config.source}: queue {spec.path!r} matches on {key!r}, which is not "
                        f"among the job attributes read ({', '.join(sorted(attrs)) or 'none'}; "
                        "add it to tenant_key)"
                    )
                hit &= attrs[key] == value
            out[(out == "") & hit] = spec.path
    return out


def _derived(config: TenancyConfig, attrs: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    """The path the job's tenant attributes spell (``vc/user``; a value ``a/b`` is a path
    itself); blanks are 'unassigned'."""
    parts = []
    for key in config.tenant_key:
        col = np.asarray(attrs[key], dtype=object)
        col = np.where(col == "", UNASSIGNED, col)
        parts.append(np.asarray([_tenant(str(v)) for v in col], dtype=object))
    if not parts:
        return np.full(n, UNASSIGNED, dtype=object)
    out = parts[0]
    for p in parts[1:]:
        out = out + "/" + p
    return out


def assign(
    config: TenancyConfig,
    attrs: Mapping[str, np.ndarray],
    job_ids: np.ndarray,
    where: str = "",
) -> tuple[QueueTree, np.ndarray]:
    """The tree (with queues created for unknown tenants, if so configured) and each job's
    leaf; a job that names an inner queue or an unknown one (with ``unknown_tenant =
    "error"``) is an error naming the job and the tenant."""
    paths = job_paths(config, attrs, len(job_ids))
    bad = misfits(config, paths)
    if bad:
        i, (what, why) = next(iter(bad.items()))
        raise InputError(f"{where or config.source}: job {job_ids[i]!r} belongs to {what}, {why}")
    return tree_of(config, paths)


INNER = "which is an inner queue (jobs attach to leaves)"
UNDEFINED = 'which the queue file does not define (unknown_tenant = "error")'


def misfits(config: TenancyConfig, paths: np.ndarray) -> dict[int, tuple[str, str]]:
    """The jobs (by position) no queue can take, each with ``(what it names, why not)``: an
    unknown tenant under ``unknown_tenant = "error"``, or one that names (or would create,
    or falls back to) an inner queue. In the order a replay reports them (the unknown
    tenants by name, then the inner queues): a replay stops at the first, a live engine turns
    each away and serves the others."""
    declared = {_path(q.path) for q in config.queues}
    parents = {d.rsplit("/", 1)[0] for d in declared if "/" in d}
    rule = config.unknown_tenant
    tenants = [str(p) for p in paths.tolist()]
    unknown = sorted(set(tenants) - declared)
    refused: dict[str, tuple[str, str]] = {}
    for u in unknown:
        if rule == "error":
            refused[u] = (f"tenant {u!r}", INNER if u in parents else UNDEFINED)
        elif rule == "create" and u in parents:
            refused[u] = (f"tenant {u!r}", INNER)
    default = _path(config.default_queue or "") if rule == "default-queue" else None
    final = {
        t: (default if default is not None and t in unknown else t)
        for t in set(tenants)
        if t not in refused
    }
    nodes = declared | ({t for t in unknown if t not in refused} if rule == "create" else set())
    inner = {"/".join(n.split("/")[:k]) for n in nodes for k in range(1, n.count("/") + 1)}
    late = {t: (f"queue {f!r}", INNER) for t, f in sorted(final.items()) if f in inner}
    out: dict[int, tuple[str, str]] = {}
    for group in (refused, late):
        for i, t in enumerate(tenants):
            if t in group:
                out.setdefault(i, group[t])
    return out


def tree_of(config: TenancyConfig, paths: np.ndarray) -> tuple[QueueTree, np.ndarray]:
    """The tree and each job's leaf, for jobs :func:`misfits` finds nothing wrong with."""
    declared = {_path(q.path) for q in config.queues}
    unknown = sorted({str(p) for p in paths.tolist()} - declared)
    created: list[str] = []
    if unknown:
        if config.unknown_tenant == "default-queue":
            assert config.default_queue is not None
            paths = np.where(np.isin(paths, unknown), _path(config.default_queue), paths)
        else:
            created = unknown
    tree = build_tree(config.queues, config.source, created=created)
    leaf_of = np.fromiter((tree.index[p] for p in paths), dtype=np.int64, count=len(paths))
    return tree, leaf_of


def _path(name: str) -> str:
    return "/".join(p for p in name.split("/") if p)


def _tenant(value: str) -> str:
    """A tenant value as a queue path, empty segments dropped as in the queue file's names
    (``a//b/`` is ``a/b``); 'unassigned' when nothing is left."""
    path = value.strip("/")
    if "//" in path:
        path = _path(path)
    return path or UNASSIGNED


def job_paths(config: TenancyConfig, attrs: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    """Each job's queue path before the unknown-tenant rule: a ``match`` hit, else the path
    its tenant attributes spell."""
    paths = _matched(config, attrs, n)
    return np.where(paths == "", _derived(config, attrs, n), paths)


def demand_share(
    config: TenancyConfig,
    jobs: JobTable,
    paths: np.ndarray,
    gpus: int,
    notes: list[str] | None = None,
) -> TenancyConfig:
    """Top-level deserved GPUs = ⌊GPU-time share × cluster GPUs⌋ (``derive_deserved =
    "demand-share"``), for traces without quotas; other queues keep what the file says. A
    top-level quota the file gave and this replaces is said in ``notes`` (a warning)."""
    notes = [] if notes is None else notes
    top = np.asarray([str(p).split("/")[0] for p in paths], dtype=object)
    work = np.nan_to_num(jobs.duration, nan=0.0) * jobs.num_gpus
    total = float(work.sum())
    names, inverse = np.unique(top, return_inverse=True)
    per = np.bincount(inverse, weights=work, minlength=len(names))
    share = {
        str(name): int(np.floor(per[i] / total * gpus)) if total > 0 else 0
        for i, name in enumerate(names)
    }
    out = []
    for q in config.queues:
        if q.path in share:
            given = q.deserved.get("gpu")
            if given is not None and given != share[q.path]:
                notes.append(
                    f'derive_deserved = "demand-share" replaces the deserved GPUs the queue '
                    f"file gives {q.path!r} ({given:g} → {share[q.path]})"
                )
            q = replace(q, deserved={**q.deserved, "gpu": share[q.path]})
        out.append(q)
    known = {q.path for q in config.queues}
    out += [QueueSpec(name, deserved={"gpu": d}) for name, d in share.items() if name not in known]
    return replace(config, queues=tuple(out))


def resolve(
    config: TenancyConfig,
    jobs: JobTable,
    attrs: Mapping[str, np.ndarray],
    gpus: int,
    where: str = "",
) -> Tenancy:
    """The run's tenancy: deserved derived if asked, the tree, and every job's leaf."""
    synthetic = config.derive_deserved == "demand-share"
    notes: list[str] = []
    if synthetic:
        config = demand_share(config, jobs, job_paths(config, attrs, len(jobs)), gpus, notes)
    tree, leaf_of = assign(config, attrs, jobs.job_id, where)
    tree.warnings.extend(notes)
    by_id = {
        str(j): int(leaf) for j, leaf in zip(jobs.job_id.tolist(), leaf_of.tolist(), strict=True)
    }
    return Tenancy(config, tree, leaf_of, by_id, synthetic)
