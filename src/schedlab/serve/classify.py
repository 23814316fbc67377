"""Which of Slurm's jobs are schedlab's to place, and which of those Slurm would let run now.

Ownership is written on the job itself, in its ``AdminComment`` (users cannot change it), so a
restarted scheduler, a second tool or an operator reads it the same way:

* ``schedlab:queued``: schedlab owns the job and keeps it held until its policy places it. The
  Lua job_submit plugin sets it (and the hold) on every job submitted to a managed partition.
* ``schedlab:released``: schedlab released it onto the nodes its policy chose.
* no marker, held by its owner (``sbatch --hold``) and in a managed partition: handed to
  schedlab; the first cycle claims it (admin hold plus the marker), so its owner can no longer
  release it past the policy.

Everything else is never changed: jobs without the marker that are not user-held (Slurm
schedules them), jobs an operator held after schedlab released them (an admin decision), and
jobs that ask for a reservation. Running jobs of any owner still occupy their GPUs.

A held job of schedlab's is offered to the policy only when Slurm would let it run now: no
unfulfilled dependency, no begin time in the future, and room under its array's throttle
(``--array=1-6%2``). The rest of an array (tasks not split off yet) is never offered itself: its
tasks are split off one by one, each becoming a job of its own.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from schedlab.serve.hostlist import expand_ranges
from schedlab.serve.slurm_state import ACTIVE_STATES, LIMIT_REASON, JobInfo

#: How many tasks of one array are split off per cycle (each is one ``scontrol`` call).
SPLIT_PER_ARRAY = 16


@dataclass
class Classes:
    """Slurm's jobs, sorted by what schedlab may do with them this cycle."""

    active: list[JobInfo] = field(default_factory=list)  # any owner: they hold GPUs
    launching: list[JobInfo] = field(default_factory=list)  # released by schedlab, not started
    queued: list[JobInfo] = field(default_factory=list)  # held, schedlab's, eligible now
    claim: list[int] = field(default_factory=list)  # queued ones still without the marker
    rehold: dict[int, str] = field(default_factory=dict)  # schedlab's, released by someone else
    waiting: dict[int, str] = field(default_factory=dict)  # schedlab's, not eligible: Slurm's why
    limited: dict[int, str] = field(default_factory=dict)  # released, kept back by a limit
    foreign_held: list[int] = field(default_factory=list)  # released by schedlab, held by others
    split: list[tuple[JobInfo, list[int]]] = field(default_factory=list)  # array rest → tasks
    rejected: list[JobInfo] = field(default_factory=list)


def array_task_ids(text: str) -> list[int]:
    """``"2-6%2"`` → ``[2, 3, 4, 5, 6]``; ``"1-9:4,12"`` → ``[1, 5, 9, 12]``."""
    body = text.split("%", 1)[0]
    out: list[int] = []
    for part in body.split(","):
        rng, _, step = part.partition(":")
        ids = expand_ranges(rng)
        if step and len(ids) > 1:
            ids = ids[:: int(step)]
        out.extend(ids)
    return out


_DEP_ITEM = re.compile(r"^(after|afterany|afterok|afternotok):(\d+)(?:\+\d+)?\(unfulfilled\)$")


def _item_met(item: str, states: Mapping[int, str]) -> bool:
    """One ``TYPE:ID(unfulfilled)`` item, judged from the job states Slurm reports now."""
    m = _DEP_ITEM.match(item)
    if m is None:
        return False  # singleton, aftercorr, array forms, …: trust Slurm's own word
    state = states.get(int(m.group(2)))
    if state is None or state == "PENDING":
        return False
    done = state not in ACTIVE_STATES
    kind = m.group(1)
    if kind == "after":
        return True
    if kind == "afterany":
        return done
    if kind == "afterok":
        return state == "COMPLETED"
    return done and state != "COMPLETED"  # afternotok


def dependency_met(dep: str, states: Mapping[int, str]) -> bool:
    """Whether Slurm would find ``dep`` satisfied now. A held job's dependency string is
    refreshed only by Slurm's periodic pass (a minute by default), so items still printed
    unfulfilled are judged from the states of the jobs they name; Slurm checks them again
    itself when the job is released."""
    if "?" in dep:
        items = dep.split("?")
        return any("(unfulfilled)" not in i or _item_met(i, states) for i in items)
    return all("(unfulfilled)" not in i or _item_met(i, states) for i in dep.split(","))


def ineligible_reason(
    job: JobInfo, now: float, states: Mapping[int, str] | None = None
) -> str | None:
    """Why Slurm would not run ``job`` now even if it were released, or None (``states``: the
    state of every job Slurm reports, by id, to judge dependencies)."""
    dep = job.dependency
    if dep:
        if "(failed)" in dep or "(invalid)" in dep:
            return f"DependencyNeverSatisfied ({dep})"
        if "(unfulfilled)" in dep and not dependency_met(dep, states or {}):
            return f"Dependency ({dep})"
    # A requeued job's begin time is Slurm's requeue delay, which a start undoes (StartTime=now).
    if job.restart_count == 0 and job.eligible_time > now:
        when = datetime.fromtimestamp(job.eligible_time).isoformat(timespec="seconds")
        return f"BeginTime (eligible at {when})"
    return None


def _ours_while_held(job: JobInfo) -> bool:
    if job.marked_queued:
        return True
    return not job.admin_comment and job.user_held and not job.reservation


def classify(jobs: list[JobInfo], now: float) -> Classes:
    """Sort one cycle's jobs (see the module docstring)."""
    out = Classes()
    states = {j.job_id: j.state for j in jobs}
    for job in jobs:
        if job.active:
            out.active.append(job)
        elif not job.pending:
            continue
        elif job.held:
            if job.marked_released:
                out.foreign_held.append(job.job_id)
            elif not _ours_while_held(job):
                continue
            elif job.array_rest:
                out.split.append((job, array_task_ids(job.array_tasks)[:SPLIT_PER_ARRAY]))
            elif job.rejected:
                out.rejected.append(job)
            else:
                why = ineligible_reason(job, now, states)
                if why is not None:
                    out.waiting[job.job_id] = why
                else:
                    out.queued.append(job)
                    if not job.marked_queued:
                        out.claim.append(job.job_id)
        elif job.marked_queued:
            out.rehold[job.job_id] = "released outside schedlab; held again until placed"
        elif job.marked_released and job.required_nodes:
            if LIMIT_REASON.search(job.reason):
                out.limited[job.job_id] = job.reason
            else:
                out.launching.append(job)
    _throttle(out)
    return out


def _throttle(out: Classes) -> None:
    """Offer no more tasks of an array than its ``%N`` throttle leaves room for."""
    busy: dict[int, int] = defaultdict(int)
    for job in out.active + out.launching:
        if job.array_job_id:
            busy[job.array_job_id] += 1
    room: dict[int, int] = {}
    kept: list[JobInfo] = []
    for job in sorted(out.queued, key=lambda j: (j.array_task_id or 0, j.job_id)):
        if job.array_job_id and job.array_max_tasks:
            left = room.setdefault(job.array_job_id, job.array_max_tasks - busy[job.array_job_id])
            if left <= 0:
                out.waiting[job.job_id] = (
                    f"JobArrayTaskLimit ({job.array_max_tasks} tasks of array "
                    f"{job.array_job_id} at a time)"
                )
                continue
            room[job.array_job_id] = left - 1
        kept.append(job)
    order = {j.job_id: k for k, j in enumerate(out.queued)}
    out.queued = sorted(kept, key=lambda j: order[j.job_id])
    gone = {j.job_id for j in out.queued}
    out.claim = [j for j in out.claim if j in gone]
