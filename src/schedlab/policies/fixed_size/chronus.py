"""``chronus``: lease-based deadline scheduling with admission control (SoCC '21).

Chronus runs every job at its requested GPU count g_j and hands out time in leases (here: one
scheduling slot, on a grid anchored at the first arrival). Jobs with a deadline (SLO jobs) are
planned by a mixed-integer program that maximises how many of them finish in time; jobs without
one (best-effort) take whatever GPUs the plan leaves idle.

**Plan.** At a lease boundary t, an SLO job j with remaining run time r_j (at g_j GPUs) needs
L_j = ceil(r_j / s) leases, the last of which it only uses for ρ_j = r_j − (L_j − 1)·s seconds;
it is on time iff its last lease starts no later than lease K_j = floor((D_j − t − ρ_j) / s).
Future leases are grouped into windows: the first ``fine_leases`` are one lease each, later ones
double in length (2, 4, 8, …) until the latest K_j is covered (at most ``max_windows`` windows;
the last absorbs the rest). The MILP, solved by HiGHS through ``scipy.optimize.milp``:

    maximise   Σ_j w_j z_j  −  ε Σ_{j,w} c_w y_jw
    subject to Σ_j g_j y_jw ≤ G · len_w                (capacity of every window)
               L_j z_j ≤ Σ_w y_jw ≤ L_j                 (satisfied ⇒ all leases in time)
               y_jw ∈ {0, …, u_jw},  z_j ∈ {0, 1}

where u_jw counts the leases of window w that are not after K_j (leases after a job's deadline
are worth nothing), c_w ∈ (0, 1) is the window's mid-point in the horizon (the tie-breaker pulls
leases forward, so jobs finish early and leave room for later arrivals) and ε keeps the
tie-breaker below one job. Aggregated windows only check GPU-time, a relaxation: the plan is
re-solved before the first aggregated window is reached, so only single-lease windows are ever
executed. The weight w_j is 1 for a newcomer and (newcomers + 1) for an admitted job when
``guarantee`` is on (admission control: no set of newcomers can displace an admitted job),
otherwise 1 for all.

**Decisions.** A newly arrived SLO job that cannot finish by its deadline even alone (starting at
the next lease) is rejected at once; one the plan leaves out (z = 0) is rejected by admission
control. An admitted job the plan no longer satisfies is dropped: rejected (preempted first, and
rejected at the next boundary, if it is running). Each lease runs the jobs the plan gives that
lease; GPUs left over go first to other satisfied SLO jobs in deadline order (extra leases only
make a plan finish earlier, so the plan stays valid), then to best-effort jobs in arrival order
(``best_effort="fifo"``) or least attained GPU time first (``"las"``).

**When it solves.** Only when an SLO job arrived, when the plan's single-lease windows are used
up, or when a planned job could not be placed. Before calling HiGHS an EDF greedy on the same
windows is tried (each window in turn, jobs by deadline, as many leases as fit; jobs it cannot
finish are dropped from the greedy and it is redone); if it satisfies every job it is optimal and
the MILP is skipped. HiGHS gets ``time_limit`` seconds; if it returns no solution, or (stopped by
the time limit) one that meets fewer weighted deadlines than the greedy's, the greedy's plan is
used.

Not modelled: Chronus's lease renewal protocol, its placement-aware (consolidation) rules and
its best-effort scheduler's own priority; "on time" is the replay's exact end.
"""

from __future__ import annotations

import math

import numpy as np

from schedlab.model.snapshot import PENDING, RUNNING, Decision, Reject, Snapshot
from schedlab.policies.fixed_size.themis import LeasePolicy, lease_decisions
from schedlab.policies.scheduler import ReplayContext, check_slot

BEST_EFFORT_ORDERS = ("fifo", "las")

#: Slack, in leases, for float round-off in lease counts.
EPS = 1e-9


class LeasePlan:
    """Result of one planning round: satisfied jobs, and for each of the first single-lease
    windows the jobs that hold GPUs in it."""

    def __init__(self, satisfied: list[int], leases: list[list[int]], start: int) -> None:
        self.satisfied = set(satisfied)
        self.leases = leases
        self.start = start  # lease index (since the grid anchor) of leases[0]


