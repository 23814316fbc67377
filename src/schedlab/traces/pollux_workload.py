"""Pollux's and Sia's workload CSVs: ``name,time,application,num_replicas,batch_size``.

Each row is a training job of one of the measured applications (``application`` names a folder
of tables, see :mod:`schedlab.perf.goodput.applications`), submitted at ``time`` seconds. The
GPU count and batch size are what the non-adaptive baselines run with; Pollux and Sia choose
their own. Sia's workloads may add ``category`` (``adaptive``, ``rigid`` or ``scale-gpus``):
rigid jobs keep their GPU count under every policy.

The jobs' work is their application's total training progress, so a replay needs the tables
(``replay --apps DIR``); ``model_name`` holds the application and ``batch_size`` the batch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.traces.columns import float_column, int_column, read_text_table, unique_names
from schedlab.traces.job_common import MAX_GPUS_PER_JOB, ReadResult, finish, text_column

FORMAT = "pollux"
COLUMNS = ["name", "time", "application", "num_replicas", "batch_size"]
OPTIONAL = ["category"]
CATEGORIES = ("adaptive", "rigid", "scale-gpus")


def read_pollux_workload(
    path: str | Path, *, drop_zero: bool = True, min_duration: float = 0.0
) -> ReadResult:
    """Read a Pollux/Sia workload CSV (see the module docstring)."""
    path = Path(path)
    frame = read_text_table(path, COLUMNS, OPTIONAL)
    names = unique_names(frame, "name", path)
    apps = text_column(frame, "application")
    assert apps is not None
    blank = np.flatnonzero(apps == "")
    if len(blank):
        raise InputError(
            "'application' is blank", path=str(path), row=int(blank[0]) + 2, column="application"
        )
    category = text_column(frame, "category")
    if category is not None:
        bad = np.flatnonzero(~np.isin(category, [*CATEGORIES, ""]))
        if len(bad):
            raise InputError(
                f"'category' must be one of {', '.join(CATEGORIES)} (got {category[bad[0]]!r})",
                path=str(path),
                row=int(bad[0]) + 2,
                column="category",
            )
    cols: dict[str, object] = {
        "job_id": names,
        "submit_time": float_column(frame, "time", path),
        "num_gpus": int_column(frame, "num_replicas", path, low=1, high=MAX_GPUS_PER_JOB),
        "batch_size": int_column(frame, "batch_size", path, low=1),
        "model_name": apps,
        # Rigid jobs are told apart by their user column: policies that adapt sizes leave them.
        "user": np.where(category == "rigid", "rigid", "") if category is not None else None,
    }
    return finish(
        path,
        FORMAT,
        frame,
        cols,
        drop_zero=drop_zero,
        min_duration=min_duration,
        sources={"submit_time": "time"},
    )
