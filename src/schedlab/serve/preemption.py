"""Preemption that converges on a real cluster: checkpointing, a minimum run, a grace signal.

A requeued Slurm job starts again from scratch unless it saved its own state. So a job declares
whether it checkpoints — ``sbatch --comment=checkpoint`` (any comment containing the word) — and
the default is that it does not:

* **credit**: only a checkpointing job keeps, across a requeue, the service it attained (GPU
  seconds, which Tiresias ranks by) and the time it ran; a job that does not checkpoint is, after
  a requeue, the fresh job it really is. The credit is journaled with each ``requeued`` record, so
  a restarted scheduler takes it back.
* **minimum run** (``--min-runtime S``): a job that has run less than S seconds in its current run
  is not preempted; the policy's starts that needed its GPUs wait too. Without it a
  least-attained-service policy requeues jobs that can never finish between two demotions.
* **grace** (``--grace S``, Slurm's GraceTime): a victim is first sent SIGTERM (``scancel
  --signal=TERM --batch``, which signals and cancels nothing) and requeued only S seconds later,
  if the policy still wants it gone, so it can write a checkpoint.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from schedlab.model.snapshot import Decision, Preempt
from schedlab.policies.protection import drop_blocked_starts, gpus_of, protected_until
from schedlab.serve.live import LiveView
from schedlab.serve.reasons import user_comment
from schedlab.serve.slurm_state import JobInfo

_CHECKPOINT = re.compile(r"\bcheckpoint", re.IGNORECASE)


def checkpoints(job: JobInfo) -> bool:
    """Whether the job said it checkpoints (its owner's comment names ``checkpoint``)."""
    return bool(_CHECKPOINT.search(user_comment(job.comment)))


@dataclass(frozen=True)
class PreemptionRules:
    min_runtime: float = 0.0
    grace: float = 0.0


@dataclass
class Guard:
    """Filters one cycle's decisions by the rules; remembers the victims in their grace."""

    rules: PreemptionRules
    signal: Callable[[JobInfo], None]
    record: Callable[..., None]
    signalled: dict[int, float] = field(default_factory=dict)  # job id → when it was signalled

    def filter(self, view: LiveView, decisions: list[Decision], now: float) -> list[Decision]:
        """The decisions to apply: preemptions the rules allow now, and the starts that do not
        need the GPUs of a victim that stays."""
        kept: list[Decision] = []
        blocked: set[tuple[int, int]] = set()
        wanted: set[int] = set()
        for d in decisions:
            if not isinstance(d, Preempt):
                continue
            job = view.infos[d.job]
            wanted.add(job.job_id)
            why = self._hold_back(job, now)
            if why is None:
                kept.append(d)
                continue
            blocked |= gpus_of(view.snapshot.runtime.allocation[d.job])
            if why:
                self.record(job.job_id, "protect", why)
        for job_id in list(self.signalled):
            if job_id not in wanted:  # the policy changed its mind, or the job ended
                del self.signalled[job_id]
        others = [d for d in decisions if not isinstance(d, Preempt)]
        return kept + drop_blocked_starts(others, blocked)

    def _hold_back(self, job: JobInfo, now: float) -> str | None:
        """None: preempt now; otherwise why not yet ("" when already journaled)."""
        if not job.active:
            return None  # launching: holding it again loses nothing
        began = job.start_time if job.start_time > 0 else now
        if protected_until(began, now, self.rules.min_runtime) is not None:
            return f"its run has not lasted the {self.rules.min_runtime:g} s minimum yet"
        if self.rules.grace <= 0:
            return None
        since = self.signalled.get(job.job_id)
        if since is None:
            self.signal(job)
            self.signalled[job.job_id] = now
            return f"signalled SIGTERM; requeued after {self.rules.grace:g} s of grace"
        if now - since < self.rules.grace:
            return ""
        del self.signalled[job.job_id]
        return None


def credit_record(info: JobInfo, gpus: int, now: float) -> dict[str, Any]:
    """What a requeue of a checkpointing job carries on: its GPU-seconds and seconds of this run."""
    ran = max(0.0, now - info.start_time) if info.start_time > 0 else 0.0
    return {"attained": round(gpus * ran, 3), "executed": round(ran, 3)}
