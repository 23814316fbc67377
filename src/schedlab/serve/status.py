"""``schedlab serve status``: what a running (or stopped) scheduler of a partition is doing.

Everything comes from what serve already leaves behind, read without changing anything:

* the partition's lock (``STATE_DIR/serve-PARTITION.lock``): whether a scheduler holds it now,
  according to the kernel's lock table, and who (pid, host, since when: the lock file);
* ``/metrics`` (``--metrics-port``), when the scheduler answers it: the last cycle's time,
  duration and decisions, counted whether or not it changed anything;
* the journal: the last ``serve`` record (policy, placement, interval), the ``cycle`` record of
  the last cycle that changed something (the last cycle when there is no ``/metrics``), a
  ``stop`` record after it, and the journal's files and size;
* Slurm (``squeue``): the partition's jobs sorted as a cycle sorts them (held by schedlab,
  released and pinned, running, not eligible, rejected, …) and the reasons serve wrote into
  the ``Comment`` of held jobs;
* the queue file serve writes each cycle (``STATE_DIR/serve-PARTITION.queue.json``,
  :mod:`schedlab.serve.queue_view`): the queued jobs in the policy's order, each with its reason
  and estimated start.

Each source may be missing (no journal given, no metrics port, Slurm down): the rest is shown.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.serve.classify import classify
from schedlab.serve.client import SlurmClient, SlurmError
from schedlab.serve.journal import journal_files
from schedlab.serve.lock import ALL, Holder, lock_holder, lock_path
from schedlab.serve.queue_view import queue_path, read_queue
from schedlab.serve.reasons import REASON_MARK, SEPARATOR
from schedlab.serve.slurm_state import MARK_QUEUED, MARK_RELEASED, read_jobs

Record = dict[str, Any]
#: Reasons listed (most frequent first) in the text report; ``--json`` lists every held job.
TOP_REASONS = 8
#: Queued jobs listed (from the head of the policy's order) in the text report.
QUEUE_LINES = 15
#: The journal lines status parses (found as text first: a journal may hold millions).
_WANTED = re.compile(r'"action"\s*:\s*"(serve|cycle|stop)"')


@dataclass
class Status:
    """One look at a partition's scheduler; see the module docstring for the sources."""

    partition: str | None
    lock: Path
    holder: Holder | None = None
    server: Record | None = None  # the journal's last ``serve`` record
    stopped: Record | None = None  # a ``stop`` record after it
    last_cycle: Record | None = None  # time, seconds, decisions, started, source
    metrics: dict[str, float] | None = None
    metrics_error: str | None = None
    jobs: dict[str, int] | None = None
    reasons: list[tuple[str, list[str]]] = field(default_factory=list)  # reason → job labels
    slurm_error: str | None = None
    journal: Record | None = None  # path, bytes, files
    queue: Record | None = None  # the scheduler's last queue file
    queue_error: str | None = None

    @property
    def running(self) -> bool:
        return self.holder is not None


