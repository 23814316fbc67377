"""Failure-event traces: a CSV of failures to replay instead of (or beside) random processes.

Columns: ``time`` (seconds from the start of the replay), ``component`` (gpu, node, nic, link,
switch, software), ``id`` (a node name; ``node:gpu`` for a GPU; a job id for software),
``category`` (free text, for reports; optional) and ``repair_s`` (seconds out; optional, default
the class's repair time). Without a topology, nic, link and switch events name the node they cut
off.

``acme-xid``: the per-GPU ``XID_ERRORS.csv`` of AcmeTrace's utilisation logs (column ``Time``,
then one column per ``<ip>-<gpu>``, each cell the XID code then, blank or 0 for none) becomes
GPU failures: a code in the fatal set (default 48, 64, 74, 79, 95) is a failure of that GPU;
{63, 92, 94} drain the node after its jobs (here: a node event after the GPU's current job, as a
node failure with the class's repair); {13, 31, 43} are application errors and ignored
(configurable, ours). Consecutive samples of one code on one GPU are one event. Nodes are the
IPs in order of first appearance (node 0, 1, …).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.failures.spec import CLASSES
from schedlab.input_files import check_input_file, reading

FATAL_XID = frozenset({48, 64, 74, 79, 95})
DRAIN_XID = frozenset({63, 92, 94})
IGNORED_XID = frozenset({13, 31, 43})
_XID_COLUMN = re.compile(r"(\d{1,3}(?:\.\d{1,3}){3})-(\d+)")


@dataclass(frozen=True)
class RawEvent:
    """One row as read: the id still a name (resolved against the cluster and jobs later)."""

    time: float
    component: str
    ident: str
    category: str
    repair: float  # NaN: the class's default
    row: int


@dataclass(frozen=True)
class TraceEvent:
    time: float
    component: str
    node: int  # -1 for software
    gpu: int  # -1 unless a GPU
    job: int  # -1 unless software
    category: str
    repair: float
    order: int  # row in the file (ties keep file order)


def read_failure_trace(path: str | Path) -> list[RawEvent]:
    """The events of a failure trace (or an AcmeTrace XID log); a missing, unreadable or
    non-UTF-8 file is a one-line error naming it, never a traceback from the csv reader."""
    file = check_input_file(path, "failure trace")
    try:
        with reading(file, "failure trace"), open(file, newline="", encoding="utf-8-sig") as fh:
            return _read_rows(fh, file)
    except csv.Error as exc:  # e.g. a NUL byte: valid UTF-8, but no CSV
        raise InputError(f"failure trace is not a CSV file ({exc})", path=str(file)) from None


def _read_rows(fh, file: Path) -> list[RawEvent]:
    """The rows of an open failure trace: events, or an error naming file, row and column."""
    reader = csv.reader(fh)
    header = [h.strip() for h in next(reader, [])]
    if header and header[0] == "Time" and any(_XID_COLUMN.fullmatch(h) for h in header):
        return _xid_events(header, reader, str(file))
    need = ("time", "component", "id")
    missing = [c for c in need if c not in header]
    if missing:
        raise InputError(
            f"failure trace lacks column {missing[0]!r} (needs time, component, id; "
            "optional category, repair_s)",
            path=str(file),
            row=1,
        )
    col = {name: header.index(name) for name in header}
    out = []
    for line, cells in enumerate(reader, start=2):
        if not any(c.strip() for c in cells):
            continue

        def get(name: str, cells: list[str] = cells) -> str:
            i = col.get(name, len(cells))
            return cells[i].strip() if i < len(cells) else ""

        time = _float(get("time"), str(file), line, "time")
        component = get("component")
        if component not in CLASSES:
            raise InputError(
                f"component must be one of {', '.join(CLASSES)} (got {component!r})",
                path=str(file),
                row=line,
                column="component",
            )
        ident = get("id")
        if not ident:
            raise InputError("id is blank", path=str(file), row=line, column="id")
        repair = get("repair_s") if "repair_s" in col else ""
        seconds = _float(repair, str(file), line, "repair_s") if repair else math.nan
        category = (get("category") if "category" in col else "") or component
        out.append(RawEvent(time, component, ident, category, seconds, line))
    return out


def _float(text: str, path: str, row: int, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(
            f"{column} must be a number (got {text!r})", path=path, row=row, column=column
        ) from None
    if not math.isfinite(value) or value < 0:
        raise InputError(f"{column} must be ≥ 0 (got {text})", path=path, row=row, column=column)
    return value


def _xid_code(cell: str, path: str, row: int, column: str) -> int:
    """An XID cell: a code, or 0 for none (blank, nan, 0); anything else names its cell."""
    if not cell or cell.lower() == "nan":
        return 0
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise InputError(
            f"an XID code must be a whole number ≥ 0 (got {cell!r})",
            path=path,
            row=row,
            column=column,
        )
    return int(value)


def _xid_events(header: list[str], reader, path: str) -> list[RawEvent]:
    """The ``acme-xid`` import (see the module docstring)."""
    gpus = []
    ips: dict[str, int] = {}
    for h in header[1:]:
        m = _XID_COLUMN.fullmatch(h)
        if m is None:
            raise InputError(f"column {h!r} is not <ip>-<gpu>", path=path, row=1, column=h)
        ips.setdefault(m[1], len(ips))
        gpus.append((ips[m[1]], int(m[2])))
    last = [0] * len(gpus)
    start: float | None = None
    out: list[RawEvent] = []
    for line, cells in enumerate(reader, start=2):
        if not cells:
            continue
        try:
            stamp = datetime.fromisoformat(cells[0].strip()).timestamp()
        except ValueError:
            raise InputError(
                f"Time must be a date and time (got {cells[0]!r})",
                path=path,
                row=line,
                column="Time",
            ) from None
        start = stamp if start is None else start
        for i, cell in enumerate(cells[1 : len(gpus) + 1]):
            cell = cell.strip()
            code = _xid_code(cell, path, line, header[i + 1])
            if code and code != last[i] and code not in IGNORED_XID:
                node, gpu = gpus[i]
                if code in FATAL_XID:
                    out.append(
                        RawEvent(
                            stamp - start, "gpu", f"#{node}:{gpu}", f"XID {code}", math.nan, line
                        )
                    )
                elif code in DRAIN_XID:
                    out.append(
                        RawEvent(
                            stamp - start, "node", f"#{node}", f"XID {code} (drain)", math.nan, line
                        )
                    )
            last[i] = code
    return out


def resolve(
    raw: list[RawEvent], names: np.ndarray, gpus: np.ndarray, job_ids: np.ndarray, source: str
) -> list[TraceEvent]:
    """Names → node, GPU and job indices; InputError naming the row for anything unknown."""
    node_of = {str(n): i for i, n in enumerate(names.tolist())}
    job_of = {str(j): i for i, j in enumerate(job_ids.tolist())}
    out = []
    for ev in raw:
        node = gpu = job = -1
        if ev.component == "software":
            if ev.ident not in job_of:
                raise InputError(
                    f"failure trace names unknown job {ev.ident!r}",
                    path=source,
                    row=ev.row,
                    column="id",
                )
            job = job_of[ev.ident]
        else:
            name, _, slot = ev.ident.partition(":") if ev.component == "gpu" else (ev.ident, "", "")
            if name.startswith("#") and name[1:].isdigit():
                node = int(name[1:])
                if node >= len(names):
                    raise InputError(
                        f"failure trace names node #{node}; the cluster has {len(names)}",
                        path=source,
                        row=ev.row,
                        column="id",
                    )
            elif name in node_of:
                node = node_of[name]
            else:
                raise InputError(
                    f"failure trace names unknown node {name!r}",
                    path=source,
                    row=ev.row,
                    column="id",
                )
            if ev.component == "gpu":
                if not slot.isdigit() or int(slot) >= int(gpus[node]):
                    raise InputError(
                        f"failure trace names GPU {ev.ident!r}; node {name!r} has "
                        f"{int(gpus[node])}",
                        path=source,
                        row=ev.row,
                        column="id",
                    )
                gpu = int(slot)
        out.append(
            TraceEvent(ev.time, ev.component, node, gpu, job, ev.category, ev.repair, ev.row)
        )
    return out
