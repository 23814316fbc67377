"""Replay metrics on small hand-computed cases (arithmetic in comments) and random properties."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.errors import InputError
from schedlab.metrics.replay_metrics import (
    jain_index,
    jct_cdf,
    job_metrics,
    json_ready,
    per_user,
    step_integral,
    summarize,
    time_weighted_mean,
)

NAN = math.nan


def jobs_frame(rows: list[dict]) -> pd.DataFrame:
    """A jobs table in the engine's column order; unspecified columns get neutral values."""
    defaults = {
        "user": "u",
        "start_time": NAN,
        "end_time": NAN,
        "num_gpus": 1,
        "duration": NAN,
        "deadline": NAN,
        "preemptions": 0,
        "resizes": 0,
        "gpu_seconds": 0.0,
    }
    full = [{"job_id": f"j{i}", **defaults, **row} for i, row in enumerate(rows)]
    columns = [
        "job_id",
        "user",
        "submit_time",
        "start_time",
        "end_time",
        "num_gpus",
        "duration",
        "deadline",
        "preemptions",
        "resizes",
        "gpu_seconds",
        "status",
    ]
    return pd.DataFrame(full, columns=columns)


def series(rows: list[tuple[float, int, int, int]]) -> pd.DataFrame:
    """Time series from ``(time, queue_length, busy_gpus, total_gpus)`` rows."""
    return pd.DataFrame(
        {
            "time": [r[0] for r in rows],
            "queue_length": [r[1] for r in rows],
            "running_jobs": [0] * len(rows),
            "busy_gpus": [r[2] for r in rows],
            "total_gpus": [r[3] for r in rows],
        }
    )


# Three completed jobs, two users:
#   a (u1): submit 0,  start 10, end 40,  duration 30 → jct 40, queue 10, bsld 40/30      = 1.3333
#   b (u1): submit 10, start 20, end 30,  duration 5  → jct 20, queue 10, bsld 20/max(5,10) = 2.0
#   c (u2): submit 20, start 50, end 100, duration 50 → jct 80, queue 30, bsld 80/50      = 1.6
THREE = [
    dict(user="u1", submit_time=0, start_time=10, end_time=40, duration=30, status="completed"),
    dict(user="u1", submit_time=10, start_time=20, end_time=30, duration=5, status="completed"),
    dict(user="u2", submit_time=20, start_time=50, end_time=100, duration=50, status="completed"),
]
# Window [first submit 0, last completion 100]; rows hold until the next one:
#   [0, 40):  busy 2/4 = 0.5, queue 1  →  0.5·40 = 20,  1·40 = 40
#   [40, 70): busy 4/4 = 1.0, queue 0  →  1.0·30 = 30,  0·30 = 0
#   [70, 100]: busy 0/4 = 0,  queue 2  →  0·30  = 0,    2·30 = 60
#   utilisation = 50/100 = 0.5; mean queue length = 100/100 = 1.0
THREE_SERIES = [(0, 1, 2, 4), (40, 0, 4, 4), (70, 2, 0, 4)]


def test_job_metrics_per_job_values():
    m = job_metrics(jobs_frame(THREE))
    assert m["jct"].tolist() == [40, 20, 80]
    assert m["queue_delay"].tolist() == [10, 10, 30]
    # b ran 5 s but the 10 s floor applies: 20/10 = 2 (without the floor it would be 4)
    assert m["bounded_slowdown"].tolist() == pytest.approx([40 / 30, 2.0, 1.6])
    assert m["met_deadline"].dtype == bool
    assert not m["met_deadline"].any()  # no deadlines at all


def test_bounded_slowdown_floor_is_a_parameter_and_never_below_one():
    # b with floor 1: 20 / max(5, 1) = 4; a job faster than its duration: max(1, 50/100) = 1
    rows = [
        *THREE[1:2],
        dict(submit_time=0, start_time=0, end_time=50, duration=100, status="completed"),
    ]
    m = job_metrics(jobs_frame(rows), slowdown_floor=1.0)
    assert m["bounded_slowdown"].tolist() == [4.0, 1.0]


