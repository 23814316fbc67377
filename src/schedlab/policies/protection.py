"""A minimum run time between preemptions, the same in the simulator and on a live cluster.

A job that loses its work when preempted (no checkpoint) never finishes under a
least-attained-service policy with a short threshold: it is demoted and requeued before it can
end, again and again. ``--min-runtime S`` (``schedlab serve slurm`` and ``schedlab replay``)
protects every run for its first S seconds:

* a preemption of a job whose current run began less than S seconds ago is not carried out
  (the policy is asked again later and may still want it then);
* a start that needs any GPU of such a job waits too (it would land on a busy GPU);
* everything else the policy decided is carried out as decided.

A run begins when the job starts (again, after a requeue); a resize does not begin a new run.
At exactly S seconds the job may be preempted.

``--grace G`` (Slurm's GraceTime) comes after that: the first time the policy wants a job gone
it is signalled (serve sends SIGTERM; a checkpointing job saves its state) and keeps running;
it is preempted only if the policy still wants it gone G seconds later, and a start that needs
its GPUs waits meanwhile. If the policy stops asking, the signal is forgotten.

Serve applies these rules to each cycle's decisions (:mod:`schedlab.serve.preemption`), the
replay engine to each decision point's, and wakes the policy when the first protection or grace
ends so the preemption it wanted is asked again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from schedlab.errors import InputError
from schedlab.model.snapshot import Allocation, Decision, Preempt, Start
from schedlab.policies.api import SERVE, Policy


def protected_until(run_began: float, now: float, min_runtime: float) -> float | None:
    """When a run that began at ``run_began`` may be preempted, or None if it may be now."""
    until = run_began + min_runtime
    return until if now < until else None


def gpus_of(allocation: Allocation | None) -> set[tuple[int, int]]:
    """The (node, GPU) pairs of an allocation."""
    return {(node, g) for node, gpus in allocation or () for g in gpus}


def drop_blocked_starts(
    decisions: Iterable[Decision], blocked: set[tuple[int, int]]
) -> list[Decision]:
    """``decisions`` without the starts that need any of the ``blocked`` GPUs."""
    return [
        d
        for d in decisions
        if not (isinstance(d, Start) and any(gpu in blocked for gpu in gpus_of(d.allocation)))
    ]


def hold_back_preemptions(
    decisions: list[Decision],
    now: float,
    min_runtime: float,
    run_began: Callable[[int], float],
    allocation: Callable[[int], Allocation | None],
    grace: float = 0.0,
    signalled: dict[int, float] | None = None,
) -> tuple[list[Decision], dict[int, float]]:
    """The decisions the minimum run and the grace allow now, and the jobs whose preemption
    they held back, each with when that ends (``run_began(job)``: when its current run began;
    ``signalled``: job → when its grace began, kept by the caller from one call to the next)."""
    if min_runtime <= 0 and grace <= 0:
        return decisions, {}
    held: dict[int, float] = {}
    blocked: set[tuple[int, int]] = set()
    wanted: set[int] = set()
    for d in decisions:
        if not isinstance(d, Preempt):
            continue
        wanted.add(d.job)
        until = protected_until(run_began(d.job), now, min_runtime)
        if until is None and grace > 0 and signalled is not None:
            since = signalled.setdefault(d.job, now)
            if now < since + grace:
                until = since + grace
            else:
                del signalled[d.job]
        if until is not None:
            held[d.job] = until
            blocked |= gpus_of(allocation(d.job))
    if signalled is not None:
        for job in [j for j in signalled if j not in wanted]:
            del signalled[job]  # the policy no longer wants it gone
    if not held:
        return decisions, {}
    kept = [d for d in decisions if not (isinstance(d, Preempt) and d.job in held)]
    return drop_blocked_starts(kept, blocked), held


def check_min_runtime(
    name: str, policy: Policy | None, min_runtime: float, grace: float = 0.0
) -> None:
    """Refuse a minimum run or a grace for a policy that does not run in serve: such policies
    (time slices, leases) keep their own record of what runs, which a held-back preemption or
    start would contradict; the rules are defined for the policies a live cluster runs."""
    if not (min_runtime > 0 or grace > 0) or policy is None:
        return
    option = "--min-runtime" if min_runtime > 0 else "--grace"
    for part in (policy, getattr(policy, "ordering", policy)):
        if SERVE not in part.engines:
            raise InputError(
                f"'{option}' applies to the policies 'serve slurm' runs, and '{name}' keeps "
                "its own record of what runs (it runs in replay only): leave it out, or drop "
                f"'{option}'"
            )
