"""Gavel's allocation policies: what fraction of time each job should spend on each GPU type.

A policy sees an :class:`AllocationProblem` — the active jobs (in job-id order) with their
throughput on every accelerator type at their scale factor, their scale, weight, remaining steps
and age, and the GPUs of each type — and returns ``X`` (jobs × types), the share of time job j
should run on type k, with ``Σ_k x_jk ≤ 1`` and ``Σ_j s_j x_jk ≤ N_k``. The round mechanism
(:mod:`schedlab.policies.heterogeneous.gavel`) turns X into rounds.

This module holds the policies that need no solver: FIFO (heterogeneity-aware and agnostic) and
the isolated ("1/m of the cluster each") allocation; the LP family is in
:mod:`schedlab.policies.heterogeneous.gavel_lp`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AllocationProblem:
    """One call of an allocation policy (rows: active jobs in id order; columns: types sorted
    by name)."""

    jobs: np.ndarray  # job indices, ascending
    throughput: np.ndarray  # m × n steps/s at the job's scale on the type (0: cannot run there)
    scale: np.ndarray  # m GPUs each job always uses
    weight: np.ndarray  # m priority weights
    remaining: np.ndarray  # m steps left
    age: np.ndarray  # m seconds since arrival
    capacity: np.ndarray  # n GPUs of each type
    types: tuple[str, ...]
    now: float = 0.0
    #: Absolute deadlines (NaN: none), for the SLO variant.
    deadline: np.ndarray | None = None
    #: $ per GPU-hour of each type (None: every type costs 1).
    prices: np.ndarray | None = None
    #: The entity (user) each job belongs to, for hierarchical water-filling (None: none).
    entity: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.jobs)


class AllocationPolicy:
    """Base of Gavel's allocation policies.

    ``perf_aware``: Gavel's ``*_perf`` policies; the others (Gavel's names without "Perf")
    flatten the matrix in their own way and, in the round mechanism, see the type order
    shuffled every round.
    ``fifo``: the mechanism never runs a job on a type its allocation gives 0 (Gavel's FIFO
    rule). Stateful policies keep what they need between calls (keyed by job index).
    """

    name = "allocation"
    perf_aware = True
    fifo = False

    def reset(self, seed: int) -> None:
        """Called once before a run."""

    def allocate(self, problem: AllocationProblem) -> np.ndarray:
        raise NotImplementedError


def equal_share_throughput(problem: AllocationProblem) -> np.ndarray:
    """Each job's throughput if it got the same share of every type: ``Σ_k T_jk N_k / Σ N``
    (Gavel's "proportional" normaliser; the scale factor is ignored, as in Gavel)."""
    total = float(problem.capacity.sum())
    return problem.throughput @ problem.capacity / total


def isolated_allocation(problem: AllocationProblem) -> np.ndarray:
    """``1/m`` of every type for each of the m jobs, in units of its scale factor, capped at a
    share of 1 in all (Gavel's ``isolated`` policy and FTF's reference)."""
    m = problem.size
    if m == 0:
        return np.zeros((0, len(problem.types)))
    x = (problem.capacity[None, :] / m) / problem.scale[:, None].astype(np.float64)
    return x / np.maximum(1.0, x.sum(axis=1))[:, None]


def isolated_throughput(problem: AllocationProblem) -> np.ndarray:
    """Steps/s of each job under :func:`isolated_allocation`."""
    return (problem.throughput * isolated_allocation(problem)).sum(axis=1)


class Isolated(AllocationPolicy):
    """Every active job gets an equal share of each type (the baseline of FTF's ρ)."""

    name = "isolated"
    perf_aware = False  # Gavel's "Isolated": its type order is shuffled every round

    def allocate(self, problem: AllocationProblem) -> np.ndarray:
        return isolated_allocation(problem)


class FifoPerf(AllocationPolicy):
    """Heterogeneity-aware FIFO: in job-id order, each job takes the fastest type (strictly:
    ties keep the alphabetically earlier type) among those with at least its scale factor of
    GPUs not yet given out; the first job that fits nowhere ends the pass (head-of-line
    blocking). A job whose best fitting type runs it at 0 steps/s is skipped."""

    name = "fifo_perf"
    fifo = True

    def allocate(self, problem: AllocationProblem) -> np.ndarray:
        n = len(problem.types)
        x = np.zeros((problem.size, n))
        left = problem.capacity.astype(np.int64).copy()
        open_types = [k for k in range(n) if left[k] > 0]
        for row in range(problem.size):
            if not open_types:
                break
            s = int(problem.scale[row])
            fitting = [k for k in open_types if left[k] >= s]
            if not fitting:
                break
            best, best_rate = fitting[0], -1.0
            for k in fitting:
                if problem.throughput[row, k] > best_rate:
                    best, best_rate = k, float(problem.throughput[row, k])
            if best_rate > 0.0:
                x[row, best] = 1.0
                left[best] -= s
                if left[best] == 0:
                    open_types.remove(best)
        return x


class Fifo(AllocationPolicy):
    """Heterogeneity-agnostic FIFO: jobs keep the type they were given; freed GPUs go to the
    queue head first, then new jobs take a type at random among those with room.

    ``compat`` reproduces Gavel's implementation exactly: it draws a random index among the
    fitting types but then uses the type its loop variable last held (the alphabetically last
    open type; the draw only decides which type is closed when that one fills up). Without
    ``compat`` the drawn type is used.
    """

    name = "fifo"
    perf_aware = False
    fifo = True

    def __init__(self, compat: bool = False) -> None:
        self.compat = compat
        self.placed: dict[int, int] = {}
        self.rng = random.Random(0)

    def reset(self, seed: int) -> None:
        self.placed = {}
        self.rng = random.Random(seed)

    def allocate(self, problem: AllocationProblem) -> np.ndarray:
        n = len(problem.types)
        jobs = [int(j) for j in problem.jobs]
        row_of = {j: r for r, j in enumerate(jobs)}
        left = problem.capacity.astype(np.int64).copy()
        queue = [j for j in jobs if j not in self.placed]
        # Completed jobs hand their type to the queue head (if it fits and can run there).
        for j in sorted(self.placed):
            k = self.placed[j]
            if j in row_of:
                left[k] -= int(problem.scale[row_of[j]])
                continue
            del self.placed[j]
            if queue:
                head = queue[0]
                r = row_of[head]
                if problem.scale[r] <= left[k] and problem.throughput[r, k] > 0.0:
                    queue.pop(0)
                    self.placed[head] = k
                    left[k] -= int(problem.scale[r])
        open_types = [k for k in range(n) if left[k] > 0]
        while queue and open_types:
            j = queue.pop(0)
            r = row_of[j]
            s = int(problem.scale[r])
            fitting = [k for k in open_types if left[k] >= s]
            if not fitting:
                break
            drawn = fitting[self.rng.randrange(len(fitting))]
            # Gavel's code places the job on the last open type and, when that fills up,
            # closes the drawn one instead (so a full type can be handed out again).
            k = open_types[-1] if self.compat else drawn
            if problem.throughput[r, k] > 0.0:
                self.placed[j] = k
                left[k] -= s
                if left[k] == 0:
                    open_types.remove(drawn if self.compat else k)
        x = np.zeros((problem.size, n))
        for j, k in self.placed.items():
            x[row_of[j], k] = 1.0
        return x
