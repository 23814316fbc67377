"""Slurm's habits in a job trace: time limits, job arrays and dependencies (the generic CSV's
``time_limit``, ``array`` and ``dependency`` columns), read and checked here, enforced in replay
by :mod:`schedlab.engines.job_gate`.

``time_limit``
    Seconds a run may last (Slurm's ``--time``); a run still going then is killed and the job
    ends as ``timeout``. Each run of a preempted and restarted job gets the whole limit again,
    as a requeued Slurm job does. Blank: no limit (or ``replay --time-limit``'s default).
``array``
    Slurm's ``--array`` spec: ``0-9``, ``1,3,5-7``, ``0-15:4`` (every 4th), with ``%N`` at the
    end for at most N tasks queued or running at once (``0-99%10``). The row becomes one job per
    task, named ``ID_TASK`` as Slurm names them, each with the row's request, run time and
    submit time.
``dependency``
    Slurm's ``--dependency``: ``TYPE:ID[:ID...]`` clauses joined by ``,`` (all must hold) or
    ``?`` (any may hold; not both joiners in one spec, as in Slurm). Types: ``after`` (the jobs
    have started, or ended without starting), ``afterany`` (they have ended, however),
    ``afterok`` (they completed), ``afternotok`` (they ended otherwise: timed out, rejected or
    cancelled). An ID is a job of the trace, an array's ID (all its tasks) or one task
    (``ID_TASK``). A job waits, outside the queue the policy sees, until its dependency holds;
    once it can never hold (``afterok`` on a job that timed out), the job is cancelled — as Slurm
    does with ``kill_invalid_depend`` (without it, Slurm leaves such a job pending for ever).
    A dependency on a job that is not in the trace (or that the reader dropped) and a cycle of
    dependencies are refused, as Slurm refuses them at submission.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.errors import InputError
from schedlab.model.jobs import JobTable
from schedlab.traces.columns import fail_at_first, float_column, line_of

#: The generic CSV's columns read here.
SLURM_COLUMNS = ("time_limit", "dependency", "array")
DEPENDENCY_TYPES = ("after", "afterany", "afterok", "afternotok")
#: The joiners of dependency clauses: all of them, or any of them.
ALL, ANY = ",", "?"
#: Most tasks one array row may expand to (Slurm's default MaxArraySize is 1001).
MAX_ARRAY_TASKS = 100_000

_RANGE = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?")


@dataclass(frozen=True)
class ArraySpec:
    """The task IDs of an array row and its throttle (0: none)."""

    tasks: tuple[int, ...]
    throttle: int = 0


def parse_array(text: str) -> ArraySpec:
    """``0-9%2`` → tasks 0..9, at most 2 at once; raises ValueError saying what is wrong."""
    spec, _, limit = text.strip().partition("%")
    throttle = 0
    if limit:
        if not limit.isdigit() or int(limit) < 1:
            raise ValueError(f"the throttle after '%' must be a whole number ≥ 1 (got {limit!r})")
        throttle = int(limit)
    tasks: list[int] = []
    for part in spec.split(","):
        m = _RANGE.fullmatch(part.strip())
        if m is None:
            raise ValueError(
                f"'{part}' is not a task ID or range (Slurm's form: 0-9, 1,3,5-7, 0-15:4, %N)"
            )
        first = int(m[1])
        last = int(m[2]) if m[2] is not None else first
        step = int(m[3]) if m[3] is not None else 1
        if last < first or step < 1:
            raise ValueError(f"'{part}' is an empty range")
        if (last - first) // step + 1 + len(tasks) > MAX_ARRAY_TASKS:
            raise ValueError(f"more than {MAX_ARRAY_TASKS:,} tasks")
        tasks.extend(range(first, last + 1, step))
    if len(set(tasks)) != len(tasks):
        raise ValueError("a task ID appears twice")
    return ArraySpec(tuple(tasks), throttle)


@dataclass(frozen=True)
class Dependency:
    """A parsed ``--dependency``: clauses of (type, job IDs), all or any of them."""

    joiner: str
    clauses: tuple[tuple[str, tuple[str, ...]], ...]

    def ids(self) -> list[str]:
        return [i for _, ids in self.clauses for i in ids]

    def text(self) -> str:
        return self.joiner.join(f"{kind}:{':'.join(ids)}" for kind, ids in self.clauses)


def parse_dependency(text: str) -> Dependency | None:
    """``afterok:a:b,afterany:c`` → its clauses (None for a blank cell); ValueError if bad."""
    text = text.strip()
    if not text:
        return None
    if ALL in text and ANY in text:
        raise ValueError("use ',' (all) or '?' (any) between clauses, not both (as Slurm)")
    joiner = ANY if ANY in text else ALL
    clauses = []
    for clause in text.split(joiner):
        kind, _, rest = clause.strip().partition(":")
        ids = tuple(i.strip() for i in rest.split(":"))
        if kind not in DEPENDENCY_TYPES:
            raise ValueError(
                f"unknown dependency type {kind!r} (known: {', '.join(DEPENDENCY_TYPES)})"
            )
        if not rest or any(not i for i in ids):
            raise ValueError(f"'{clause.strip()}' names no job (form: {kind}:ID[:ID...])")
        clauses.append((kind, ids))
    return Dependency(joiner, tuple(clauses))


# -- the generic CSV's columns ------------------------------------------------------------------
def read_columns(frame: pd.DataFrame, path: Path) -> dict[str, object]:
    """``time_limit`` (seconds > 0) and the checked text of ``dependency`` and ``array``, each
    bad cell an error naming its line and column; the texts are resolved by :func:`expand`."""
    cols: dict[str, object] = {}
    if "time_limit" in frame.columns:
        limit = float_column(frame, "time_limit", path, allow_blank=True)
        fail_at_first(
            frame, limit == 0, path, "time_limit", lambda i: "'time_limit' must be > 0 seconds"
        )
        cols["time_limit"] = limit
    for column, parse in (("dependency", parse_dependency), ("array", parse_array)):
        if column not in frame.columns:
            continue
        texts = frame[column].astype(str).str.strip()
        for i, text in enumerate(texts):
            if not text:
                continue
            try:
                parse(text)
            except ValueError as exc:
                raise InputError(
                    f"bad '{column}' {text!r}: {exc}",
                    path=str(path),
                    row=line_of(frame, i),
                    column=column,
                ) from None
        cols[column] = texts.to_numpy(dtype=object)
    return cols


def expand(jobs: JobTable, array: np.ndarray | None, lines: dict[str, int], path: Path) -> JobTable:
    """One job per array task (``ID_TASK``), then every dependency resolved to the jobs it names
    (an array's ID to all its tasks) and checked: each named job exists, and no cycle.
    ``array``: each job's array spec text; ``lines``: each file job ID's line (for errors)."""
    line_of_job = dict(lines)
    if array is not None and (array != "").any():
        index, ids, groups, throttles = [], [], [], []
        for k, (job_id, text) in enumerate(zip(jobs.job_id.tolist(), array.tolist(), strict=True)):
            if not text:
                index.append(k)
                ids.append(job_id)
                groups.append("")
                throttles.append(0)
                continue
            spec = parse_array(text)
            for task in spec.tasks:
                index.append(k)
                ids.append(f"{job_id}_{task}")
                groups.append(job_id)
                throttles.append(spec.throttle)
                line_of_job[f"{job_id}_{task}"] = lines[job_id]
        jobs = jobs.take(np.asarray(index, dtype=np.int64))
        jobs = replace(
            jobs,
            job_id=np.asarray(ids, dtype=object),
            array_job=np.asarray(groups, dtype=object),
            array_throttle=np.asarray(throttles, dtype=np.int64),
        )
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise InputError(
                f"array task {dup!r} has the ID of another job",
                path=str(path),
                row=line_of_job[dup],
                column="job_id",
            )
    if not (jobs.dependency != "").any():
        return jobs
    tasks: dict[str, list[str]] = {}
    for job_id, group in zip(jobs.job_id.tolist(), jobs.array_job.tolist(), strict=True):
        if group:
            tasks.setdefault(group, []).append(job_id)
    known = set(jobs.job_id.tolist())
    resolved = []
    for job_id, text in zip(jobs.job_id.tolist(), jobs.dependency.tolist(), strict=True):
        dep = parse_dependency(text)
        if dep is None:
            resolved.append("")
            continue
        clauses = []
        for kind, ids in dep.clauses:
            names: list[str] = []
            for name in ids:
                if name in tasks:
                    names += tasks[name]
                elif name in known:
                    names.append(name)
                else:
                    raise InputError(
                        f"job {job_id!r} depends on job {name!r}, which is not in the trace "
                        "(or was dropped by the reader)",
                        path=str(path),
                        row=line_of_job[job_id],
                        column="dependency",
                    )
            clauses.append((kind, tuple(names)))
        resolved.append(Dependency(dep.joiner, tuple(clauses)).text())
    jobs = replace(jobs, dependency=np.asarray(resolved, dtype=object))
    _refuse_cycles(jobs, line_of_job, path)
    return jobs


def _refuse_cycles(jobs: JobTable, lines: dict[str, int], path: Path) -> None:
    """A job that (through others) waits for itself would wait for ever: refused."""
    needs = {
        job_id: (parse_dependency(text) or Dependency(ALL, ())).ids()
        for job_id, text in zip(jobs.job_id.tolist(), jobs.dependency.tolist(), strict=True)
    }
    done: set[str] = set()
    for root in needs:
        if root in done:
            continue
        path_ids: list[str] = []
        on_path: set[str] = set()
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            node, k = stack.pop()
            if k == 0:
                path_ids.append(node)
                on_path.add(node)
            children = needs.get(node, [])
            if k < len(children):
                stack.append((node, k + 1))
                child = children[k]
                if child in on_path:
                    cycle = [*path_ids[path_ids.index(child) :], child]
                    raise InputError(
                        f"dependency cycle {' → '.join(cycle)}: these jobs would wait for ever",
                        path=str(path),
                        row=lines[child],
                        column="dependency",
                    )
                if child not in done:
                    stack.append((child, 0))
            else:
                on_path.discard(node)
                path_ids.pop()
                done.add(node)
