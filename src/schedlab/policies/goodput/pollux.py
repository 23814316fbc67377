"""Pollux (OSDI '21): co-adaptive cluster scheduling by goodput, as its simulator runs it.

Each job's agent fits Pollux's throughput model to the step times it has seen and picks its
batch size for the best goodput (:class:`~schedlab.perf.goodput.job.GoodputJob`); every
interval the scheduler searches, with a genetic algorithm (NSGA-II), for the replicas-per-node
matrix that maximises the power mean (p = −1) of the jobs' speedups:

* a job's speedup on (nodes, replicas) is its best goodput there over its best goodput on a
  fair share of the cluster (⌈GPUs / jobs⌉ replicas; Pollux asks for them on one node); a job
  with no model yet has speedup replicas / fair share;
* speedups are scaled so that one node's worth is 1, and a job whose allocation would change
  is charged its restarts: × ``max(age − restarts·30, 0) / (age + 30)``;
* objectives: the power mean and the cluster utility (GPU-weighted speedup per replica);
  the answer is the member of the final Pareto front with the best power mean;
* mutation resets a job's row to the current allocation, zeroes some of its entries, and
  raises entries on nodes with room; crossover cuts the job list at one point; repair keeps at
  most one multi-node job per node (interference avoidance), at most ``max_replicas`` per job
  (twice the most it has been profiled on, at most 64 and its largest batch ÷ smallest
  micro-batch; NCF: 1) on at most 16 nodes, and the nodes' GPU counts (earlier jobs first).

Jobs are ordered by attained GPU-seconds, then submission. The search starts from the previous
interval's Pareto front (the current allocation the first time). The simulator's GA is
unseeded; here it draws from the run's seed, so a run repeats.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from schedlab.model.snapshot import Snapshot
from schedlab.perf.goodput.job import RESTART_SECONDS, GoodputJob
from schedlab.policies.goodput.interval import IntervalPolicy, RateJob
from schedlab.policies.goodput.nsga2 import nsga2

#: NCF's fixed batch size and replica limit in Pollux's simulator.
NCF_BATCH = 32768
#: Most nodes a job may span.
MAX_NODES_PER_JOB = 16
#: Most replicas a job may get (the simulator's limit).
MAX_REPLICAS = 64


class Pollux(IntervalPolicy):
    """See the module docstring."""

    name = "pollux"
    summary = "Pollux: goodput-adaptive batch sizes and GPUs by a genetic search (OSDI '21)"
    adaptive = True
    elastic = True  # it sizes every job itself

    def __init__(
        self,
        slot: float | None = None,
        interference: float = 0.0,
        restart: float = RESTART_SECONDS,
        avoidance: bool = True,
        generations: int = 100,
        population: int = 100,
    ) -> None:
        super().__init__(slot, interference, restart)
        if generations < 1 or population < 2:
            raise ValueError("'generations' must be ≥ 1 and 'population' ≥ 2")
        self.avoidance = avoidance
        self.generations = generations
        self.population = population

    def target_batch(self, job: int, batch: float | None) -> float | None:
        app = self.goodput.app_of(self.jobs, job) if self.goodput is not None else None
        return float(NCF_BATCH) if app is not None and app.name == "ncf" else None

    def setup(self, ctx) -> None:
        self.prev_states: np.ndarray | None = None
        self.prev_jobs: list[int] = []
        self.rounds = 0
        self.searched = 0

    # -- per-job inputs ----------------------------------------------------------------------
    def job_max_replicas(self, job: int) -> int:
        state = self.state[job]
        if isinstance(state, RateJob):
            return min(int(self.jobs.num_gpus[job]), MAX_REPLICAS)
        app = state.app
        if app.name == "ncf":
            return 1
        return min(
            max(2 * state.max_profiled_replicas, 1),
            MAX_REPLICAS,
            app.max_batch_size // app.min_local_bsz,
        )

    def speedup_table(
        self, job: int, nodes: int, replicas: int, fair: tuple[int, int]
    ) -> np.ndarray:
        """Speedup on (n nodes, r replicas) for n ≤ ``nodes``, r ≤ ``replicas``, over the
        goodput on the fair share ``fair`` = (nodes, replicas)."""
        table = np.zeros((nodes + 1, replicas + 1))
        state = self.state[job]
        fn = state.goodput_fn() if isinstance(state, GoodputJob) else None
        r = np.arange(replicas + 1)
        if fn is None:
            table[:, :] = r[None, :] / fair[1]
            table[0, :] = 0.0
            table[:, 0] = 0.0
            return table
        app = state.app
        micro = (app.min_local_bsz, app.max_local_bsz)
        nn, rr = np.meshgrid(np.arange(1, nodes + 1), np.arange(1, replicas + 1), indexing="ij")
        ok = nn <= rr
        good = fn.optimize(nn[ok], rr[ok], app.max_batch_size, micro)[0]
        base = fn.optimize(fair[0], fair[1], app.max_batch_size, micro)[0]
        table[nn[ok], rr[ok]] = np.asarray(good) / base if base > 0 else 0.0
        return table

    # -- one decision --------------------------------------------------------------------------
    def allocate(
        self, snap: Snapshot, active: list[int], current: dict[int, list[int]]
    ) -> dict[int, list[int]]:
        if not active:
            self.prev_states, self.prev_jobs = None, []
            return {}
        self.rounds += 1
        now = snap.now
        jobs = sorted(
            active, key=lambda j: (self.state[j].attained_service, self.state[j].submission, j)
        )
        nodes = self.nodes
        n_jobs, n_nodes = len(jobs), len(nodes)
        col = {n: i for i, n in enumerate(nodes)}
        cap = np.array([self.node_gpus[n] for n in nodes], dtype=np.int64)
        total = int(cap.sum())
        base = np.zeros((n_jobs, n_nodes), dtype=np.int64)
        for r, job in enumerate(jobs):
            for node in current.get(job, []):
                base[r, col[node]] += 1
        fair = (math.ceil(n_nodes / total), math.ceil(total / n_jobs))
        max_rep = np.array([self.job_max_replicas(j) for j in jobs], dtype=np.int64)
        width = max(int(max_rep.max()), 1)
        tables = np.stack(
            [self.speedup_table(j, min(n_nodes, MAX_NODES_PER_JOB), width, fair) for j in jobs]
        )
        restarts = np.array([self.state[j].num_restarts or 0 for j in jobs], dtype=float)
        age = np.array([now - self.state[j].submission for j in jobs], dtype=float)
        factor = np.maximum(age - restarts * self.restart, 0.0) / (age + self.restart)
        allowed = np.ones((n_jobs, n_nodes), dtype=bool)
        for r, job in enumerate(jobs):
            ok = self.allowed_nodes(job)
            if len(ok) != n_nodes:
                allowed[r] = [n in ok for n in nodes]
        per_node = np.where(allowed, cap[None, :], 0)
        rng = self.rng
        idx = np.arange(n_jobs)

        def speedups(states: np.ndarray) -> np.ndarray:
            used_nodes = np.minimum(count_per_row(states > 0), tables.shape[1] - 1)
            reps = np.minimum(sum_per_row(states), tables.shape[2] - 1)
            return tables[idx[None, :], used_nodes, reps]

        def evaluate(states: np.ndarray) -> np.ndarray:
            sp = speedups(states)
            scaled = sp * n_nodes / total
            changed = count_per_row(states != base[None]) > 0
            scaled = scaled * np.where(changed, factor[None, :], 1.0)
            mean = (np.sum((scaled + 1e-3) ** -1.0, axis=1) / n_jobs) ** -1.0
            reps = sum_per_row(states)
            active_nodes = sum_per_node(states) > 0
            gpus = (active_nodes * cap[None, :]).sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(reps > 0, reps / gpus[:, None], 0.0)
                util = np.where(reps > 0, sp / reps, 0.0)
            return np.column_stack([-mean, -(util * share).sum(axis=1)])

        def mutate(states: np.ndarray) -> np.ndarray:
            return mutate_states(states, rng, base, cap, allowed, per_node)

        def repair(states: np.ndarray) -> np.ndarray:
            return repair_states(states, rng, allowed, max_rep, cap, self.avoidance)

        initial = self._initial(jobs, base)
        front, values = nsga2(
            initial, evaluate, mutate, repair, rng, self.population, self.generations
        )
        self.searched += 1
        self.prev_states, self.prev_jobs = front, list(jobs)
        best = front[int(np.argmin(values[:, 0]))]
        out: dict[int, list[int]] = {}
        for r, job in enumerate(jobs):
            nodes_of = [nodes[c] for c in range(n_nodes) for _ in range(int(best[r, c]))]
            if nodes_of:
                out[job] = nodes_of
        return out

    def _initial(self, jobs: list[int], base: np.ndarray) -> np.ndarray:
        """The previous Pareto front with its rows moved to the jobs' new order (rows of new
        jobs empty), or the current allocation the first time."""
        if self.prev_states is None:
            return base[None].copy()
        where = {j: i for i, j in enumerate(self.prev_jobs)}
        states = np.zeros((len(self.prev_states), *base.shape), dtype=np.int64)
        for r, job in enumerate(jobs):
            i = where.get(job)
            if i is not None:
                states[:, r] = self.prev_states[:, i]
        return states

    def report(self) -> dict[str, Any]:
        return {**super().report(), "searches": self.searched}


def mutate_states(
    states: np.ndarray,
    rng: np.random.Generator,
    base: np.ndarray,
    cap: np.ndarray,
    allowed: np.ndarray,
    per_node: np.ndarray,
) -> np.ndarray:
    """Pollux's mutation of a population (P × jobs × nodes): reset a job's row to the current
    allocation ``base`` (p 0.1), zero entries (p 0.1 each) of some rows (p 0.1), raise entries
    on nodes with room to a uniform count up to ``per_node``. Returns a new array; ``states``
    is untouched. Random numbers are drawn only where they decide something (the zeroing for
    the picked rows, the new counts for the raised entries), in row-major order: the search
    spends most of its time here, on arrays that are mostly left as they are."""
    reset = rng.random(states.shape[:2]) < 0.1
    states = np.where(reset[:, :, None], base[None], states)  # a new array
    picked = rng.random(states.shape[:2]) < 0.1
    if picked.any():
        rows = states[picked]
        rows[rng.random(rows.shape) < 0.1] = 0
        states[picked] = rows
    free = cap[None, :] - sum_per_node(states)  # P × N
    room = (free >= 1)[:, None, :]  # P × 1 × N: with every node allowed, p1 per (member, node)
    if not allowed.all():
        room = room & allowed[None]
    # An entry with room is raised with probability p1 + p2 − p1·p2, p1 = 1 / (entries with
    # room in its row) and p2 = 1 / (entries of its row held and with room) when it is held,
    # else 0: p1 + held · p2 · (1 − p1), in single precision (a probability needs no more).
    p1 = (1.0 / np.maximum(room.sum(axis=2, keepdims=True), 1)).astype(np.float32)
    held = (states > 0) & room
    q = (1.0 / np.maximum(count_per_row(held), 1)).astype(np.float32)[:, :, None] * (1 - p1)
    prob = held * q
    prob += room * p1
    hit = np.flatnonzero(rng.random(states.shape, dtype=np.float32) < prob)
    flat = states.reshape(-1)  # a view: states is a new contiguous array
    limit = per_node.reshape(-1)[hit % per_node.size]
    flat[hit] = rng.integers(flat[hit], limit + 1)
    return states


def repair_states(
    states: np.ndarray,
    rng: np.random.Generator,
    allowed: np.ndarray,
    max_rep: np.ndarray,
    cap: np.ndarray,
    avoidance: bool,
) -> np.ndarray:
    """A feasible copy of a population: only allowed nodes; with ``avoidance`` at most one
    multi-node job per node; per job at most ``max_rep`` replicas on at most
    ``MAX_NODES_PER_JOB`` nodes (kept in a random node order, drawn for the rows cut only);
    per node at most its GPUs (earlier jobs first). ``states`` is untouched. Only the rows and
    members a cut applies to are worked on: after a mutation they are a few."""
    states = np.where(allowed[None], states, 0)  # a new array
    if avoidance:
        spread = count_per_row(states > 0) > 1
        mark = (states > 0) & spread[:, :, None]
        shared = (count_per_node(mark) > 1).any(axis=1)  # members with a node two jobs mark
        if shared.any():
            some = states[shared]
            some[from_second_mark(mark[shared])] = 0
            states[shared] = some
    cut = sum_per_row(states) > max_rep[None, :]  # P × jobs: rows past their replica limit
    over_nodes = states.shape[2] > MAX_NODES_PER_JOB
    if over_nodes:
        cut |= count_per_row(states > 0) > MAX_NODES_PER_JOB
    if cut.any():
        # cut replicas past max_rep, and nodes past MAX_NODES_PER_JOB, in a random node order
        rows = states[cut]  # K × N
        limit = np.broadcast_to(max_rep[None, :], cut.shape)[cut][:, None]
        shuffle = np.argsort(rng.random(rows.shape), axis=1)
        k = np.arange(len(rows))[:, None]
        shuffled = capped_steps(rows[k, shuffle], limit)
        if over_nodes:
            keep = capped_steps(shuffled > 0, MAX_NODES_PER_JOB)
            shuffled = np.where(keep > 0, shuffled, 0)
        rows[k, shuffle] = shuffled
        states[cut] = rows
    total = running_total(states)  # per node, earlier jobs first
    full = (total[:, -1] > cap[None, :]).any(axis=1)  # members past some node's GPUs
    if full.any():
        states[full] = steps_within(total[full], cap[None, None, :])
    return states


# Sums over a population's short axes: numpy's reductions along them cost about three times
# what einsum's do on the search's arrays (P × jobs × 16 nodes), and these run a dozen times
# per generation.
def sum_per_row(states: np.ndarray) -> np.ndarray:
    """Replicas of each (member, job): ``states.sum(axis=2)``."""
    return np.einsum("pjn->pj", states)


def sum_per_node(states: np.ndarray) -> np.ndarray:
    """Replicas on each (member, node): ``states.sum(axis=1)``."""
    return np.einsum("pjn->pn", states)


def count_per_row(mask: np.ndarray) -> np.ndarray:
    """True entries of each (member, job) of a boolean population: ``mask.sum(axis=2)``
    (counted in bytes while that cannot overflow)."""
    if mask.shape[2] < 256:
        return np.einsum("pjn->pj", mask.view(np.uint8))
    return np.count_nonzero(mask, axis=2)


def count_per_node(mask: np.ndarray) -> np.ndarray:
    """True entries of each (member, node) of a boolean population: ``mask.sum(axis=1)``."""
    if mask.shape[1] < 256:
        return np.einsum("pjn->pn", mask.view(np.uint8))
    return np.count_nonzero(mask, axis=1)


def running_total(states: np.ndarray) -> np.ndarray:
    """``np.cumsum(states, axis=1)``: one add per job, which on the search's short job axis
    takes half the time of numpy's accumulate along a middle axis."""
    total = states.copy()
    for j in range(1, states.shape[1]):
        total[:, j] += total[:, j - 1]
    return total


def from_second_mark(mark: np.ndarray) -> np.ndarray:
    """``np.cumsum(mark, axis=1) > 1`` for a boolean ``mark``: true from the second marked
    job on, per (member, node); boolean steps as in :func:`running_total`."""
    out = np.zeros_like(mark)
    one = mark[:, 0].copy()
    two = np.zeros_like(one)
    for j in range(1, mark.shape[1]):
        two |= one & mark[:, j]
        one |= mark[:, j]
        out[:, j] = two
    return out


def capped_steps(rows: np.ndarray, limit) -> np.ndarray:
    """Each row's entries cut so that its running total stays within ``limit``."""
    return steps_within(np.cumsum(rows, axis=1), limit)


def steps_within(total: np.ndarray, limit) -> np.ndarray:
    """The steps of running totals (along axis 1) capped at ``limit``: the differences of
    ``min(total, limit)`` (``np.diff(..., prepend=0)`` without its copy)."""
    capped = np.minimum(total, limit)
    steps = capped.copy()
    steps[:, 1:] -= capped[:, :-1]
    return steps
