"""Alibaba GPU trace v2025 (``disaggregated_DLRM_trace.csv``, Prism, NSDI '25) → serving instances.

One row per instance of a DLRM inference service: ``instance_sn, role, app_name``, request and
limit of ``cpu`` (vCPU), ``gpu`` (whole GPUs), ``rdma`` (% of one RDMA NIC), ``memory`` and
``disk`` (GiB), ``max_instance_per_node`` (-1 = no limit) and ``creation_time, scheduled_time,
deletion_time`` in seconds since the trace start.

Every row is checked before anything is returned; the first bad cell stops the read with its
file, line, column and value. Rules beyond "a number in range":

* ``role`` is ``CN`` (no GPU) or ``HN`` (at least one GPU);
* each limit column, when present, is not below its request;
* ``max_instance_per_node`` is -1 or ≥ 1 (0 would forbid every placement);
* ``creation_time`` and ``scheduled_time`` are blank together (the instance was already running
  when the window opened: it arrives and starts at 0), else scheduled ≥ created;
* ``deletion_time`` is not before the start; blank means still running when the window closed:
  the instance ends at the window end (the largest time in the file, or ``window_end``) and is
  flagged censored.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.model.instances import NO_LIMIT, ROLE_CN, ROLE_HN, ROLE_NAMES, ServingInstances
from schedlab.traces.columns import (
    TextTable,
    fail_at_first,
    float_column,
    int_column,
    read_text_table,
    unique_names,
)
from schedlab.traces.job_common import MAX_SECONDS, check_not_before

FORMAT = "alibaba-2025"

#: Header columns that identify the format (all must be present).
SIGNATURE = frozenset({"instance_sn", "role", "app_name", "rdma_request", "max_instance_per_node"})

REQUIRED = [
    "instance_sn",
    "role",
    "app_name",
    "cpu_request",
    "gpu_request",
    "rdma_request",
    "memory_request",
    "max_instance_per_node",
    "creation_time",
    "scheduled_time",
    "deletion_time",
]
OPTIONAL = ["cpu_limit", "gpu_limit", "rdma_limit", "memory_limit", "disk_request", "disk_limit"]

#: Larger than any server: a bigger request is a unit mix-up (cores as milli-cores, MiB as GiB).
MAX_VCPU = 4096
MAX_GPUS = 64
MAX_MEMORY_GIB = 65_536.0


def looks_like(header: list[str]) -> bool:
    """Whether a CSV header is this format's."""
    return set(header) >= SIGNATURE


def read_alibaba_2025(path: str | Path, *, window_end: float | None = None) -> ServingInstances:
    """Read and check the whole file (see the module docstring); ``window_end`` overrides the
    censoring time (it must not be before any time in the file)."""
    path = Path(path)
    frame = read_text_table(path, REQUIRED, OPTIONAL)
    names = unique_names(frame, "instance_sn", path)
    role = _roles(frame, path)
    apps = frame.stripped("app_name")
    fail_at_first(frame, apps == "", path, "app_name", lambda i: "'app_name' is blank")
    app_names, app = np.unique(apps.astype(str), return_inverse=True)

    cpu = int_column(frame, "cpu_request", path, low=0, high=MAX_VCPU)
    gpu = int_column(frame, "gpu_request", path, low=0, high=MAX_GPUS)
    rdma = int_column(frame, "rdma_request", path, low=0, high=100)
    memory = _bounded_float(frame, "memory_request", path, MAX_MEMORY_GIB)
    disk = (
        float_column(frame, "disk_request", path)
        if "disk_request" in frame
        else np.zeros(len(frame))
    )
    fail_at_first(
        frame,
        (role == ROLE_CN) & (gpu > 0),
        path,
        "gpu_request",
        lambda i: f"a CN instance runs on a CPU node and asks for no GPU (got {gpu[i]})",
    )
    fail_at_first(
        frame,
        (role == ROLE_HN) & (gpu == 0),
        path,
        "gpu_request",
        lambda i: "an HN instance asks for at least one GPU (got 0)",
    )
    _check_limit(frame, path, "cpu", cpu, lambda c: int_column(frame, c, path, high=MAX_VCPU))
    _check_limit(frame, path, "gpu", gpu, lambda c: int_column(frame, c, path, high=MAX_GPUS))
    _check_limit(frame, path, "rdma", rdma, lambda c: int_column(frame, c, path, high=100))
    _check_limit(
        frame, path, "memory", memory, lambda c: _bounded_float(frame, c, path, MAX_MEMORY_GIB)
    )
    _check_limit(frame, path, "disk", disk, lambda c: float_column(frame, c, path))

    limit = int_column(frame, "max_instance_per_node", path, low=NO_LIMIT)
    fail_at_first(
        frame,
        limit == 0,
        path,
        "max_instance_per_node",
        lambda i: "'max_instance_per_node' must be -1 (no limit) or ≥ 1 (got 0)",
    )

    created, scheduled, deleted = _times(frame, path)
    preexisting = np.isnan(created)
    censored = np.isnan(deleted)
    latest = float(np.nanmax(np.stack([created, scheduled, deleted]))) if len(frame) else 0.0
    if np.isnan(latest):
        latest = 0.0
    if window_end is None:
        window_end = latest
    elif not np.isfinite(window_end) or window_end < latest:
        raise InputError(
            f"'window_end' must be a number ≥ the last time in the file, {latest:g} "
            f"(got {window_end!r})",
            path=str(path),
        )
    start = np.where(preexisting, 0.0, scheduled)
    return ServingInstances(
        name=names,
        role=role,
        app=app.astype(np.int64),
        app_names=tuple(str(a) for a in app_names),
        cpu_milli=cpu * 1000,
        memory_mib=np.rint(memory * 1024).astype(np.int64),
        num_gpu=gpu,
        rdma=rdma,
        disk_gib=disk,
        max_per_node=limit,
        arrival=np.where(preexisting, 0.0, created),
        start=start,
        end=np.where(censored, float(window_end), deleted),
        preexisting=preexisting,
        censored=censored,
        window_end=float(window_end),
        source=str(path),
    )


