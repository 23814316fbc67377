"""QoS classes in the sharing engine: eviction, overcommit, speeds, and the invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import make_cluster
from schedlab.engines.shared_time import DONE, PENDING, SharingConfig, SharingEngine
from schedlab.model.cluster import GPU_MILLI
from schedlab.model.shared_pods import LEVEL_BURSTABLE, LEVEL_GUARANTEED
from schedlab.policies.placement.base import feasible_nodes
from sharing_cases import workload

ONE_GPU = [("n", 16000, 1000, 1, "V100M16")]


def pods(spec: str) -> list[tuple]:
    """One-GPU pods of 1 core from ``name:share:qos:arrival:work`` items."""
    rows = []
    for item in spec.split():
        name, share, qos, arrival, work = item.split(":")
        rows.append((name, 1000, 10, 1, int(share), qos, int(arrival), int(work)))
    return rows


def run(nodes, rows, **kw):
    return SharingEngine(make_cluster(nodes), workload(rows), SharingConfig("bestfit", **kw)).run()


def test_ls_arrival_evicts_be_which_resumes_with_its_remaining_work():
    # be (700) runs from 0 with 100 s of work; ls (600) arrives at 10 and fits only without be:
    # be is evicted with 90 s left, waits for ls (10 → 40), then runs 40 → 130.
    r = run(
        ONE_GPU,
        pods("be:700:BE:0:100 ls:600:LS:10:30"),
    )
    assert r.evictions.tolist() == [1, 0]
    assert r.first_start.tolist() == [0, 10]
    assert r.end.tolist() == [130, 40]
    assert r.pending_seconds.tolist() == [30, 0]
    assert r.held_milli_seconds.tolist() == [700 * 100, 600 * 30]


def test_eviction_restart_overhead_and_lost_progress():
    rows = pods("be:700:BE:0:100 ls:600:LS:10:30")
    assert run(ONE_GPU, rows, restart_overhead=5).end.tolist() == [135, 40]
    assert run(ONE_GPU, rows, evict_keeps_progress=False).end.tolist() == [140, 40]


def test_burstable_and_be_never_evict():
    # A BE pod arriving at a full GPU waits; so does a burstable one (nothing it may evict).
    r = run(
        ONE_GPU,
        pods("ls:700:LS:0:50 be:600:BE:1:10 bu:600:Burstable:2:10"),
    )
    assert r.evictions.sum() == 0
    # At 50 the burstable pod (level 2) goes first; be waits for it.
    assert r.first_start.tolist() == [0, 60, 50]


def test_burstable_evicts_be():
    r = run(
        ONE_GPU,
        pods("be:700:BE:0:100 bu:600:Burstable:5:10"),
    )
    assert r.evictions.tolist() == [1, 0] and r.end.tolist() == [110, 15]


def test_fewest_victims_then_least_share():
    # b1 (700) takes one GPU; a1 and a2 (400 each) do not fit beside it and share the other.
    # An LS pod of 800 needs both of those (2 victims) or b1 alone (1 victim): b1's node wins.
    nodes = [("a", 16000, 1000, 1, "V100M16"), ("b", 16000, 1000, 1, "V100M16")]
    r = run(
        nodes,
        pods("b1:700:BE:0:100 a1:400:BE:1:100 a2:400:BE:2:100 ls:800:LS:3:10"),
    )
    assert r.cluster.names[r.node[3]] == r.cluster.names[r.node[0]]
    assert r.evictions.tolist() == [1, 0, 0, 0]


def test_victims_not_needed_are_put_back():
    # BE pods 200 (started 0) and 500 (started 1) on one GPU; LS 400 arrives. Order: latest
    # start first → the 500 pod alone makes room, the 200 one is never touched.
    r = run(
        ONE_GPU,
        pods("small:200:BE:0:100 big:500:BE:1:100 ls:400:LS:2:10"),
    )
    assert r.evictions.tolist() == [0, 1, 0]


def test_overcommit_admits_be_beyond_nominal_capacity_at_reduced_speed():
    rows = pods("ls:600:LS:0:100 be:700:BE:1:40")
    # κ = 1: be waits for ls.
    assert run(ONE_GPU, rows).first_start.tolist() == [0, 100]
    # κ = 1.5: be fits (1500 − 600 ≥ 700) and time-slices the 400 left by ls: speed 4/7, so
    # its 40 s of work take 70 s; ls keeps speed 1.
    r = run(ONE_GPU, rows, overcommit=1.5)
    assert r.first_start.tolist() == [0, 1]
    assert r.end[0] == 100
    assert r.end[1] == pytest.approx(71)
    assert r.series["allocated_milli"].max() == 1300


def test_overcommit_does_not_extend_guaranteed_capacity():
    # Under κ = 1.5 a second LS pod still needs g + d ≤ 1000: it evicts the BE pod.
    r = run(
        ONE_GPU,
        pods("ls:600:LS:0:100 be:700:BE:1:400 ls2:400:LS:2:10"),
        overcommit=1.5,
    )
    assert r.evictions.tolist() == [0, 1, 0]
    assert r.first_start[2] == 2


def test_interference_slows_opportunistic_pods_only():
    rows = pods("ls:400:LS:0:100 be:400:BE:0:60")
    r = run(ONE_GPU, rows, interference=0.5)
    # be: rate 1 / (1 + 0.5 · 400/1000) = 1/1.2 → 72 s; ls protected.
    assert r.end[0] == 100 and r.end[1] == pytest.approx(72)
    r = run(ONE_GPU, rows, interference=0.5, ls_protect=False)
    # ls too runs at 1/1.2 until be ends at 72 (60 s of work done), then 40 s at full speed.
    assert r.end[0] == pytest.approx(112)


def test_split_cap_limits_pods_per_gpu():
    rows = [(f"p{i}", 100, 10, 1, 100, "BE", 0, 10) for i in range(3)]
    r = run(ONE_GPU, rows, split_cap=2)
    assert sorted(r.first_start.tolist()) == [0, 0, 10]


# -- invariants ------------------------------------------------------------------------------
class CheckedEngine(SharingEngine):
    """Checks the invariants of spec A.3–A.4 after every event time."""

    def _record(self) -> None:
        cap = self.capacity
        assert (cap.t >= 0).all() and (cap.t <= cap.limit).all()
        assert (cap.g <= GPU_MILLI).all() and (cap.g <= cap.t).all()
        assert cap.held_total == int(cap.t.sum())
        for key in self.pending:
            i = key[2]
            view = cap.view(self.level[i])
            # No head-of-line blocking: a pending pod fits nowhere.
            assert not feasible_nodes(self._request(i), view, self.model_bits).any()
            if self.level[i] == LEVEL_GUARANTEED:
                # ... and a guaranteed pod would not fit anywhere after evicting what it may.
                for node in range(self.cluster.size):
                    assert self._victims(i, node) is None
        super()._record()


CLASSES = ["LS", "Guaranteed", "Burstable", "BE"]
pod_rows = st.lists(
    st.tuples(
        st.integers(0, 3),  # cpu cores
        st.sampled_from([(0, 0), (1, 200), (1, 500), (1, 700), (1, 1000), (2, 1000)]),
        st.sampled_from(CLASSES),
        st.integers(0, 50),  # arrival
        st.integers(0, 40),  # work
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(rows=pod_rows, kappa=st.sampled_from([1.0, 1.5, 2.0]), alpha=st.sampled_from([0, 0.3]))
def test_classes_invariants(rows, kappa, alpha):
    nodes = [("a", 4000, 1000, 2, "V100M16"), ("b", 4000, 1000, 1, "T4")]
    w = workload(
        [(f"p{i}", 1000 * c, 10, k, d, q, a, t) for i, (c, (k, d), q, a, t) in enumerate(rows)]
    )
    r = CheckedEngine(
        make_cluster(nodes), w, SharingConfig("fgd", overcommit=kappa, interference=alpha)
    ).run()
    level = w.level
    # Guaranteed and burstable work is never evicted.
    assert (r.evictions[level >= LEVEL_BURSTABLE] == 0).all()
    # Every pod is accounted for: each fits the empty cluster, so each completes.
    assert (r.state == DONE).all()
    assert not (r.state == PENDING).any()
    assert (r.first_start >= w.arrival).all() and (r.end >= r.first_start).all()
    # Held share-seconds ≥ the work at full speed (equal at speed 1 without eviction).
    need = w.pods.gpu_request_milli * w.work
    assert (r.held_milli_seconds >= need - 1e-6).all()
    assert np.isclose(
        r.held_milli_seconds[level >= LEVEL_BURSTABLE], need[level >= LEVEL_BURSTABLE]
    ).all()
