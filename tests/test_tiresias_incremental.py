"""Tiresias's incremental bookkeeping gives what the plain computation over every job gives.

The wake-up (next threshold crossing of a running job) is kept in a heap fed by the runtime's
size log, a few jobs' keys are computed one by one, and a preemptive ranking keeps the GPUs the
running jobs asked for as they start and stop. At every call of a replay on random cases, each is
compared here with the vectorised computation over all running jobs that it replaces.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.replay import ReplayConfig, ReplayEngine
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import PENDING, Snapshot
from schedlab.perf.models import TraceDuration
from schedlab.policies.ordering.tiresias import Tiresias
from schedlab.policies.registry import make_scheduler
from schedlab.traces.cluster_spec import parse_cluster_spec
from test_replay_properties import SPEED, Case, cases


def crossing_over_all(order: Tiresias, snap: Snapshot) -> float:
    """The next threshold crossing, computed over every running job at once."""
    running = snap.running()
    if not len(running):
        return np.inf
    attained = order.service(snap, running)
    nxt = np.searchsorted(order.thresholds, attained, side="right")
    has_next = nxt < len(order.thresholds)
    if not has_next.any():
        return np.inf
    gpus = np.maximum(snap.runtime.alloc_n[running[has_next]], 1)
    gap = order.thresholds[nxt[has_next]] - attained[has_next]
    return snap.now + float((gap / gpus).min())


def keys_over_all(order: Tiresias, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
    """The vectorised keys (promotions included) of ``idx``."""
    if order.starvation > 0:
        executed = snap.executed(idx)
        waited = snap.now - snap.runtime.queued_since[idx]
        pending = snap.runtime.status[idx] == PENDING
        starving = pending & (executed > 0) & (waited >= order.starvation * executed)
        if starving.any():
            order.service_base[idx[starving]] = snap.attained(idx[starving])
    return np.searchsorted(order.thresholds, order.service(snap, idx), side="right").astype(float)


class Checked(Tiresias):
    """Tiresias that checks its incremental answers against the plain ones at every call."""

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.wakeups = self.keyed = 0

    def keys(self, snap: Snapshot, idx: np.ndarray) -> np.ndarray:
        before = self.service_base.copy()
        got = super().keys(snap, idx)
        after = self.service_base.copy()
        self.service_base[:] = before
        want = keys_over_all(self, snap, idx)
        assert np.array_equal(got, want), (got, want)
        assert np.array_equal(after, self.service_base)
        self.keyed += 1
        return got

    def _next_crossing(self, snap: Snapshot) -> float:
        got = super()._next_crossing(snap)
        assert got == crossing_over_all(self, snap), (snap.now, got)
        self.wakeups += 1
        return got


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    case=cases(),
    thresholds=st.sampled_from([(100.0,), (50.0, 400.0), (3250.0, 7200.0)]),
    starvation=st.sampled_from([0.0, 0.5, 10.0]),
)
def test_incremental_answers_equal_the_plain_ones(
    case: Case, thresholds: tuple[float, ...], starvation: float
) -> None:
    policy, placement = make_scheduler("tiresias", "bestfit", False, None)
    order = Checked(thresholds=thresholds, starvation=starvation)
    policy.ordering = order
    plan = type(policy)._plan

    def checked_plan(self, snap, running, pending):  # type: ignore[no-untyped-def]
        asked = self._asked_by_running(snap)
        assert asked == int(self.num_gpus[running].sum())
        return plan(self, snap, running, pending)

    policy._plan = checked_plan.__get__(policy)  # type: ignore[method-assign]
    engine = ReplayEngine(
        parse_cluster_spec(case.spec),
        case.jobs,
        policy,
        placement,
        TraceDuration(SPEED),
        ReplayConfig(seed=case.seed, restart_overhead=case.restart_overhead),
    )
    record = engine.run()
    assert order.wakeups == record.decision_points or len(case.jobs) == 0


def test_a_job_past_its_crossing_wakes_the_policy_at_the_next_threshold() -> None:
    """By hand: one 2-GPU job alone, thresholds 100 and 400 GPU-s: the policy asks to be woken
    at 50 s (100 / 2) and then at 200 s (400 / 2), and the job ends at 300 s."""
    jobs = JobTable.from_columns(job_id=["a"], submit_time=[0], num_gpus=[2], duration=[300.0])
    policy, placement = make_scheduler("tiresias", "bestfit", False, None)
    policy.ordering = Tiresias(thresholds=(100.0, 400.0), starvation=0.0)
    record = ReplayEngine(
        parse_cluster_spec("1x4:V100"), jobs, policy, placement, TraceDuration({}), ReplayConfig()
    ).run()
    assert record.ts_time.tolist() == [0.0, 50.0, 200.0, 300.0]
