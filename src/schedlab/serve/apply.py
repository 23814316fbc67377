"""Decisions → ``scontrol`` commands, run one job at a time so one failure never stops the rest.

What each decision becomes (and nothing else is ever changed on a job):

* ``Start(job, allocation)``: ``scontrol update JobId=ID ReqNodeList=NODES`` (plus
  ``NumNodes=K`` when the node count differs from the request, and ``StartTime=now`` for a requeued
  job, whose begin time Slurm pushes back), then ``scontrol release ID``, then the ownership
  marker becomes ``AdminComment=schedlab:released``. A job that was released before (stranded)
  is held first, so it cannot start on its old pin between the commands. (Killed between the
  release and the marker, the next cycle sees a job of schedlab's released by someone else, and
  holds and places it again; Slurm may already have started it, which is then simply counted.)
* ``Preempt(job)``: ``AdminComment=schedlab:queued``, then ``scontrol requeuehold ID``: it stops,
  goes back to pending held, and is placed afresh by a later cycle. A victim still launching
  (released, not started when Slurm was read) may start at any moment, so it is first held
  (``Priority=0`` and the marker: it can no longer start) and then requeued held, which stops it
  if Slurm started it in between; Slurm's refusal to requeue a job that is still pending ("Job
  is pending execution") then means the hold alone did it, and is no error.
* ``Reject(job, reason)``: ``scontrol update JobId=ID Comment="schedlab: rejected: REASON"``;
  the job stays held, ``squeue -O jobid,comment`` shows why, and later cycles pass it over.
* Holding (a claim of a ``--hold`` job, a stranded job, one released outside schedlab) is one
  ``scontrol update JobId=ID Priority=0 AdminComment=schedlab:queued``: an admin hold, which the
  job's owner cannot release, and the marker, in one step.
* ``Resize``: Slurm cannot change a running job's GPUs, so it is journaled as skipped, as is
  any decision kind that only means something in simulation.

Starts are checked before anything is sent: every node must be up and in the partition, the GPU
count must be the one the job asked for, and a job that asked per node (``--gres=gpu:N``) must get
N GPUs on each of its nodes. A start that fails a check, or whose command fails, leaves the job
held for the next cycle; the journal says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from schedlab.model.snapshot import (
    Decision,
    Preempt,
    Reconfigure,
    Reject,
    Resize,
    Start,
    one_per_job,
)
from schedlab.serve.client import SlurmClient, SlurmError
from schedlab.serve.live import LiveView
from schedlab.serve.reasons import cleared_comment, reason_command
from schedlab.serve.slurm_state import MARK_QUEUED, MARK_RELEASED, REJECT_MARK, JobInfo

#: Most jobs one ``scontrol update`` names when it writes the same reason to each.
REASON_BATCH = 200
#: Longest ``Comment`` schedlab writes (Slurm keeps long comments, squeue columns do not).
MAX_COMMENT = 200
#: Slurm's words (ESLURM_JOB_PENDING) when asked to requeue a job that has not started.
NOT_STARTED = "pending execution"

Record = dict[str, Any]


@dataclass
class Outcome:
    """What applying one cycle's decisions did: journal records and counts."""

    records: list[Record] = field(default_factory=list)
    started: list[int] = field(default_factory=list)
    errors: int = 0


def hold_command(job_id: int | str) -> list[str]:
    """Hold a job for schedlab: an admin hold and the ownership marker, in one update."""
    return ["update", f"JobId={job_id}", "Priority=0", f"AdminComment={MARK_QUEUED}"]


def start_commands(job: JobInfo, nodes: list[str], held: bool) -> list[list[str]]:
    """The ``scontrol`` argument lists that put a pending ``job`` on ``nodes`` and let it run.

    Every command names the job as ``squeue`` shows it: an array task as ``ARRAY_TASK``, because
    the last task of an array keeps the array's own id, which ``scontrol`` reads as the whole
    array ("Job resizing not supported for job arrays")."""
    update = ["update", f"JobId={job.label}", f"ReqNodeList={','.join(nodes)}"]
    if len(nodes) != job.node_count:
        update.append(f"NumNodes={len(nodes)}")
    if job.restart_count > 0:
        update.append("StartTime=now")
    cmds = [] if held else [hold_command(job.label)]
    mark = ["update", f"JobId={job.label}", f"AdminComment={MARK_RELEASED}"]
    own = cleared_comment(job)
    if own is not None:  # the reason it waited no longer holds: give the owner's text back
        mark.append(f"Comment={own}")
    return [*cmds, update, ["release", job.label], mark]