# -- the sources ----------------------------------------------------------------------------
def read_metrics(port: int, timeout: float = 2.0) -> dict[str, float]:
    """``GET http://127.0.0.1:PORT/metrics``, as {name without the ``schedlab_serve_`` prefix:
    value}; OSError when nothing answers."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as resp:
        text = resp.read().decode("utf-8", "replace")
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        try:
            out[name.removeprefix("schedlab_serve_")] = float(value)
        except ValueError:
            continue
    return out


def journal_summary(path: Path) -> tuple[Record, Record | None, Record | None, Record | None]:
    """The journal's files and size, and its last ``serve`` record with the last ``cycle`` and
    ``stop`` records after it (each None when absent). Read from the end, newest file first,
    parsing only the lines that can be such records."""
    files = [f for f in journal_files(path) if f.exists()]
    sizes = {str(f): f.stat().st_size for f in files}
    summary: Record = {
        "path": str(path),
        "bytes": sizes.get(str(path), 0),
        "rotated_files": max(0, len(files) - (1 if path.exists() else 0)),
        "total_bytes": sum(sizes.values()),
    }
    serve = cycle = stop = None
    for part in reversed(files):
        with part.open("rb") as fh:
            lines = fh.read().decode("utf-8", "replace").splitlines()
        for line in reversed(lines):
            if not _WANTED.search(line):
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line
            action = record.get("action")
            if action == "serve":
                serve = record
                return summary, serve, cycle, stop
            if action == "cycle" and cycle is None:
                cycle = record
            elif action == "stop" and stop is None:
                stop = record
    return summary, serve, cycle, stop


def _reason(comment: str) -> str:
    """serve's reason in a job's ``Comment`` (the owner's text after it left out)."""
    return comment.partition(SEPARATOR)[0].removeprefix(REASON_MARK).strip()


def slurm_jobs(
    client: SlurmClient, partition: str | None, now: float
) -> tuple[dict[str, int], list[tuple[str, list[str]]]]:
    """The partition's jobs by what serve does with them, and the reasons written on the held
    ones (most frequent first, each with the jobs that show it)."""
    jobs = read_jobs(client.squeue(), partition)
    classes = classify(jobs, now)
    ours = (MARK_QUEUED, MARK_RELEASED)
    counts = {
        "held": len(classes.queued),
        "not_eligible": len(classes.waiting),
        "released": len(classes.launching),
        "running": sum(1 for j in classes.active if j.admin_comment in ours),
        "rejected": len(classes.rejected),
        "limited": len(classes.limited),
        "held_by_others": len(classes.foreign_held),
        "released_by_others": len(classes.rehold),
        "unsplit_arrays": len(classes.split),
        "other_owners_running": sum(1 for j in classes.active if j.admin_comment not in ours),
    }
    by_reason: dict[str, list[str]] = {}
    held = {j.job_id for j in classes.queued + classes.rejected} | set(classes.waiting)
    for job in jobs:
        if job.job_id in held and job.comment.startswith(REASON_MARK):
            by_reason.setdefault(_reason(job.comment), []).append(job.label)
    order = Counter({k: len(v) for k, v in by_reason.items()})
    return counts, [(reason, by_reason[reason]) for reason, _ in order.most_common()]


def gather(
    state_dir: Path,
    partition: str | None,
    client: SlurmClient | None,
    journal: Path | None = None,
    metrics_port: int | None = None,
    now: float | None = None,
    locks: str | None = None,
) -> Status:
    """Look at every source (``client`` None: Slurm is not asked)."""
    now = time.time() if now is None else now
    status = Status(partition, lock_path(state_dir, partition or ALL))
    status.holder = lock_holder(state_dir, partition, locks)
    if journal is not None and journal.exists():
        status.journal, status.server, cycle, status.stopped = journal_summary(journal)
        if cycle is not None:
            keys = ("time", "seconds", "decisions", "started", "queued", "running", "errors")
            status.last_cycle = {k: cycle.get(k) for k in keys} | {"source": "journal"}
    elif journal is not None:
        status.journal = {"path": str(journal), "bytes": 0, "rotated_files": 0, "missing": True}
    if metrics_port is not None and status.running:
        try:
            status.metrics = read_metrics(metrics_port)
        except (OSError, urllib.error.URLError) as exc:
            status.metrics_error = f"127.0.0.1:{metrics_port} did not answer ({exc})"
    m = status.metrics
    if m and m.get("cycles_total", 0) > 0:
        status.last_cycle = {
            "time": m.get("last_cycle_timestamp_seconds"),
            "seconds": m.get("cycle_seconds"),
            "decisions": int(m.get("last_cycle_decisions", 0)),
            "started": int(m.get("last_cycle_started", 0)),
            "queued": int(m.get("queued_jobs", 0)),
            "running": int(m.get("running_jobs", 0)),
            "cycles": int(m["cycles_total"]),
            "source": "metrics",
        }
    try:
        status.queue = read_queue(queue_path(state_dir, partition))
    except InputError as exc:
        status.queue_error = str(exc)
    if client is not None:
        try:
            status.jobs, status.reasons = slurm_jobs(client, partition, now)
        except SlurmError as exc:
            status.slurm_error = str(exc)
    return status


# -- the report -------------------------------------------------------------------------------
def _when(seconds: float | None, now: float) -> str:
    if not seconds:
        return "?"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))
    ago = now - seconds
    return f"{stamp} ({ago:.1f} s ago)" if ago >= 0 else stamp


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


