"""Alibaba GPU-2023 ("openb") pod lists read as *jobs over time*, for replay.

The pack experiment ignores the pods' times; a replay needs them. The pod list files with times
(all but ``multigpu*``) have ``creation_time``, ``scheduled_time`` and ``deletion_time`` in seconds
from the trace start. Resources, GPU shares and ``gpu_spec`` are validated by the pack reader
(:func:`schedlab.traces.alibaba.read_pod_list`), so both uses reject the same bad cells.

Conversions, and why:

* ``submit_time`` = ``creation_time`` (kept on the trace's clock, as written).
* ``duration`` = ``deletion_time − scheduled_time``: the time the pod held its resources.
* ``num_gpus`` = ``num_gpu``. A GPU-sharing pod (``gpu_milli`` < 1000, always with one GPU)
  counts as **one whole GPU**: the job table models gangs of whole GPUs, so replay over-reserves
  shared pods rather than inventing a sharing model the trace does not describe.
* ``cpu_milli``, ``memory_mib`` and the ``gpu_spec`` model mask are carried over; there is no user.

Filters (each counted in ``ReadResult.dropped``):

* ``keep_cpu_only=False`` (default) drops pods with ``num_gpu`` 0 as ``cpu_only``: a GPU scheduling
  study has nothing to place for them. Set it to keep them (``drop_zero`` then does not drop them
  for having 0 GPUs either: asking to keep them wins).
* ``keep_unscheduled=False`` (default) drops pods with a blank ``scheduled_time`` (Pending when the
  trace was taken) as ``unscheduled``: they never ran, so they have no run time. Kept, their
  ``duration`` is ``deletion_time − creation_time``, the only span the trace records for them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from schedlab.model.pods import PodTable
from schedlab.traces.alibaba import read_pod_list
from schedlab.traces.columns import TextTable, float_column, read_text_table
from schedlab.traces.job_common import ReadResult, check_not_before, finish

FORMAT = "alibaba"
TIME_COLUMNS = ["creation_time", "deletion_time", "scheduled_time"]


def read_pod_times(
    path: Path, extra: tuple[str, ...] = ()
) -> tuple[PodTable, TextTable, np.ndarray, np.ndarray, np.ndarray]:
    """The pods of a pod list with their checked ``creation_time``, ``scheduled_time`` (NaN when
    blank) and ``deletion_time``; ``extra`` names further columns to keep in the returned frame."""
    pods = read_pod_list(path)
    frame = read_text_table(path, ["name", *TIME_COLUMNS, *extra])
    created = float_column(frame, "creation_time", path)
    scheduled = float_column(frame, "scheduled_time", path, allow_blank=True)
    deleted = float_column(frame, "deletion_time", path)
    check_not_before(
        frame,
        scheduled,
        created,
        path,
        column="scheduled_time",
        message="'scheduled_time' is before 'creation_time'",
    )
    started = np.where(np.isnan(scheduled), created, scheduled)
    check_not_before(
        frame,
        deleted,
        started,
        path,
        column="deletion_time",
        message="'deletion_time' is before the pod started (negative duration)",
    )
    return pods, frame, created, scheduled, deleted


def read_alibaba_jobs(
    path: str | Path,
    *,
    keep_cpu_only: bool = False,
    keep_unscheduled: bool = False,
    drop_zero: bool = True,
    min_duration: float = 0.0,
) -> ReadResult:
    """Read an ``openb_pod_list_*.csv`` file with times into jobs (see the module docstring)."""
    path = Path(path)
    pods, frame, created, scheduled, deleted = read_pod_times(path)
    started = np.where(np.isnan(scheduled), created, scheduled)
    drops: dict[str, np.ndarray] = {}
    if not keep_cpu_only:
        drops["cpu_only"] = pods.num_gpu == 0
    if not keep_unscheduled:
        drops["unscheduled"] = np.isnan(scheduled)
    return finish(
        path,
        FORMAT,
        frame,
        {
            "job_id": pods.name,
            "submit_time": created,
            "num_gpus": pods.num_gpu,
            "duration": deleted - started,
            "gpu_model_mask": pods.model_mask,
            "cpu_milli": pods.cpu_milli,
            "memory_mib": pods.memory_mib,
        },
        drop_zero=drop_zero,
        min_duration=min_duration,
        drops=drops,
        drop_zero_gpus=False,  # num_gpu 0 means CPU-only here: keep_cpu_only decides
        sources={"submit_time": "creation_time", "duration": "deletion_time"},
    )
