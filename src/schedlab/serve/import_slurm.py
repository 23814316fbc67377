"""A recorded ``serve slurm`` run as a schedlab workload, so the simulator can replay it.

Two sources: the serve journal (what each job asked for, when the scheduler saw it, where the
policy put it) and Slurm's completion records (``sacct -c``: when each run really started and
ended, on which nodes). GPU counts come from the journal, because completion records do not carry
them.

Two clocks for the workload:

* ``slurm`` (default): a job arrives at its Slurm submit time and runs for as long as its last
  run took (end − start from its completion record). What a user would call the workload.
* ``observed``: a job arrives when the scheduler first saw it and runs from the cycle that started
  it to the cycle that saw it finish. Replaying these times gives the policy the same decision
  points in the same order as the live run (times are kept on a 1/1024 s grid so that start +
  duration lands exactly on the observed finish), which is what comparing live and simulated
  placements needs. A job whose finish no cycle saw (the scheduler was down) falls back to its
  completion record.
"""

from __future__ import annotations

import math
import subprocess
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from schedlab.errors import InputError
from schedlab.input_files import read_text
from schedlab.model.gpu_models import is_known_model
from schedlab.serve.client import SlurmError
from schedlab.serve.hostlist import expand_hostlist
from schedlab.serve.journal import read_journal
from schedlab.serve.serve_record import journaled_seconds

if TYPE_CHECKING:
    import pandas as pd

TIMINGS = ("slurm", "observed")
SACCT_FIELDS = "JobID,State,Start,End,NodeList,Submit"
#: Grid of the observed clock: binary fractions add exactly in floating point.
GRID = 1024.0


@dataclass(frozen=True)
class RunRecord:
    """One completion record: one run of a job (a requeued job has several)."""

    job_id: int
    state: str
    start: float
    end: float
    nodes: tuple[str, ...]


@dataclass
class JournalJob:
    """What the journal says about one job."""

    job_id: int
    gpus: int = 0
    gpu_type: str = ""
    user: str = ""
    submit_time: float = math.nan
    arrived: float = math.nan
    started: float = math.nan  # the last start decision
    nodes: tuple[str, ...] = ()
    finished: float = math.nan  # the cycle that saw its last run end
    starts: int = 0
    rejected: str = ""
    gpus_per_node: int = 0
    num_nodes: int = 0
    exclusive: bool = False
    checkpoint: bool = False  # a live job that does not say it checkpoints does not


@dataclass
class ImportResult:
    frame: pd.DataFrame
    cluster: str
    policy: str
    placement: str
    left_out: dict[str, int] = field(default_factory=dict)
    #: ``module:Class`` plugins the live run loaded (a replay of it needs them too).
    plugins: tuple[str, ...] = ()
    #: The ordering parameters the live run was given (``--param KEY=VALUE``).
    params: dict[str, str] = field(default_factory=dict)
    #: The live run's network as replay's ``--topology`` takes it ("" : none recorded) ...
    topology_spec: str = ""
    #: ... or, for a Slurm switch tree, that network as an explicit topology TOML text.
    topology_toml: str = ""
    #: The live run's ``--min-runtime`` (seconds; 0: none), which its replay applies too.
    min_runtime: float = 0.0
    #: The live run's ``--grace`` (seconds; 0: none), which its replay applies too.
    grace: float = 0.0


def _epoch(text: str) -> float:
    """A Slurm timestamp (local time, ``2026-01-02T03:04:05``) as Unix seconds; NaN if unset."""
    text = text.strip()
    if not text or text in ("Unknown", "None", "(null)"):
        return math.nan
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise InputError(f"not a Slurm timestamp: {text!r}") from None