#: How each job count reads in the text report, in this order.
JOB_WORDS = {
    "held": "held by schedlab",
    "not_eligible": "held, not eligible yet",
    "released": "released (pinned, starting)",
    "running": "running",
    "rejected": "rejected",
    "limited": "released, kept back by a limit",
    "held_by_others": "held by someone else after release",
    "released_by_others": "released past the policy",
    "unsplit_arrays": "arrays with tasks to split off",
    "other_owners_running": "running, not schedlab's",
}


def render(status: Status, now: float) -> list[str]:
    """The report as lines of text."""
    where = f"partition {status.partition}" if status.partition else "all partitions"
    lines = []
    h = status.holder
    if h is not None:
        since = f" since {h.since}" if h.since else ""
        scope = " (managing every partition)" if h.partition == ALL and status.partition else ""
        lines.append(
            f"{where}: served by pid {h.pid} on {h.host or '?'}{since}{scope} (lock {h.path})"
        )
    else:
        lines.append(f"{where}: no scheduler running (lock {status.lock} is free)")
    s = status.server
    if s is not None:
        backfill = f"{s.get('policy')} / {s.get('placement')}"
        extra = f", topology {s['topology']}" if s.get("topology") else ""
        mode = ", shadow" if s.get("shadow") else ""
        lines.append(
            f"server: {backfill}, every {s.get('interval')} s{extra}{mode}, "
            f"started {_when(s.get('time'), now)}"
        )
        if status.stopped is not None:
            stop = status.stopped
            lines.append(f"stopped: {_when(stop.get('time'), now)} ({stop.get('reason')})")
    c = status.last_cycle
    if c is not None:
        what = "last cycle" if c["source"] == "metrics" else "last cycle that changed something"
        secs = c.get("seconds")
        lines.append(
            f"{what}: {_when(c.get('time'), now)}, "
            + (f"{secs:.3f} s, " if isinstance(secs, int | float) else "")
            + f"{c.get('decisions')} decisions, {c.get('started')} started"
            + (f" ({c['cycles']} cycles so far)" if "cycles" in c else "")
        )
    if status.metrics_error:
        lines.append(f"metrics: {status.metrics_error}")
    if status.jobs is not None:
        parts = [f"{n} {JOB_WORDS[k]}" for k, n in status.jobs.items() if n]
        lines.append("jobs: " + (", ".join(parts) if parts else "none"))
        if status.reasons:
            lines.append("reasons on held jobs:")
            for reason, jobs in status.reasons[:TOP_REASONS]:
                shown = ", ".join(jobs[:3]) + (", …" if len(jobs) > 3 else "")
                lines.append(f"  {len(jobs):5d}  {reason}  [{shown}]")
            if len(status.reasons) > TOP_REASONS:
                lines.append(f"  ({len(status.reasons) - TOP_REASONS} more reasons; --json)")
    elif status.slurm_error:
        lines.append(f"jobs: cannot read Slurm ({status.slurm_error})")
    lines += render_queue(status, now)
    j = status.journal
    if j is not None:
        if j.get("missing"):
            lines.append(f"journal: {j['path']} does not exist")
        else:
            rotated = (
                f" (+{j['rotated_files']} rotated, {_size(j['total_bytes'])} in all)"
                if j["rotated_files"]
                else ""
            )
            lines.append(f"journal: {j['path']}, {_size(j['bytes'])}{rotated}")
    return lines


