"""The job list from ``squeue -O`` text instead of ``squeue --json``: the same records, faster.

``squeue --json`` (Slurm 22.05) serialises every field of every job it knows, finished ones
included, and ignores ``--states``: with a thousand held jobs it takes about 0.6 s, most of a
scheduling cycle. ``squeue -O`` with just the fields serve reads takes about a tenth of that.
This module asks for those fields and turns each row into the dictionary ``squeue --json`` would
have given (the keys :func:`schedlab.serve.slurm_state.parse_job` reads), so everything after
the read is unchanged.

The text form lacks three things, fetched with ``scontrol show job -o`` for the few jobs that need
them:

* an array's throttle (``%N``): once per array with pending tasks, kept for
  :data:`THROTTLE_TTL` seconds (a changed throttle is seen within that time);
* which GPUs a running job holds on each node (JSON's ``gres_detail``): only for a job on
  several nodes that asked for GPUs per job or per task, whose split over its nodes cannot be
  told otherwise; kept while it runs. Other running jobs hold their per-node count (devices are
  Slurm's choice, not serve's).

Two words differ from JSON's: the state names the ``COMPLETING`` flag where JSON gives the base
state (a job being requeued — held, marked queued by serve, or so described — is read as
``PENDING``, as JSON says; a job ending stays ``COMPLETING``, holding its GPUs until it is gone),
and the reason is Slurm's description when it has one (``job requeued in held state`` where JSON
says ``JobHeldUser``).

Rows are read robustly: each field ends with a unit separator and each row with a record
separator (control characters no job name or comment holds in practice), times are asked in
Slurm's standard format, and a row that does not parse raises :class:`TextFormatError`, on
which the client reads ``squeue --json`` instead for that cycle.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from schedlab.errors import SchedlabError
from schedlab.serve.hostlist import expand_hostlist

FIELD_END = "\x1f"
ROW_END = "\x1e"
#: Seconds an array's throttle is kept before it is asked again.
THROTTLE_TTL = 30.0

Raw = dict[str, Any]

#: ``squeue -O`` field → the ``squeue --json`` key it fills (order = column order).
FIELDS: tuple[tuple[str, str], ...] = (
    ("JobID", "job_id"),
    ("ArrayJobID", "array_job_id"),
    ("ArrayTaskID", "array_task_id"),
    ("Name", "name"),
    ("UserName", "user_name"),
    ("Account", "account"),
    ("Partition", "partition"),
    ("State", "job_state"),
    ("Reason", "state_reason"),
    ("PriorityLong", "priority"),
    ("tres-per-node", "tres_per_node"),
    ("tres-per-job", "tres_per_job"),
    ("tres-per-task", "tres_per_task"),
    ("NTPerNode", "tasks_per_node"),
    ("NumTasks", "tasks"),
    ("NodeList", "nodes"),
    ("NumNodes", "node_count"),
    ("TimeLimit", "time_limit"),
    ("ReqNodes", "required_nodes"),
    ("SubmitTime", "submit_time"),
    ("StartTime", "start_time"),
    ("EndTime", "end_time"),
    ("EligibleTime", "eligible_time"),
    ("RestartCnt", "restart_cnt"),
    ("Dependency", "dependency"),
    ("Reservation", "resv_name"),
    ("OverSubscribe", "shared"),
    ("admin_comment", "admin_comment"),
    ("Comment", "comment"),
)
_NUMBERS = {"job_id", "array_job_id", "priority", "tasks_per_node", "tasks", "node_count"}
_NUMBERS |= {"restart_cnt"}
_TIMES = {"submit_time", "start_time", "end_time", "eligible_time"}
#: What squeue prints for a value that is not there (a number, a time, a list).
_EMPTY = {"", "N/A", "(null)", "None", "Unknown", "NONE"}
#: Free text (names, comments, Slurm's reason, where "None" is a value): only these are empty.
_FREE_TEXT = {"name", "user_name", "account", "state_reason", "comment", "admin_comment"}
#: ``OverSubscribe`` → JSON's ``shared`` (``NO`` is ``--exclusive``).
_SHARED = {"NO": "none", "USER": "user", "MCS": "mcs", "TOPO": "topo"}


class TextFormatError(ValueError):
    """A row of ``squeue -O`` output that does not read as expected."""


def squeue_argv() -> list[str]:
    """Every job (any state), one row per array task, no header, the fields of :data:`FIELDS`."""
    spec = ",".join(
        f"{name}:{ROW_END if k == len(FIELDS) - 1 else FIELD_END}"
        for k, (name, _) in enumerate(FIELDS)
    )
    return ["squeue", "--noheader", "--array", "--states=all", f"--Format={spec}"]


def _time(text: str) -> float:
    """Slurm's standard local time (``2026-11-26T10:45:12``) as Unix seconds; 0 when unset."""
    if text in _EMPTY:
        return 0.0
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise TextFormatError(f"time {text!r}") from None


