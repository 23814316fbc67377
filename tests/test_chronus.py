"""``chronus``: lease-based deadline scheduling, a MILP solved by HiGHS, admission control."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.replay import ReplayEngine, ReplayRecord
from schedlab.experiments.replay_run import jobs_frame
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import DONE, REJECTED
from schedlab.perf.models import ThroughputTable, read_throughput_dir
from schedlab.policies.fixed_size.chronus import Chronus, greedy_plan, solve_plan, windows
from schedlab.policies.registry import make_placement
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
ITP = SHARED / "traces" / "elasticflow-itp"

# 1 it/s at every GPU count: iterations = seconds.
TABLE = ThroughputTable({("m", 8): {1: 1.0, 2: 1.0, 4: 1.0, 8: 1.0}})


def _jobs(rows: list[tuple]) -> JobTable:
    # (id, submit, gpus, iterations, deadline); model m, batch 8.
    return JobTable.from_columns(
        job_id=[r[0] for r in rows],
        submit_time=[r[1] for r in rows],
        num_gpus=[r[2] for r in rows],
        iterations=[r[3] for r in rows],
        model_name=["m"] * len(rows),
        batch_size=[8] * len(rows),
        deadline=[r[4] for r in rows],
        duration=[np.nan] * len(rows),
    )


def _run(
    rows: list[tuple], spec: str = "1x8:A100", lease: float = 10.0, **kw
) -> tuple[ReplayRecord, Chronus]:
    policy = Chronus(**kw)
    policy.slot = lease
    rec = ReplayEngine(
        parse_cluster_spec(spec), _jobs(rows), policy, make_placement("bestfit"), TABLE
    ).run()
    return rec, policy


def test_windows_double_after_the_fine_leases() -> None:
    starts, lengths = windows(3, 20, 10)
    assert starts.tolist() == [0, 1, 2, 3, 5, 9, 17]
    assert lengths.tolist() == [1, 1, 1, 2, 4, 8, 16]
    # Capped: the last window absorbs the rest.
    starts, lengths = windows(2, 100, 4)
    assert lengths.tolist() == [1, 1, 2, 97]
    assert starts[-1] + lengths[-1] == 101


def test_admission_rejection_and_best_effort_by_hand() -> None:
    # One 8-GPU node, 10 s leases, 1 it/s. At 0: a (8 GPUs, 20 s, deadline 25) needs leases 0-1,
    # b (8 GPUs, 10 s, deadline 30) one lease by index 2; c (4 GPUs, 30 s, deadline 20) cannot
    # make it even alone and is rejected at once; best-effort e (4 GPUs, 10 s) waits for spare
    # GPUs. EDF on the windows satisfies a and b: no MILP. d (8 GPUs, 10 s, deadline 30) arrives
    # at 5; at 10 only lease 2 is left for b and d: the greedy falls short, HiGHS keeps the
    # admitted b (admission control) and rejects d. a runs [0, 20), b [20, 30), e [30, 40).
    rows = [
        ("a", 0, 8, 20, 25),
        ("b", 0, 8, 10, 30),
        ("c", 0, 4, 30, 20),
        ("d", 5, 8, 10, 30),
        ("e", 0, 4, 10, math.nan),
    ]
    rec, policy = _run(rows)
    by_id = {str(j): i for i, j in enumerate(rec.jobs.job_id)}
    ends = {k: rec.end_time[i] for k, i in by_id.items()}
    assert ends["a"] == pytest.approx(20.0)
    assert ends["b"] == pytest.approx(30.0)
    assert ends["e"] == pytest.approx(40.0)
    assert rec.status[by_id["c"]] == REJECTED and rec.status[by_id["d"]] == REJECTED
    assert rec.reject_reason[by_id["c"]].startswith("cannot meet its deadline even alone")
    assert rec.reject_reason[by_id["d"]].startswith("admission control")
    assert policy.solves == {"greedy": 1, "milp": 1}


def test_milp_beats_the_deadline_greedy_by_hand() -> None:
    # A (8 GPUs, 2 leases, deadline 20), B (4 GPUs, 2 leases, deadline 21), C (4 GPUs, 2 leases,
    # deadline 22), all at 0 on one 8-GPU node: each must hold leases 0 and 1. EDF gives both to
    # A and meets one deadline; the MILP runs B beside C and meets two, rejecting A.
    rows = [("A", 0, 8, 20, 20), ("B", 0, 4, 20, 21), ("C", 0, 4, 20, 22)]
    rec, policy = _run(rows)
    assert rec.status.tolist() == [REJECTED, DONE, DONE]
    assert rec.end_time[1:].tolist() == pytest.approx([20.0, 20.0])
    assert policy.solves == {"milp": 1}


def test_solver_and_greedy_agree_when_everything_fits() -> None:
    need = np.array([2, 1])
    usable = np.array([[1, 1, 2], [1, 1, 2]])
    y, sat, how = solve_plan(
        need,
        np.array([8, 8]),
        usable,
        np.array([1, 1, 2]),
        np.array([0, 1, 2]),
        8,
        np.ones(2),
        1.0,
    )
    assert how == "greedy" and sat.all()
    assert y.tolist() == [[1, 1, 0], [0, 0, 1]]


def test_bad_parameters() -> None:
    with pytest.raises(ValueError, match="'fine_leases' must be"):
        Chronus(fine_leases=0)
    with pytest.raises(ValueError, match="'max_windows' must exceed"):
        Chronus(fine_leases=8, max_windows=8)
    with pytest.raises(ValueError, match="'best_effort' must be one of"):
        Chronus(best_effort="sjf")


@st.composite
def plans(draw):
    n = draw(st.integers(1, 6))
    w = draw(st.integers(1, 5))
    need = np.array(draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)))
    gpus = np.array(draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=n, max_size=n)))
    last = np.sort(np.array(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))))
    return need, gpus, last, w


def test_milp_plan_beats_the_greedy_plan_exactly() -> None:
    # Three single-lease windows on 8 GPUs, jobs in deadline order, each needing 2 leases:
    # A (8 GPUs) must use leases 0-1; B and C (4 GPUs) may use any two of 0-2. The greedy gives
    # A leases 0-1, then B and C only lease 2 each: it meets A alone. The MILP meets B and C
    # by running them side by side; the tie-breaker pulls their leases forward to 0-1.
    need, gpus, last = np.array([2, 2, 2]), np.array([8, 4, 4]), np.array([1, 2, 2])
    starts, lengths = windows(3, 2, 8)
    usable = np.clip(last[:, None] - starts[None, :] + 1, 0, lengths[None, :])
    greedy = greedy_plan(need, gpus, usable, 8 * lengths)
    assert greedy.tolist() == [[1, 1, 0], [0, 0, 0], [0, 0, 0]]
    y, sat, how = solve_plan(need, gpus, usable, lengths, starts, 8, np.ones(3), 5.0)
    assert how == "milp"
    assert sat.tolist() == [False, True, True]
    assert y.tolist() == [[0, 0, 0], [1, 1, 0], [1, 1, 0]]
    # With A admitted earlier (weight newcomers + 1 = 3), admission control keeps A instead.
    y, sat, how = solve_plan(need, gpus, usable, lengths, starts, 8, np.array([3.0, 1, 1]), 5.0)
    assert how == "milp"
    assert sat.tolist() == [True, False, False]
    assert y.tolist() == [[1, 1, 0], [0, 0, 0], [0, 0, 0]]


@settings(max_examples=40, deadline=None)
@given(case=plans())
def test_milp_plan_is_feasible(case) -> None:
    need, gpus, last, fine = case
    starts, lengths = windows(fine, int(last.max()), fine + 4)
    usable = np.clip(last[:, None] - starts[None, :] + 1, 0, lengths[None, :])
    cap = 8 * lengths
    y, sat, _ = solve_plan(need, gpus, usable, lengths, starts, 8, np.ones(len(need)), 5.0)
    assert (y <= usable).all() and (y >= 0).all()
    assert ((gpus[:, None] * y).sum(axis=0) <= cap).all()
    assert (y.sum(axis=1)[sat] == need[sat]).all()
    assert (y[~sat] == 0).all()  # an unmet job's leases go to the fill-in, not to the plan


@st.composite
def cases(draw):
    nodes = draw(st.integers(1, 2))
    per_node = draw(st.sampled_from([4, 8]))
    n = draw(st.integers(1, 12))
    submit = sorted(draw(st.lists(st.integers(0, 300), min_size=n, max_size=n)))
    iters = draw(st.lists(st.integers(5, 400), min_size=n, max_size=n))
    gpus = draw(st.lists(st.sampled_from([1, 2, 4, 8, 32]), min_size=n, max_size=n))
    slack = draw(st.lists(st.one_of(st.none(), st.integers(0, 600)), min_size=n, max_size=n))
    rows = [
        (f"j{i}", submit[i], gpus[i], iters[i], math.nan if s is None else submit[i] + s)
        for i, s in enumerate(slack)
    ]
    guarantee = draw(st.booleans())
    return f"{nodes}x{per_node}:A100", rows, guarantee


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_invariants(case) -> None:
    spec, rows, guarantee = case
    total = parse_cluster_spec(spec).total_gpus
    rec, _ = _run(rows, spec, guarantee=guarantee, fine_leases=2, max_windows=6)
    assert (rec.ts_busy <= total).all()
    assert ((rec.status == DONE) | (rec.status == REJECTED)).all()
    best_effort = np.isnan(rec.jobs.deadline)
    fits = rec.jobs.num_gpus <= total
    # Best-effort jobs that fit always finish; an SLO job that completes is on time (the plan
    # only ever executes single-lease windows, which it checks exactly).
    assert (rec.status[best_effort & fits] == DONE).all()
    done_slo = (rec.status == DONE) & ~best_effort
    assert (rec.end_time[done_slo] <= rec.jobs.deadline[done_slo] + 1e-6).all()
    again, _ = _run(rows, spec, guarantee=guarantee, fine_leases=2, max_windows=6)
    assert jobs_frame(rec).equals(jobs_frame(again))


@pytest.mark.skipif(
    not ITP.is_dir(),
    reason="../shared/traces/elasticflow-itp not found: the public trace is not beside this "
    "checkout",
)
def test_on_the_195_job_trace() -> None:
    # 16 nodes × 8 A100, 240 s leases: 104 jobs cannot finish even alone from their first lease
    # and are rejected; every other one is planned and meets its deadline (91, DSR 0.467 — the
    # most any policy at the requested counts on this lease grid can reach). The paper's
    # testbed figure for Chronus is 0.410.
    jobs = read_jobs(ITP / "simulation" / "195job.csv").jobs
    perf = ThroughputTable(
        read_throughput_dir(SHARED / "traces" / "elasticflow-artifact" / "throughputs_A100")
    )
    policy = Chronus()
    policy.slot = 240.0
    rec = ReplayEngine(
        parse_cluster_spec("16x8:A100"), jobs, policy, make_placement("bestfit"), perf
    ).run()
    met = int((rec.end_time <= rec.jobs.deadline).sum())
    assert met == 91
    assert int((rec.status == REJECTED).sum()) == 104
