"""The sharing engine: pack mode is pack, departures, the real-time conservation figures."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import ALIBABA_DIR, SHARED_MISSING_REASON, make_cluster, make_pods
from schedlab.engines.shared_time import DONE, FAILED, PENDING, RUNNING, SharingConfig, run_sharing
from schedlab.errors import InputError
from schedlab.model.shared_pods import SharedWorkload
from schedlab.traces.alibaba import read_node_list, read_pod_list
from schedlab.traces.alibaba_sharing import read_shared_pods
from sharing_cases import assert_pack_mode_is_pack, workload

NODES = ALIBABA_DIR / "openb_node_list_gpu_node.csv"
PODS = ALIBABA_DIR / "openb_pod_list_default.csv"
needs_trace = pytest.mark.skipif(not ALIBABA_DIR.is_dir(), reason=SHARED_MISSING_REASON)


@needs_trace
@pytest.mark.parametrize("policy", ["bestfit", "random", "fgd"])
def test_pack_mode_is_pack_on_the_default_pod_list(policy):
    assert_pack_mode_is_pack(read_node_list(NODES), read_pod_list(PODS), policy, 42)


def test_pack_mode_on_a_small_cluster_every_policy():
    cluster = make_cluster([("a", 8000, 1000, 2, "V100M16"), ("b", 16000, 1000, 4, "T4")])
    rows = [
        (f"p{i}", 1000 * (i % 3), 10, (0, 1, 1, 2)[i % 4], (0, 300, 1000, 1000)[i % 4])
        for i in range(12)
    ]
    pods = make_pods(rows)
    for policy in (
        "random",
        "dotprod",
        "gpu-clustering",
        "gpu-packing",
        "bestfit",
        "fgd",
        "consolidate",
    ):
        for seed in (1, 2):
            assert_pack_mode_is_pack(cluster, pods, policy, seed)


def test_pack_mode_never_retries_and_nothing_leaves():
    cluster = make_cluster([("a", 4000, 1000, 1, "V100M16")])
    pods = make_pods([("x", 1000, 10, 1, 1000), ("y", 1000, 10, 1, 600)])
    r = run_sharing(
        cluster,
        SharedWorkload.at_time_zero(pods),
        SharingConfig("bestfit", mode="pack", inflate=1.6),
    )
    # Both originals fit the request cap of 1.6 GPUs; whichever comes second fails.
    assert sorted(r.state.tolist()) == [RUNNING, FAILED]
    assert np.isnan(r.end).all()


THREE_PODS = [
    ("a", 1000, 10, 1, 600, "LS", 0, 10),
    ("b", 1000, 10, 1, 600, "LS", 1, 5),
    ("c", 1000, 10, 1, 400, "BE", 2, 5),
]


def test_departures_free_room_for_waiting_pods():
    # One GPU. a (LS, 600) runs 0 → 10; b (LS, 600) arrives at 1 and waits until 10;
    # c (BE, 400) arrives at 2 and fits beside a at once, running 2 → 7.
    cluster = make_cluster([("n", 8000, 1000, 1, "V100M16")])
    w = workload(THREE_PODS)
    r = run_sharing(cluster, w, SharingConfig("bestfit"))
    assert r.first_start.tolist() == [0, 10, 2]
    assert r.end.tolist() == [10, 15, 7]
    assert r.pending_seconds.tolist() == [0, 9, 0]
    assert r.state.tolist() == [DONE] * 3
    # Held share × seconds: 600·10 + 600·5 + 400·5.
    assert r.held_milli_seconds.sum() == 600 * 10 + 600 * 5 + 400 * 5
    s = r.series
    assert s["time"].tolist() == [0, 1, 2, 7, 10, 15]
    assert s["allocated_milli"].tolist() == [600, 600, 1000, 600, 600, 0]
    assert s["pending_LS"].tolist() == [0, 1, 1, 1, 0, 0]


def test_sampled_series_keeps_the_peak_and_the_last_state():
    cluster = make_cluster([("n", 8000, 1000, 1, "V100M16")])
    w = workload(THREE_PODS)
    r = run_sharing(cluster, w, SharingConfig("bestfit", sample=5))
    assert r.series["time"].tolist() == [0, 7, 10, 15]
    assert (r.peak_milli, r.peak_time) == (1000, 2)  # between samples
    assert r.end.tolist() == [10, 15, 7]


def test_a_pod_that_never_fits_stays_pending():
    cluster = make_cluster([("n", 2000, 1000, 1, "V100M16")])
    w = workload([("big", 4000, 10, 1, 1000, "LS", 0, 5), ("ok", 1000, 10, 1, 500, "BE", 3, 5)])
    r = run_sharing(cluster, w, SharingConfig("fgd"))
    assert r.state.tolist() == [PENDING, DONE]
    assert r.pending_seconds[0] == 8  # waited until the last event at 8


def test_config_refusals():
    with pytest.raises(InputError, match="overcommit"):
        SharingConfig("fgd", overcommit=0.5)
    with pytest.raises(InputError, match="unknown sharing mode"):
        SharingConfig("fgd", mode="later")
    with pytest.raises(InputError, match="pack mode"):
        SharingConfig("fgd", mode="pack", overcommit=1.5)


@needs_trace
def test_conservation_on_the_real_times():
    """Spec A.8: on the full GPU-node cluster with the trace's own times every scheduled pod
    starts at its arrival; the figures below are pinned so a change cannot move them silently."""
    w = read_shared_pods(PODS)
    assert len(w) == 7255 and w.dropped == {"unscheduled": 897}
    r = run_sharing(read_node_list(NODES), w, SharingConfig("bestfit"))
    assert (r.state == DONE).all() and r.evictions.sum() == 0
    assert np.array_equal(r.first_start, w.arrival)
    alloc = r.series["allocated_milli"]
    k = int(np.argmax(alloc))
    assert (alloc[k], r.series["time"][k]) == (64590, 12_523_614)
    gpu_hours = {
        q: r.held_milli_seconds[w.qos == q].sum() / 3.6e6
        for q in ("LS", "BE", "Burstable", "Guaranteed")
    }
    assert round(sum(gpu_hours.values()), 2) == 51470.67
    assert {q: round(v, 1) for q, v in gpu_hours.items()} == {
        "LS": 41413.4,
        "BE": 1311.6,
        "Burstable": 7459.2,
        "Guaranteed": 1286.5,
    }
    # Time-weighted mean allocation over [9,936,000, 12,902,960] s (the spec's 35.99 GPUs).
    t = r.series["time"]
    inside = (t >= 9_936_000) & (t < 12_902_960)
    edges = np.append(t[inside], 12_902_960)
    values = alloc[inside] / 1000
    before = alloc[np.searchsorted(t, 9_936_000) - 1] / 1000  # held from the window start
    area = (values * np.diff(edges)).sum() + before * (edges[0] - 9_936_000)
    assert round(area / (12_902_960 - 9_936_000), 2) == 35.99
    waiting = {q: int(r.series[f"pending_{q}"].max()) for q in ("LS", "BE", "Burstable")}
    assert waiting == {"LS": 0, "BE": 0, "Burstable": 0}
