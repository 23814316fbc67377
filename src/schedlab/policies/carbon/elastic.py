"""GPU counts into decisions for the elastic carbon-aware policies.

Each job has a target count; jobs whose count changes let go first (on a scratch copy of the
state), then take their new counts, largest first. Short of GPUs a job takes the largest of its
levels that still fits (the carbon-aware policies then re-plan it), where ElasticFlow's
``_apply_targets`` would give it nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from schedlab.model.snapshot import Allocation, Decision, Preempt, Resize, Snapshot, Start
from schedlab.policies.ordering.queue_scheduler import copy_state, give_back, take
from schedlab.policies.placement.gang import GangPlacer


def apply_counts(
    snap: Snapshot,
    placer: GangPlacer,
    target: dict[int, int],
    levels: dict[int, Sequence[int]],
    refresh: set[int] | frozenset[int] = frozenset(),
) -> tuple[list[Decision], dict[int, int]]:
    """Decisions that bring every job in ``target`` to its count (or the largest level below it
    that fits), and the counts they got. Jobs in ``refresh`` are resized to their current
    allocation even if their count is unchanged (their rate changed, e.g. a new power limit)."""
    rt, jobs = snap.runtime, snap.jobs
    scratch = copy_state(snap.state)
    changed = [j for j, n in target.items() if int(rt.alloc_n[j]) != n]
    for j in changed:
        if rt.allocation[j] is not None:
            give_back(scratch, rt.allocation[j], int(jobs.cpu_milli[j]), int(jobs.memory_mib[j]))
    decisions: list[Decision] = []
    got = {j: n for j, n in target.items() if j not in changed}
    for j in sorted(changed, key=lambda j: (-target[j], j)):
        alloc: Allocation | None = None
        cpu, mem = int(jobs.cpu_milli[j]), int(jobs.memory_mib[j])
        for n in sorted((x for x in levels[j] if x <= target[j]), reverse=True):
            alloc = placer.place(n, cpu, mem, int(jobs.gpu_model_mask[j]), scratch, job=j)
            if alloc is not None:
                break
        running = rt.allocation[j] is not None
        if alloc is not None:
            take(scratch, alloc, cpu, mem)
            decisions.append(Resize(j, alloc) if running else Start(j, alloc))
            got[j] = sum(len(g) for _, g in alloc)
        else:
            if running:
                decisions.append(Preempt(j))
            got[j] = 0
    for j in sorted(refresh - set(changed)):
        if rt.allocation[j] is not None and got.get(j, 0) > 0:
            decisions.append(Resize(j, rt.allocation[j]))
    return decisions, got
