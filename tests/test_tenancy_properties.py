"""Invariants of the tenancy layer over generated workloads: Kueue's "two workloads never
preempt each other" (fair sharing, flat cohorts), and for every share policy: no queue over
its limit, every job accounted for, the same run twice gives the same result."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.model.snapshot import DONE
from schedlab.tenancy.kueue import _passes
from schedlab.tenancy.kueue_quota import KueueQuota
from schedlab.tenancy.registry import share_policy_names
from schedlab.tenancy.tree import QueueSpec, build_tree
from tenancy_cases import run

STRATEGY_LISTS = (("S2a",), ("S2b",), ("S2a", "S2b"))
RESOURCES = ("gpu", "cpu", "memory")


def _may_preempt(strategies, preemptor_with: float, target_before: float, target_after: float):
    return any(_passes(s, preemptor_with, target_before, target_after) for s in strategies)


@st.composite
def cohorts(draw):
    """A flat cohort with quotas, weights and usage, and two workloads A (in X) and B (in Y)
    that each ask for their queue's dominant resource and leave it borrowing."""
    n = draw(st.integers(2, 6))
    r = draw(st.integers(1, 3))
    nominal = np.array(
        draw(
            st.lists(st.lists(st.integers(0, 20), min_size=r, max_size=r), min_size=n, max_size=n)
        ),
        dtype=float,
    )
    weight = draw(st.lists(st.floats(0.05, 4.0), min_size=n, max_size=n))
    used = np.array(
        draw(
            st.lists(st.lists(st.integers(0, 30), min_size=r, max_size=r), min_size=n, max_size=n)
        ),
        dtype=float,
    )
    x, y = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    size_a = draw(st.integers(1, 20))
    size_b = draw(st.integers(1, 20))
    specs = [
        QueueSpec(
            f"q{i}",
            deserved={RESOURCES[k]: float(nominal[i, k]) for k in range(r)},
            weight=weight[i],
        )
        for i in range(n)
    ]
    return specs, used, x, y, size_a, size_b, r


def _setup(case):
    specs, used, x, y, size_a, size_b, r = case
    tree = build_tree(specs)
    cap = np.full(len(tree.resources), float(used.sum() + 100))
    quota = KueueQuota(tree, cap)
    own = np.zeros((len(tree), len(tree.resources)))
    for i in range(len(specs)):
        for k in range(r):
            own[tree.index[f"q{i}"], tree.resource(RESOURCES[k])] = used[i, k]
    qx, qy = tree.index[f"q{x}"], tree.index[f"q{y}"]

    def dominant(node: int) -> int:
        usage = quota.usage(own)
        lend = quota.potential[0]
        over = np.maximum(0, usage[node] + 1 - quota.subtree[node]) / np.where(lend > 0, lend, 1)
        return int(np.argmax(over))

    ra = np.zeros(len(tree.resources))
    ra[dominant(qx)] = size_a
    rb = np.zeros(len(tree.resources))
    rb[dominant(qy)] = size_b
    return tree, quota, own, qx, qy, ra, rb


def _never_mutual(case) -> None:
    _, quota, own, qx, qy, ra, rb = _setup(case)
    # S1: B admitted in Y, A pending in X. S2: B gone, A admitted.
    s1 = own.copy()
    s1[qy] += rb
    s2 = own.copy()
    s2[qx] += ra
    u1, u2 = quota.usage(s1), quota.usage(s2)
    borrowing = (u1[qy] > quota.subtree[qy]).any() and (u2[qx] > quota.subtree[qx]).any()
    rises = quota.drs(qx, quota.usage_with(u1, qx, ra)) > quota.drs(qx, u1) and quota.drs(
        qy, u1
    ) > quota.drs(qy, quota.usage(own))
    if not (borrowing and rises):
        return  # outside the theorem's conditions
    a_with = quota.drs(qx, quota.usage_with(u1, qx, ra))
    y_with_b, y_without_b = quota.drs(qy, u1), quota.drs(qy, quota.usage(own))
    b_with = quota.drs(qy, quota.usage_with(u2, qy, rb))
    x_with_a, x_without_a = quota.drs(qx, u2), quota.drs(qx, quota.usage(own))
    for strategies in STRATEGY_LISTS:
        if _may_preempt(strategies, a_with, y_with_b, y_without_b):
            assert not _may_preempt(strategies, b_with, x_with_a, x_without_a), strategies


