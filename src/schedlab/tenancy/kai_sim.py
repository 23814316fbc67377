"""``usage.mode = "kai-sim"``: KAI's time-aware fair-share simulator, cycle by cycle, to compare
with the CSVs it published (``cmd/time-aware-simulator``).

Time is counted in cycles, with one usage history entry per cycle; over the last ``n = min(len,
W)`` entries a queue's usage is ``Σ_j a_{t-j} 2^{-j/H} / Σ_j C 2^{-j/H}``. The first queue starts
holding one job. Each cycle: (1) the row is emitted (the allocation now; the fair share
computed in the previous cycle, at first the share without history); (2) the allocation is
appended to the history; (3) shares are recomputed (:func:`schedlab.tenancy.kai_division.
divide` with the usage); (4) a reclaim issued in the previous cycle is bound and nothing else
happens; otherwise a job that fits in the free GPUs is placed (queues not over their share
first, then the lowest allocation over share, then the lower index); otherwise the first queue
with ``alloc + job ≤ F`` evicts one job of the first queue with ``alloc > F``, and its own job
binds in the next cycle. Jobs never finish.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.input_files import check_input_file
from schedlab.tenancy.kai_division import divide


@dataclass(frozen=True)
class KaiSimConfig:
    """One simulation: a node of ``gpus`` GPUs, and per queue its job size and count."""

    gpus: int
    queues: tuple[str, ...]
    job_gpus: tuple[int, ...]
    num_jobs: tuple[int, ...]
    cycles: int = 1024
    window: int = 256
    half_life: float = 128.0
    k: float = 1.0
    weights: tuple[float, ...] = ()


def read_sim_config(path: str | Path) -> KaiSimConfig:
    """KAI's simulation YAML (``Queues``, ``Jobs``, ``Nodes``, ``Cycles``, ``WindowSize``,
    ``HalfLifePeriod``, ``KValue``): the leaf queues under one department, in file order."""
    import yaml

    p = check_input_file(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise InputError(f"not a readable YAML file ({exc})", path=str(p)) from None
    try:
        parents = {q["Parent"] for q in data["Queues"] if q.get("Parent")}
        leaves = [q for q in data["Queues"] if q["Name"] not in parents]
        jobs = data["Jobs"]
        gpus = sum(int(n["Count"]) * int(n["GPUs"]) for n in data["Nodes"])
        k = data.get("KValue")
        return KaiSimConfig(
            gpus=gpus,
            queues=tuple(q["Name"] for q in leaves),
            job_gpus=tuple(int(jobs[q["Name"]]["GPUs"]) for q in leaves),
            num_jobs=tuple(int(jobs[q["Name"]]["NumJobs"]) for q in leaves),
            cycles=int(data["Cycles"]),
            window=int(data["WindowSize"]),
            half_life=float(data["HalfLifePeriod"]),
            k=1.0 if k is None else float(k),
            weights=tuple(float(q.get("Weight") or 1.0) for q in leaves),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"not a KAI simulation config ({exc!r})", path=str(p)) from None


def simulate(cfg: KaiSimConfig) -> tuple[np.ndarray, np.ndarray]:
    """Allocation and fair share per cycle and queue: two arrays ``[cycles, queues]``."""
    q = len(cfg.queues)
    size = np.asarray(cfg.job_gpus, dtype=np.float64)
    total = np.asarray(cfg.num_jobs, dtype=np.float64)
    weights = list(cfg.weights) if cfg.weights else [1.0] * q
    held = np.zeros(q)  # jobs running
    held[0] = 1.0
    history: list[np.ndarray] = []
    decay = 2.0 ** (-np.arange(cfg.window) / cfg.half_life)

    def shares() -> list[float]:
        alloc = held * size
        request = alloc + (total - held) * size
        usage = None
        if history:
            n = min(len(history), cfg.window)
            recent = np.asarray(history[-n:][::-1])  # newest first
            w = decay[:n]
            usage = ((recent * w[:, None]).sum(axis=0) / (cfg.gpus * w.sum())).tolist()
        return divide(float(cfg.gpus), [0.0] * q, request.tolist(), weights, None, usage, cfg.k)

    fair = shares()
    alloc_rows = np.zeros((cfg.cycles, q))
    fair_rows = np.zeros((cfg.cycles, q))
    bind: int | None = None
    for cycle in range(cfg.cycles):
        alloc = held * size
        alloc_rows[cycle] = alloc
        fair_rows[cycle] = fair
        history.append(alloc.copy())
        fair = shares()
        if bind is not None:
            held[bind] += 1
            bind = None
            continue
        free = cfg.gpus - float(alloc.sum())
        waiting = [i for i in range(q) if held[i] < total[i]]
        fitting = [i for i in waiting if size[i] <= free]
        if fitting:
            held[min(fitting, key=lambda i, a=alloc, f=fair: _place_rank(i, a, f))] += 1
            continue
        claimer = next((i for i in waiting if alloc[i] + size[i] <= fair[i]), None)
        victim = next((i for i in range(q) if alloc[i] > fair[i] and held[i] > 0), None)
        if claimer is not None and victim is not None:
            held[victim] -= 1
            bind = claimer
    return alloc_rows, fair_rows


def _place_rank(i: int, alloc: np.ndarray, fair: list[float]) -> tuple[bool, float, int]:
    """Placement order: not over share first, then lowest allocation over share, then index."""
    ratio = alloc[i] / fair[i] if fair[i] > 0 else alloc[i] * 1000.0
    return (bool(alloc[i] > fair[i]), float(ratio), i)


def read_kai_csv(path: str | Path, queues: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """KAI's CSV as the same two arrays (the parent's rows and blank lines skipped)."""
    p = check_input_file(path)
    rows: dict[tuple[int, str], tuple[float, float]] = {}
    with open(p, newline="", encoding="utf-8") as fh:
        for line, row in enumerate(csv.DictReader(fh), start=2):
            if not row or not row.get("Time"):
                continue
            try:
                rows[(int(row["Time"]), row["QueueID"])] = (
                    float(row["Allocation"]),
                    float(row["FairShare"]),
                )
            except (KeyError, ValueError):
                raise InputError("not a KAI simulator row", path=str(p), row=line) from None
    cycles = 1 + max(t for t, _ in rows)
    alloc = np.zeros((cycles, len(queues)))
    fair = np.zeros((cycles, len(queues)))
    for (t, name), (a, f) in rows.items():
        if name in queues:
            alloc[t, queues.index(name)] = a
            fair[t, queues.index(name)] = f
    return alloc, fair


def holds(alloc: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of cycles in which one queue holds GPUs: ``(queue, length)`` in time order
    (cycles in which no queue holds any are skipped)."""
    out: list[tuple[int, int]] = []
    for row in alloc:
        holders = np.flatnonzero(row > 0)
        if len(holders) != 1:
            continue
        who = int(holders[0])
        if out and out[-1][0] == who:
            out[-1] = (who, out[-1][1] + 1)
        else:
            out.append((who, 1))
    return out


def queue_holds(alloc: np.ndarray, queue: int) -> list[int]:
    """Lengths of the runs in which ``queue`` holds GPUs, in time order."""
    runs, length = [], 0
    for value in alloc[:, queue]:
        if value > 0:
            length += 1
        elif length:
            runs.append(length)
            length = 0
    if length:
        runs.append(length)
    return runs