def time_limit_minutes(text: str) -> float | None:
    """``[D-]H:MM:SS``, ``M:SS`` or ``UNLIMITED`` as minutes (None: no limit), as JSON gives."""
    if text in _EMPTY or text in ("UNLIMITED", "INFINITE", "INVALID"):
        return None
    days, _, rest = text.rpartition("-")
    parts = rest.split(":")
    try:
        numbers = [int(p) for p in parts]
        d = int(days) if days else 0
    except ValueError:
        raise TextFormatError(f"time limit {text!r}") from None
    if len(numbers) == 3:
        h, m, s = numbers
    elif len(numbers) == 2:
        h, (m, s) = 0, numbers
    elif len(numbers) == 1:
        h, m, s = 0, numbers[0], 0
    else:
        raise TextFormatError(f"time limit {text!r}")
    return d * 1440 + h * 60 + m + s / 60.0


def parse_row(values: list[str]) -> Raw:
    """One row, as the ``squeue --json`` job entry it stands for (arrays not yet regrouped)."""
    if len(values) != len(FIELDS):
        raise TextFormatError(f"{len(values)} fields, not {len(FIELDS)}")
    raw: Raw = {}
    for (_, key), value in zip(FIELDS, values, strict=True):
        if key in _NUMBERS:
            if value in _EMPTY:
                raw[key] = 0
                continue
            try:
                raw[key] = int(value)
            except ValueError:
                raise TextFormatError(f"{key} {value!r}") from None
        elif key in _TIMES:
            raw[key] = _time(value)
        elif key == "time_limit":
            raw[key] = time_limit_minutes(value)
        elif key == "shared":
            raw[key] = _SHARED.get(value.upper())
        elif key in _FREE_TEXT:
            raw[key] = "" if value == "(null)" else value
        else:
            raw[key] = "" if value in _EMPTY else value
    task = raw["array_task_id"]
    if task == "":  # not an array: JSON says array_job_id 0
        raw["array_job_id"], raw["array_task_id"] = 0, None
    else:
        try:
            raw["array_task_id"] = int(task)
        except ValueError:
            raise TextFormatError(f"array task {task!r}") from None
    raw["array_task_string"], raw["array_max_tasks"] = "", 0
    if raw["job_state"] == "COMPLETING" and _requeued(raw):
        # squeue's text names the COMPLETING flag where JSON gives the base state: a job
        # being requeued (a preemption) is PENDING there already, its GPUs no longer counted.
        raw["job_state"] = "PENDING"
    return raw


def _requeued(raw: Raw) -> bool:
    """A COMPLETING job on its way back to the queue: held (priority 0), marked queued by
    serve before its ``requeuehold``, or so described by Slurm."""
    return (
        raw["priority"] == 0
        or raw["admin_comment"] == "schedlab:queued"
        or "requeue" in raw["state_reason"].lower()
    )


def read_rows(text: str) -> list[Raw]:
    """Every row of :func:`squeue_argv`'s output."""
    rows = []
    for chunk in text.split(ROW_END):
        chunk = chunk.strip("\n")
        if not chunk:
            continue
        rows.append(parse_row(chunk.split(FIELD_END)))
    return rows


def compact(ids: Iterable[int]) -> str:
    """``[2, 3, 4, 6]`` → ``"2-4,6"``."""
    out: list[str] = []
    run: list[int] = []
    for k in sorted(ids):
        if run and k == run[-1] + 1:
            run.append(k)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [k]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def regroup_arrays(rows: list[Raw], throttle: Callable[[int], int]) -> list[Raw]:
    """Rows as JSON's records: the unsplit tasks of an array (``--array`` prints one row each,
    all with the array's job id) become one record with ``array_task_string``, and every task
    of an array with pending tasks gets the array's throttle (``throttle(array id)``)."""
    pending_arrays = {
        r["array_job_id"] for r in rows if r["array_job_id"] and r["job_state"] == "PENDING"
    }
    limits = {a: throttle(a) for a in sorted(pending_arrays)}
    by_id: dict[int, list[Raw]] = {}
    for r in rows:
        by_id.setdefault(r["job_id"], []).append(r)
    out = []
    for group in by_id.values():
        first = group[0]
        limit = limits.get(first["array_job_id"], 0) if first["array_job_id"] else 0
        if len(group) > 1:  # an array's unsplit rest
            tasks = compact(r["array_task_id"] for r in group)
            rest = dict(first, array_task_id=None, array_max_tasks=limit)
            rest["array_task_string"] = tasks + (f"%{limit}" if limit else "")
            out.append(rest)
            continue
        out.append(dict(first, array_max_tasks=limit) if limit else first)
    return out