def test_summary_of_three_jobs():
    s = summarize(jobs_frame(THREE), series(THREE_SERIES))
    assert (s["jobs"], s["completed"], s["rejected"], s["unfinished"]) == (3, 3, 0, 0)
    assert s["users"] == 2
    assert s["avg_jct"] == pytest.approx(140 / 3)  # (40 + 20 + 80) / 3
    assert s["p50_jct"] == 40  # middle of 20, 40, 80
    # numpy linear quantile on [20, 40, 80]: position q·(n−1); 0.95·2 = 1.9 → 40 + 0.9·40 = 76
    assert s["p95_jct"] == pytest.approx(76)
    assert s["p99_jct"] == pytest.approx(79.2)  # 1.98 → 40 + 0.98·40
    assert s["avg_queue_delay"] == pytest.approx(50 / 3)  # (10 + 10 + 30) / 3
    assert s["p99_queue_delay"] == pytest.approx(29.6)  # [10, 10, 30] at 1.98 → 10 + 0.98·20
    # (4/3 + 2 + 1.6) / 3 = 4.9333 / 3
    assert s["avg_bounded_slowdown"] == pytest.approx((4 / 3 + 2 + 1.6) / 3)
    assert s["makespan"] == 100  # last completion 100 − first submit 0
    assert s["gpu_utilization"] == pytest.approx(0.5)
    assert s["avg_queue_length"] == pytest.approx(1.0)
    assert s["preemptions"] == 0
    # per-user mean bsld: u1 (4/3 + 2)/2 = 5/3, u2 1.6 → (5/3 + 1.6)² / (2·((5/3)² + 1.6²))
    x = np.array([5 / 3, 1.6])
    assert s["jain_fairness"] == pytest.approx(x.sum() ** 2 / (2 * (x**2).sum()))
    assert "dsr" not in s and "best_effort_avg_jct" not in s and "deadline_jobs" not in s
    json.dumps(s, allow_nan=False)


def test_utilization_window_clips_series_and_counts_idle_before_first_row():
    # Window [0, 100] (job submitted 0, completed 100); series starts at 20 and runs past 100:
    #   [0, 20): before the first row → idle, 0
    #   [20, 60): 4/4 = 1 → 40;  [60, 200): 0/4 → 0 (the row at 200 is outside the window)
    #   utilisation = 40 / 100 = 0.4
    jobs = jobs_frame([dict(submit_time=0, start_time=20, end_time=100, status="completed")])
    s = summarize(jobs, series([(20, 0, 4, 4), (60, 0, 0, 4), (200, 0, 4, 4)]))
    assert s["gpu_utilization"] == pytest.approx(0.4)


def test_rows_at_the_same_time_the_last_holds_and_order_does_not_matter():
    # Rows at 50: busy 0 then busy 4 → 4/4 holds on [50, 100]; [0, 50) is 2/4.
    # utilisation = (0.5·50 + 1·50) / 100 = 0.75; rows given out of time order on purpose.
    jobs = jobs_frame([dict(submit_time=0, start_time=0, end_time=100, status="completed")])
    ts = series([(50, 0, 0, 4), (50, 0, 4, 4), (0, 0, 2, 4)])
    assert summarize(jobs, ts)["gpu_utilization"] == pytest.approx(0.75)


def test_cluster_with_no_gpus_counts_as_idle():
    jobs = jobs_frame([dict(submit_time=0, start_time=0, end_time=10, status="completed")])
    assert summarize(jobs, series([(0, 0, 0, 0)]))["gpu_utilization"] == 0.0


def test_step_integral_by_hand():
    # Steps 2 on [0, 10), 5 on [10, ∞); ∫ up to −1 = 0, 5 → 10, 10 → 20, 12 → 20 + 2·5 = 30
    got = step_integral(np.array([0.0, 10.0]), np.array([2.0, 5.0]), np.array([-1, 5, 10, 12]))
    assert got.tolist() == [0, 10, 20, 30]
    assert time_weighted_mean(np.array([0.0, 10.0]), np.array([2.0, 5.0]), 5, 12) == pytest.approx(
        20 / 7  # (30 − 10) / (12 − 5)
    )
    assert time_weighted_mean(np.array([]), np.array([]), 0, 10) is None
    assert time_weighted_mean(np.array([0.0]), np.array([1.0]), 5, 5) is None  # empty window


def test_jain_index_for_two_users():
    # user A: one job, jct 100 = duration 100 → bsld 1; user B: jct 300, duration 100 → bsld 3
    # Jain = (1 + 3)² / (2·(1² + 3²)) = 16 / 20 = 0.8
    jobs = jobs_frame(
        [
            dict(
                user="A",
                submit_time=0,
                start_time=0,
                end_time=100,
                duration=100,
                status="completed",
            ),
            dict(
                user="B",
                submit_time=0,
                start_time=200,
                end_time=300,
                duration=100,
                status="completed",
            ),
        ]
    )
    assert summarize(jobs, series([]))["jain_fairness"] == pytest.approx(0.8)
    assert jain_index(np.array([2.0, 2.0, 2.0])) == 1.0  # all equal
    assert jain_index(np.array([0.0, 0.0])) == 1.0
    assert jain_index(np.array([])) is None


