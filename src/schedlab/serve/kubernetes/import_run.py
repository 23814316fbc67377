"""A recorded ``serve kubernetes`` run as a schedlab workload (``trace import-kubernetes``).

The journal holds all of it: what each job asked for (``arrive``: pods, GPUs per pod, CPU,
memory, the queue), where it ran (``start``) and when the scheduler saw it end (``finish``). The
clock is the scheduler's own, as ``import-slurm --timing observed`` has it: a job arrives at the
cycle that first saw it queued and lasts from the cycle that bound it to the cycle that saw it
end (on a 1/1024 s grid, so start + duration is exactly the finish), so a replay meets the
decision points of the live run in the same order. A gang is one job of ``num_nodes`` pods of
``gpus_per_node`` GPUs. Left out, and counted: GPU shares (replay's jobs take whole GPUs),
jobs never bound, jobs preempted (an evicted pod is gone; its controller's new pod is another
job), runs the journal does not see end, and jobs that may use only some nodes (a replay has no
node selectors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab.errors import InputError
from schedlab.serve.journal import read_journal
from schedlab.serve.serve_record import journaled_seconds

GRID = 1024.0


def _grid(t: float) -> float:
    return round(t * GRID) / GRID


def cluster_spec(serve: dict[str, Any]) -> str:
    """The serve record's nodes as a ``--cluster`` spec (runs of equal nodes, in order)."""
    runs: list[list[Any]] = []
    for gpus, model in zip(
        serve.get("node_gpus") or [], serve.get("node_models") or [], strict=False
    ):
        key = (int(gpus), str(model or "GPU"))
        if runs and runs[-1][1] == key:
            runs[-1][0] += 1
        else:
            runs.append([1, key])
    return "+".join(f"{n}x{g}:{m}" for n, (g, m) in runs)


@dataclass
class KubeImport:
    frame: pd.DataFrame
    serve: dict[str, Any]
    left_out: dict[str, int] = field(default_factory=dict)

    @property
    def cluster(self) -> str:
        return cluster_spec(self.serve)


def import_kubernetes(journal: Path) -> KubeImport:
    """The workload table (see the module docstring)."""
    serve: dict[str, Any] | None = None
    arrived: dict[str, dict[str, Any]] = {}
    started: dict[str, dict[str, Any]] = {}
    finished: dict[str, float] = {}
    preempted: set[str] = set()
    for r in read_journal(journal):
        action, job = r["action"], r.get("job")
        if action == "serve":
            if r.get("engine") != "kubernetes":
                what = {"kubernetes-extender": "an extender's journal (kube-scheduler decided)"}
                why = what.get(str(r.get("engine")), "a 'serve slurm' journal: use import-slurm")
                raise InputError(f"not a 'serve kubernetes' journal: {why}", path=str(journal))
            serve = serve or r
        elif not isinstance(job, str):
            continue
        elif action == "arrive":
            arrived.setdefault(job, r)
        elif action == "start" and not r.get("partial"):
            started.setdefault(job, r)
        elif action == "finish" and not r.get("partial"):
            finished.setdefault(job, float(r["time"]))
        elif action == "preempt":
            preempted.add(job)
    if serve is None:
        raise InputError("the journal has no 'serve' record", path=str(journal))
    left = {
        "GPU shares": 0,
        "never bound": 0,
        "preempted": 0,
        "not seen ending": 0,
        "node constraints": 0,
    }
    rows = []
    for job in sorted(arrived, key=lambda j: (float(arrived[j]["time"]), j)):
        a = arrived[job]
        if a.get("gpu_milli") is not None and int(a["gpu_milli"]) < 1000:
            left["GPU shares"] += 1
        elif job not in started:
            left["never bound"] += 1
        elif job in preempted:
            left["preempted"] += 1
        elif job not in finished:
            left["not seen ending"] += 1
        elif a.get("allowed") is not None:
            left["node constraints"] += 1
        else:
            start = started[job]
            pods = len(a.get("pods") or [job])
            per = int(a.get("gpus_per_pod") or 0)
            estimate = a.get("estimate")
            rows.append(
                {
                    "job_id": job,
                    "submit_time": _grid(float(a["time"])),
                    "num_gpus": int(a.get("gpus") or 0),
                    "duration": max(_grid(finished[job]) - _grid(float(start["time"])), 0.0),
                    "user": str(a.get("queue") or ""),
                    "cpu_milli": int(a.get("cpu_milli") or 0),
                    "memory_mib": int(a.get("memory_mib") or 0),
                    "gpus_per_node": per,
                    "num_nodes": pods if per else 0,
                    "checkpoint": int(bool(a.get("checkpoint"))),
                    "nodes": ",".join(start.get("nodes") or []),
                    "estimate": estimate if isinstance(estimate, int | float) else math.nan,
                }
            )
    if not rows:
        raise InputError("no job of the journal was bound and seen ending", path=str(journal))
    frame = pd.DataFrame(rows)
    frame["submit_time"] = frame["submit_time"] - float(frame["submit_time"].min())
    return KubeImport(frame, serve, {k: v for k, v in left.items() if v})


def replay_command(result: KubeImport, out: Path, topology_file: Path | None) -> str:
    s = result.serve
    label = str(s.get("policy") or "")
    parts = [
        "schedlab replay",
        f"--cluster {result.cluster}",
        *([f"--topology {topology_file}"] if topology_file else []),
        f"--trace {out}",
        f"--policy {label.removesuffix('+backfill')}",
        *(["--backfill"] if label.endswith("+backfill") else []),
        *(f"--param {k}={v}" for k, v in dict(s.get("params") or {}).items()),
        f"--placement {s.get('placement')}",
        *(f"--plugin {p}" for p in s.get("plugins") or ()),
    ]
    if journaled_seconds(s.get("min_runtime")):
        parts.append(f"--min-runtime {journaled_seconds(s.get('min_runtime')):g}")
    return " ".join(parts) + " --out <folder>"