@settings(max_examples=400, deadline=None)
@given(cohorts())
def test_two_workloads_never_preempt_each_other(case):
    _never_mutual(case)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None)
@given(cohorts())
def test_two_workloads_never_preempt_each_other_10000_cases(case):
    _never_mutual(case)


def test_a_closed_workload_under_kueue_fair_ends_and_no_victim_evicts_its_evictor():
    rng = np.random.default_rng(7)
    queues = [
        QueueSpec(
            f"q{i}",
            deserved={"gpu": 4},
            weight=w,
            preemption={"reclaim_within_cohort": "Any", "within_cluster_queue": "Never"},
        )
        for i, w in enumerate((1.0, 2.0, 0.5, 1.0))
    ]
    rows = []
    for i in range(60):
        q = int(rng.integers(0, 4))
        rows.append(
            (
                f"j{i}",
                f"q{q}",
                float(rng.integers(0, 200)),
                int(rng.choice([1, 2, 4])),
                float(rng.integers(50, 400)),
            )
        )
    record, recorder, _ = run(rows, queues, "kueue-fair", cluster="2x8:V100")
    assert (record.status == DONE).all()
    evicted_by = {(r.victim, r.job) for r in recorder.reclaims}
    for victim, evictor in evicted_by:
        assert (evictor, victim) not in evicted_by


POLICIES = share_policy_names()


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 25))
    rows = []
    for i in range(n):
        rows.append(
            (
                f"j{i}",
                draw(st.sampled_from(["a", "b", "c/x", "c/y"])),
                float(draw(st.integers(0, 500))),
                draw(st.sampled_from([1, 2, 4, 8])),
                float(draw(st.integers(1, 300))),
            )
        )
    policy = draw(st.sampled_from(POLICIES))
    limit_b = draw(st.sampled_from([None, 4, 8]))
    return rows, policy, limit_b


@settings(max_examples=60, deadline=None)
@given(workloads())
def test_every_job_accounted_for_limits_kept_and_runs_repeat(case):
    rows, policy, limit_b = case
    queues = [
        QueueSpec("a", deserved={"gpu": 4}, preemption={"reclaim_within_cohort": "Any"}),
        QueueSpec("b", deserved={"gpu": 2}, limit={"gpu": limit_b} if limit_b else {}),
        QueueSpec("c", deserved={"gpu": 6}, weight=2),
        QueueSpec("c/x", deserved={"gpu": 3}),
        QueueSpec("c/y", deserved={"gpu": 3}),
    ]
    record, recorder, sched = run(rows, queues, policy, cluster="2x8:V100")
    # Every job completed, or was turned away for asking more than its queue may ever hold.
    rejected = set(record.reject_reason)
    for i, status in enumerate(record.status.tolist()):
        assert status == DONE or (i in rejected and "may hold" in record.reject_reason[i])
    alloc = np.stack(recorder.alloc)[:, :, 0] if recorder.alloc else np.zeros((0, 1))
    assert (alloc[:, 0] <= 16 + 1e-9).all()  # never more than the cluster
    b = sched.tree.index["b"]
    if limit_b:
        assert (alloc[:, b] <= limit_b + 1e-9).all()
    again, _, _ = run(rows, queues, policy, cluster="2x8:V100")
    assert np.array_equal(again.first_start, record.first_start, equal_nan=True)
    assert np.array_equal(again.end_time, record.end_time, equal_nan=True)


@pytest.mark.parametrize("policy", ["kai", "kueue-fair", "yunikorn", "drf"])
def test_gpus_held_match_the_engine(policy):
    rows = [
        (f"j{i}", "ab"[i % 2], float(10 * i), 2 + 2 * (i % 3), 100.0 + 7 * i) for i in range(20)
    ]
    queues = [
        QueueSpec("a", deserved={"gpu": 8}, preemption={"reclaim_within_cohort": "Any"}),
        QueueSpec("b", deserved={"gpu": 8}, preemption={"reclaim_within_cohort": "Any"}),
    ]
    record, recorder, _ = run(rows, queues, policy, cluster="2x8:V100")
    # The recorder's total after each decision equals the engine's busy GPUs then.
    for t, alloc in zip(recorder.times, recorder.alloc, strict=True):
        i = int(np.searchsorted(record.ts_time, t, side="right")) - 1
        assert alloc[0, 0] == record.ts_busy[i]