def windows(fine: int, last: int, max_windows: int) -> tuple[np.ndarray, np.ndarray]:
    """Window starts and lengths covering leases 0..last: ``fine`` single leases, then lengths
    doubling from 2, at most ``max_windows`` windows (the last one absorbs the rest)."""
    starts, lengths = [], []
    pos, size = 0, 1
    while pos <= last and len(starts) < max_windows:
        if len(starts) >= fine:
            size *= 2
        starts.append(pos)
        lengths.append(size)
        pos += size
    if pos <= last:
        lengths[-1] += last + 1 - pos
    return np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64)


def greedy_plan(
    need: np.ndarray, gpus: np.ndarray, usable: np.ndarray, capacity: np.ndarray
) -> np.ndarray:
    """EDF-like greedy on the windows: jobs (already in deadline order) take as many leases of
    each window as they can use and as fit; a job that ends up short is removed and the greedy
    redone, so it does not waste room others can use. Returns y (jobs × windows)."""
    n, w = usable.shape
    active = np.ones(n, dtype=bool)
    while True:
        y = np.zeros((n, w), dtype=np.int64)
        room = capacity.astype(np.int64).copy()
        got = np.zeros(n, dtype=np.int64)
        for k in range(w):
            for j in np.flatnonzero(active & (usable[:, k] > 0) & (got < need)).tolist():
                take = min(int(usable[j, k]), int(need[j] - got[j]), int(room[k] // gpus[j]))
                if take > 0:
                    y[j, k] = take
                    got[j] += take
                    room[k] -= take * int(gpus[j])
        short = active & (got < need)
        if not short.any():
            return y
        # Drop the latest-deadline short job first: earlier ones have less room elsewhere.
        active[np.flatnonzero(short)[-1]] = False


def solve_plan(
    need: np.ndarray,
    gpus: np.ndarray,
    usable: np.ndarray,
    lengths: np.ndarray,
    starts: np.ndarray,
    total: int,
    weight: np.ndarray,
    time_limit: float,
) -> tuple[np.ndarray, np.ndarray, str]:
    """The lease MILP (module docstring). Jobs must come in deadline order. Returns the lease
    counts y (jobs × windows), the satisfied mask and how it was found ("greedy", "milp",
    "milp-timeout", "fallback")."""
    n, w = usable.shape
    capacity = total * lengths
    y = greedy_plan(need, gpus, usable, capacity)
    ok = y.sum(axis=1) >= need
    if ok.all():
        return y, ok, "greedy"
    # scipy only when a plan needs the solver (importing it costs a command's start-up)
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_array

    cols = np.flatnonzero(usable.ravel() > 0)  # y variables worth having
    ny = len(cols)
    job_of, win_of = np.divmod(cols, w)
    mid = (starts + lengths / 2.0) / float(starts[-1] + lengths[-1])
    eps = 0.5 / (1.0 + float(need.sum()))
    c = np.concatenate([eps * mid[win_of], -weight.astype(np.float64)])
    # Rows: capacity per window (w), then Σ_w y − L z ≥ 0 and Σ_w y ≤ L per job (2n).
    rows = np.concatenate([win_of, w + job_of, w + n + job_of, w + np.arange(n)])
    colidx = np.concatenate([np.arange(ny), np.arange(ny), np.arange(ny), ny + np.arange(n)])
    vals = np.concatenate(
        [gpus[job_of].astype(np.float64), np.ones(ny), np.ones(ny), -need.astype(np.float64)]
    )
    a = csr_array((vals, (rows, colidx)), shape=(w + 2 * n, ny + n))
    lo = np.concatenate([np.full(w, -np.inf), np.zeros(n), np.full(n, -np.inf)])
    hi = np.concatenate([capacity.astype(np.float64), np.full(n, np.inf), need.astype(float)])
    ub = np.concatenate([usable.ravel()[cols].astype(np.float64), np.ones(n)])
    res = milp(
        c,
        constraints=LinearConstraint(a, lo, hi),
        integrality=np.ones(ny + n),
        bounds=Bounds(np.zeros(ny + n), ub),
        options={"time_limit": time_limit, "presolve": True},
    )
    if res.x is None:
        return y, ok, "fallback"
    x = np.rint(res.x).astype(np.int64)
    sat = x[ny:] > 0
    # Keep the greedy's answer if the (time-limited) solver found a worse one.
    if float(weight @ sat) < float(weight @ ok):
        return y, ok, "fallback"
    ym = np.zeros(n * w, dtype=np.int64)
    ym[cols] = x[:ny]
    ym = ym.reshape(n, w)
    ym[~sat] = 0  # an unsatisfied job's leases are worth nothing; they go to the fill-in
    return ym, sat, "milp" if res.status == 0 else "milp-timeout"


class Chronus(LeasePolicy):
    name = "chronus"
    summary = "lease-based MILP maximising met deadlines, with admission control (SoCC '21)"

    def __init__(
        self,
        fine_leases: int = 8,
        max_windows: int = 24,
        time_limit: float = 1.0,
        guarantee: bool = True,
        best_effort: str = "fifo",
        slot: float | None = None,
    ) -> None:
        """``fine_leases``: single-lease windows at the head of the plan (also how many leases
        run between two solves when nothing arrives); ``max_windows``: bound on plan windows;
        ``time_limit``: seconds HiGHS may spend per solve; ``guarantee``: admitted jobs outrank
        newcomers in the objective (admission control) rather than counting the same;
        ``best_effort``: order in which best-effort jobs take spare GPUs ("fifo" or "las")."""
        if fine_leases < 1:
            raise ValueError(f"'fine_leases' must be ≥ 1 (got {fine_leases})")
        if max_windows <= fine_leases:
            raise ValueError(
                f"'max_windows' must exceed 'fine_leases' (got {max_windows} ≤ {fine_leases})"
            )
        if not time_limit > 0:
            raise ValueError(f"'time_limit' must be > 0 seconds (got {time_limit})")
        if best_effort not in BEST_EFFORT_ORDERS:
            raise ValueError(
                f"'best_effort' must be one of {', '.join(BEST_EFFORT_ORDERS)} "
                f"(got {best_effort!r})"
            )
        self.fine = fine_leases
        self.max_windows = max_windows
        self.time_limit = time_limit
        self.guarantee = guarantee
        self.best_effort = best_effort
        self.slot = check_slot(slot)

    def reset(self, ctx: ReplayContext) -> None:
        super().reset(ctx)
        jobs = ctx.jobs
        self.lease = self.grid.length
        self.deadline = np.where(np.isfinite(jobs.deadline), jobs.deadline, np.inf)
        self.slo: list[int] = []  # SLO jobs in play, admitted or new
        self.best: list[int] = []  # best-effort jobs, arrival order
        self.to_reject: dict[int, str] = {}  # running jobs dropped, rejected once pending
        self.plan: LeasePlan | None = None
        self.replan = False
        #: How each plan was found (greedy / milp / milp-timeout / fallback): for reports.
        self.solves: dict[str, int] = {}

    def decide(self, snap: Snapshot) -> list[Decision]:
        if not self.at_boundary(snap):
            return []
        now, rt = snap.now, snap.runtime
        decisions: list[Decision] = []
        for j, why in list(self.to_reject.items()):
            if rt.status[j] == PENDING:
                decisions.append(Reject(j, why))
                del self.to_reject[j]
            elif rt.status[j] != RUNNING:
                del self.to_reject[j]
        fresh: list[int] = []
        for j in self.arrived:
            if j in self.bad:
                decisions.append(Reject(j, self.bad[j]))
            elif math.isfinite(self.deadline[j]):
                fresh.append(j)
            else:
                self.best.append(j)
        self.arrived = []
        live = (PENDING, RUNNING)
        self.best = [j for j in self.best if rt.status[j] in live]
        self.slo = [j for j in self.slo if rt.status[j] in live and j not in self.to_reject]
        index = round((now - self.grid.anchor) / self.lease)
        plan = self.plan
        if fresh or self.replan or plan is None or index - plan.start >= len(plan.leases):
            plan = self._solve(snap, fresh, index, decisions)
        run_now = [j for j in plan.leases[index - plan.start] if rt.status[j] in live]
        planned = set(run_now)
        sat = [j for j in self.slo if j in plan.satisfied and j not in planned]
        sat.sort(key=lambda j: (self.deadline[j], j))
        chosen, free = [], self.total
        for j in run_now:
            chosen.append(j)
            free -= int(self.gpus[j])
        for j in sat + self._best_effort_order(snap):
            g = int(self.gpus[j])
            if g <= free:
                chosen.append(j)
                free -= g
        more, runs = lease_decisions(snap, self.ctx.placer, chosen)
        self.replan = not planned.issubset(runs)
        return decisions + more

    def _best_effort_order(self, snap: Snapshot) -> list[int]:
        if self.best_effort == "fifo" or not self.best:
            return list(self.best)
        idx = np.asarray(self.best, dtype=np.int64)
        return idx[np.argsort(snap.attained(idx), kind="stable")].tolist()

    def _solve(
        self, snap: Snapshot, fresh: list[int], index: int, decisions: list[Decision]
    ) -> LeasePlan:
        """Re-plan every SLO job in play; rejects the hopeless and the left-out (in place)."""
        now, s, rt = snap.now, self.lease, snap.runtime
        cand = np.asarray(self.slo + fresh, dtype=np.int64)
        new = np.zeros(len(cand), dtype=bool)
        new[len(self.slo) :] = True
        rate = snap.reference_rate[cand]
        left = snap.remaining_work(cand) / rate  # seconds at g_j
        need = np.maximum(1, np.ceil(left / s - EPS)).astype(np.int64)
        tail = left - (need - 1) * s
        last = np.floor((self.deadline[cand] - now - tail) / s + EPS)
        hopeless = last < need - 1
        for j, is_new, lft in zip(
            cand[hopeless].tolist(), new[hopeless].tolist(), left[hopeless].tolist(), strict=True
        ):
            if is_new:
                why = (
                    f"cannot meet its deadline even alone: needs {lft:.0f} s on "
                    f"{int(self.gpus[j])} GPUs from the lease at {now:.0f} s, deadline "
                    f"{self.deadline[j]:.0f} s"
                )
            else:
                why = "dropped: can no longer meet its deadline"
            self._drop(j, why, rt.status[j] == RUNNING, decisions)
        keep = ~hopeless
        cand, new, need, last = cand[keep], new[keep], need[keep], last[keep].astype(np.int64)
        order = np.lexsort((cand, self.deadline[cand]))
        cand, new, need, last = cand[order], new[order], need[order], last[order]
        satisfied: np.ndarray = np.zeros(0, dtype=np.int64)
        leases: list[list[int]] = [[] for _ in range(self.fine)]
        if len(cand):
            starts, lengths = windows(self.fine, int(last.max()), self.max_windows)
            usable = np.clip(last[:, None] - starts[None, :] + 1, 0, lengths[None, :])
            weight = np.ones(len(cand))
            if self.guarantee:
                weight[~new] = 1.0 + float(new.sum())
            y, sat, how = solve_plan(
                need,
                self.gpus[cand],
                usable,
                lengths,
                starts,
                self.total,
                weight,
                self.time_limit,
            )
            self.solves[how] = self.solves.get(how, 0) + 1
            for j, is_new in zip(cand[~sat].tolist(), new[~sat].tolist(), strict=True):
                why = (
                    "admission control: no lease plan meets its deadline together with the "
                    "admitted jobs"
                    if is_new
                    else "dropped: its deadline can no longer be met with the other admitted jobs"
                )
                self._drop(j, why, rt.status[j] == RUNNING, decisions)
            satisfied = cand[sat]
            nfine = int((lengths == 1).sum())
            leases = [cand[y[:, k] > 0].tolist() for k in range(nfine)]
        self.slo = [j for j in self.slo + fresh if j in set(satisfied.tolist())]
        plan = LeasePlan(satisfied.tolist(), leases, index)
        self.plan = plan
        self.replan = False
        return plan

    def _drop(self, j: int, why: str, running: bool, decisions: list[Decision]) -> None:
        if running:
            self.to_reject[j] = why  # preempted by this lease's decisions, rejected next
        else:
            decisions.append(Reject(j, why))