# -- scontrol show job -o: what the text form lacks -----------------------------------------------
_THROTTLE = re.compile(r"\bArrayTaskThrottle=(\d+)")
_NODE_GRES = re.compile(r"\bNodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=(\S*)")


def throttle_of(text: str) -> int:
    """An array's throttle in ``scontrol show job -o`` output (0: none)."""
    m = _THROTTLE.search(text)
    return int(m.group(1)) if m else 0


def gres_detail(text: str) -> list[str] | None:
    """``scontrol show job -d -o`` of one job as JSON's ``gres_detail``: one ``gpu:N(IDX:…)``
    entry per node, in the job's node order (None when the output has no per-node lines)."""
    # The per-node part lies between JOB_GRES= and MinCPUsNode=; free text (the job's name
    # before, its comments after) stays out of it.
    line = text.split("JOB_GRES=", 1)[-1].split(" MinCPUsNode=", 1)[0]
    out: list[str] = []
    for nodes, gres in _NODE_GRES.findall(line):
        out += [gres] * len(expand_hostlist(nodes))
    return out or None


class Supplements:
    """The ``scontrol`` look-ups :func:`read_squeue_text` needs, with their caches."""

    def __init__(self, show_job: Callable[[str], str], clock: Callable[[], float] = time.monotonic):
        self.show_job = show_job
        self.clock = clock
        self._throttle: dict[int, tuple[float, int]] = {}
        self._detail: dict[tuple[int, float], list[str] | None] = {}

    def throttle(self, array_id: int) -> int:
        """The array's throttle; a failed look-up makes the whole read fall back to JSON (a
        throttle taken as none would release too many tasks)."""
        now = self.clock()
        known = self._throttle.get(array_id)
        if known is None or now - known[0] > THROTTLE_TTL:
            try:
                known = (now, throttle_of(self.show_job(str(array_id))))
            except SchedlabError as exc:
                raise TextFormatError(f"throttle of array {array_id}: {exc}") from None
            self._throttle[array_id] = known
        return known[1]

    def detail(self, raw: Raw) -> list[str] | None:
        """Per-node GPUs of a running job (None, not kept, when Slurm cannot say now: the
        snapshot then spreads its GPUs over its nodes, as for any job without the detail)."""
        key = (int(raw["job_id"]), float(raw["start_time"]))
        if key not in self._detail:
            try:
                self._detail[key] = gres_detail(self.show_job(str(raw["job_id"])))
            except SchedlabError:
                return None
        return self._detail[key]

    def forget_except(self, running: set[tuple[int, float]]) -> None:
        """Drop what is kept for jobs no longer running."""
        self._detail = {k: v for k, v in self._detail.items() if k in running}


ACTIVE = frozenset({"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STAGE_OUT"})


def _needs_detail(raw: Raw) -> bool:
    """A running job on several nodes whose GPUs are per job or per task: its split over the
    nodes is known only from Slurm's per-node record."""
    if raw["job_state"] not in ACTIVE or int(raw["node_count"]) < 2:
        return False
    return bool(raw["tres_per_job"] or raw["tres_per_task"]) and "gpu" in (
        raw["tres_per_job"] + raw["tres_per_task"]
    )


def read_squeue_text(text: str, more: Supplements) -> dict[str, Any]:
    """``squeue -O`` output (:func:`squeue_argv`) as ``squeue --json``'s ``{"jobs": [...]}``."""
    jobs = regroup_arrays(read_rows(text), more.throttle)
    running = set()
    for raw in jobs:
        if _needs_detail(raw):
            running.add((int(raw["job_id"]), float(raw["start_time"])))
            detail = more.detail(raw)
            if detail is not None:
                raw["gres_detail"] = detail
    more.forget_except(running)
    return {"jobs": jobs, "errors": []}
