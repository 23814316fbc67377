"""Reader for the condensed Philly trace of the Pollux/AdaptDL artifact (``philly.csv``).

Columns: ``timestamp`` (submission wall-clock time, ``YYYY-MM-DD HH:MM:SS``), ``duration`` (run
time, s), ``num_gpus``, ``gpu_time`` (= duration × num_gpus; not needed, so not read) and
``cluster`` (hashed virtual-cluster id). See ``shared/traces/philly-adaptdl/README.md``.

Conversions, and why:

* ``submit_time`` = seconds since the earliest ``timestamp`` in the *file* (before any filter), so
  a job keeps the same submit time whatever options drop other jobs.
* ``user`` = the ``cluster`` (VC) id: the condensed trace has no user column, and the VC is the
  tenant that quotas and fairness are defined over in Philly.
* ``job_id`` = the row's 0-based position among the file's data rows (the file has no id), so an
  id still names the same row after filtering.
* No model, batch size, iterations or deadline: those must be synthesised if a study needs them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from schedlab.traces.columns import float_column, int_column, read_text_table
from schedlab.traces.job_common import MAX_GPUS_PER_JOB, ReadResult, datetime_seconds, finish

FORMAT = "philly"
COLUMNS = ["timestamp", "duration", "num_gpus", "cluster"]


def read_philly(
    path: str | Path, *, drop_zero: bool = True, min_duration: float = 0.0
) -> ReadResult:
    """Read ``philly.csv``; ``drop_zero`` removes jobs with 0 GPUs or 0 s, ``min_duration``
    jobs shorter than that many seconds (both counted in ``ReadResult.dropped``)."""
    path = Path(path)
    frame = read_text_table(path, COLUMNS)
    submit = datetime_seconds(frame, "timestamp", path)
    duration = float_column(frame, "duration", path)
    num_gpus = int_column(frame, "num_gpus", path, low=0, high=MAX_GPUS_PER_JOB)
    n = len(frame)
    return finish(
        path,
        FORMAT,
        frame,
        {
            "job_id": np.arange(n).astype(str).astype(object),
            "submit_time": submit - submit.min(),
            "num_gpus": num_gpus,
            "duration": duration,
            "user": frame.stripped("cluster"),
        },
        drop_zero=drop_zero,
        min_duration=min_duration,
        sources={"submit_time": "timestamp"},
    )