def test_deadlines_with_a_rejected_job():
    # d1 done 50 ≤ 60 met; d2 done 80 > 70 missed; d3 rejected → missed; d4 done 90 = 90 met
    # dsr = 2 / 4 = 0.5. The best-effort job e1 has jct 30 − 5 = 25.
    jobs = jobs_frame(
        [
            dict(submit_time=0, start_time=0, end_time=50, deadline=60, status="completed"),
            dict(submit_time=0, start_time=0, end_time=80, deadline=70, status="completed"),
            dict(submit_time=0, deadline=100, status="rejected"),
            dict(submit_time=0, start_time=0, end_time=90, deadline=90, status="completed"),
            dict(submit_time=5, start_time=5, end_time=30, status="completed"),
        ]
    )
    m = job_metrics(jobs)
    assert m["met_deadline"].tolist() == [True, False, False, True, False]
    s = summarize(jobs, series([]))
    assert s["deadline_jobs"] == 4
    assert s["dsr"] == 0.5
    assert s["best_effort_avg_jct"] == 25
    assert s["rejected"] == 1


def test_unfinished_job_with_deadline_missed_and_no_best_effort_when_all_have_deadlines():
    # one met (end 10 ≤ 20), one unfinished (missed): dsr = 1/2; every job has a deadline, so
    # there is no best-effort group to report
    jobs = jobs_frame(
        [
            dict(submit_time=0, start_time=0, end_time=10, deadline=20, status="completed"),
            dict(submit_time=0, start_time=5, deadline=20, status="unfinished"),
        ]
    )
    s = summarize(jobs, series([]))
    assert s["dsr"] == 0.5
    assert "best_effort_avg_jct" not in s
    # the unfinished job started, so it has a queue delay: (0 + 5) / 2
    assert s["avg_queue_delay"] == 2.5
    assert s["unfinished"] == 1


def test_unknown_duration_is_left_out_of_slowdown_and_preemptions_add_up():
    # bsld: job 0 = max(1, 40/20) = 2; job 1 has no duration → NaN, not in the mean
    jobs = jobs_frame(
        [
            dict(
                submit_time=0,
                start_time=20,
                end_time=40,
                duration=20,
                preemptions=2,
                status="completed",
            ),
            dict(submit_time=0, start_time=0, end_time=40, preemptions=3, status="completed"),
        ]
    )
    s = summarize(jobs, series([]))
    assert s["avg_bounded_slowdown"] == 2
    assert s["preemptions"] == 5
    assert s["gpu_utilization"] is None  # no series, nothing to average


def test_empty_and_no_completed_jobs_give_none_not_nan():
    for s in (
        summarize(pd.DataFrame(), pd.DataFrame()),
        summarize(jobs_frame([]), series([])),
        summarize(
            jobs_frame(
                [dict(submit_time=0, status="rejected"), dict(submit_time=1, status="unfinished")]
            ),
            series([(0, 2, 0, 4)]),
        ),
    ):
        json.dumps(s, allow_nan=False)
        for key in ("avg_jct", "p50_jct", "p99_jct", "avg_bounded_slowdown", "makespan"):
            assert s[key] is None
        assert s["gpu_utilization"] is None and s["jain_fairness"] is None


def test_per_user_and_cdf():
    pu = per_user(jobs_frame(THREE))
    assert pu.columns.tolist() == [
        "user",
        "jobs",
        "mean_jct",
        "mean_queue_delay",
        "mean_bounded_slowdown",
    ]
    # u1 has 2 jobs (jct 40, 20 → 30; queue 10, 10 → 10), u2 one (80, 30); most jobs first
    assert pu["user"].tolist() == ["u1", "u2"]
    assert pu["jobs"].tolist() == [2, 1]
    assert pu["mean_jct"].tolist() == [30, 80]
    assert pu["mean_queue_delay"].tolist() == [10, 30]
    cdf = jct_cdf(jobs_frame([*THREE, dict(submit_time=0, status="rejected")]))
    assert cdf["jct"].tolist() == [20, 40, 80]  # the rejected job has no JCT
    assert cdf["fraction"].tolist() == pytest.approx([1 / 3, 2 / 3, 1])
    assert jct_cdf(jobs_frame([])).empty