def reject_commands(job: JobInfo, reason: str) -> list[list[str]]:
    text = f"{REJECT_MARK} {reason}".replace('"', "'")[:MAX_COMMENT]
    cmds = [] if job.held and job.marked_queued else [hold_command(job.label)]
    return [*cmds, ["update", f"JobId={job.label}", f"Comment={text}"]]


def preempt_commands(job: JobInfo) -> list[list[str]]:
    """Stop ``job`` and give it back to the queue, held (see the module docstring)."""
    if job.active:
        mark = ["update", f"JobId={job.label}", f"AdminComment={MARK_QUEUED}"]
        return [mark, ["requeuehold", job.label]]
    # Launching: the hold keeps it from starting, the requeue stops it if it already has.
    return [hold_command(job.label), ["requeuehold", job.label]]


def check_start(view: LiveView, job: JobInfo, decision: Start) -> str | None:
    """Why this start must not be sent to Slurm, or None."""
    names = view.cluster.names
    size = sum(len(g) for _, g in decision.allocation)
    if size != job.num_gpus:
        return (
            f"policy gave {size} GPUs but the job asked for {job.num_gpus}; "
            "Slurm jobs run at their requested size"
        )
    for node, _ in decision.allocation:
        if not 0 <= node < len(names):
            return f"policy chose node index {node}, outside the partition"
        if not view.nodes[node].available:
            return (
                f"policy chose {names[node]}, which cannot run jobs now ({view.nodes[node].state})"
            )
    if job.gpus_per_node and not job.gpus_per_job:
        shape = sorted(len(g) for _, g in decision.allocation)
        want = [job.gpus_per_node] * max(job.node_count, 1)
        if shape != want:
            return (
                f"policy split the job as {shape} GPUs per node but it asked for "
                f"{job.node_count} node(s) × {job.gpus_per_node} GPUs (--gres is per node)"
            )
    return None


def _ids(jobs: list[JobInfo]) -> str:
    return ",".join(j.label for j in jobs)


