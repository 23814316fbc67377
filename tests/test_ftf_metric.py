"""Finish-time fairness ρ as a metric of every replay run: the fluid isolated reference by hand,
its per-job column and summary fields end to end, and the reference's invariants."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.metrics.ftf import isolated_completion, isolated_jct, share_capacity
from schedlab.model.gpu_models import GPU_MODELS
from schedlab.perf.models import TraceDuration
from schedlab.traces.cluster_spec import parse_cluster_spec
from schedlab.traces.formats import read_jobs

# One node of 2 GPUs. Fluid isolated share (N = 2, c_j = 2 for every job at speed 1):
#  0–40   a (1 GPU) and d (2 GPUs) active, m = 2: a at 2/max(2,2) = 1, d at 2/max(4,2) = 0.5
#         → at 40: a has 60 left, d 80.
#  40–130 b joins, m = 3: a and b at 2/3, d at 1/3; a and b (60 each) finish at 40 + 90 = 130,
#         d has done 20 + 30 = 50 of 100.
#  130–180 d alone at 2/max(2,2) = 1 → its last 50 end at 180.
# Isolated JCTs: a 130, d 180, b 130 − 40 = 90.
# FIFO (head-of-line blocking): a 0 → 100; d (2 GPUs) waits for a: 100 → 200; b behind it:
# 200 → 260. JCTs a 100, d 200, b 220; ρ = 100/130, 200/180, 220/90.
TRACE = """job_id,submit_time,num_gpus,duration
a,0,1,100
d,0,2,100
b,40,1,60
"""
ISOLATED = {"a": 130.0, "d": 180.0, "b": 90.0}
FIFO_JCT = {"a": 100.0, "d": 200.0, "b": 220.0}


def test_isolated_completion_by_hand() -> None:
    end = isolated_completion(
        submit=np.array([0.0, 0.0, 40.0]),
        work=np.array([100.0, 100.0, 60.0]),
        capacity=np.array([2.0, 2.0, 2.0]),
        scale=np.array([1, 2, 1]),
        total_gpus=2,
    )
    np.testing.assert_allclose(end, [130.0, 180.0, 130.0])


def test_a_job_alone_runs_at_its_own_gpus_worth_and_never_faster() -> None:
    """Alone, a 1-GPU job on 4 GPUs gets a share of 4 GPUs, capped at its own 1 GPU."""
    end = isolated_completion(np.array([10.0]), np.array([50.0]), np.array([4.0]), np.array([1]), 4)
    np.testing.assert_allclose(end, [60.0])


def test_capacity_weighs_each_type_by_its_speed_and_count(tmp_path: Path) -> None:
    """V100 ×2 at speed 2 and K80 ×1 at speed 1: c = 2·2 + 1·1 = 5 for a 1-GPU job; a 2-GPU job
    fits only on the V100s (c = 2·2 = 4); a 4-GPU job fits nowhere (c = 0, JCT NaN)."""
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\nx,0,1,50\ny,0,2,40\nz,0,4,10\n")
    jobs = read_jobs(trace).jobs
    cluster = parse_cluster_spec("1x2:V100+1x1:K80")
    perf = TraceDuration(speed={GPU_MODELS.index("V100"): 2.0, GPU_MODELS.index("K80"): 1.0})
    np.testing.assert_allclose(share_capacity(jobs, cluster, perf), [5.0, 4.0, 0.0])
    # N = 3, x and y active (m = 2): x at 5/max(2, 3) = 5/3, y at 4/max(4, 3) = 1.
    # y's 40 take 40 s; by then x has done 66.7 > 50, so x ends at 50·3/5 = 30 first, and y runs
    # alone from 30 at 4/max(2, 3) = 4/3: it has 10 left → 30 + 7.5 = 37.5.
    jct = isolated_jct(jobs, cluster, perf)
    np.testing.assert_allclose(jct[:2], [30.0, 37.5])
    assert np.isnan(jct[2])


def read_rows(path: Path) -> tuple[list[str], dict[str, dict[str, str]]]:
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        rows = {r["job_id"]: r for r in reader}
        return list(reader.fieldnames or []), rows


def test_every_replay_run_reports_rho_per_job_and_summarised(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(TRACE)
    out = tmp_path / "out"
    argv = ["replay", "--cluster", "1x2:V100", "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, "--out", str(out)]) == 0
    columns, rows = read_rows(out / "jobs.csv")
    # right after the metrics (met_deadline only with deadlines), before any option's columns
    assert columns[-3:] == ["bounded_slowdown", "isolated_jct", "ftf_rho"]
    rho = {}
    for job, row in rows.items():
        assert float(row["jct"]) == pytest.approx(FIFO_JCT[job])
        assert float(row["isolated_jct"]) == pytest.approx(ISOLATED[job])
        rho[job] = FIFO_JCT[job] / ISOLATED[job]
        assert float(row["ftf_rho"]) == pytest.approx(rho[job])
    summary = json.loads((out / "summary.json").read_text())
    values = sorted(rho.values())  # 0.769, 1.111, 2.444
    assert summary["ftf_rho_mean"] == pytest.approx(sum(values) / 3)
    assert summary["ftf_rho_p50"] == pytest.approx(200 / 180)
    # numpy's linear quantile: position 0.9·2 = 1.8 between the 2nd and 3rd values
    assert summary["ftf_rho_p90"] == pytest.approx(values[1] + 0.8 * (values[2] - values[1]))
    assert summary["ftf_rho_max"] == pytest.approx(220 / 90)


def test_a_job_that_does_not_complete_has_no_rho(tmp_path: Path) -> None:
    """Stopped at 150 s, d and b have not finished: ρ only for a."""
    trace = tmp_path / "jobs.csv"
    trace.write_text(TRACE)
    out = tmp_path / "out"
    argv = ["replay", "--cluster", "1x2:V100", "--trace", str(trace), "--policy", "fifo"]
    assert main([*argv, "--until", "150", "--out", str(out)]) == 0
    _, rows = read_rows(out / "jobs.csv")
    assert rows["a"]["ftf_rho"] != "" and rows["d"]["ftf_rho"] == "" and rows["b"]["ftf_rho"] == ""
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ftf_rho_max"] == pytest.approx(100 / 130)


JOBS = st.lists(
    st.tuples(
        st.floats(0, 1000),  # submit
        st.floats(1, 500),  # work
        st.floats(0.5, 8),  # capacity
        st.sampled_from([1, 2, 4]),  # GPUs
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(JOBS, st.sampled_from([2, 4, 8]))
def test_sharing_never_beats_running_alone(jobs: list[tuple], total: int) -> None:
    """Every job finishes, no earlier than alone on its capped share and no later than at the
    pace of its share with every job of the trace active at once."""
    submit, work, capacity, scale = (np.array(c) for c in zip(*jobs, strict=True))
    end = isolated_completion(submit, work, capacity, scale, total)
    assert np.isfinite(end).all()
    alone = work * np.maximum(scale, total) / capacity
    assert np.all(end - submit >= alone * (1 - 1e-9) - 1e-9)
    slowest = work * np.maximum(len(jobs) * scale, total) / capacity
    assert np.all(end - submit <= slowest * (1 + 1e-9) + 1e-6)


def _isolated_completion_long_way(
    submit: np.ndarray, work: np.ndarray, capacity: np.ndarray, scale: np.ndarray, total_gpus: int
) -> np.ndarray:
    """The fluid reference as first written: heads read from the heaps and every busy count's
    pace computed again in each pass. The kept heads and divisors must give the same floats."""
    import heapq
    import math

    # Every generated job can run, so the order is by submission alone (a stable sort).
    order = sorted(range(len(submit)), key=lambda j: float(submit[j]))
    size = [float(work[j]) / float(capacity[j]) for j in order]
    arrivals = [float(submit[j]) for j in order]
    counts = sorted({int(s) for s in scale})
    groups = [counts.index(int(scale[j])) for j in order]
    scales = [float(c) for c in counts]
    n_total = float(total_gpus)
    clocks = [0.0] * len(scales)
    heaps: list[list[tuple[float, int]]] = [[] for _ in scales]
    busy: dict[int, None] = {}
    finish = [math.nan] * len(order)
    active, i, count = 0, 0, len(order)
    now = arrivals[0]
    while i < count or active:
        arrival = arrivals[i] if i < count else math.inf
        soonest, group = math.inf, -1
        for g in busy:
            pace = active * scales[g]
            dt = (heaps[g][0][0] - clocks[g]) * (pace if pace > n_total else n_total)
            if dt < soonest:
                soonest, group = dt, g
        step = arrival - now
        if step <= soonest:
            if step > 0:
                for g in busy:
                    pace = active * scales[g]
                    clocks[g] += step / (pace if pace > n_total else n_total)
            now = arrival
            while i < count and arrivals[i] <= now:
                g = groups[i]
                if g not in busy:
                    busy[g], clocks[g] = None, 0.0
                heapq.heappush(heaps[g], (clocks[g] + size[i], i))
                active += 1
                i += 1
            continue
        step = soonest if soonest > 0.0 else 0.0
        if step > 0:
            for g in busy:
                pace = active * scales[g]
                clocks[g] += step / (pace if pace > n_total else n_total)
        now += step
        if heaps[group][0][0] > clocks[group]:
            clocks[group] = heaps[group][0][0]
        for g in list(busy):
            heap, due = heaps[g], clocks[g] * (1 + 1e-12)
            while heap and heap[0][0] <= due:
                finish[heapq.heappop(heap)[1]] = now
                active -= 1
            if not heap:
                del busy[g]
    done = np.full(len(submit), np.nan)
    done[order] = finish
    return done


# Whole-number times and works make ties (arrivals together, finishes together) common.
TIED_JOBS = st.lists(
    st.tuples(
        st.integers(0, 60).map(float),  # submit
        st.integers(1, 40).map(float),  # work
        st.sampled_from([1.0, 2.0, 4.0]),  # capacity
        st.sampled_from([1, 2, 4, 8]),  # GPUs
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(st.one_of(JOBS, TIED_JOBS), st.sampled_from([2, 4, 8]))
def test_kept_heads_and_divisors_give_the_long_ways_floats(jobs: list[tuple], total: int) -> None:
    submit, work, capacity, scale = (np.array(c) for c in zip(*jobs, strict=True))
    fast = isolated_completion(submit, work, capacity, scale, total)
    slow = _isolated_completion_long_way(submit, work, capacity, scale, total)
    assert fast.tobytes() == slow.tobytes()
