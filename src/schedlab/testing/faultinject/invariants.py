"""The oracle of the fault scenarios (spec §5.4), over what jobs wrote, what Slurm recorded and
what the scheduler journaled. Each check returns the violations it found (empty: it holds).

An :class:`Execution` is one run of a job as its own markers tell it: where it ran (node, GPU
indices), when its ``start`` marker was written, and when it stopped — with an ``end`` marker
(``ended``) or killed before writing one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise

#: Journal actions that change a job in Slurm (a start releases it; hold, preempt and requeue
#: stop or park it; cancel ends it).
DESTRUCTIVE = frozenset({"hold", "preempt", "requeue", "cancel", "start", "resize"})


@dataclass(frozen=True)
class Execution:
    job: int
    restart: int  # SLURM_RESTART_COUNT at its start
    node: str
    gpus: tuple[int, ...]
    start: float
    stop: float  # when it ended or was killed (inf: still running at the end of the scenario)
    ended: bool  # wrote its ``end`` marker


def nothing_lost(
    submitted: Iterable[int], final: Mapping[int, str], cancelled: Iterable[int] = ()
) -> list[str]:
    """Every submitted job ended exactly once in COMPLETED (or CANCELLED, by the test)."""
    bad = []
    allowed_cancel = set(cancelled)
    for job in submitted:
        state = final.get(job)
        if state == "COMPLETED" or (state == "CANCELLED" and job in allowed_cancel):
            continue
        bad.append(f"job {job} ended {state or 'never'}")
    return bad


def nothing_doubled(
    executions: Iterable[Execution],
    restarts: Mapping[int, int],
    partitioned: Mapping[int, float] | None = None,
) -> list[str]:
    """A job's executions never overlap — except a cut-off instance on a partitioned node beside
    its replacement, up to the kill after heal (``partitioned``: job → latest allowed stop of
    its cut-off instance); executions = 1 + Slurm's restart count; exactly one wrote ``end``."""
    by_job: dict[int, list[Execution]] = defaultdict(list)
    for e in executions:
        by_job[e.job].append(e)
    bad = []
    allowed = partitioned or {}
    for job, runs in sorted(by_job.items()):
        runs.sort(key=lambda e: e.start)
        for a, b in pairwise(runs):
            if b.start < a.stop and not (job in allowed and a.stop <= allowed[job]):
                bad.append(f"job {job}: runs overlap ({a.start:g}–{a.stop:g} and {b.start:g}–)")
        if len(runs) != 1 + restarts.get(job, 0):
            bad.append(
                f"job {job}: {len(runs)} executions, Slurm counts {restarts.get(job, 0)} restarts"
            )
        ends = sum(e.ended for e in runs)
        if ends != 1:
            bad.append(f"job {job}: {ends} executions wrote 'end'")
    return bad


def capacity(executions: Iterable[Execution], node_gpus: Mapping[str, int]) -> list[str]:
    """No node ever runs more GPUs than it has, and no GPU index serves two jobs at once."""
    events: dict[str, list[tuple[float, int, Execution]]] = defaultdict(list)
    for e in executions:
        events[e.node].append((e.start, 1, e))
        events[e.node].append((e.stop, 0, e))
    bad = []
    for node, evs in events.items():
        evs.sort(key=lambda x: (x[0], x[1]))  # stops before starts at the same instant
        held: dict[int, int] = {}
        for t, kind, e in evs:
            if kind == 0:
                for g in e.gpus:
                    if held.get(g) == e.job:
                        del held[g]
                continue
            for g in e.gpus:
                if g in held and held[g] != e.job:
                    bad.append(f"{node} GPU {g}: jobs {held[g]} and {e.job} at {t:g}")
                held[g] = e.job
            if len(held) > node_gpus.get(node, 0):
                bad.append(
                    f"{node}: {len(held)} GPUs in use at {t:g}, it has {node_gpus.get(node)}"
                )
    return bad


def no_action_on_unknown_state(
    journal: Iterable[Mapping], windows: Iterable[tuple[float, float]]
) -> list[str]:
    """While the scheduler could not read Slurm (``windows``), it decided nothing that changes a
    job: no start, hold, preempt, requeue or cancel journaled in those windows."""
    spans = list(windows)
    bad = []
    for rec in journal:
        if rec.get("action") in DESTRUCTIVE and not rec.get("recovered"):
            t = float(rec.get("time", 0.0))
            if any(a <= t <= b for a, b in spans):
                bad.append(f"{rec['action']} of job {rec.get('job')} at {t:g} on unknown state")
    return bad


def no_double_release(
    journal: Iterable[Mapping], restarts_at: Mapping[int, list[float]]
) -> list[str]:
    """No job is released (journaled ``start``) twice within one of its runs: between two
    starts of a job there is a restart (Slurm's requeue) or a hold by the scheduler."""
    last: dict[int, float] = {}
    parked: dict[int, bool] = defaultdict(lambda: True)
    bad = []
    for rec in journal:
        job, action = rec.get("job"), rec.get("action")
        if job is None or rec.get("recovered"):
            continue
        t = float(rec.get("time", 0.0))
        if action in ("hold", "preempt", "requeue"):
            parked[job] = True
        elif action == "start":
            requeued = any(last.get(job, -1.0) < r <= t for r in restarts_at.get(job, []))
            if not parked[job] and not requeued:
                bad.append(f"job {job} released again at {t:g} without a requeue or hold")
            parked[job] = False
            last[job] = t
    return bad


def never_on_a_down_node(
    journal: Iterable[Mapping], down: Mapping[str, list[tuple[float, float]]]
) -> list[str]:
    """No job is started on a node that was DOWN or DRAINED when the start was decided."""
    bad = []
    for rec in journal:
        if rec.get("action") != "start" or rec.get("recovered"):
            continue
        t = float(rec.get("time", 0.0))
        for node in rec.get("nodes", []):
            if any(a <= t < b for a, b in down.get(node, [])):
                bad.append(f"job {rec.get('job')} started on {node}, down at {t:g}")
    return bad
