"""Why a held job of schedlab's has not started, written where operators look: its ``Comment``.

Slurm 22.05 lets nobody set a job's ``Reason`` (Slurm writes it: ``JobHeldAdmin`` for every
job schedlab holds), and ``squeue -O`` cannot print ``AdminComment``, which holds the ownership
marker. So the reason goes into the ``Comment``, which ``squeue -O JobID,State,Reason,Comment``
shows, as ``schedlab: REASON -- USER TEXT``: whatever the job's owner wrote is kept after the
separator (a ``--comment=checkpoint`` declaration still counts), and given back alone when the
job starts.

A comment is written only when the text it should carry differs from what Slurm already shows,
so a queue that does not change costs no ``scontrol`` at all, and the reasons are worded to stay
the same while a job waits (no queue positions, no free-GPU counts that move every cycle).
"""

from __future__ import annotations

import re

from schedlab.serve.slurm_state import REJECT_MARK, JobInfo

#: Prefix of every reason schedlab writes into a job's ``Comment``.
REASON_MARK = "schedlab:"
#: Between schedlab's reason and the text the job's owner gave.
SEPARATOR = " -- "
#: Longest ``Comment`` schedlab writes (Slurm keeps long comments, squeue columns do not).
MAX_REASON = 160


def user_comment(comment: str) -> str:
    """The part of a job's ``Comment`` its owner wrote (schedlab's reason taken off)."""
    if not comment.startswith(REASON_MARK):
        return comment
    _, sep, rest = comment.partition(SEPARATOR)
    return rest if sep else ""


def reason_comment(reason: str, comment: str) -> str:
    """The ``Comment`` that shows ``reason`` and keeps the owner's own text of ``comment``."""
    # No "--" in schedlab's part, so the first separator is always the one written here.
    text = " ".join(re.sub("-{2,}", "-", reason.replace('"', "'")).split())[:MAX_REASON]
    own = user_comment(comment)
    return f"{REASON_MARK} {text}{SEPARATOR}{own}" if own else f"{REASON_MARK} {text}"


def reason_command(job: JobInfo, reason: str) -> list[str] | None:
    """The ``scontrol`` update that shows ``reason`` on ``job``, or None when it already does
    (or when the job is rejected, whose comment says so and is left as it is)."""
    if job.comment.startswith(REJECT_MARK):
        return None
    wanted = reason_comment(reason, job.comment)
    if wanted == job.comment:
        return None
    return ["update", f"JobId={job.label}", f"Comment={wanted}"]


def cleared_comment(job: JobInfo) -> str | None:
    """The ``Comment`` to give back when ``job`` starts (its owner's text), or None when it
    carries no reason of schedlab's."""
    if not job.comment.startswith(REASON_MARK) or job.comment.startswith(REJECT_MARK):
        return None
    return user_comment(job.comment)


def waiting_reason(policy: str, gpus: int) -> str:
    """The reason of a job the policy was offered and did not start this cycle."""
    return f"queued: waiting for policy {policy} to place it ({gpus} GPUs)"