def test_bad_tables_are_input_errors_naming_the_column():
    with pytest.raises(InputError, match="status") as exc:
        job_metrics(jobs_frame([dict(submit_time=0, status="done")]))
    assert "'done'" in str(exc.value)
    with pytest.raises(InputError, match="end_time"):
        job_metrics(jobs_frame([dict(submit_time=0, status="rejected")]).drop(columns="end_time"))
    # deadline is optional: runs without deadlines do not write the column.
    no_deadline = jobs_frame([dict(submit_time=0, status="rejected")]).drop(columns="deadline")
    assert job_metrics(no_deadline)["deadline"].isna().all()
    with pytest.raises(InputError, match="submit_time") as exc:
        job_metrics(jobs_frame([dict(submit_time="soon", status="rejected")]))
    assert "'soon'" in str(exc.value)
    with pytest.raises(InputError, match="busy_gpus"):
        summarize(jobs_frame(THREE), series(THREE_SERIES).drop(columns="busy_gpus"))


def test_json_ready_makes_numpy_plain_and_nan_none():
    out = json_ready({"a": np.float64("nan"), "b": np.int64(3), "c": math.inf, "d": "x"})
    assert out == {"a": None, "b": 3, "c": None, "d": "x"}
    assert type(out["b"]) is int


# ------------------------------------------------------------------------------ properties

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

job_st = st.fixed_dictionaries(
    {
        "user": st.sampled_from(["a", "b", "c", ""]),
        "submit_time": st.integers(0, 1000),
        "wait": st.one_of(st.none(), st.integers(0, 500)),
        "run": st.one_of(st.none(), st.floats(0, 5000, allow_nan=False)),
        "duration": st.one_of(st.just(NAN), st.floats(0.1, 5000, allow_nan=False)),
        "deadline": st.one_of(st.just(NAN), st.integers(0, 8000)),
        "preemptions": st.integers(0, 3),
    }
)


def _job(d: dict) -> dict:
    start = NAN if d["wait"] is None else d["submit_time"] + d["wait"]
    done = d["wait"] is not None and d["run"] is not None
    status = "completed" if done else ("unfinished" if d["wait"] is not None else "rejected")
    return {
        "user": d["user"],
        "submit_time": d["submit_time"],
        "start_time": start,
        "end_time": start + d["run"] if done else NAN,
        "duration": d["duration"],
        "deadline": d["deadline"],
        "preemptions": d["preemptions"],
        "status": status,
    }


row_st = st.tuples(st.integers(0, 10_000), st.integers(0, 30), st.integers(0, 16)).flatmap(
    lambda r: st.tuples(st.just(r[0]), st.just(r[1]), st.integers(0, r[2]), st.just(r[2]))
)


@SETTINGS
@given(st.lists(job_st, max_size=15), st.lists(row_st, max_size=12))
def test_summary_bounds_and_strict_json(raw_jobs, rows):
    jobs = jobs_frame([_job(d) for d in raw_jobs])
    s = summarize(jobs, series(rows))
    json.dumps(s, allow_nan=False)  # raises on NaN/inf
    assert all(not (isinstance(v, float) and not math.isfinite(v)) for v in s.values())
    if s["gpu_utilization"] is not None:
        assert 0.0 <= s["gpu_utilization"] <= 1.0 + 1e-12
    if s["avg_queue_length"] is not None:
        assert s["avg_queue_length"] >= 0
    n = per_user(jobs)["mean_bounded_slowdown"].notna().sum()
    if s["jain_fairness"] is None:
        assert n == 0
    else:
        assert 1 / n - 1e-12 <= s["jain_fairness"] <= 1.0
    if "dsr" in s:
        assert 0.0 <= s["dsr"] <= 1.0
    if s["avg_bounded_slowdown"] is not None:
        assert s["avg_bounded_slowdown"] >= 1.0
    if s["p50_jct"] is not None:
        assert s["p50_jct"] <= s["p95_jct"] <= s["p99_jct"]
    assert s["completed"] + s["rejected"] + s["unfinished"] == s["jobs"] == len(jobs)


@SETTINGS
@given(st.lists(st.floats(0.0, 1e6, allow_nan=False), min_size=1, max_size=20))
def test_jain_index_between_one_over_n_and_one(values):
    j = jain_index(np.array(values))
    assert 1 / len(values) - 1e-12 <= j <= 1.0
