"""KAI's division, queue order and reclaim: the spec's exact targets T1, T2, H1–H6, and a
two-queue reclaim in a replay."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import SHARED_DIR
from schedlab.tenancy.kai import KaiPolicy
from schedlab.tenancy.kai_division import divide, divide_tree
from schedlab.tenancy.state import TenantState, roll_up
from schedlab.tenancy.tree import QueueSpec, build_tree
from schedlab.tenancy.usage import UsageLedger, UsageSettings
from tenancy_cases import held_at, run

FAIRSHARE = SHARED_DIR / "data" / "fairshare" / "kai" / "fairshare-simulator"


@pytest.mark.shared
@pytest.mark.skipif(not FAIRSHARE.is_dir(), reason="../shared/data/fairshare not beside the repo")
def test_t1_the_fairshare_simulator_example_gives_its_published_response():
    request = json.loads((FAIRSHARE / "example-request.json").read_text())
    expected = json.loads((FAIRSHARE / "example-response.json").read_text())
    total = request["totalResource"]
    queues = request["queues"]
    got: dict[str, dict[str, float]] = {q["uid"]: {} for q in queues}
    # The simulator's defaults for a resource a queue does not mention: deserved unlimited
    # (-1), request 100000, over-quota weight 1.
    for key, resource in (("gpu", "GPU"), ("cpu", "CPU"), ("memory", "Memory")):
        share = [q["resourceShare"].get(key, {}) for q in queues]
        out = divide(
            float(total[resource]),
            [s.get("deserved", -1) for s in share],
            [s.get("request", 100000) for s in share],
            [s.get("overQuotaWeight", 1) for s in share],
            [q["priority"] for q in queues],
        )
        for q, v in zip(queues, out, strict=True):
            got[q["uid"]][key] = v
    assert got == expected
    assert got["queue1"]["gpu"] == 70 and got["queue2"]["gpu"] == 30


def test_t2_three_equal_queues_on_16_gpus_get_6_5_5_remainder_to_the_oldest():
    assert divide(16, [0, 0, 0], [16, 16, 16], [1, 1, 1]) == [6, 5, 5]


def test_h1_rounds_floors_and_the_remainder():
    assert divide(12, [0, 0, 0], [1, 12, 12], [1, 2, 3]) == [1, 4, 7]
    # Without rounding (the continuous division) it is Volcano's proportion.
    assert divide(12, [0, 0, 0], [1, 12, 12], [1, 2, 3], rounding=False) == pytest.approx(
        [1, 4.4, 6.6]
    )


def test_h2_priority_first_then_weights():
    out = divide(100, [10, 20, 0], [40, 100, 100], [1, 1, 3], priority=[1, 0, 0])
    assert out == [40, 30, 30]


def test_h3_hierarchy_divides_each_share_among_children():
    tree = build_tree(
        [
            QueueSpec("A", deserved={"gpu": 40}),
            QueueSpec("A/a1", deserved={"gpu": 30}, weight=1),
            QueueSpec("A/a2", deserved={"gpu": 10}, weight=2),
            QueueSpec("B", deserved={"gpu": 20}),
            QueueSpec("B/b1", deserved={"gpu": 20}),
        ]
    )
    own = np.zeros((len(tree), 1))
    for name, req in (("A/a1", 100), ("A/a2", 100), ("B/b1", 30)):
        own[tree.index[name], 0] = req
    fair = divide_tree(tree, np.array([100.0]), roll_up(tree, own))
    got = {name: fair[tree.index[name], 0] for name in ("A", "B", "A/a1", "A/a2", "B/b1")}
    assert got == {"A": 70, "B": 30, "A/a1": 40, "A/a2": 30, "B/b1": 30}


@pytest.mark.parametrize(
    ("usage", "k", "expected"),
    [((0.75, 0.25), 1.0, [4, 12]), ((0.75, 0.25), 2.0, [0, 16]), ((0.6, 0.3), 1.0, [6, 10])],
)
def test_h4_time_aware_shares(usage, k, expected):
    assert divide(16, [0, 0], [16, 16], [1, 1], usage=list(usage), k=k) == expected


def test_h4_exact_share_before_rounding():
    exact = divide(16, [0, 0], [16, 16], [1, 1], usage=[0.6, 0.3], rounding=False)
    assert exact == pytest.approx([16 * 0.4 / 1.1, 16 * 0.7 / 1.1])


def test_k_value_at_or_below_zero_means_no_usage_term():
    policy = KaiPolicy({"k_value": -3})
    assert policy.k == 0.0


def test_h5_decayed_usage_integral():
    hour = 3600.0
    ledger = UsageLedger(
        UsageSettings(window=4 * hour, half_life=hour, tick=60.0), (1, 1), np.array([16.0])
    )
    ledger.observe(0.0, np.zeros((1, 1)))
    ledger.observe(2 * hour, np.full((1, 1), 8.0))
    ledger.observe(3 * hour, np.zeros((1, 1)))
    assert ledger.usage(4 * hour)[0, 0] == pytest.approx(2 / 15)


def test_h5_sliding_window_drops_what_left_it_and_tumbling_resets():
    hour = 3600.0
    for kind, expected in (("sliding", 0.0), ("tumbling", 0.0)):
        ledger = UsageLedger(
            UsageSettings(window=hour, window_type=kind, tick=60.0), (1, 1), np.array([10.0])
        )
        ledger.observe(0.0, np.full((1, 1), 10.0))
        ledger.observe(hour, np.zeros((1, 1)))
        assert ledger.usage(2 * hour)[0, 0] == pytest.approx(expected)
    ledger = UsageLedger(UsageSettings(window=hour, tick=60.0), (1, 1), np.array([10.0]))
    ledger.observe(0.0, np.full((1, 1), 10.0))
    ledger.observe(hour / 2, np.zeros((1, 1)))
    assert ledger.usage(hour)[0, 0] == pytest.approx(0.5)


def _h6_state():
    """T = 24; A (a1, a2), B, C each with fair share 8; a1 and a2 4 each. a1 holds 2 and asks
    2 more; a2 holds 8, B 12, C 2 (full)."""
    tree = build_tree([QueueSpec("A/a1"), QueueSpec("A/a2"), QueueSpec("B"), QueueSpec("C")])
    ix = tree.index
    leaves, running = [], {}
    for name, count in (("A/a1", 1), ("A/a2", 4), ("B", 6), ("C", 1)):
        for _ in range(count):
            running.setdefault(ix[name], []).append(len(leaves))
            leaves.append(ix[name])
    asking = len(leaves)
    leaves.append(ix["A/a1"])
    demand = np.full((len(leaves), 1), 2.0)
    held = np.zeros((len(tree), 1))
    for leaf, jobs in running.items():
        held[leaf, 0] = 2.0 * len(jobs)
    waiting = np.zeros((len(tree), 1))
    waiting[ix["A/a1"], 0] = 2.0
    waiting[ix["C"], 0] = 6.0
    st = TenantState(
        tree=tree,
        now=0.0,
        capacity=np.array([24.0]),
        alloc=roll_up(tree, held),
        pending=roll_up(tree, waiting),
        alloc_np=np.zeros((len(tree), 1)),
        demand=demand,
        leaf_of=np.asarray(leaves),
        running=running,
        run_began=np.zeros(len(leaves)),
    )
    return st, asking


def test_h6_saturation_rejects_a_victim_in_b_and_allows_one_in_a2():
    st, asking = _h6_state()
    ix = st.tree.index
    policy = KaiPolicy()
    policy.reset(st.tree, st.capacity)
    fair = policy.shares(st)
    assert [fair[ix[q], 0] for q in ("A", "B", "C", "A/a1", "A/a2")] == [8, 8, 8, 4, 4]
    a1 = ix["A/a1"]
    assert policy.reclaimer(st, fair, a1, asking)  # 2 + 2 ≤ 4
    st.reclaim_base = st.alloc.copy()
    in_b = st.running[ix["B"]][0]
    in_a2 = st.running[ix["A/a2"]][0]
    assert not policy.allow_victim(st, fair, a1, asking, in_b)  # ρ_r 1.5 > 1, ρ_B 1.25
    assert policy.allow_victim(st, fair, a1, asking, in_a2)
    chosen = policy.select_victims(st, fair, a1, asking, lambda v: len(v) >= 1)
    assert chosen is not None and len(chosen) == 1
    assert int(st.leaf_of[chosen[0]]) == ix["A/a2"]
    st.give_back(chosen[0])
    st.take(asking)
    assert st.alloc[a1, 0] == 4 and st.alloc[ix["A/a2"], 0] == 6


def test_h6_a_larger_multiplier_rejects_more():
    st, asking = _h6_state()
    ix = st.tree.index
    policy = KaiPolicy({"reclaimer_saturation_multiplier": 1.0})
    policy.reset(st.tree, st.capacity)
    fair = policy.shares(st)
    st.reclaim_base = st.alloc.copy()
    c_job = st.running[ix["C"]][0]
    # C is under its share (2 < 8): no rule lets a1 take from it.
    assert not policy.allow_victim(st, fair, ix["A/a1"], asking, c_job)


def test_queue_over_its_share_loses_a_job_when_the_other_queue_arrives():
    rows = [(f"a{i}", "a", 0.0, 2, 100.0) for i in range(4)]
    rows += [("b0", "b", 10.0, 2, 100.0), ("b1", "b", 10.0, 2, 100.0)]
    queues = [QueueSpec("a", deserved={"gpu": 4}), QueueSpec("b", deserved={"gpu": 4})]
    record, recorder, _ = run(rows, queues, "kai")
    assert held_at(recorder, 0.0, "a") == 8
    assert held_at(recorder, 10.0, "a") == 4 and held_at(recorder, 10.0, "b") == 4
    assert int(record.preemptions.sum()) == 2
    assert {r.reason for r in recorder.reclaims} == {"deserved"}
    assert (record.status == 3).all()  # every job completed


def test_no_reclaim_from_a_queue_within_its_share():
    rows = [(f"a{i}", "a", 0.0, 2, 100.0) for i in range(2)]
    rows += [(f"b{i}", "b", 0.0, 2, 100.0) for i in range(2)]
    rows += [("b2", "b", 10.0, 2, 100.0)]
    queues = [QueueSpec("a", deserved={"gpu": 4}), QueueSpec("b", deserved={"gpu": 4})]
    record, recorder, _ = run(rows, queues, "kai", cluster="1x8:V100")
    assert int(record.preemptions.sum()) == 0
    assert not recorder.reclaims


def test_over_quota_weight_splits_spare_gpus():
    rows = [(f"a{i}", "a", 0.0, 1, 100.0) for i in range(8)]
    rows += [(f"b{i}", "b", 0.0, 1, 100.0) for i in range(8)]
    queues = [QueueSpec("a", weight=3), QueueSpec("b", weight=1)]
    _, recorder, _ = run(rows, queues, "kai")
    assert held_at(recorder, 0.0, "a") == 6 and held_at(recorder, 0.0, "b") == 2
