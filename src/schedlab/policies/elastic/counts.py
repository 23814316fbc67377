"""The GPU counts a policy that sizes jobs may give each one.

Elastic policies pick a job's GPU count from a ladder (powers of two up to a cap, or the counts
of a measured throughput curve). A performance model built from measurements alone — a Gavel
throughput matrix knows a job type at 1, 2, 4 and 8 GPUs, some of them on only some GPU types —
gives 0 for any other count, and a job resized there would hold its GPUs forever without
progress. Such a model declares its counts (:meth:`PerfModel.gpu_counts`) and the GPU models each
count runs on (:meth:`PerfModel.runnable_models`); the functions here cut a policy's ladder to
the counts that can make progress on the cluster, and refuse, naming the policy and the job, a
job left with none.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from schedlab.errors import InputError
from schedlab.model.cluster import Cluster
from schedlab.model.jobs import JobTable
from schedlab.perf.models import PerfModel, runs_on_cluster


def declares_counts(perf: PerfModel, jobs: JobTable) -> bool:
    """Whether the model restricts the GPU counts of any job (if not, every ladder stands)."""
    return perf.restricts_counts and any(
        perf.gpu_counts(jobs, j) is not None for j in range(len(jobs))
    )


def runnable_counts(
    perf: PerfModel, jobs: JobTable, job: int, cluster: Cluster, ladder: Iterable[int]
) -> list[int]:
    """The counts of ``ladder`` (ascending) the model has a rate for and the cluster can run the
    job at; the ladder itself when the model does not declare its counts."""
    known = perf.gpu_counts(jobs, job)
    if known is None:
        return list(ladder)
    return [n for n in ladder if n in known and runs_on_cluster(perf, jobs, job, n, cluster)]


def no_count_error(
    policy: str, perf: PerfModel, jobs: JobTable, job: int, limit: int
) -> InputError:
    """The refusal for a job the policy cannot give any count it can run at."""
    known = perf.gpu_counts(jobs, job) or ()
    what = ", ".join(map(str, known)) or "none"
    model = str(jobs.model_name[job]) or "its model"
    return InputError(
        f"policy {policy!r} cannot size job {jobs.job_id[job]!r}: the performance model gives "
        f"{model} a rate only at {what} GPU(s), none of which runs on this cluster's GPUs at "
        f"most {limit} (the job's cap)"
    )


def sized_levels(
    policy: str, perf: PerfModel, jobs: JobTable, cluster: Cluster, caps: np.ndarray
) -> list[list[int]] | None:
    """Each job's counts from 1 to its cap that can run (ascending), or None when the model
    declares no counts (the policy keeps its own power-of-two ladder). A job with none is an
    :class:`InputError` naming the policy and the job."""
    if not declares_counts(perf, jobs):
        return None
    levels: list[list[int]] = []
    for j in range(len(jobs)):
        cap = int(caps[j])
        known = perf.gpu_counts(jobs, j)
        ladder = (
            [1 << k for k in range(cap.bit_length()) if 1 << k <= cap]
            if known is None
            else [n for n in known if n <= cap]
        )
        ok = runnable_counts(perf, jobs, j, cluster, ladder)
        if not ok:
            raise no_count_error(policy, perf, jobs, j, cap)
        levels.append(ok)
    return levels
