"""Hand-computed replays for every ordering: exact start and end times on tiny clusters.

Every case is small enough to simulate on paper; the reasoning is written beside the expected
numbers. Durations are in seconds at the requested GPU count on the reference GPU (TraceDuration,
no speed factors), so a job that runs uninterrupted ends exactly ``duration`` after it starts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from schedlab.engines.replay import ReplayConfig, ReplayEngine, ReplayRecord
from schedlab.model.gpu_models import ANY_MODEL_MASK, model_index
from schedlab.model.jobs import JobTable
from schedlab.model.snapshot import DONE
from schedlab.perf.models import TraceDuration
from schedlab.policies.registry import make_scheduler
from schedlab.traces.cluster_spec import parse_cluster_spec

#: (job_id, submit_time, num_gpus, duration[, deadline])
Row = tuple


def make_jobs(rows: Sequence[Row]) -> JobTable:
    return JobTable.from_columns(
        job_id=[r[0] for r in rows],
        submit_time=[r[1] for r in rows],
        num_gpus=[r[2] for r in rows],
        duration=[r[3] for r in rows],
        deadline=[r[4] if len(r) > 4 else math.nan for r in rows],
    )


def replay(
    cluster: str,
    rows: Sequence[Row],
    order: str,
    *,
    placement: str = "bestfit",
    backfill: bool = False,
    params: Mapping[str, str] | None = None,
    **config: float,
) -> ReplayRecord:
    policy, placement_policy = make_scheduler(order, placement, backfill, params)
    engine = ReplayEngine(
        parse_cluster_spec(cluster),
        make_jobs(rows),
        policy,
        placement_policy,
        TraceDuration(),
        ReplayConfig(**config),  # type: ignore[arg-type]
    )
    return engine.run()


class Outcome:
    """Per-job results looked up by job id (``record.jobs`` is in submit order)."""

    def __init__(self, record: ReplayRecord) -> None:
        self.record = record
        self.index = {str(j): i for i, j in enumerate(record.jobs.job_id)}

    def start(self, job: str) -> float:
        return float(self.record.first_start[self.index[job]])

    def end(self, job: str) -> float:
        return float(self.record.end_time[self.index[job]])

    def preemptions(self, job: str) -> int:
        return int(self.record.preemptions[self.index[job]])

    def times(self) -> dict[str, tuple[float, float]]:
        return {j: (self.start(j), self.end(j)) for j in self.index}

    def all_done(self) -> bool:
        return bool((self.record.status == DONE).all())


# -- fifo ------------------------------------------------------------------------------------------
def test_fifo_head_of_line_blocking() -> None:
    # One node of 4 GPUs.
    # t=0   a (2 GPUs, 100 s) starts at once: 0 → 100; 2 GPUs stay free.
    # t=1   b (4 GPUs) is the head of the queue and does not fit in 2 free GPUs: it waits.
    # t=2   c (1 GPU) would fit in the 2 free GPUs, but FIFO without backfill never passes the
    #       blocked head: c waits behind b.
    # t=100 a ends, b takes all 4 GPUs: 100 → 150.
    # t=150 b ends, c starts: 150 → 160.
    rows = [("a", 0, 2, 100), ("b", 1, 4, 50), ("c", 2, 1, 10)]
    out = Outcome(replay("1x4:V100", rows, "fifo"))
    assert out.times() == {"a": (0, 100), "b": (100, 150), "c": (150, 160)}
    assert out.all_done()
    assert out.record.preemptions.sum() == 0


def test_fifo_starts_jobs_in_submit_order_when_they_fit() -> None:
    # Two 1-GPU jobs on a 2-GPU node start on arrival; the third waits for the first to end.
    # a: 0 → 30; b: 5 → 25; c arrives at 6, first GPU to free is b's at 25: 25 → 35.
    rows = [("a", 0, 1, 30), ("b", 5, 1, 20), ("c", 6, 1, 10)]
    out = Outcome(replay("1x2:V100", rows, "fifo"))
    assert out.times() == {"a": (0, 30), "b": (5, 25), "c": (25, 35)}


# -- sjf -------------------------------------------------------------------------------------------
def test_sjf_runs_the_shortest_waiting_job_next() -> None:
    # One GPU. a (100 s) arrives alone at 0 and runs 0 → 100 (SJF does not preempt).
    # b (50 s, t=1) and c (10 s, t=2) wait. At 100 SJF picks the shorter c: 100 → 110,
    # then b: 110 → 160. (FIFO would run b first: b 100 → 150, c 150 → 160.)
    rows = [("a", 0, 1, 100), ("b", 1, 1, 50), ("c", 2, 1, 10)]
    out = Outcome(replay("1x1:V100", rows, "sjf"))
    assert out.times() == {"a": (0, 100), "b": (110, 160), "c": (100, 110)}
    fifo = Outcome(replay("1x1:V100", rows, "fifo"))
    assert fifo.times() == {"a": (0, 100), "b": (100, 150), "c": (150, 160)}


def test_sjf_ties_go_to_the_earlier_submit() -> None:
    # Equal run times: the earlier submission goes first. a 0 → 10, b 10 → 30, c 30 → 50.
    rows = [("a", 0, 1, 10), ("b", 1, 1, 20), ("c", 2, 1, 20)]
    out = Outcome(replay("1x1:V100", rows, "sjf"))
    assert out.times() == {"a": (0, 10), "b": (10, 30), "c": (30, 50)}


# -- srtf ------------------------------------------------------------------------------------------
SRTF_ROWS = [("long", 0, 1, 100), ("short", 10, 1, 20)]


def test_srtf_short_arrival_preempts_long_job_and_progress_is_kept() -> None:
    # One GPU. long (100 s) runs from 0. At 10, short (20 s) arrives: long has 90 s left, short
    # 20 s, so short preempts long: short 10 → 30. long resumes at 30 with its 90 s left (the 10 s
    # it ran are kept): 30 → 120. first_start of long stays 0.
    out = Outcome(replay("1x1:V100", SRTF_ROWS, "srtf"))
    assert out.times() == {"long": (0, 120), "short": (10, 30)}
    assert out.preemptions("long") == 1
    assert out.preemptions("short") == 0
    i = out.index["long"]
    # GPU time held: 10 s before the preemption + 90 s after.
    assert out.record.gpu_seconds[i] == pytest.approx(100.0)


def test_srtf_restart_overhead_adds_exactly_the_overhead() -> None:
    # Same as above, but a restarted job spends 7 s restoring its checkpoint before it progresses:
    # long restarts at 30, makes progress from 37, ends at 37 + 90 = 127. short never restarts,
    # so it is unaffected (10 → 30).
    out = Outcome(replay("1x1:V100", SRTF_ROWS, "srtf", restart_overhead=7.0))
    assert out.times() == {"long": (0, 127), "short": (10, 30)}
    assert out.preemptions("long") == 1
    # It holds the GPU during the overhead too: 10 + 97.
    assert out.record.gpu_seconds[out.index["long"]] == pytest.approx(107.0)


def test_srtf_does_not_preempt_a_job_with_less_time_left() -> None:
    # long (100 s) runs from 0; at 95 it has 5 s left and "mid" (20 s) arrives: no preemption.
    # long 0 → 100, mid 100 → 120.
    rows = [("long", 0, 1, 100), ("mid", 95, 1, 20)]
    out = Outcome(replay("1x1:V100", rows, "srtf"))
    assert out.times() == {"long": (0, 100), "mid": (100, 120)}
    assert out.record.preemptions.sum() == 0


def test_srtf_voided_completion_is_not_a_decision_point() -> None:
    # Four events: arrivals at 0 and 10, completions at 30 and 120. long's first completion (due
    # at 100) was voided by its preemption at 10 and must not ask the policy again.
    out = Outcome(replay("1x1:V100", SRTF_ROWS, "srtf"))
    assert out.record.ts_time.tolist() == [0.0, 10.0, 30.0, 120.0]
    assert out.record.decision_points == 4


T4_HALF = TraceDuration({model_index("T4"): 0.5})


def replay_on_t4(cluster: str, rows: Sequence[Row], order: str, **config: float) -> ReplayRecord:
    policy, placement_policy = make_scheduler(order, "bestfit", False)
    return ReplayEngine(
        parse_cluster_spec(cluster),
        make_jobs(rows),
        policy,
        placement_policy,
        T4_HALF,
        ReplayConfig(**config),  # type: ignore[arg-type]
    ).run()


def test_srtf_on_slower_gpus_compares_like_with_like() -> None:
    # Remaining time is measured on one yardstick for running and waiting jobs; timing a running
    # job at its slower GPU's pace made it look longer as soon as it ran, so jobs swapped at every
    # decision point.
    # One T4 at half the reference speed. a (100 s of reference work) runs from 0; at 10 it has
    # 95 s of work left, b (t=10) has 150 s: a is shorter on either scale (95 vs 150 reference
    # seconds, 190 vs 300 T4 seconds), so nothing is preempted. a 0 → 200, b 200 → 500.
    out = Outcome(replay_on_t4("1x1:T4", [("a", 0, 1, 100), ("b", 10, 1, 150)], "srtf"))
    assert out.times() == {"a": (0, 200), "b": (200, 500)}
    assert out.record.preemptions.sum() == 0


def test_srtf_on_slower_gpus_with_restart_overhead_terminates() -> None:
    # A regression case: mixed-speed srtf keys swapped jobs at every decision point, every
    # preemption left a voided completion that became a decision point, and once those came
    # every 5 s the 5 s restart overhead ate every run: from t≈215 p + s and r swapped forever
    # with 7.5, 15 and 12.5 s of work left (`until` bounds the replay if that ever comes back).
    # One node of 4 T4s (half speed), 5 s restart overhead; keys are reference seconds left.
    # t=0   p (3 GPUs, 80) starts; at half speed it would end at 160.
    # t=10  q (4 GPUs, 190): p (75 left) ranks first and q does not fit beside it: q waits.
    # t=80  r (4 GPUs, 30) beats p (40 left): p is preempted, r runs 80 → 140.
    # t=90  s (1 GPU, 50) ranks after r (25 left), which holds all 4 GPUs: s waits.
    # t=140 r ends; p (40) and s (50) fit together in 4 GPUs. p restarts with 5 s of overhead:
    #       progress from 145, 40 / 0.5 = 80 s → 225. s starts fresh: 50 / 0.5 = 100 s → 240.
    # t=225 p ends; s (7.5 left) ranks before q, and q does not fit beside it: q waits.
    # t=240 s ends; q runs 240 → 240 + 190 / 0.5 = 620.
    rows = [("p", 0, 3, 80), ("q", 10, 4, 190), ("r", 80, 4, 30), ("s", 90, 1, 50)]
    record = replay_on_t4("1x4:T4", rows, "srtf", restart_overhead=5.0, until=10_000.0)
    out = Outcome(record)
    assert out.times() == {"p": (0, 225), "q": (240, 620), "r": (80, 140), "s": (140, 240)}
    assert record.preemptions.tolist() == [1, 0, 0, 0]
    assert record.ts_time.tolist() == [0, 10, 80, 90, 140, 225, 240, 620]


# -- tiresias --------------------------------------------------------------------------------------
TIRESIAS = {"thresholds": "100", "starvation": "2"}


def test_tiresias_demoted_job_is_preempted_by_a_new_queue0_job() -> None:
    # One GPU, one threshold at 100 GPU-seconds.
    # a (300 s) runs from 0; at 100 it has attained 100 GPU-s and drops to queue 1 (a wake-up at
    # the crossing; nobody waits, so nothing changes).
    # t=150 b (50 s) arrives in queue 0 and preempts a (queue 1): b 150 → 200.
    # t=200 b ends; a (waited 50 < 2 × 150 executed, no promotion) resumes with 150 s left:
    #       200 → 350.
    rows = [("a", 0, 1, 300), ("b", 150, 1, 50)]
    out = Outcome(replay("1x1:V100", rows, "tiresias", params=TIRESIAS))
    assert out.times() == {"a": (0, 350), "b": (150, 200)}
    assert out.preemptions("a") == 1
    assert out.preemptions("b") == 0
    # With the default threshold (3600 GPU-s) both stay in queue 0, FIFO within it: no preemption.
    plain = Outcome(replay("1x1:V100", rows, "tiresias"))
    assert plain.times() == {"a": (0, 300), "b": (300, 350)}
    assert plain.record.preemptions.sum() == 0


def test_tiresias_demotion_is_paced_by_the_gpu_count() -> None:
    # Two GPUs, threshold 100 GPU-s: a 2-GPU job crosses it after 50 s, not 100.
    # a (2 GPUs, 200 s) runs from 0, demoted at 50. b (2 GPUs, 10 s) arrives at 60: queue 0,
    # preempts a: b 60 → 70. a resumes at 70 with 140 s left: 70 → 210.
    rows = [("a", 0, 2, 200), ("b", 60, 2, 10)]
    out = Outcome(replay("1x2:V100", rows, "tiresias", params=TIRESIAS))
    assert out.times() == {"a": (0, 210), "b": (60, 70)}
    assert out.preemptions("a") == 1


def test_tiresias_starvation_guard_promotes_at_exactly_the_due_time() -> None:
    # One GPU, thresholds=(100,), starvation=2: a waiting job that has run E seconds is promoted
    # to queue 0 when it has waited 2·E since it last entered the queue; its service then counts
    # from the promotion.
    #
    # t=0    a (1000 s) starts; next wake-up at 100 (threshold crossing).
    # t=100  a has 100 GPU-s → queue 1; b (90 s) arrives in queue 0 and preempts it.
    #        a: executed 100, queued since 100 → promotion due at 100 + 2·100 = 300.
    #        b: 100 → 190.
    # t=150  c (90 s) arrives, queue 0, waits (b runs in queue 0 and was first).
    # t=190  b ends; c (queue 0) beats a (queue 1, waited 90 < 200): c 190 → 280.
    # t=200  d (90 s) arrives, queue 0, waits behind c.
    # t=280  c ends; d starts (a has waited 180 < 200).
    # t=300  a's promotion is due: service restarts at 0 → queue 0. d (20 GPU-s) is in queue 0
    #        too; a was submitted first, so a preempts d. d: executed 20, queued since 300,
    #        so d's own promotion is due at 340 (it changes nothing: a is earlier in queue 0).
    # t=400  a has 100 GPU-s since its promotion (a whole first quantum, 300 → 400) → queue 1;
    #        d is in queue 0 with 70 s left and preempts a: d 400 → 470.
    # t=470  d ends; a resumes with 1000 − 100 − 100 = 800 s left: 470 → 1270.
    rows = [("a", 0, 1, 1000), ("b", 100, 1, 90), ("c", 150, 1, 90), ("d", 200, 1, 90)]
    out = Outcome(replay("1x1:V100", rows, "tiresias", params=TIRESIAS))
    assert out.times() == {
        "a": (0, 1270),
        "b": (100, 190),
        "c": (190, 280),
        "d": (280, 470),
    }
    assert out.preemptions("a") == 2
    assert out.preemptions("d") == 1
    assert out.preemptions("b") == out.preemptions("c") == 0
    # a decision point exists at exactly the promotion time and at the end of a's quantum
    assert 300.0 in out.record.ts_time.tolist()
    assert 400.0 in out.record.ts_time.tolist()
    # The GPU is never idle from 0 to 1270.
    assert out.record.gpu_seconds.sum() == pytest.approx(1270.0)


def test_tiresias_without_starvation_guard_starves_the_demoted_job() -> None:
    # Same trace with starvation=0 (guard off): a waits in queue 1 until every queue-0 job is
    # done. b 100 → 190, c 190 → 280, d 280 → 370, then a resumes with 900 s left: 370 → 1270.
    rows = [("a", 0, 1, 1000), ("b", 100, 1, 90), ("c", 150, 1, 90), ("d", 200, 1, 90)]
    params = {"thresholds": "100", "starvation": "0"}
    out = Outcome(replay("1x1:V100", rows, "tiresias", params=params))
    assert out.times() == {
        "a": (0, 1270),
        "b": (100, 190),
        "c": (190, 280),
        "d": (280, 370),
    }
    assert out.preemptions("a") == 1
    assert out.preemptions("d") == 0


# -- edf -------------------------------------------------------------------------------------------
def test_edf_runs_by_deadline_and_jobs_without_deadline_last() -> None:
    # One GPU. a (no deadline) arrives alone and runs 0 → 50 (non-preemptive).
    # While it runs: d (no deadline, t=1), b (deadline 500, t=2), c (deadline 200, t=3).
    # At 50: earliest deadline first: c 50 → 80, b 80 → 110, and d, submitted before both but
    # without a deadline, last: 110 → 120.
    nan = math.nan
    rows = [
        ("a", 0, 1, 50, nan),
        ("d", 1, 1, 10, nan),
        ("b", 2, 1, 30, 500.0),
        ("c", 3, 1, 30, 200.0),
    ]
    out = Outcome(replay("1x1:V100", rows, "edf"))
    assert out.times() == {"a": (0, 50), "b": (80, 110), "c": (50, 80), "d": (110, 120)}
    assert out.record.preemptions.sum() == 0


@pytest.mark.parametrize("preemptive", [False, True])
def test_edf_preemptive_variant(preemptive: bool) -> None:
    # One GPU. a (100 s, deadline 1000) runs from 0; b (20 s, deadline 100) arrives at 10.
    # Non-preemptive: b waits until 100 and ends at 120 (missing its deadline).
    # Preemptive: b's earlier deadline preempts a: b 10 → 30, a resumes 30 → 120.
    rows = [("a", 0, 1, 100, 1000.0), ("b", 10, 1, 20, 100.0)]
    params = {"preemptive": "true" if preemptive else "false"}
    out = Outcome(replay("1x1:V100", rows, "edf", params=params))
    if preemptive:
        assert out.times() == {"a": (0, 120), "b": (10, 30)}
        assert out.preemptions("a") == 1
    else:
        assert out.times() == {"a": (0, 100), "b": (100, 120)}
        assert out.record.preemptions.sum() == 0


# -- EASY backfill ---------------------------------------------------------------------------------
def test_backfill_starts_a_job_that_ends_before_the_reservation() -> None:
    # One node of 4 GPUs, FIFO + EASY backfill.
    # t=0 a (2 GPUs, 100 s) runs 0 → 100.
    # t=1 h (4 GPUs) is the blocked head; its reservation is at 100, when a frees 2 GPUs (2 free
    #     now + 2 = 4 = its need, so no "extra" GPUs at the reservation).
    # t=2 s1 (1 GPU, 90 s) would end at 92 ≤ 100: it starts now, 2 → 92.
    # t=3 s2 (1 GPU, 200 s) would end at 203 > 100 and there are no extra GPUs: it waits (also at
    #     92, when s1's GPU frees, since the reservation still holds).
    # t=100 a ends: h 100 → 150; s2 150 → 350.
    rows = [("a", 0, 2, 100), ("h", 1, 4, 50), ("s1", 2, 1, 90), ("s2", 3, 1, 200)]
    out = Outcome(replay("1x4:V100", rows, "fifo", backfill=True))
    assert out.times() == {
        "a": (0, 100),
        "h": (100, 150),
        "s1": (2, 92),
        "s2": (150, 350),
    }
    # Without backfill s1 waits behind h as well.
    plain = Outcome(replay("1x4:V100", rows, "fifo"))
    assert plain.times() == {
        "a": (0, 100),
        "h": (100, 150),
        "s1": (150, 240),
        "s2": (150, 350),
    }


def test_backfill_job_on_extra_gpus_starts_even_if_it_runs_past_the_reservation() -> None:
    # One node of 8 GPUs, FIFO + EASY backfill.
    # t=0 a (6 GPUs, 100 s) runs 0 → 100, 2 GPUs free.
    # t=1 h (4 GPUs) is blocked; at 100 there will be 2 + 6 = 8 GPUs for its 4: reservation at
    #     100 with 4 extra GPUs.
    # t=2 x (2 GPUs, 500 s) ends long after 100 but needs only 2 ≤ 4 extra GPUs: starts now,
    #     2 → 502.
    # t=100 a ends; h takes 4 of the 6 free GPUs: 100 → 150, exactly at its reservation.
    rows = [("a", 0, 6, 100), ("h", 1, 4, 50), ("x", 2, 2, 500)]
    out = Outcome(replay("1x8:V100", rows, "fifo", backfill=True))
    assert out.times() == {"a": (0, 100), "h": (100, 150), "x": (2, 502)}
    # Without backfill x waits for h to start, then fits beside it.
    plain = Outcome(replay("1x8:V100", rows, "fifo"))
    assert plain.times() == {"a": (0, 100), "h": (100, 150), "x": (100, 600)}


def test_backfill_never_delays_the_head() -> None:
    # One node of 4 GPUs. a (3 GPUs, 100 s) runs 0 → 100; h (2 GPUs) is blocked with a
    # reservation at 100 (1 + 3 = 4 GPUs, 2 extra). y (1 GPU, 50 s) ends at 52 ≤ 100: backfills
    # 2 → 52. z (1 GPU, 300 s, t=60) runs past 100 but 1 ≤ 2 extra GPUs: backfills 60 → 360.
    # h starts at 100 as reserved: 100 → 130 on the 3 GPUs a frees (one is taken by z).
    rows = [("a", 0, 3, 100), ("h", 1, 2, 30), ("y", 2, 1, 50), ("z", 60, 1, 300)]
    out = Outcome(replay("1x4:V100", rows, "fifo", backfill=True))
    assert out.times() == {
        "a": (0, 100),
        "h": (100, 130),
        "y": (2, 52),
        "z": (60, 360),
    }


def test_backfill_with_sjf_order() -> None:
    # sjf + backfill on 4 GPUs. a (4 GPUs, 100 s) runs 0 → 100.
    # Waiting at 100: p (4 GPUs, 10 s), q (1 GPU, 50 s), r (2 GPUs, 5 s). SJF order: r, p, q.
    # r starts 100 → 105; p (the head now) is blocked with a reservation at 105 (r's end), when
    # 2 + 2 = 4 GPUs are free, no extra; q (50 s) would end at 150 > 105: it waits.
    # t=105 r ends; p 105 → 115; q 115 → 165.
    rows = [("a", 0, 4, 100), ("p", 1, 4, 10), ("q", 2, 1, 50), ("r", 3, 2, 5)]
    out = Outcome(replay("1x4:V100", rows, "sjf", backfill=True))
    assert out.times() == {
        "a": (0, 100),
        "p": (105, 115),
        "q": (115, 165),
        "r": (100, 105),
    }


@pytest.mark.parametrize("order", ["fifo", "sjf", "srtf", "tiresias", "edf"])
def test_every_ordering_runs_an_uncontended_trace_unchanged(order: str) -> None:
    # Enough GPUs for everyone: every job starts on arrival and runs exactly its duration.
    rows = [("a", 0, 2, 40), ("b", 3, 1, 10), ("c", 5, 4, 25), ("d", 9, 1, 1)]
    out = Outcome(replay("2x4:V100", rows, order))
    assert out.times() == {"a": (0, 40), "b": (3, 13), "c": (5, 30), "d": (9, 10)}
    assert np.all(out.record.preemptions == 0)


@pytest.mark.parametrize("seed", [0, 1])
def test_backfill_behind_a_head_blocked_by_fragmentation(seed: int) -> None:
    # (A reservation counted in GPUs alone would be "now" here, and s could not backfill.)
    # Two nodes of 4 GPUs, FIFO + EASY backfill.
    # t=0 a and b (3 GPUs, 100 s each) take one node each: 1 GPU free on each node.
    # t=1 h (2 GPUs) needs 2 GPUs on one node: 2 GPUs are free in total, but on two nodes, so h
    #     cannot start before a and b end at 100.
    # t=2 s (1 GPU, 10 s) ends at 12, long before h can start: EASY backfill starts it now,
    #     2 → 12. h 100 → 130.
    rows = [("a", 0, 3, 100), ("b", 0, 3, 100), ("h", 1, 2, 30), ("s", 2, 1, 10)]
    out = Outcome(replay("2x4:V100", rows, "fifo", backfill=True, seed=seed))
    assert out.times()["h"] == (100, 130)
    assert out.times()["s"] == (2, 12)


def test_backfill_behind_a_head_blocked_by_gpu_model() -> None:
    # A V100 node and a T4 node, 2 GPUs each, FIFO + EASY backfill.
    # t=0 a (T4 only, 2 GPUs, 100 s) takes the T4 node.
    # t=1 h (T4 only, 2 GPUs) is blocked although the 2 V100 GPUs are free: its reservation is at
    #     100, when a frees the T4 node; the V100 GPUs are extra then.
    # t=2 c (any model, 1 GPU, 10 s) backfills on a V100: 2 → 12. h 100 → 150.
    t4 = 1 << model_index("T4")
    rows = [("a", 0, 2, 100), ("h", 1, 2, 50), ("c", 2, 1, 10)]
    jobs = make_jobs(rows)
    jobs = JobTable.from_columns(**{**jobs.columns(), "gpu_model_mask": [t4, t4, ANY_MODEL_MASK]})
    policy, placement = make_scheduler("fifo", "bestfit", True)
    record = ReplayEngine(
        parse_cluster_spec("1x2:V100+1x2:T4"), jobs, policy, placement, TraceDuration()
    ).run()
    assert Outcome(record).times() == {"a": (0, 100), "h": (100, 150), "c": (2, 12)}
