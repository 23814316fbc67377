"""EASY backfill keeps its promise to the blocked head, on clusters of mixed GPU speeds.

What EASY guarantees: when a job becomes the blocked head of a FIFO queue it gets a reservation
(the earliest time it could start given the running jobs' ends), and nothing backfilled behind it
may push its start past that time. With run times known exactly (the oracle a trace replay has)
the guarantee is an invariant: every job that was ever a blocked head starts no later than its
first reservation. Under FIFO the head stays head until it starts (nobody can overtake it), which
is why the property is stated for FIFO; under SJF or EDF a later arrival may take the head's place
and its GPUs, which EASY does not promise against.

The clusters (those of the engine's property tests) mix V100s with T4s at half speed, so a job
that looks short on the reference GPU may run twice as long where it is put: a reservation check
that times candidates on the reference GPU breaks the guarantee.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.engines.replay import ReplayConfig, ReplayEngine
from schedlab.model.jobs import JobTable
from schedlab.perf.models import TraceDuration
from schedlab.policies.registry import make_scheduler
from schedlab.traces.cluster_spec import parse_cluster_spec
from test_replay_properties import SPEED, Case, cases

#: Relative slack for float sums of run times (the engine and the reservation add them apart).
EPS = 1e-9


def first_reservations(
    case: Case, placement_name: str = "bestfit"
) -> tuple[dict[int, float], dict[int, float]]:
    """Replay ``case`` under FIFO + backfill; return each blocked head's first reservation and
    every job's first start (both by job index in submit order)."""
    policy, placement = make_scheduler("fifo", placement_name, True)
    reservation = policy._reservation  # type: ignore[attr-defined]
    first: dict[int, float] = {}

    def spy(snap, head, *rest):  # type: ignore[no-untyped-def]
        shadow, *more = reservation(snap, head, *rest)
        first.setdefault(head, float(shadow))
        return (shadow, *more)

    policy._reservation = spy  # type: ignore[attr-defined]
    engine = ReplayEngine(
        parse_cluster_spec(case.spec),
        case.jobs,
        policy,
        placement,
        TraceDuration(SPEED),
        ReplayConfig(seed=case.seed, restart_overhead=case.restart_overhead),
    )
    record = engine.run()
    starts = {j: float(t) for j, t in enumerate(record.first_start.tolist())}
    return first, starts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(("bestfit", "consolidate", "random")))
def test_no_blocked_head_starts_after_its_first_reservation(case: Case, placement: str) -> None:
    reserved, starts = first_reservations(case, placement)
    for head, shadow in reserved.items():
        if shadow == float("inf"):
            continue  # no state of this cluster lets it run: there is nothing to keep
        start = starts[head]
        assert start <= shadow + EPS * max(1.0, abs(shadow)), (
            f"head {head} reserved for {shadow} at first but started at {start}"
        )


def test_the_reproduction_is_caught() -> None:
    # The hand-made case of the CLI test, through the same check: b (the head) is reserved at
    # 100 and starts there, as c (short on the reference GPU, long on a T4) waits; c is the head
    # from 100, reserved at 120 when b ends, and starts then.
    jobs = JobTable.from_columns(
        job_id=["a", "b", "c"],
        submit_time=[0, 1, 2],
        num_gpus=[4, 6, 2],
        duration=[100.0, 10.0, 80.0],
    )
    reserved, starts = first_reservations(Case("1x4:V100+1x2:T4", jobs, 0.0, 0))
    assert reserved == {1: 100.0, 2: 120.0}
    assert starts == {0: 0.0, 1: 100.0, 2: 120.0}
