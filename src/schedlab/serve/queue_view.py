"""The queue as the policy sees it, written each cycle for ``schedlab serve status``.

After deciding, serve writes ``STATE_DIR/serve-PARTITION.queue.json`` (atomically: a reader sees
the previous cycle's file or this one's, never a torn one): the jobs still queued, in the order
the policy considers them, each with the reason written on it and an estimated start
(:mod:`schedlab.serve.estimate`), and the jobs not eligible yet with Slurm's reason. ``serve
status`` reads it beside ``squeue``; it costs no ``scontrol`` and no extra read of Slurm.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.results import write_json
from schedlab.serve.estimate import Ask, Hold, estimate_starts
from schedlab.serve.live import UNLIMITED_SECONDS, LiveView
from schedlab.serve.lock import ALL
from schedlab.serve.slurm_state import JobInfo

Record = dict[str, Any]
#: Queued jobs (from the head of the policy's order) that get an estimated start; the rest
#: are listed without one. Planning is quadratic in the queue; this keeps a cycle short.
ESTIMATED_JOBS = 200
#: Format of the file (bumped when a field changes meaning).
VERSION = 1


def queue_path(state_dir: Path, partition: str | None) -> Path:
    """Where the scheduler of ``partition`` (None: every partition) writes its queue."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", partition or ALL)
    return state_dir / f"serve-{safe}.queue.json"


def _limit(info: JobInfo) -> float:
    return info.time_limit if math.isfinite(info.time_limit) else UNLIMITED_SECONDS


def _per_node(info: JobInfo, count: int) -> list[int]:
    """GPUs on each of ``count`` nodes of a job that did not say (``--gpus=K``): an even split."""
    if info.gpus_per_node and not info.gpus_per_job:
        return [info.gpus_per_node] * count
    base, extra = divmod(info.num_gpus, max(count, 1))
    return [base + (1 if k < extra else 0) for k in range(count)]


def holds(
    view: LiveView, jobs: list[JobInfo], started: Mapping[int, list[str]], gone: set[int]
) -> list[Hold]:
    """What the running jobs (any owner), the launching ones and this cycle's starts hold, each
    until its start plus its time limit. ``gone``: jobs preempted this cycle (their GPUs are
    given back)."""
    where = {str(name): i for i, name in enumerate(view.cluster.names.tolist())}
    now = view.snapshot.now
    out: list[Hold] = []

    def add(info: JobInfo, nodes: list[str], begin: float, counts: list[int]) -> None:
        end = max(begin + _limit(info), now)
        for name, gpus in zip(nodes, counts, strict=True):
            node = where.get(name)
            if node is None:
                continue
            if info.exclusive:
                gpus = view.nodes[node].gpus
            out.append(Hold(node, gpus, now, end))

    for info in jobs:
        if info.active and info.job_id not in gone and info.nodes:
            if info.gpu_idx and len(info.gpu_idx) == len(info.nodes):
                counts = [len(g) for g in info.gpu_idx]
            else:
                counts = _per_node(info, len(info.nodes))
            add(info, list(info.nodes), info.start_time or now, counts)
    by_id = {info.job_id: info for info in view.infos}
    for job_id in view.launching:
        info = by_id[job_id]
        if job_id not in gone:
            add(info, list(info.required_nodes), now, _per_node(info, len(info.required_nodes)))
    for job_id, nodes in started.items():
        info = by_id[job_id]
        add(info, nodes, now, _per_node(info, len(nodes)))
    return out


def ask_of(info: JobInfo) -> Ask:
    per_node = info.gpus_per_node if info.shaped else 0
    return Ask(
        gpus=info.num_gpus,
        seconds=_limit(info),
        per_node=per_node,
        nodes=max(info.node_count, 1) if per_node else 0,
        exclusive=info.exclusive,
    )


def build_queue(
    view: LiveView,
    jobs: list[JobInfo],
    order: list[int] | None,
    reasons: Mapping[int, str],
    outcome_records: list[Record],
    *,
    in_order: bool,
    header: Mapping[str, Any],
) -> Record:
    """The file's contents for one cycle. ``order``: the policy's ranking of the snapshot's
    pending jobs (indices), None when the policy has none (then: submit order)."""
    now = view.snapshot.now
    done = {r["job"]: r for r in outcome_records if r["action"] in ("start", "reject")}
    started = {j: list(r["nodes"]) for j, r in done.items() if r["action"] == "start"}
    gone = {r["job"] for r in outcome_records if r["action"] == "preempt"}
    ranked = order if order is not None else list(view.snapshot.pending_set)
    queued = [view.infos[i] for i in ranked if view.infos[i].job_id not in done]
    head = queued[:ESTIMATED_JOBS]
    capacity = [n.gpus if n.available else 0 for n in view.nodes]
    plans = estimate_starts(
        capacity, holds(view, jobs, started, gone), [ask_of(i) for i in head], now, in_order
    )
    names = view.cluster.names.tolist()
    entries: list[Record] = []
    for k, info in enumerate(queued):
        entry: Record = {
            "position": k + 1,
            "job": info.label,
            "id": info.job_id,
            "user": info.user,
            "name": info.name,
            "gpus": info.num_gpus,
            "time_limit": info.time_limit if math.isfinite(info.time_limit) else None,
            "submit_time": info.submit_time,
            "reason": reasons.get(info.job_id, ""),
            "estimated_start": None,
            "waits_for": None,
        }
        if k < len(plans):
            plan = plans[k]
            entry["estimated_start"] = None if plan.start is None else round(plan.start, 3)
            entry["waits_for"] = plan.waits_for
            entry["planned_nodes"] = [str(names[n]) for n in plan.nodes]
        entries.append(entry)
    by_id = {j.job_id: j for j in jobs}
    waiting = [
        {"job": by_id[j].label, "id": j, "gpus": by_id[j].num_gpus, "reason": reasons.get(j, why)}
        for j, why in view.waiting.items()
        if j in by_id
    ]
    return {
        "version": VERSION,
        **header,
        "time": round(now, 3),
        "order": "policy" if order is not None else "submit",
        "in_order": in_order,
        "estimated_jobs": len(plans),
        "queue": entries,
        "not_eligible": waiting,
    }


def write_queue(path: Path, data: Mapping[str, Any]) -> None:
    write_json(path, data)


def read_queue(path: Path) -> Record | None:
    """The last queue a scheduler wrote (None: no file)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the queue file ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("queue"), list):
        raise InputError(f"{path}: not a queue file of 'schedlab serve slurm'")
    return data