def _roles(frame: TextTable, path: Path) -> np.ndarray:
    text = frame.stripped("role")
    known = np.array([t in ROLE_NAMES for t in text.tolist()], dtype=bool)
    fail_at_first(
        frame,
        ~known,
        path,
        "role",
        lambda i: f"'role' must be CN or HN (got {frame['role'][i]!r})",
    )
    return np.where(text == "HN", ROLE_HN, ROLE_CN).astype(np.int8)


def _bounded_float(frame: TextTable, column: str, path: Path, high: float) -> np.ndarray:
    values = float_column(frame, column, path)
    fail_at_first(
        frame,
        values > high,
        path,
        column,
        lambda i: f"'{column}' must be ≤ {high:g} GiB (got {values[i]:g})",
    )
    return values


def _check_limit(
    frame: TextTable,
    path: Path,
    resource: str,
    request: np.ndarray,
    read: Callable[[str], np.ndarray],
) -> None:
    """``<resource>_limit``, when the file has it, must not be below the request."""
    column = f"{resource}_limit"
    if column not in frame:
        return
    limit = read(column)
    fail_at_first(
        frame,
        limit < request,
        path,
        column,
        lambda i: f"'{column}' is below '{resource}_request' (got {limit[i]:g} < {request[i]:g})",
    )


def _times(frame: TextTable, path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    created = float_column(frame, "creation_time", path, allow_blank=True)
    scheduled = float_column(frame, "scheduled_time", path, allow_blank=True)
    deleted = float_column(frame, "deletion_time", path, allow_blank=True)
    for column, values in (
        ("creation_time", created),
        ("scheduled_time", scheduled),
        ("deletion_time", deleted),
    ):
        fail_at_first(
            frame,
            values > MAX_SECONDS,
            path,
            column,
            lambda i, c=column, v=values: (
                f"'{c}' is beyond 100 years of seconds (got {v[i]:g}): a unit mix-up?"
            ),
        )
    fail_at_first(
        frame,
        np.isnan(created) != np.isnan(scheduled),
        path,
        "scheduled_time",
        lambda i: (
            "'creation_time' and 'scheduled_time' must be blank together "
            f"(got {frame['creation_time'][i]!r} and {frame['scheduled_time'][i]!r})"
        ),
    )
    fail_at_first(
        frame,
        scheduled < created,
        path,
        "scheduled_time",
        lambda i: f"scheduled before it was created (got {scheduled[i]:g} < {created[i]:g})",
    )
    check_not_before(
        frame,
        deleted,
        np.where(np.isnan(scheduled), 0.0, scheduled),
        path,
        column="deletion_time",
        message="'deletion_time' is before the instance started",
    )
    return created, scheduled, deleted