class Applier:
    """Runs decisions against Slurm and describes each in a journal record."""

    def __init__(
        self,
        client: SlurmClient,
        stamp: Callable[[], Record],
        sink: Callable[[Record], None] = lambda record: None,
    ) -> None:
        self.client = client
        self.stamp = stamp  # the time and cycle fields every record carries
        # Each record goes to the journal as soon as its job is done with, so a kill mid-cycle
        # loses at most the job in hand.
        self.sink = sink

    def _record(self, job: int | None, action: str, **fields: Any) -> Record:
        record = {**self.stamp(), "job": job, "action": action, **fields}
        self.sink(record)
        return record

    def _run(
        self, job: int, action: str, cmds: list[list[str]], last_may_fail: str = "", **fields: Any
    ) -> Record:
        """Run ``cmds`` in order; the first failure stops this job only. ``last_may_fail``:
        words of Slurm's by which the last command may fail without it being an error."""
        for k, cmd in enumerate(cmds):
            try:
                self.client.scontrol(cmd)
            except SlurmError as exc:
                if last_may_fail and k == len(cmds) - 1 and last_may_fail in str(exc):
                    return self._record(job, action, **fields, requeued=False)
                return self._record(
                    job, "error", attempted=action, command=" ".join(cmd), reason=str(exc), **fields
                )
        return self._record(job, action, **fields, **({"requeued": True} if last_may_fail else {}))

    def hold_stranded(self, view: LiveView) -> list[Record]:
        """Hold every stranded job so it is placed afresh (whether or not it starts now)."""
        out = []
        for job_id, why in view.stranded.items():
            label = view.infos[view.index_of(job_id)].label
            out.append(self._run(job_id, "hold", [hold_command(label)], reason=why))
        return out

    def claim(self, view: LiveView, started: list[int]) -> list[Record]:
        """Mark the ``--hold`` jobs this cycle did not start as schedlab's (admin hold)."""
        done = set(started)
        out = []
        for job_id in view.claim:
            if job_id not in done:
                label = view.infos[view.index_of(job_id)].label
                out.append(self._run(job_id, "claim", [hold_command(label)]))
        return out

    def split_arrays(self, view: LiveView) -> list[Record]:
        """Split tasks off the arrays schedlab owns: each becomes a job of its own (Slurm gives
        it a new job id), held and marked, which later cycles offer to the policy."""
        out = []
        for rest, tasks in view.split:
            for task in tasks:
                label = f"{rest.array_job_id or rest.job_id}_{task}"
                out.append(self._run(rest.job_id, "split", [hold_command(label)], task=label))
        return out

    def reject_impossible(self, view: LiveView) -> list[Record]:
        out = []
        for info, why in view.impossible:
            out.append(
                self._run(
                    info.job_id,
                    "reject",
                    reject_commands(info, why),
                    reason=why,
                    gpus=info.num_gpus,
                )
            )
        return out

    def show_reasons(self, reasons: list[tuple[JobInfo, str]]) -> list[Record]:
        """Write each held job's reason into its ``Comment`` where it differs from what Slurm
        shows (:mod:`schedlab.serve.reasons`). Jobs that get the same text share one
        ``scontrol update JobId=A,B,…`` (a thousand new jobs cost a handful of commands, not a
        thousand); when such a command fails, its jobs are tried one by one, and only a job's
        own failure is journaled, since the journal already says why each job waits."""
        groups: dict[str, list[JobInfo]] = {}
        for job, reason in reasons:
            cmd = reason_command(job, reason)
            if cmd is not None:
                groups.setdefault(cmd[2], []).append(job)
        out: list[Record] = []
        for text, jobs in groups.items():
            for k in range(0, len(jobs), REASON_BATCH):
                batch = jobs[k : k + REASON_BATCH]
                if len(batch) > 1 and self._try(["update", f"JobId={_ids(batch)}", text]):
                    continue
                for job in batch:
                    cmd = ["update", f"JobId={job.label}", text]
                    if (why := self._try(cmd, quiet=False)) is not True:
                        out.append(
                            self._record(
                                job.job_id,
                                "error",
                                attempted="reason",
                                command=" ".join(cmd),
                                reason=why,
                            )
                        )
        return out

    def _try(self, cmd: list[str], quiet: bool = True) -> bool | str:
        """Run one command: True when it worked, else False (``quiet``) or Slurm's words."""
        try:
            self.client.scontrol(cmd)
        except SlurmError as exc:
            return False if quiet else str(exc)
        return True

    def apply(self, view: LiveView, decisions: list[Decision]) -> Outcome:
        """Rejections and preemptions first (they free what the starts use), then starts."""
        result = Outcome()
        infos = view.infos
        names = view.cluster.names
        decisions = one_per_job(decisions)
        ordered = [d for d in decisions if not isinstance(d, Start)] + [
            d for d in decisions if isinstance(d, Start)
        ]
        for d in ordered:
            if isinstance(d, Reconfigure):  # about the fabric, not a job
                result.records.append(
                    self._record(
                        None,
                        "skip",
                        reason="re-wiring circuits needs switch control Slurm does not have",
                    )
                )
                continue
            if not 0 <= d.job < len(infos):
                result.records.append(
                    self._record(-1, "error", reason=f"policy named job index {d.job}")
                )
                result.errors += 1
                continue
            job = infos[d.job]
            if isinstance(d, Reject):
                rec = self._run(
                    job.job_id,
                    "reject",
                    reject_commands(job, d.reason),
                    reason=d.reason,
                    gpus=job.num_gpus,
                )
            elif isinstance(d, Preempt):
                nodes = sorted(
                    {str(names[n]) for n, _ in view.snapshot.runtime.allocation[d.job] or ()}
                )
                launching = {} if job.active else {"launching": True}
                rec = self._run(
                    job.job_id,
                    "preempt",
                    preempt_commands(job),
                    NOT_STARTED if launching else "",
                    nodes=nodes,
                    gpus=job.num_gpus,
                    **launching,
                )
            elif isinstance(d, Resize):
                rec = self._record(
                    job.job_id,
                    "skip",
                    reason="Slurm cannot resize a running job",
                    gpus=job.num_gpus,
                )
            elif not isinstance(d, Start):
                rec = self._record(
                    job.job_id,
                    "skip",
                    reason=f"{type(d).__name__} decisions have no Slurm counterpart",
                )
            else:
                nodes = [str(names[n]) for n, _ in d.allocation]
                fields: dict[str, Any] = {
                    "nodes": nodes,
                    "gpus": job.num_gpus,
                    "gpu_idx": [list(g) for _, g in d.allocation],
                    "submit_time": job.submit_time,
                }
                why = check_start(view, job, d)
                if why is not None:
                    rec = self._record(job.job_id, "skip", reason=why, **fields)
                else:
                    held = job.held or job.job_id in view.stranded
                    rec = self._run(job.job_id, "start", start_commands(job, nodes, held), **fields)
                    if rec["action"] == "start":
                        result.started.append(job.job_id)
            if rec["action"] == "error":
                result.errors += 1
            result.records.append(rec)
        return result