def _clock(seconds: float, now: float) -> str:
    """An estimated start: the UTC time, and how far off it is."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
    ahead = seconds - now
    if ahead <= 0:
        return f"{stamp} (now)"
    if ahead < 3600:
        return (
            f"{stamp} (in {ahead / 60:.0f} min)" if ahead >= 60 else f"{stamp} (in {ahead:.0f} s)"
        )
    return f"{stamp} (in {ahead / 3600:.1f} h)"


def render_queue(status: Status, now: float) -> list[str]:
    """The queue in the policy's order: position, job, GPUs, estimated start, reason."""
    if status.queue_error:
        return [f"queue: {status.queue_error}"]
    q = status.queue
    if q is None:
        return []
    order = "the policy's order" if q.get("order") == "policy" else "submit order"
    head = (
        f"queue in {order} ({q.get('policy')}), as of cycle {q.get('cycle')} at "
        f"{_when(q.get('time'), now)}"
    )
    jobs = q.get("queue") or []
    if not jobs:
        return [head + ": empty"]
    lines = [
        head + ":",
        "    #  job           GPUs  estimated start (UTC)             waits for  reason",
    ]
    for entry in jobs[:QUEUE_LINES]:
        start = entry.get("estimated_start")
        if start is not None:
            when = _clock(float(start), now)
        elif entry.get("waits_for") == "resources":
            when = "never on the nodes up now"
        else:
            when = "not estimated"
        lines.append(
            f"  {entry.get('position', '?'):>3}  {entry.get('job', '?'):<12}  "
            f"{entry.get('gpus', '?'):>4}  {when:<32}  {entry.get('waits_for') or '-':<9}  "
            f"{entry.get('reason', '')}"
        )
    if len(jobs) > QUEUE_LINES:
        lines.append(f"  ({len(jobs) - QUEUE_LINES} more queued; --json)")
    return lines + render_tenancy(q)


def _gpus(row: Record, key: str) -> str:
    value = (row.get(key) or {}).get("gpu")
    if value is None:
        return "-"
    return f"{value:g}" if key != "usage" else f"{value:.3f}"


def borrowed(row: Record) -> float | None:
    """GPUs a queue holds beyond its deserved quota (0 within it; None without GPU figures)."""
    alloc = (row.get("alloc") or {}).get("gpu")
    deserved = (row.get("deserved") or {}).get("gpu")
    if alloc is None or deserved is None:
        return None
    return max(0.0, float(alloc) - float(deserved))


def render_tenancy(q: Record) -> list[str]:
    """Each queue's deserved GPUs, fair share, GPUs held, borrowed (held beyond deserved) and
    waiting (and usage, and the policy's own figure), when the server runs a share policy."""
    rows = q.get("tenancy")
    if not rows:
        return []
    extra = sorted(
        {k for r in rows for k in r}
        - {"queue", "leaf", "deserved", "fair_share", "alloc", "pending", "usage"}
    )
    usage = any("usage" in r for r in rows)
    head = "  queue                 deserved  fair share      held  borrowed   waiting"
    head += "     usage" if usage else ""
    head += "".join(f"  {k:>9}" for k in extra)
    lines = ["queues (GPUs):", head]
    for r in rows:
        lent = borrowed(r)
        line = (
            f"  {str(r.get('queue'))[:20]:<20}  {_gpus(r, 'deserved'):>8}  "
            f"{_gpus(r, 'fair_share'):>10}  {_gpus(r, 'alloc'):>8}  "
            f"{'-' if lent is None else f'{lent:g}':>8}  {_gpus(r, 'pending'):>8}"
        )
        if usage:
            line += f"  {_gpus(r, 'usage'):>8}"
        line += "".join(f"  {r.get(k, float('nan')):>9.3g}" for k in extra)
        lines.append(line)
    return lines


def as_json(status: Status) -> Record:
    """The report as one JSON object (every held job's reason included)."""
    h = status.holder
    return {
        "partition": status.partition,
        "running": status.running,
        "lock": str(status.lock),
        "holder": None
        if h is None
        else {"pid": h.pid, "host": h.host, "since": h.since, "lock": str(h.path)},
        "server": status.server,
        "stopped": status.stopped,
        "last_cycle": status.last_cycle,
        "metrics": status.metrics,
        "metrics_error": status.metrics_error,
        "jobs": status.jobs,
        "reasons": [{"reason": r, "jobs": jobs} for r, jobs in status.reasons],
        "slurm_error": status.slurm_error,
        "journal": status.journal,
        "queue": status.queue,
        "queue_error": status.queue_error,
    }