def parse_sacct(text: str, source: str = "sacct") -> list[RunRecord]:
    """``sacct -c -P -o JobID,State,Start,End,NodeList`` output (a header line names the fields;
    any order), or the ``jobcomp/filetxt`` file itself (``JobId=… JobState=…`` lines)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    if lines[0].startswith("JobId="):
        return [_filetxt_record(ln, source, n) for n, ln in enumerate(lines, start=1)]
    header = [h.strip() for h in lines[0].split("|")]
    need = ("JobID", "State", "Start", "End", "NodeList")
    missing = [f for f in need if f not in header]
    if missing:
        raise InputError(
            f"completion records lack {', '.join(missing)} (run 'sacct -c -P -o {SACCT_FIELDS}')",
            path=source,
            row=1,
        )
    col = {name: header.index(name) for name in need}
    out = []
    for n, line in enumerate(lines[1:], start=2):
        cells = line.split("|")
        try:
            job = cells[col["JobID"]].split(".")[0]
            out.append(
                RunRecord(
                    job_id=int(job),
                    state=cells[col["State"]].split()[0] if cells[col["State"]] else "",
                    start=_epoch(cells[col["Start"]]),
                    end=_epoch(cells[col["End"]]),
                    nodes=tuple(expand_hostlist(cells[col["NodeList"]])),
                )
            )
        except (IndexError, ValueError, InputError) as exc:
            raise InputError(f"bad completion record ({exc})", path=source, row=n) from None
    return out


def _filetxt_record(line: str, source: str, row: int) -> RunRecord:
    fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
    try:
        return RunRecord(
            job_id=int(fields["JobId"]),
            state=fields.get("JobState", ""),
            start=_epoch(fields.get("StartTime", "")),
            end=_epoch(fields.get("EndTime", "")),
            nodes=tuple(expand_hostlist(fields.get("NodeList", ""))),
        )
    except (KeyError, ValueError, InputError) as exc:
        raise InputError(f"bad completion record ({exc})", path=source, row=row) from None


def run_sacct() -> str:
    """``sacct -c`` on this machine (the completion file named by the running Slurm's config)."""
    try:
        done = subprocess.run(
            ["sacct", "-c", "-a", "-P", "-S", "1970-01-02", "-o", SACCT_FIELDS],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except FileNotFoundError:
        raise SlurmError("'sacct' not found: pass the completion records with --sacct") from None
    if done.returncode != 0:
        lines = (done.stderr.strip() or done.stdout.strip() or "no message").splitlines()
        raise SlurmError(f"'sacct -c' failed (exit {done.returncode}): {lines[-1].strip()}")
    return done.stdout


def read_journal_jobs(path: Path) -> tuple[dict[int, JournalJob], dict[str, object], float]:
    """Per-job facts from a journal, the last ``serve`` record, and the journal's first time."""
    jobs: dict[int, JournalJob] = {}
    serve: dict[str, object] = {}
    first = math.nan
    for rec in read_journal(path):
        t = float(rec.get("time", math.nan))
        if math.isnan(first):
            first = t
        action = rec["action"]
        if action == "serve":
            serve = rec
            continue
        if rec.get("job") is None:
            continue
        job = jobs.setdefault(int(rec["job"]), JournalJob(int(rec["job"])))
        if action == "arrive":
            if math.isnan(job.arrived):
                job.arrived = t
                job.submit_time = float(rec.get("submit_time", t))
            job.gpus = int(rec.get("gpus", job.gpus))
            job.gpu_type = str(rec.get("gpu_type") or "")
            job.user = str(rec.get("user") or "")
            job.gpus_per_node = int(rec.get("gpus_per_node") or 0)
            job.num_nodes = int(rec.get("num_nodes") or 0)
            job.exclusive = bool(rec.get("exclusive"))
            job.checkpoint = bool(rec.get("checkpoint"))
        elif action == "start":
            job.started = t
            job.nodes = tuple(rec.get("nodes") or ())
            job.gpus = int(rec.get("gpus", job.gpus))
            job.starts += 1
            job.finished = math.nan
            if math.isnan(job.submit_time):
                job.submit_time = float(rec.get("submit_time", t))
        elif action == "finish":
            job.finished = t
        elif action == "reject":
            job.rejected = str(rec.get("reason", "rejected"))
    return jobs, serve, first


def _grid(t: float) -> float:
    return round(t * GRID) / GRID


def import_slurm(journal: Path, sacct_text: str, timing: str = "slurm") -> ImportResult:
    """The workload table (see the module docstring); jobs left out are counted by reason."""
    if timing not in TIMINGS:
        raise InputError(f"'--timing' must be one of {', '.join(TIMINGS)} (got {timing!r})")
    jobs, serve, first = read_journal_jobs(journal)
    if not jobs:
        raise InputError("the journal names no jobs", path=str(journal))
    runs: dict[int, list[RunRecord]] = {}
    for r in parse_sacct(sacct_text):
        # Completion records older than the journal belong to someone else (job ids restart).
        if math.isnan(r.end) or r.end < math.floor(first) - 1:
            continue
        runs.setdefault(r.job_id, []).append(r)
    left_out = {"rejected": 0, "never started": 0, "no completion record": 0, "cancelled": 0}
    rows = []
    for job_id in sorted(jobs):
        job = jobs[job_id]
        if job.rejected and not job.starts:
            left_out["rejected"] += 1
            continue
        if not job.starts:
            left_out["never started"] += 1
            continue
        ran = [r for r in runs.get(job_id, []) if not math.isnan(r.start) and r.nodes]
        if not ran:
            left_out["no completion record"] += 1
            continue
        last = max(ran, key=lambda r: r.end)
        if last.state.upper().startswith("CANCELLED"):
            # Its recorded run was cut short by a person, not by the workload ending: replaying it
            # as a job of that length would invent a completion that never happened.
            left_out["cancelled"] += 1
            continue
        if timing == "observed":
            submit = job.arrived if not math.isnan(job.arrived) else job.started
            if math.isnan(job.finished):
                duration = last.end - last.start
            else:
                duration = _grid(job.finished) - _grid(job.started)
            submit = _grid(submit)
        else:
            submit = job.submit_time
            duration = last.end - last.start
        rows.append(
            {
                "job_id": str(job_id),
                "submit_time": submit,
                "num_gpus": job.gpus,
                "duration": max(duration, 0.0),
                "user": job.user,
                "gpu_model": job.gpu_type.upper() if is_known_model(job.gpu_type) else "",
                "gpus_per_node": job.gpus_per_node,
                "num_nodes": job.num_nodes,
                "exclusive": int(job.exclusive),
                "checkpoint": int(job.checkpoint),
                "nodes": ",".join(job.nodes),
                "ran_on": ",".join(last.nodes),
                "slurm_state": last.state,
                "runs": len(ran),
            }
        )
    if not rows:
        raise InputError(
            "no job in the journal has a completion record "
            "(is this the cluster the journal was written on?)",
            path=str(journal),
        )
    import pandas as pd  # the imported run is a table like a replay's

    frame = pd.DataFrame(rows)
    origin = float(frame["submit_time"].min())
    frame["submit_time"] = frame["submit_time"] - origin
    return ImportResult(
        frame=frame,
        cluster=str(serve.get("cluster", "")),
        policy=str(serve.get("policy", "")),
        placement=str(serve.get("placement", "")),
        left_out={k: v for k, v in left_out.items() if v},
        plugins=tuple(str(p) for p in serve.get("plugins") or ()),
        params=_params(serve.get("params")),
        topology_spec=str(serve.get("topology_spec") or ""),
        topology_toml=str(serve.get("topology_toml") or ""),
        min_runtime=journaled_seconds(serve.get("min_runtime")),
        grace=journaled_seconds(serve.get("grace")),
    )


def _params(raw: object) -> dict[str, str]:
    """The serve record's ``params`` object as ``--param`` pairs (anything else: none)."""
    if not isinstance(raw, dict):
        return {}
    return {str(k): str(v) for k, v in raw.items()}


def load_sacct(path: Path | None) -> str:
    """The completion records from ``path``, or from ``sacct -c`` when no file is given."""
    if path is None:
        return run_sacct()
    return read_text(path, "completion records file")
